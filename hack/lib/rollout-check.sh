# Shared steps of the scripts that install numo and watch it drive a rollout of a simulated OpenShift
# (hack/install-check.sh, hack/olm-check.sh); sourced, not run, from the repository root. It sources
# hack/versions.sh and hack/lib/openshift.sh, and sets `previous` (the release this tree's bundle replaces) and
# `current` (the crate version). The sourcing script sets `log_prefix`, `work` (a scratch directory), `kubeconfig`
# (the cluster's admin kubeconfig), `operator_ns`, `samples_ns` and `numo` (the numo binary), and puts kubectl on
# PATH with KUBECONFIG exported.

# shellcheck source=hack/versions.sh
source "$(dirname "${BASH_SOURCE[0]}")/../versions.sh"
# shellcheck source=hack/lib/openshift.sh
source "$(dirname "${BASH_SOURCE[0]}")/openshift.sh"
previous="$(sed -n 's/^replaces: //p' config/manifests/bundle.yaml)"
current="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"

check_log() { printf '[%s %s] %s\n' "$log_prefix" "$(date +%H:%M:%S)" "$*" >&2; }
fail() { check_log "$*"; exit 1; }

numo_pid="" numo_runs=0 background_pids=()

# Writes $work/operator.kubeconfig: the admin kubeconfig acting as ServiceAccount $1 (namespace/name), so that
# numo, run here as a local process, has exactly the permissions that ServiceAccount has.
operator_kubeconfig() {
  local user="system:serviceaccount:${1%%/*}:${1##*/}" file="$work/operator.kubeconfig" context name
  cp "$kubeconfig" "$file"
  context="$(kubectl --kubeconfig "$file" config current-context)"
  name="$(kubectl --kubeconfig "$file" config view -o jsonpath='{.contexts[?(@.name=="'"$context"'")].context.user}')"
  # Impersonation (`as:` in the file) is named after kubectl's flag in `kubectl config set`: act-as.
  kubectl --kubeconfig "$file" config set "users.$name.act-as" "$user" >/dev/null
  [[ "$(kubectl --kubeconfig "$file" auth whoami -o jsonpath='{.status.userInfo.username}')" == "$user" ]] ||
    fail "the operator kubeconfig does not act as $user"
}

# Starts numo (the pod of the operator's Deployment, played by a local process) as $work/operator.kubeconfig's
# identity, with leader election on, in the namespace $1, with the environment the Deployment gives it (so it puts
# its admission policy in place, exempting that identity). Each run logs to $work/numo-<n>.log.
start_numo() {
  numo_runs=$((numo_runs + 1))
  KUBECONFIG="$work/operator.kubeconfig" POD_NAMESPACE="$1" SERVICE_ACCOUNT_NAME=numo-operator \
    "$numo" run --metrics-address 127.0.0.1:0 \
    --log-format json >"$work/numo-$numo_runs.log" 2>&1 &
  numo_pid=$!
  check_log "numo started (run $numo_runs, pid $numo_pid)"
}

# Stops the running numo the way the kubelet stops a pod: SIGTERM, and waits for it to exit.
stop_numo() {
  [[ -n "$numo_pid" ]] || return 0
  kill -TERM "$numo_pid" 2>/dev/null || true
  wait "$numo_pid" 2>/dev/null || true
  check_log "numo stopped (pid $numo_pid)"
  numo_pid=""
}

# The upgrade of the operator's Deployment, as its rolling update does it: the new pod starts (and waits for the
# Lease) while the old one still runs; then the old one stops. Sets `done_at_upgrade`, the workers done by then,
# and fails if that was all $1 of them (the upgrade would not have happened mid-rollout).
hand_over_numo() {
  local workers="$1" old_pid="$numo_pid" new_pid
  start_numo "$operator_ns"
  new_pid="$numo_pid"
  numo_pid="$old_pid" && stop_numo && numo_pid="$new_pid"
  done_at_upgrade="$(completed_nodes)"
  [[ "$done_at_upgrade" -lt "$workers" ]] || fail "the rollout finished before the upgrade; raise WORKERS"
  check_log "numo $current took over with $done_at_upgrade of $workers workers done"
}

# The image of the operator's Deployment.
deployment_image() {
  kubectl get deployment -n "$operator_ns" numo-operator -o jsonpath='{.spec.template.spec.containers[0].image}'
}

# Waits up to $1 seconds until "${@:2}" succeeds.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" 2>/dev/null; do
    ((SECONDS < deadline)) || return 1
    sleep 1
  done
}

# The run config config/samples creates.
run_config() { kubectl get -n "$samples_ns" mutexrunconfig gated-workers -o json; }
run_config_phase() { kubectl get -n "$samples_ns" mutexrunconfig gated-workers -o jsonpath='{.status.phase}'; }
completed_nodes() { run_config | jq '.status.completedNodes // [] | length'; }
# At least $2 workers completed in the rollout to $1: the status of the run config's rollout to $1, not the Idle status
# before it (which lists every worker as done at the version they ran).
at_least_completed() {
  run_config | jq -e --arg to "$1" --argjson n "$2" \
    '.status.targetVersion == $to and ((.status.completedNodes // []) | length) >= $n' >/dev/null
}
phase_is() { [[ "$(run_config_phase)" == "$1" ]]; }

# This tree's numo stands in for the previous release's pod: started as the operator's ServiceAccount, with the
# samples applied, until their run config is Idle. It names what it asks for in its status before it acts (the Jobs it
# creates, the pools it holds), so it needs this tree's CRDs: a real upgrade brings them before the new numo starts,
# and the previous numo ran with its own. The previous release's RBAC stays until the upgrade.
start_previous_numo() {
  kubectl apply --server-side --force-conflicts -k config/crd >/dev/null
  operator_kubeconfig "$operator_ns/numo-operator"
  start_numo "$operator_ns"
  kubectl create namespace "$samples_ns" >/dev/null
  kubectl apply -n "$samples_ns" -k config/samples >/dev/null
  wait_until 120 phase_is Idle || fail "the run config never became Idle (phase '$(run_config_phase)')"
}

# Every MachineConfigPool's paused flag, node selector and numo annotations, one line per pool.
pools_state() {
  kubectl get mcp -o json | jq -r '.items[] | "\(.metadata.name) paused=\(.spec.paused) selector=\(.spec.nodeSelector | tojson) annotations=\(.metadata.annotations // {} | with_entries(select(.key | startswith("openshift-optional.skrzypek.io/"))) | tojson)"' | sort
}

# Fails unless the rollout of $1 workers to $2 finished as a user would check it: every worker runs $2, the pools are
# as in $3 (pools_state before the rollout), no node skipped, no numo label left on a node, and exactly one gate and
# one cleanup Job per worker, none created twice.
assert_rollout_done() {
  local workers="$1" to="$2" before="$3" after behind jobs
  after="$(pools_state)"
  [[ "$before" == "$after" ]] || { diff <(echo "$before") <(echo "$after") >&2; fail "pools not restored (above)"; }
  # No NFD here: each worker's release is its current rendered config's.
  behind="$(node_releases node-role.kubernetes.io/worker | awk -v to="$to" '$2 != to')"
  [[ -z "$behind" ]] || { echo "$behind" >&2; fail "workers not on $to (above)"; }
  run_config | jq -e --argjson n "$workers" '(.status.completedNodes | length) == $n and
    ((.status.skippedNodes // []) | length) == 0' >/dev/null || fail "not every worker completed, or one was skipped"
  assert_no_numo_label
  jobs="$(kubectl get jobs -n "$samples_ns" -l app.kubernetes.io/managed-by=numo -o json)"
  echo "$jobs" | jq -e --argjson n "$((2 * workers))" '(.items | length) == $n' >/dev/null ||
    fail "expected $((2 * workers)) Jobs (a gate and a cleanup Job per worker), found $(echo "$jobs" | jq '.items | length')"
  # One Job per node, rule and phase: a second attempt or a repeated Job would share all three.
  echo "$jobs" | jq -e '[.items[].metadata.labels | [.["openshift-optional.skrzypek.io/node"], .["openshift-optional.skrzypek.io/rule"], .["openshift-optional.skrzypek.io/phase"]] | tostring] | (unique | length) == length' \
    >/dev/null || fail "a Job was created twice for one node, rule and phase"
}

# Fails unless a target pool is paused and every pool that differs from $1 (pools_state before the rollout) says
# which run config changed it: what an admin finds after numo was removed mid-rollout.
assert_pools_recorded() {
  local unrecorded
  pools_state | grep -q 'paused=true' || fail "no target pool is paused mid-rollout"
  unrecorded="$(comm -13 <(echo "$1") <(pools_state) | grep -v 'claimed-by' || true)"
  [[ -z "$unrecorded" ]] || { echo "$unrecorded" >&2; fail "a pool numo changed carries no record of it (above)"; }
}

# Fails when a node carries one of numo's labels.
assert_no_numo_label() {
  kubectl get nodes -o json |
    jq -e '[.items[].metadata.labels | keys[] | select(contains("openshift-optional.skrzypek.io"))] | length == 0' \
    >/dev/null || fail "a node still carries a numo label"
}

# Fails when a Job keeps one of numo's finalizers.
assert_no_numo_finalizer() {
  local finalized
  finalized="$(kubectl get jobs -A -o json |
    jq -r '.items[] | select(.metadata.finalizers // [] | any(startswith("openshift-optional"))) | .metadata.name')"
  [[ -z "$finalized" ]] || fail "Jobs keep numo's finalizer: $finalized"
}

# Fails when a numo log (the files named, default all of them) shows a request the API server denied. numo-1.log is
# the first run, this tree's numo under the previous release's RBAC: there, and only there, the watches of the
# health-check sources that release did not grant (ClusterOperators, PodDisruptionBudgets), of MachineOSConfigs
# (image mode) and of ODF's StorageClusters (the default failure-domain key), are denied by design; they are optional and never hold up the controller (src/watches.rs). So is the admission policy (and reading the CRD
# that owns it), which numo then reports as not in force (src/admission_policy.rs), and the rollout's timeline record
# (a ConfigMap), which numo logs as not kept (src/rollout_record.rs).
assert_never_denied() {
  local logs=("$@") denied="" log lines
  [[ ${#logs[@]} -gt 0 ]] || logs=("$work"/numo-*.log)
  for log in "${logs[@]}"; do
    lines="$(grep -h '"status":403\|forbidden' "$log" || true)"
    if [[ "$(basename "$log")" == numo-1.log ]]; then
      lines="$(grep -v 'clusteroperators\|poddisruptionbudgets\|machineosconfigs\|machineconfignodes\|storageclusters\|"kind":"ClusterOperators"\|"kind":"PodDisruptionBudgets"\|"kind":"MachineOSConfigs"\|"kind":"MachineConfigNodes"\|"kind":"StorageClusters"\|validatingadmissionpolic\|customresourcedefinitions\|configmaps' <<<"$lines" || true)"
    fi
    [[ -n "$lines" ]] && denied+="$lines"$'\n'
  done
  if [[ -n "$denied" ]]; then
    head -n 5 <<<"$denied" >&2
    fail "numo was denied an API call (above)"
  fi
}

# The admission policy numo-holds and its binding, as kubectl names them; empty when there are none.
admission_policy() { kubectl get validatingadmissionpolicies,validatingadmissionpolicybindings -o name | grep numo-holds || true; }
policy_in_force() { [[ "$(admission_policy | wc -l)" == 2 ]]; }
policy_gone() { [[ -z "$(admission_policy)" ]]; }

# Fails unless the console's "Resume updates" on the paused target pool (a dry run) is refused by numo's policy with
# a message that names the run config.
assert_resume_refused() {
  local pool out
  pool="$(kubectl get mcp -o json | jq -r '[.items[] | select(.spec.paused and .metadata.annotations["openshift-optional.skrzypek.io/claimed-by"] != null)][0].metadata.name')"
  [[ "$pool" != null ]] || fail "no claimed, paused pool to try"
  if out="$(kubectl patch mcp "$pool" --type merge -p '{"spec":{"paused":false}}' --dry-run=server 2>&1)"; then
    fail "unpausing pool $pool was not refused"
  fi
  grep -q "numo-holds.*MutexRunConfig $samples_ns/gated-workers" <<<"$out" || fail "unpausing $pool: $out"
}

# Stops numo and the other background processes; on failure prints the end of numo's logs and the run config.
stop_background() {
  local rc="$1"
  stop_numo
  for pid in "${background_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ $rc != 0 ]]; then
    for f in "$work"/numo-*.log; do
      [[ -f "$f" ]] || continue
      check_log "last lines of $(basename "$f"):"
      tail -n 20 "$f" >&2
    done
    kubectl get mutexrunconfig -n "$samples_ns" -o yaml >&2 2>/dev/null || true
  fi
}
