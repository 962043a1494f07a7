#!/usr/bin/env bash
# Failure-domain waves on a simulated storage cluster (ODF storage nodes, Rook's managed disruption budgets): the same
# gated rollout by numo's release build in name order and in topology orders, each case on a fresh cluster; prints
# one line per case and a summary (see benches/topology.rs for what each figure means).
#
#   hack/bench-topology.sh [SHAPE]       (default racks9: 9 workers in 3 racks; zones60: 60 workers in 3 zones)
#
# Environment:
#   CASES      the orders and concurrencies, ORDER:C separated by spaces
#              (default "name:1 name:3 DomainAtATime:3 Spread:3"); an order other than name needs numo's
#              spec.topology: with a numo without it, the case says "skipped"
#   TIME_SCALE how much faster than a real cluster the world runs: Rook's and the drain controller's delays are
#              divided by it (default 20)
#   PGS_CLEAN  seconds Ceph's PGs take to be clean once every OSD is back (default 10)
#   REBOOT     seconds a node reboots (default 15)
#   CLUSTER    the cluster's name (default numo-bench-topology; it is deleted before each case and at the end)
set -euo pipefail
log_prefix=bench-topology
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
cd "$repo_dir"

export SHAPE="${1:-${SHAPE:-racks9}}" RUST_LOG="${RUST_LOG:-warn}"
cases="${CASES:-name:1 name:3 DomainAtATime:3 Spread:3}"
cluster="${CLUSTER:-numo-bench-topology}"

log "building the release benchmark (numo and the test world)"
cargo bench --bench topology --no-run

trap '"$hack_dir/cluster-down.sh" "$cluster" >/dev/null 2>&1 || true' EXIT
results=()
for case in $cases; do
  export ORDER="${case%%:*}" C="${case##*:}"
  "$hack_dir/cluster-down.sh" "$cluster" >/dev/null 2>&1 || true
  NUMO_SKIP_CRDS=1 "$hack_dir/cluster-up.sh" "$cluster" >/dev/null
  NUMO_TEST_KUBECONFIG="$(cluster_kubeconfig "$cluster")"
  export NUMO_TEST_KUBECONFIG
  log "$SHAPE: $ORDER, concurrency $C, on $(nproc) cores"
  line="$(cargo bench --quiet --bench topology | tail -1)" || line="$SHAPE $ORDER C=$C: failed"
  echo "$line"
  results+=("$line")
done
log "summary"
printf '%s\n' "${results[@]}"
