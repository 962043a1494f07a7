#!/usr/bin/env bash
# `make install-check`: numo installed, upgraded in the middle of a rollout and removed with `kubectl apply -k`.
#
# On a fresh local cluster with the OpenShift CRDs and a simulated OpenShift:
#  1. the previous release's install manifests (tests/releases/<replaces>/install.yaml, what
#     `kubectl kustomize config/default` gave at that release) are applied;
#  2. numo, run as a local process under the identity of the ServiceAccount they create (kwok only simulates the
#     Deployment's pod), with leader election on, drives the rollout of config/samples through a simulated upgrade
#     (this tree's numo stands in for the previous release's, so this tree's CRDs are applied first: it names what it
#     asks for in its status before it acts);
#  3. after the first worker is done, `kubectl apply --server-side -k config/default` of this tree upgrades the
#     install (new CRDs, RBAC and Deployment spec) and the new numo takes over from the old;
#  4. every worker reaches the new version, no Job is created twice, the pools are restored, no request of numo's
#     was denied, and numo's admission policy is in force;
#  5. numo is removed as docs/install.md says (run configs first, then `kubectl delete -k config/default`), and
#     nothing of numo's stays (the garbage collector removes the admission policy with the CRDs);
#  6. numo is installed again; in the middle of the next rollout its policy refuses the console's "Resume updates",
#     then numo is removed, CRDs and all: the run config and the pools' records must survive, and
#     hack/restore-without-numo.sh (docs/install.md's manual restore) must put every pool back and leave nothing of
#     numo's.
#
#   hack/install-check.sh        # CHECK_CLUSTER (default numo-install), WORKERS (3), FROM (4.16.4), TO (4.16.5),
#                                # NEXT (4.16.6, the second rollout's version)
#
# The cluster is removed at the end unless KEEP_CLUSTER=1. It is not CLUSTER (hack/test.sh's cluster for the
# integration tests), since these checks need a cluster without numo's CRDs.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=hack/lib/rollout-check.sh
source hack/lib/rollout-check.sh
log_prefix=install-check
cluster="${CHECK_CLUSTER:-numo-install}" workers="${WORKERS:-3}" from="${FROM:-4.16.4}" to="${TO:-4.16.5}" next="${NEXT:-4.16.6}"
operator_ns=numo-system samples_ns=numo-samples
work="$(mktemp -d "${TMPDIR:-/tmp}/numo-install-check.XXXXXX")"
started=$SECONDS

finish() {
  local rc=$?
  stop_background "$rc"
  if [[ "${KEEP_CLUSTER:-}" != 1 ]]; then hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  check_log "$([[ $rc == 0 ]] && echo ok || echo FAILED) in $((SECONDS - started))s"
  exit "$rc"
}
trap finish EXIT

[[ -f "tests/releases/$previous/install.yaml" ]] ||
  fail "config/manifests/bundle.yaml replaces '$previous', but tests/releases/$previous/install.yaml does not exist"
hack/build-tools.sh kubernetes etcd kwok
check_log "building numo and the simulator"
cargo build --quiet --bin numo -p numo --bin numo-sim -p numo-simulator
numo="${NUMO_BINARY:-${CARGO_TARGET_DIR:-$repo/target}/debug/numo}" sim="${CARGO_TARGET_DIR:-$repo/target}/debug/numo-sim"
export PATH="$K8S_BIN:$PATH"

check_log "starting cluster $cluster (OpenShift CRDs only; numo's come from its install manifests)"
# Always a fresh cluster: one of this name left by an earlier run (KEEP_CLUSTER=1) is removed first.
hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true
kubeconfig="$(NUMO_SKIP_CRDS=1 hack/cluster-up.sh "$cluster" | tail -n 1)"
export KUBECONFIG="$kubeconfig"
"$sim" install-crds >/dev/null

# apply ARGS...: `kubectl apply --server-side` that must print no warning.
apply() {
  kubectl apply --server-side "$@" >"$work/apply.log" 2>&1 || { cat "$work/apply.log" >&2; fail "kubectl apply $* failed"; }
  if grep -qi warning "$work/apply.log"; then cat "$work/apply.log" >&2; fail "kubectl apply $* printed warnings"; fi
  kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
}

check_log "installing numo $previous: kubectl apply -f tests/releases/$previous/install.yaml"
apply -f "tests/releases/$previous/install.yaml"
[[ "$(deployment_image)" == *":$previous" ]] || fail "the $previous Deployment runs $(deployment_image)"

check_log "seeding a simulated OpenShift: $workers workers at $from"
"$sim" seed --version "$from" --workers "$workers" --masters 1 >/dev/null
# Reboots of 6 s give the upgrade below time to happen while the rollout is in progress.
# OpenShift 4.22: its machine-config operator leaves the pools' spec alone, so the release numo is upgraded from
# (which steered the worker pool's selector) can run its part of the rollout without fighting it.
"$sim" run --reboot 6s --openshift-version 4.22 >"$work/simulator.log" 2>&1 &
background_pids+=($!)
start_previous_numo
kubectl get -n "$operator_ns" lease numo-leader -o jsonpath='{.spec.holderIdentity}' | grep -q . || fail "numo holds no Lease"
before="$(pools_state)"

check_log "upgrading the cluster to $to"
"$sim" upgrade --version "$to" >/dev/null
wait_until 600 at_least_completed "$to" 1 || fail "no worker completed"
check_log "worker 1 of $workers done: upgrading numo to $current with kubectl apply -k config/default"
apply -k config/default
[[ "$(deployment_image)" == *":$current" ]] || fail "the upgraded Deployment runs $(deployment_image)"
hand_over_numo "$workers"

wait_until 900 phase_is Completed || fail "the rollout did not complete (phase '$(run_config_phase)')"
assert_rollout_done "$workers" "$to" "$before"
assert_never_denied
policy_in_force || fail "numo's admission policy is not in force: $(admission_policy)"
kubectl get mutexrunconfig -n "$samples_ns" -o wide >&2
check_log "every worker runs $to, pools restored, one gate and one cleanup Job per worker, no request denied"

check_log "removing numo as docs/install.md says: run configs first, then kubectl delete -k config/default"
kubectl delete mutexrunconfigs --all -A --wait --timeout=120s >/dev/null
kubectl delete -k config/default --wait --timeout=120s >/dev/null
stop_numo
[[ "$(pools_state)" == "$before" ]] || fail "the pools are not as before numo"
left="$(kubectl get crds,clusterroles,clusterrolebindings -o name | grep -E 'skrzypek|numo' || true)"
kubectl get namespace "$operator_ns" >/dev/null 2>&1 && left+=" namespace/$operator_ns"
[[ -z "${left// }" ]] || { echo "$left" >&2; fail "numo's objects stayed after the removal (above)"; }
assert_no_numo_finalizer
# The garbage collector removes the admission policy with its owner, the run configs' CRD.
wait_until 60 policy_gone || fail "numo's admission policy stayed after its CRD went: $(admission_policy)"
check_log "nothing of numo's left: pools as before, no CRDs, roles, namespace or admission policy"

check_log "installing numo again; removing it, CRDs and all, in the middle of the rollout to $next"
apply -k config/default
start_numo "$operator_ns"
kubectl apply -n "$samples_ns" -k config/samples >/dev/null
wait_until 120 phase_is Idle || fail "the run config never became Idle (phase '$(run_config_phase)')"
before="$(pools_state)"
"$sim" upgrade --version "$next" >/dev/null
wait_until 600 at_least_completed "$next" 1 || fail "no worker completed"
assert_resume_refused
check_log "mid-rollout, the console's Resume updates is refused, naming the run config"
stop_numo
kubectl delete -k config/default --wait=false >/dev/null
crd_terminating() {
  [[ -n "$(kubectl get crd mutexrunconfigs.openshift-optional.skrzypek.io -o jsonpath='{.metadata.deletionTimestamp}')" ]]
}
wait_until 60 crd_terminating || fail "the run configs' CRD is not being deleted"
# What an admin finds: the run config (terminating, its finalizer waiting for numo) with its status, and on every
# pool numo changed, who changed it and how it was.
run_config | jq -e '.metadata.deletionTimestamp != null and .status.phase == "Upgrading"' >/dev/null ||
  fail "the run config or its status did not survive the removal: $(run_config_phase)"
assert_pools_recorded "$before"
check_log "CRDs deleted mid-rollout: the run config stays Terminating with its status, every changed pool records its original"

hack/restore-without-numo.sh
crds_gone() { ! kubectl get crds -o name | grep -q skrzypek; }
wait_until 120 crds_gone || fail "numo's CRDs stayed after the restore by hand"
wait_until 60 policy_gone || fail "numo's admission policy stayed after its CRD went: $(admission_policy)"
[[ "$(pools_state)" == "$before" ]] || { diff <(echo "$before") <(pools_state) >&2; fail "the pools are not as before (above)"; }
assert_no_numo_label
assert_no_numo_finalizer
check_log "restored by hand: pools as before, no numo label, CRD, run config, finalizer or admission policy left"
