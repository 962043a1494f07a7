#!/usr/bin/env bash
# Everything CI checks (`make test`, `.ci/run`): formatting, clippy, the console plugin (type check, component tests,
# build), every test (unit, schema, and integration tests against a local cluster, the console plugin's end-to-end
# test in Chromium among them), the OLM bundle, the images, and install, upgrade and removal with kubectl and
# through OLM. Prints the time each step took.
#
#   hack/test.sh
#
# Environment:
#   KEEP_CLUSTER=1   leave the test cluster running at the end (it is stopped otherwise, if this run started it;
#                    a cluster that was already running is left as it was)
#   CLUSTER          the test cluster's name (default numo-test, the one the test kit starts by itself)
set -euo pipefail
log_prefix=test
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"
cd "$repo_dir"

cluster="${CLUSTER:-numo-test}"
started=$SECONDS
timings=()

# Runs "$@" as the step named $1 and records how long it took.
step() {
  local name="$1" start=$SECONDS
  shift
  log "── $name"
  "$@"
  timings+=("$(printf '%-28s %4ss' "$name" $((SECONDS - start)))")
}

report() {
  local rc=$?
  # A run cut short leaves no release matrix behind.
  if [[ -n "${matrix_pid:-}" ]] && kill -0 "$matrix_pid" 2>/dev/null; then
    pkill -P "$matrix_pid" 2>/dev/null || true
    kill "$matrix_pid" 2>/dev/null || true
  fi
  if [[ "${stop_matrix:-0}" == 1 && "${KEEP_CLUSTER:-}" != 1 ]] && cluster_ready "$matrix_cluster"; then
    "$hack_dir/cluster-down.sh" "$matrix_cluster" >/dev/null || true
  fi
  if [[ "${stop_cluster:-0}" == 1 && "${KEEP_CLUSTER:-}" != 1 ]]; then
    step "stop cluster $cluster" "$hack_dir/cluster-down.sh" "$cluster" || rc=$?
  elif cluster_ready "$cluster"; then
    log "cluster $cluster left running: hack/cluster-down.sh $cluster"
  fi
  log "timings:"
  for line in "${timings[@]}"; do log "  $line"; done
  log "total $((SECONDS - started))s: $([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)")"
  exit "$rc"
}
trap report EXIT

step "build tools" "$hack_dir/build-tools.sh" kubernetes etcd kwok olm alertmanager prometheus prometheus-operator \
  openshift-api fleet-crds config-policy-controller
# The ConsolePlugin CRD of openshift/api, for the test of the ConsolePlugin numo applies.
export NUMO_OPENSHIFT_API_CRDS="$OPENSHIFT_API_CRDS"
# The CRDs of ACM's policy framework, TALM and Argo CD, which tests/fleet_samples.rs validates the fleet samples with.
export NUMO_FLEET_CRDS="$FLEET_CRDS"
# ... and ACM's configuration policy controller, which it runs to evaluate the fleet policies while numo rolls out.
export NUMO_CONFIG_POLICY_CONTROLLER="$CONFIG_POLICY_CONTROLLER_BIN/config-policy-controller"
# The alert health check's tests start a real Alertmanager (numo_testkit::alertmanager).
export NUMO_ALERTMANAGER_BIN="$ALERTMANAGER_BIN/alertmanager"
# numo's alert rules are tested with promtool (tests/alert_rules.rs).
export NUMO_PROMTOOL_BIN="$PROMETHEUS_BIN/promtool"

stop_cluster=0
cluster_ready "$cluster" || stop_cluster=1
# The test kit installs the CRDs itself (in-process, once per test binary).
step "start cluster $cluster" env NUMO_SKIP_CRDS=1 "$hack_dir/cluster-up.sh" "$cluster" >/dev/null
NUMO_TEST_KUBECONFIG="$(cluster_kubeconfig "$cluster")"
export NUMO_TEST_KUBECONFIG

step "cargo fmt --check" cargo fmt --all -- --check
step "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
# The console plugin from its lockfile: type check, ESLint and Prettier, the i18n check, component tests, the
# production build (served by the integration tests) and the end-to-end test's harness (opened in Chromium by
# tests/console_plugin.rs).
step "console plugin (npm)" "$hack_dir/console-plugin.sh" all
step "cargo test (build)" cargo test --workspace --no-run
# The release matrix: the tests below play the newest OpenShift release numo supports; the rollout, other-hands and
# config-change tests run again against the simulator as the oldest, OpenShift 4.16, whose machine-config operator
# puts the built-in pools' selectors back on every sync, writes no MachineConfigNodes and has no admission policy of
# its own (tests/support: NUMO_TEST_OPENSHIFT_VERSION). They run beside the others, on a
# cluster of their own (each cluster has its own lock), from the binaries just built: the tests mostly wait for
# simulated reboots and Jobs, so the two runs share the machine's cores well.
matrix_release=4.16
matrix_cluster="$cluster-matrix"
stop_matrix=0
cluster_ready "$matrix_cluster" || stop_matrix=1
step "start cluster $matrix_cluster" env NUMO_SKIP_CRDS=1 "$hack_dir/cluster-up.sh" "$matrix_cluster" >/dev/null
matrix_tests=(rollout other_hands config_change)
mapfile -t matrix_binaries < <(
  cargo test --no-run --message-format=json "${matrix_tests[@]/#/--test=}" 2>/dev/null |
    jq -r 'select(.reason == "compiler-artifact" and .profile.test == true) | .executable // empty'
)
[[ ${#matrix_binaries[@]} == "${#matrix_tests[@]}" ]] || die "the $matrix_release matrix's test binaries: ${matrix_binaries[*]}"
matrix_log="$(mktemp "${TMPDIR:-/tmp}/numo-matrix.XXXXXX")"
matrix_started=$SECONDS
(
  export NUMO_TEST_KUBECONFIG NUMO_TEST_OPENSHIFT_VERSION=$matrix_release
  NUMO_TEST_KUBECONFIG="$(cluster_kubeconfig "$matrix_cluster")"
  rc=0
  for binary in "${matrix_binaries[@]}"; do "$binary" || rc=1; done
  echo "the $matrix_release matrix ran for $((SECONDS - matrix_started))s"
  exit "$rc"
) >"$matrix_log" 2>&1 &
matrix_pid=$!
# Waits for the release matrix, prints its results (all of its output when it failed) and stops its cluster.
matrix_results() {
  local rc=0
  wait "$matrix_pid" || rc=$?
  if [[ $rc == 0 ]]; then grep -a '^test result\|^the [0-9.]* matrix ran' "$matrix_log"; else cat "$matrix_log"; fi
  [[ $stop_matrix == 1 && "${KEEP_CLUSTER:-}" != 1 ]] && "$hack_dir/cluster-down.sh" "$matrix_cluster" >/dev/null
  rm -f "$matrix_log"
  return "$rc"
}
step "cargo test" cargo test --workspace --no-fail-fast
step "cargo test (OpenShift $matrix_release)" matrix_results

# The OLM bundle: equal to what config/ generates, and operator-sdk's operatorframework suite reports no error and no
# warning (builds operator-sdk into the cache on first use).
step "OLM bundle validation" "$hack_dir/validate-bundle.sh"

# The lifecycle as admins drive it, each on a fresh cluster of its own: the images built FROM scratch; install,
# upgrade mid-rollout and removal with kubectl apply -k, and through real OLM.
step "images (buildah)" "$hack_dir/image-check.sh"
step "install check (kubectl)" "$hack_dir/install-check.sh"
# The numo that drives the OLM check's rollout is the one image-check took out of the operator image.
step "OLM check" env NUMO_BINARY="${CARGO_TARGET_DIR:-$repo_dir/target}/image-check/numo" "$hack_dir/olm-check.sh"
