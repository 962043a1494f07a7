#!/usr/bin/env bash
# Undoes by hand what numo's finalizer undoes when it runs, for a cluster where numo was removed in the middle of a
# rollout and cannot run again (e.g. its CRDs were deleted too): see docs/install.md, "If the operator was removed
# in the middle of a rollout". Needs kubectl (or oc, as KUBECTL=oc) and jq; run it as a cluster admin.
#
#   hack/restore-without-numo.sh
#
# 0. The binding of numo's ValidatingAdmissionPolicy numo-holds is deleted: the policy refuses everyone but numo to
#    remove numo's claim from a pool or its labels from a node. (The policy itself goes with numo's CRDs, or
#    `kubectl delete validatingadmissionpolicy numo-holds`.)
# 1. Every MachineConfigPool numo claimed gets back the settings its `original` annotation recorded; numo's
#    annotations (`claimed-by`, `original`, `written`) are removed.
# 2. numo's rule labels and its release mark (`openshift-optional.skrzypek.io/released-to`, after the canary got its
#    own selector back) are removed from every node.
# 3. numo's finalizers are removed from the run configs (which then go) and from numo's Jobs.
set -euo pipefail
kubectl="${KUBECTL:-kubectl}"
log() { printf '[restore-without-numo] %s\n' "$*" >&2; }
claimed_by=openshift-optional.skrzypek.io/claimed-by original=openshift-optional.skrzypek.io/original
written=openshift-optional.skrzypek.io/written
# retry CMD...: runs CMD until it succeeds, once a second for 30 s; the last attempt's errors are shown.
retry() {
  for _ in $(seq 29); do "$@" 2>/dev/null && return 0; sleep 1; done
  "$@"
}

# Absent where the API is not served (before Kubernetes 1.30 / OpenShift 4.17) or numo never put it in place.
binding=validatingadmissionpolicybindings.v1.admissionregistration.k8s.io
if "$kubectl" get "$binding" numo-holds >/dev/null 2>&1; then
  "$kubectl" delete "$binding" numo-holds --ignore-not-found >/dev/null
  log "binding numo-holds of numo's ValidatingAdmissionPolicy deleted: numo's claims and node labels may be removed"
fi

"$kubectl" get machineconfigpools -o json |
  jq -c --arg c "$claimed_by" --arg o "$original" --arg w "$written" '.items[] | select(.metadata.annotations[$c] != null) | .metadata.annotations as $annotations | .spec as $spec |
    {name: .metadata.name, patch: (((.metadata.annotations[$o] // "{}") | fromjson | to_entries
      | map(select(.value != null)
        # An OS image stream recorded without a name: the pool named none, so the field goes (if numo set one).
        | if .key == "osImageStream" and .value.name == null then
            (select($spec.osImageStream != null) | {op: "remove", path: "/spec/osImageStream"})
          else {op: "add", path: "/spec/\(.key)", value} end))
      + [{op: "remove", path: "/metadata/annotations/\($c | sub("/"; "~1"))"}]
      + ([$o, $w] | map(. as $a | select($annotations[$a] != null) | {op: "remove", path: "/metadata/annotations/\($a | sub("/"; "~1"))"})))}' |
  while read -r pool; do
    name="$(jq -r .name <<<"$pool")"
    # The API server stops applying a deleted binding a moment later (its informer); until then this is refused.
    retry "$kubectl" patch machineconfigpool "$name" --type json -p "$(jq -c .patch <<<"$pool")" >/dev/null
    log "pool $name restored: $(jq -c '[.patch[] | select(.op == "add") | {(.path | ltrimstr("/spec/")): .value}] | add' <<<"$pool")"
  done

"$kubectl" get nodes -o json |
  jq -r '[.items[].metadata.labels | keys[] | select(startswith("mutexrule.openshift-optional.skrzypek.io/"))] | unique[]' |
  while read -r label; do
    # The API server stops applying a deleted binding a moment later (its informer); until then this is refused.
    retry "$kubectl" label nodes --all "$label-" >/dev/null
    log "label $label removed from every node"
  done
released=openshift-optional.skrzypek.io/released-to
if [[ -n "$("$kubectl" get nodes -l "$released" -o name)" ]]; then
  retry "$kubectl" label nodes --all "$released-" >/dev/null
  log "label $released removed from every node"
fi

# release KIND FINALIZER [GET-ARGS...]: removes FINALIZER from every object of KIND (all namespaces) that has it;
# the patch tests the finalizer list it read, so a concurrent change of it is not overwritten.
release() {
  local kind="$1" finalizer="$2"
  shift 2
  "$kubectl" get "$kind" -A "$@" -o json |
    jq -r --arg f "$finalizer" '.items[] | select(.metadata.finalizers // [] | index($f)) | "\(.metadata.namespace) \(.metadata.name)"' |
    while read -r ns name; do
      "$kubectl" patch "$kind" -n "$ns" "$name" --type json -p "$(
        "$kubectl" get "$kind" -n "$ns" "$name" -o json |
          jq -c --arg f "$finalizer" '[{op: "test", path: "/metadata/finalizers", value: .metadata.finalizers},
            {op: "replace", path: "/metadata/finalizers", value: (.metadata.finalizers - [$f])}]'
      )" >/dev/null
      log "$kind $ns/$name released"
    done
}
if "$kubectl" get crd mutexrunconfigs.openshift-optional.skrzypek.io >/dev/null 2>&1; then
  release mutexrunconfigs openshift-optional.skrzypek.io/restore-pools
fi
release jobs openshift-optional.skrzypek.io/record-result -l app.kubernetes.io/managed-by=numo
log "done: no pool, node, run config or Job keeps anything of numo's"
