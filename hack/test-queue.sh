#!/usr/bin/env bash
# Runs every test binary of the workspace (and its doc tests) from one queue, on several local clusters at once:
# one worker per cluster takes the next binary, runs it against its cluster, and takes the next. A test holds its
# cluster's lock for its whole world (nodes, pools, ClusterVersion are cluster-wide), so on one cluster the worlds
# take turns; most of a world's time is spent waiting for simulated reboots and Jobs, so several clusters share
# the machine's cores well. The release matrix (the rollout, other-hands and config-change tests again as the
# oldest release numo supports) is part of the same queue.
#
#   hack/test-queue.sh                 # CLUSTER (default numo-test), WORLDS (clusters, default 3)
#
# Builds the test binaries first (`cargo test --workspace --no-run`). Starts the clusters it needs
# (<CLUSTER>, <CLUSTER>-2, ...) and stops those it started unless KEEP_CLUSTER=1. Prints each binary's time,
# slowest first, and the whole output of every binary that failed. Exits non-zero when one failed.
set -euo pipefail
log_prefix=test-queue
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
cd "$repo_dir"

cluster="${CLUSTER:-numo-test}" worlds="${WORLDS:-3}"
[[ "$worlds" =~ ^[1-9][0-9]*$ ]] || die "WORLDS must be a positive number, not '$worlds'"
# The oldest release numo supports, and the suites that run again as it (tests/support:
# NUMO_TEST_OPENSHIFT_VERSION): its machine-config operator puts the built-in pools' selectors back on every sync,
# writes no MachineConfigNodes and has no admission policy of its own.
matrix_release=4.16
matrix_tests=(rollout other_hands config_change turn_edges)
# The slowest binaries go first, so that no cluster is left with a long one at the end (from this script's own
# timings; the rest follow in cargo's order).
slow_first=(other_hands other_hands@"$matrix_release" rollout_failures turn_edges turn_edges@"$matrix_release" rollout rollout@"$matrix_release"
  safe_to_proceed config_change config_change@"$matrix_release" pool_shapes platform_writers fleet_samples whole_update
  apiserver_restart pools_replaced run_config_faults mco cluster_smoke plan_preview forged_jobs topology
  console_plugin)

work="$(mktemp -d "${TMPDIR:-/tmp}/numo-test-queue.XXXXXX")"
started_clusters=()
finish() {
  local rc=$?
  # A run cut short leaves no worker behind.
  jobs -p | xargs -r kill 2>/dev/null || true
  if [[ "${KEEP_CLUSTER:-}" != 1 ]]; then
    for name in "${started_clusters[@]}"; do "$hack_dir/cluster-down.sh" "$name" >/dev/null 2>&1 || true; done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap finish EXIT

# The queue: one line per entry, "<name>\t<release or ->\t<package dir>\t<executable>".
log "building the test binaries"
cargo test --workspace --no-run --message-format=json |
  jq -r 'select(.reason == "compiler-artifact" and .profile.test == true and .executable != null)
    | [.target.name, "-", (.manifest_path | sub("/Cargo.toml$"; "")), .executable] | @tsv' >"$work/binaries"
[[ -s "$work/binaries" ]] || die "cargo test --no-run gave no test binary"
for test in "${matrix_tests[@]}"; do
  line="$(awk -F'\t' -v t="$test" '$1 == t' "$work/binaries")"
  [[ -n "$line" ]] || die "no test binary $test for the $matrix_release matrix"
  awk -F'\t' -v OFS='\t' -v r="$matrix_release" '{ $2 = r; print }' <<<"$line" >>"$work/binaries"
done
for name in "${slow_first[@]}"; do
  test="${name%@*}" release=-
  [[ "$name" == *@* ]] && release="${name#*@}"
  awk -F'\t' -v t="$test" -v r="$release" '$1 == t && $2 == r' "$work/binaries"
done >"$work/queue"
# Then the others in cargo's order, and the doc tests, which have no binary of their own.
grep -v -F -x -f "$work/queue" "$work/binaries" >>"$work/queue" || true
printf 'doc tests\t-\t%s\t-\n' "$repo_dir" >>"$work/queue"
total="$(wc -l <"$work/queue")"
log "$total entries on $worlds clusters"

# next_entry: prints the next line of the queue and removes it (under a lock), or fails when it is empty.
next_entry() {
  local line
  exec {queue_fd}<>"$work/queue.lock"
  flock "$queue_fd"
  line="$(head -n 1 "$work/queue")"
  [[ -n "$line" ]] && sed -i 1d "$work/queue"
  exec {queue_fd}>&-
  [[ -n "$line" ]] && printf '%s\n' "$line"
}

# worker N KUBECONFIG: runs entries until the queue is empty; writes "<seconds>\t<rc>\t<name>" per entry.
worker() {
  local n="$1" kubeconfig="$2" entry name release dir executable log start rc
  while entry="$(next_entry)"; do
    IFS=$'\t' read -r name release dir executable <<<"$entry"
    [[ "$release" != - ]] && name="$name ($release)"
    log="$work/$(tr -c 'a-zA-Z0-9_\n' _ <<<"$name").log"
    start=$SECONDS rc=0
    (
      cd "$dir"
      export NUMO_TEST_KUBECONFIG="$kubeconfig"
      if [[ "$release" != - ]]; then export NUMO_TEST_OPENSHIFT_VERSION="$release"; fi
      if [[ "$executable" == - ]]; then exec cargo test --workspace --doc; fi
      exec "$executable"
    ) >"$log" 2>&1 || rc=$?
    printf '%s\t%s\t%s\t%s\n' "$((SECONDS - start))" "$rc" "$name" "$log" >>"$work/results"
    log "[$n] $name: $([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)") in $((SECONDS - start))s"
  done
}

for n in $(seq "$worlds"); do
  name="$cluster" && [[ $n -gt 1 ]] && name="$cluster-$n"
  if ! cluster_ready "$name"; then
    started_clusters+=("$name")
    NUMO_SKIP_CRDS=1 "$hack_dir/cluster-up.sh" "$name" >/dev/null 2>"$work/cluster-up-$name.log" ||
      { cat "$work/cluster-up-$name.log" >&2; die "cluster $name did not start"; }
    log "cluster $name started"
  fi
  worker "$n" "$(cluster_kubeconfig "$name")" &
done
wait

failed=0
while IFS=$'\t' read -r seconds rc name log; do
  if [[ $rc != 0 ]]; then
    failed=$((failed + 1))
    log "── $name failed (exit $rc); its output:"
    cat "$log" >&2
  fi
done <"$work/results"
log "each binary's time, slowest first:"
sort -t $'\t' -k1,1nr "$work/results" | while IFS=$'\t' read -r seconds rc name _; do
  outcome=ok
  [[ $rc == 0 ]] || outcome=FAILED
  log "$(printf '  %5ss %-6s %s' "$seconds" "$outcome" "$name")"
done
ran="$(wc -l <"$work/results")"
[[ "$ran" == "$total" ]] || die "only $ran of $total entries ran"
[[ $failed == 0 ]] || die "$failed of $total failed"
log "all $total passed"
