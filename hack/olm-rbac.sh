#!/usr/bin/env bash
# Compares what a ServiceAccount may do, as the RBAC objects bound to it grant it, with what docs/security.md says
# OLM grants numo's: config/rbac's ClusterRole and leader-election rules, the leader-election rules granted in every
# namespace (AllNamespaces install), listing namespaces, and its own OperatorCondition. Prints both lists' difference
# and fails when they differ. Used by hack/olm-check.sh; needs kubectl (KUBECONFIG) and jq.
#
#   hack/olm-rbac.sh <namespace> <service-account> <csv-name>
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
namespace="$1" account="$2" csv="$3"

# Every (scope, group, resource, name, verb) a list of rules grants, one per line; scope is "cluster" or a namespace.
expand() {
  jq -r --arg scope "$1" '.[] | . as $r | ($r.apiGroups // [""])[] as $g | ($r.resources // [])[] as $res |
    ($r.resourceNames // ["*"])[] as $n | $r.verbs[] as $v | "\($scope) \(if $g == "" then "core" else $g end) \($res) \($n) \($v)"'
}
rules_of_file() { kubectl create --dry-run=client -o json -f "$1" | jq '.rules'; }

actual() {
  local bindings
  bindings="$(kubectl get clusterrolebindings,rolebindings -A -o json | jq --arg ns "$namespace" --arg sa "$account" \
    '[.items[] | select(.metadata.namespace as $bns | .subjects // [] | any(.kind == "ServiceAccount" and .name == $sa and (.namespace // $bns) == $ns))]')"
  echo "$bindings" | jq -c '.[] | {kind, ns: (.metadata.namespace // ""), role: .roleRef}' | while read -r b; do
    local kind ns role_kind role scope
    kind="$(jq -r .kind <<<"$b")" ns="$(jq -r .ns <<<"$b")"
    role_kind="$(jq -r .role.kind <<<"$b")" role="$(jq -r .role.name <<<"$b")"
    scope="cluster"
    [[ "$kind" == RoleBinding ]] && scope="$ns"
    # A binding whose role does not exist (yet, or any more) grants nothing.
    if [[ "$role_kind" == ClusterRole ]]; then
      { kubectl get clusterrole "$role" -o json 2>/dev/null || echo '{}'; } | jq '.rules // []' | expand "$scope"
    else
      { kubectl get role -n "$ns" "$role" -o json 2>/dev/null || echo '{}'; } | jq '.rules // []' | expand "$scope"
    fi
  done | sort -u
}

expected() {
  {
    rules_of_file "$repo/config/rbac/role.yaml" | expand cluster
    # The leader-election Role, granted in the operator's namespace and, as OLM copies it for an AllNamespaces
    # install, in every namespace, with reading namespaces added.
    rules_of_file "$repo/config/rbac/leader_election_role.yaml" | expand "$namespace"
    rules_of_file "$repo/config/rbac/leader_election_role.yaml" | expand cluster
    for verb in get list watch; do echo "cluster core namespaces * $verb"; done
    # The operator's own OperatorCondition.
    for verb in get update patch; do echo "$namespace operators.coreos.com operatorconditions $csv $verb"; done
  } | sort -u
}

granted="$(actual)"
difference="$(diff <(expected) <(echo "$granted") | sed -n 's/^</expected, not granted:/p; s/^>/granted, not expected:/p')"
if [[ -n "$difference" ]]; then
  echo "$difference"
  exit 1
fi
echo "OLM grants $namespace/$account exactly what docs/security.md says ($(echo "$granted" | wc -l) permissions)"
