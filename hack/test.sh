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
#   WORLDS           how many clusters the tests run on at once (default 3: <CLUSTER>, <CLUSTER>-2, <CLUSTER>-3;
#                    hack/test-queue.sh)
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
# production build (served by the integration tests) and the console shell that loads it in Chromium
# (tests/console_plugin.rs, tests/console_plugin_load.rs).
step "console plugin (npm)" "$hack_dir/console-plugin.sh" all
step "cargo test (build)" cargo test --workspace --no-run
# Every test binary from one queue, on $WORLDS clusters at once (the first is $cluster): the tests mostly wait for
# simulated reboots and Jobs, so several worlds share the machine's cores well. The queue holds the release matrix
# too: the rollout, other-hands and config-change tests run again as the oldest release numo supports.
worlds="${WORLDS:-3}"
step "cargo test ($worlds clusters)" env CLUSTER="$cluster" WORLDS="$worlds" "$hack_dir/test-queue.sh"

# The OLM bundle: equal to what config/ generates, and operator-sdk's operatorframework suite reports no error and no
# warning (builds operator-sdk into the cache on first use).
step "OLM bundle validation" "$hack_dir/validate-bundle.sh"

# The lifecycle as admins drive it, each on a fresh cluster of its own: the images built FROM scratch; install,
# upgrade mid-rollout and removal with kubectl apply -k, and through real OLM.
step "images (buildah)" "$hack_dir/image-check.sh"
step "install check (kubectl)" "$hack_dir/install-check.sh"
# The numo that drives the OLM check's rollout is the one image-check took out of the operator image.
step "OLM check" env NUMO_BINARY="${CARGO_TARGET_DIR:-$repo_dir/target}/image-check/numo" "$hack_dir/olm-check.sh"
