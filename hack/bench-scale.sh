#!/usr/bin/env bash
# numo at scale: a fresh test-world cluster, N simulated workers, one gated rollout C nodes at a time by numo's release
# build running as its ServiceAccount; prints one line (see benches/scale.rs for what each figure means).
#
#   hack/bench-scale.sh [N] [C]          (default N=100 C=5; `make bench-scale N=2000 C=100`)
#
# Environment:
#   CLUSTER   the cluster's name (default numo-bench; it is deleted first and at the end)
#   IDLE      seconds numo is watched idle after the rollout (default 30)
set -euo pipefail
log_prefix=bench-scale
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
cd "$repo_dir"

export N="${1:-${N:-100}}" C="${2:-${C:-5}}" RUST_LOG="${RUST_LOG:-warn}"
cluster="${CLUSTER:-numo-bench}"

log "building the release benchmark (numo and the test world)"
cargo bench --bench scale --no-run

"$hack_dir/cluster-down.sh" "$cluster" >/dev/null 2>&1 || true
trap '"$hack_dir/cluster-down.sh" "$cluster" >/dev/null 2>&1 || true' EXIT
NUMO_SKIP_CRDS=1 "$hack_dir/cluster-up.sh" "$cluster" >/dev/null
NUMO_TEST_KUBECONFIG="$(cluster_kubeconfig "$cluster")"
export NUMO_TEST_KUBECONFIG

log "N=$N C=$C on $(nproc) cores"
cargo bench --bench scale
