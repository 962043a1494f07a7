#!/usr/bin/env bash
# Checks the install manifests end to end: `kubectl apply -k config/default` on a fresh local cluster, then numo run
# as a local process under the identity of the ServiceAccount config/rbac creates (kwok only simulates the
# Deployment's pod), with leader election on, drives the rollout of config/samples through a simulated upgrade
# until every worker runs the new version and the pools are restored.
#
#   hack/install-check.sh        # CLUSTER (default numo-install), WORKERS (3), FROM (4.16.4), TO (4.16.5)
#
# The cluster is removed at the end unless KEEP_CLUSTER=1.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=hack/versions.sh
source hack/versions.sh
# shellcheck source=hack/lib/openshift.sh
source hack/lib/openshift.sh
cluster="${CLUSTER:-numo-install}" workers="${WORKERS:-3}" from="${FROM:-4.16.4}" to="${TO:-4.16.5}"
namespace=numo-samples
operator_user=system:serviceaccount:numo-system:numo-operator
work="$(mktemp -d "${TMPDIR:-/tmp}/numo-install-check.XXXXXX")"
log() { printf '[install-check %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
started=$SECONDS

pids=()
finish() {
  local rc=$?
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ $rc != 0 ]]; then
    log "FAILED; last lines of numo's log:"
    tail -n 30 "$work/numo.log" >&2 2>/dev/null || true
    kubectl get mutexrunconfig -n "$namespace" -o yaml >&2 2>/dev/null || true
  fi
  if [[ "${KEEP_CLUSTER:-}" != 1 ]]; then hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  log "$([[ $rc == 0 ]] && echo ok || echo FAILED) in $((SECONDS - started))s"
  exit "$rc"
}
trap finish EXIT

log "building numo and the simulator"
cargo build --quiet --bin numo -p numo --bin numo-sim -p numo-simulator
numo="${CARGO_TARGET_DIR:-$repo/target}/debug/numo" sim="${CARGO_TARGET_DIR:-$repo/target}/debug/numo-sim"

log "starting cluster $cluster (OpenShift CRDs only; numo's come from config/default)"
kubeconfig="$(NUMO_SKIP_CRDS=1 hack/cluster-up.sh "$cluster" | tail -n 1)"
export KUBECONFIG="$kubeconfig" PATH="$K8S_BIN:$PATH"
"$sim" install-crds >/dev/null

log "kubectl apply -k config/default"
kubectl apply --server-side -k config/default >"$work/apply.log" 2>&1 || { cat "$work/apply.log" >&2; exit 1; }
if grep -qi warning "$work/apply.log"; then cat "$work/apply.log" >&2; log "the install printed warnings"; exit 1; fi
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl -n numo-system get deployment numo-operator >/dev/null

log "seeding a simulated OpenShift: $workers workers at $from"
"$sim" seed --version "$from" --workers "$workers" --masters 1 >/dev/null
"$sim" run >"$work/simulator.log" 2>&1 &
pids+=($!)

log "numo run as $operator_user (leader election on, Lease numo-system/numo-leader)"
cp "$kubeconfig" "$work/operator.kubeconfig"
user="$(kubectl --kubeconfig "$work/operator.kubeconfig" config view -o jsonpath='{.contexts[?(@.name=="'"$(kubectl --kubeconfig "$work/operator.kubeconfig" config current-context)"'")].context.user}')"
# Impersonation (`as:` in the file) is named after kubectl's flag in `kubectl config set`: act-as.
kubectl --kubeconfig "$work/operator.kubeconfig" config set "users.$user.act-as" "$operator_user" >/dev/null
[[ "$(kubectl --kubeconfig "$work/operator.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}')" == "$operator_user" ]] ||
  { log "the operator kubeconfig does not act as $operator_user"; exit 1; }
KUBECONFIG="$work/operator.kubeconfig" POD_NAMESPACE=numo-system "$numo" run --metrics-address 127.0.0.1:0 \
  --log-format json >"$work/numo.log" 2>&1 &
pids+=($!)

log "applying config/samples in namespace $namespace"
kubectl create namespace "$namespace" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl apply -n "$namespace" -k config/samples >/dev/null
kubectl wait -n "$namespace" mutexrunconfig/gated-workers --for=jsonpath='{.status.phase}'=Idle --timeout=120s >/dev/null
kubectl get -n numo-system lease numo-leader -o jsonpath='{.spec.holderIdentity}' | grep -q . ||
  { log "numo holds no Lease"; exit 1; }
before="$(kubectl get mcp -o jsonpath='{range .items[*]}{.metadata.name}={.spec.paused}:{.spec.nodeSelector}{"\n"}{end}' | sort)"

log "upgrading the cluster to $to"
"$sim" upgrade --version "$to" >/dev/null
kubectl wait -n "$namespace" mutexrunconfig/gated-workers --for=jsonpath='{.status.phase}'=Completed --timeout=600s >/dev/null

after="$(kubectl get mcp -o jsonpath='{range .items[*]}{.metadata.name}={.spec.paused}:{.spec.nodeSelector}{"\n"}{end}' | sort)"
[[ "$before" == "$after" ]] || { log "pools not restored:"; diff <(echo "$before") <(echo "$after") >&2; exit 1; }
# No NFD here: each worker's release is its current rendered config's, as numo read it during the rollout.
behind="$(node_releases node-role.kubernetes.io/worker | awk -v to="$to" '$2 != to' )"
[[ -z "$behind" ]] || { log "workers not on $to:"; echo "$behind" >&2; exit 1; }
jobs="$(kubectl get jobs -n "$namespace" -l app.kubernetes.io/managed-by=numo -o name | wc -l)"
[[ "$jobs" == $((2 * workers)) ]] || { log "expected $((2 * workers)) Jobs (gate and cleanup per worker), found $jobs"; exit 1; }
if grep -q '"status":403\|forbidden' "$work/numo.log"; then
  log "numo was denied an API call:"; grep '"status":403\|forbidden' "$work/numo.log" | head -n 5 >&2; exit 1
fi
kubectl get mutexrunconfig -n "$namespace" -o wide >&2
log "every worker runs $to, pools restored, $jobs Jobs, no request of numo denied"
