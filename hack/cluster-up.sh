#!/usr/bin/env bash
# Starts (or reuses) a local cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, all built
# from source by hack/build-tools.sh, bound to 127.0.0.1; kwok Stages from hack/kwok/stages.yaml; the OpenShift CRDs
# and numo's CRDs installed. Several clusters with different names run side by side (kwokctl picks free ports).
#
#   hack/cluster-up.sh [NAME]            (default NAME: numo)
#
# Progress goes to stderr; the last line on stdout is the kubeconfig path, so `kubeconfig=$(hack/cluster-up.sh x)`.
# Environment:
#   NODES=N             also create N plain kwok nodes kwok-node-0..N-1 (default 0; the simulator seeds real ones)
#   NUMO_SKIP_CRDS=1    do not install CRDs (the test kit installs them itself, in-process)
#   NUMO_OPENSHIFT_CRDS folder of the real OpenShift CRDs (default: ../shared/openshift-crds beside the repository;
#                       without either, CRDs derived from numo's Rust types)
#   KWOK_WORKDIR        where kwokctl keeps cluster state (default: $NUMO_CACHE/kwok-workdir)
set -euo pipefail
log_prefix=cluster-up
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

name="${1:-numo}"
check_cluster_name "$name"
started=$SECONDS

"$hack_dir/build-tools.sh" kubernetes etcd kwok

kwokctl_create_args=(
  --config "$hack_dir/kwok/kwokctl.yaml"
  --config "$hack_dir/kwok/stages.yaml"
  create cluster
  --runtime binary
  --kube-apiserver-binary "$K8S_BIN/kube-apiserver"
  --kube-controller-manager-binary "$K8S_BIN/kube-controller-manager"
  --kube-scheduler-binary "$K8S_BIN/kube-scheduler"
  --etcd-binary "$ETCD_BIN/etcd"
  --kwok-controller-binary "$KWOK_BIN/kwok"
  # Leave ~/.kube/config alone: callers use the cluster's own kubeconfig.
  --kubeconfig ""
  --wait 2m
)

# kwokctl downloads every binary it is not given; a URL in its plan means a flag above is missing.
check_no_download() {
  local plan
  plan="$(kwokctl --name "$name" --dry-run "${kwokctl_create_args[@]}" 2>&1)" || die "kwokctl --dry-run failed: $plan"
  if grep -E '^# Download https?://' <<<"$plan" >&2; then
    die "kwokctl would download the binaries above; point it at local builds"
  fi
}

start_or_reuse() {
  if cluster_ready "$name"; then
    log "cluster $name is already running"
    return
  fi
  if [[ -f "$(cluster_dir "$name")/kwok.yaml" ]]; then
    log "cluster $name exists but is stopped; starting it"
    if kwokctl --name "$name" start cluster --wait 2m {lock_fd}<&- >&2 && cluster_ready "$name"; then
      return
    fi
    log "cluster $name did not start; deleting and creating it again"
    kwokctl --name "$name" delete cluster --kubeconfig "$(cluster_kubeconfig "$name")" >&2 || true
    rm -rf "$(cluster_dir "$name")"
  fi
  check_no_download
  log "creating cluster $name (state: $(cluster_dir "$name"))"
  kwokctl --name "$name" "${kwokctl_create_args[@]}" {lock_fd}<&- >&2
  cluster_ready "$name" || die "cluster $name was created but its API server is not ready; logs: $(cluster_dir "$name")/logs"
}
with_workdir_lock start_or_reuse

kubeconfig="$(cluster_kubeconfig "$name")"
export KUBECONFIG="$kubeconfig"

nodes="${NODES:-0}"
for ((i = 0; i < nodes; i++)); do
  kubectl apply --server-side --field-manager numo-cluster-up -f - >&2 <<EOF
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    type: kwok
EOF
done
if ((nodes > 0)); then
  kubectl wait --for condition=Ready --timeout 60s node -l type=kwok >&2
fi

if [[ "${NUMO_SKIP_CRDS:-}" != 1 ]]; then
  crd_start=$SECONDS
  # numo-sim finds the real CRDs itself ($NUMO_OPENSHIFT_CRDS, else ../shared/openshift-crds; see
  # docs/development.md) and logs where they came from.
  log "installing the OpenShift CRDs"
  (cd "$repo_dir" && cargo run --quiet -p numo-simulator --bin numo-sim -- install-crds) >&2
  if [[ -f "$repo_dir/config/crd/kustomization.yaml" ]]; then
    log "installing numo's CRDs from config/crd"
    numo_crds="$(kubectl apply --server-side --force-conflicts --field-manager numo-cluster-up -k "$repo_dir/config/crd" -o name)"
    # shellcheck disable=SC2086 # one name per word
    kubectl wait --for condition=Established --timeout 60s $numo_crds >&2
  else
    log "config/crd has no kustomization yet (make crds); numo's CRDs are not installed"
  fi
  log "CRDs installed in $((SECONDS - crd_start))s"
fi

log "cluster $name ready in $((SECONDS - started))s"
log "kubectl --kubeconfig $kubeconfig get nodes"
echo "$kubeconfig"
