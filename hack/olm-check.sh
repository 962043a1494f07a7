#!/usr/bin/env bash
# `make olm-check`: numo installed, upgraded in the middle of a rollout and removed through real OLM, the way an
# OpenShift admin does it from OperatorHub.
#
# On a fresh local cluster with the OpenShift CRDs and a simulated OpenShift, upstream OLM (olm-operator and
# catalog-operator, built from the Go module proxy by hack/build-tools.sh olm) runs against the API server. A
# file-based catalog made by opm from two bundles (the previous release, tests/releases/<replaces>/bundle, and
# bundle/ of this tree, whose CSV replaces it) is served by `opm serve` behind a grpc CatalogSource. Then:
#
#  1. Install. A Subscription with manual approval installs the previous release; its InstallPlan completes, its CSV
#     succeeds. The same for this tree's bundle further down, where the CSV as stored must equal the bundle's CSV
#     file (which must also pass a server-side dry-run against OLM's CSV CRD), and the RBAC OLM grants numo's
#     ServiceAccount must be config/rbac's plus exactly what docs/security.md says OLM adds.
#  2. Upgrade mid-rollout. numo (a local process standing in for the Deployment's pod, acting as the ServiceAccount
#     OLM created, with leader election; this tree's, with this tree's CRDs applied over the previous release's)
#     drives the rollout of config/samples. After the first worker is done, the
#     upgrade's InstallPlan is approved; once the new CSV has succeeded the new numo takes over from the old.
#  3. Removal mid-rollout. After the next worker, the Subscription and the CSV are deleted (numo stops with its
#     Deployment): the run config, its status and the pools' records of how they were must stay; then numo is
#     installed again and finishes the rollout. Every worker upgrades, no Job is created twice, the pools are
#     restored.
#  4. Removal as docs/install.md says: run configs first, then the operator and its namespace, the CRDs and the user
#     roles OLM leaves behind; nothing of numo's stays (its admission policy, in force until then, goes with the
#     CRDs).
#
#   hack/olm-check.sh        # CHECK_CLUSTER (default numo-olm), WORKERS (4), FROM (4.16.4), TO (4.16.5),
#                            # NUMO_BINARY (the numo to run; default this tree's debug build)
#
# The cluster is removed at the end unless KEEP_CLUSTER=1. It is not CLUSTER (hack/test.sh's cluster for the
# integration tests), since these checks need a cluster without numo's CRDs.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=hack/lib/rollout-check.sh
source hack/lib/rollout-check.sh
log_prefix=olm-check
cluster="${CHECK_CLUSTER:-numo-olm}" workers="${WORKERS:-4}" from="${FROM:-4.16.4}" to="${TO:-4.16.5}"
operator_ns=numo-system samples_ns=numo-samples catalog_ns=olm
package="$(sed -n 's/^package: //p' config/manifests/bundle.yaml)"
csv_file="bundle/manifests/$package.clusterserviceversion.yaml"
work="$(mktemp -d "${TMPDIR:-/tmp}/numo-olm-check.XXXXXX")"
started=$SECONDS

finish() {
  local rc=$?
  stop_background "$rc"
  if [[ $rc != 0 ]]; then
    for f in olm catalog opm; do
      [[ -f "$work/$f.log" ]] && { check_log "last lines of $f's log:"; tail -n 15 "$work/$f.log" >&2; }
    done
    kubectl get csv,installplan,subscription -A >&2 2>/dev/null || true
  fi
  if [[ "${KEEP_CLUSTER:-}" != 1 ]]; then hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
  check_log "$([[ $rc == 0 ]] && echo ok || echo FAILED) in $((SECONDS - started))s"
  exit "$rc"
}
trap finish EXIT

[[ -n "$previous" && -d "tests/releases/$previous/bundle" ]] ||
  fail "config/manifests/bundle.yaml replaces '$previous', but tests/releases/$previous/bundle does not exist"
hack/build-tools.sh kubernetes etcd kwok olm prometheus-operator
check_log "building numo and the simulator"
cargo build --quiet --bin numo -p numo --bin numo-sim -p numo-simulator
numo="${NUMO_BINARY:-${CARGO_TARGET_DIR:-$repo/target}/debug/numo}" sim="${CARGO_TARGET_DIR:-$repo/target}/debug/numo-sim"
export PATH="$K8S_BIN:$OLM_BIN:$PATH"
[[ -x "$numo" ]] || fail "NUMO_BINARY=$numo is not an executable"
check_log "numo: $numo ($("$numo" --version))"

check_log "the catalog: $package $previous and $current (replaces $previous), rendered by opm"
mkdir -p "$work/catalog/$package"
{
  opm init "$package" --default-channel=stable --output yaml
  opm render "tests/releases/$previous/bundle" --output yaml
  opm render bundle --output yaml
  cat <<EOF
---
schema: olm.channel
package: $package
name: stable
entries:
  - name: $package.v$previous
  - name: $package.v$current
    replaces: $package.v$previous
EOF
} >"$work/catalog/$package/catalog.yaml"
opm validate "$work/catalog"

check_log "starting cluster $cluster"
# Always a fresh cluster: one of this name left by an earlier run (KEEP_CLUSTER=1) is removed first.
hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true
kubeconfig="$(NUMO_SKIP_CRDS=1 hack/cluster-up.sh "$cluster" | tail -n 1)"
export KUBECONFIG="$kubeconfig"
"$sim" install-crds >/dev/null
# Every OpenShift serves the Prometheus Operator's ServiceMonitor and PrometheusRule; numo's bundle ships one of each.
kubectl apply --server-side -f "$OLM_CRDS" -f "$OLM_OPENSHIFT_CRDS" -f "$PROMETHEUS_OPERATOR_CRDS" >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null

check_log "the raw CSV passes a server-side dry-run against OLM's CSV CRD"
kubectl create namespace numo-dry-run >/dev/null
kubectl create --dry-run=server -n numo-dry-run -f "$csv_file" -o json >"$work/csv-dry-run.json" ||
  fail "$csv_file does not pass the CSV CRD's validation"

check_log "starting OLM $OLM_VERSION (olm-operator, catalog-operator) and opm serve"
kubectl create namespace "$catalog_ns" >/dev/null
olm --namespace "$catalog_ns" --writeStatusName "" --writePackageServerStatusName "" >"$work/olm.log" 2>&1 &
background_pids+=($!)
catalog --namespace "$catalog_ns" --writeStatusName "" >"$work/catalog.log" 2>&1 &
background_pids+=($!)
# A free loopback port: one nothing answers on.
free_port() {
  local p
  for _ in {1..100}; do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  return 1
}
port="$(free_port)"
opm serve "$work/catalog" --port "$port" --pprof-addr "127.0.0.1:$(free_port)" --termination-log /dev/null \
  >"$work/opm.log" 2>&1 &
background_pids+=($!)

kubectl apply -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: numo-catalog
  namespace: $catalog_ns
spec:
  sourceType: grpc
  address: 127.0.0.1:$port
  displayName: numo test catalog
---
apiVersion: v1
kind: Namespace
metadata:
  name: $operator_ns
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: numo
  namespace: $operator_ns
EOF
catalog_ready() {
  [[ "$(kubectl get catalogsource -n "$catalog_ns" numo-catalog -o jsonpath='{.status.connectionState.lastObservedState}')" == READY ]]
}
wait_until 120 catalog_ready || fail "the CatalogSource never became READY"

# subscribe STARTING_VERSION APPROVAL: a Subscription to the stable channel of the test catalog.
subscribe() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata:
  name: $package
  namespace: $operator_ns
spec:
  channel: stable
  name: $package
  source: numo-catalog
  sourceNamespace: $catalog_ns
  startingCSV: $package.v$1
  installPlanApproval: $2
EOF
}
# The InstallPlan that installs CSV version $1 (empty until OLM made it).
install_plan_for() {
  kubectl get installplan -n "$operator_ns" -o json |
    jq -r --arg csv "$package.v$1" '.items[] | select(.spec.clusterServiceVersionNames | index($csv)) | .metadata.name' | head -n 1
}
has_install_plan_for() { [[ -n "$(install_plan_for "$1")" ]]; }
approve() {
  wait_until 120 has_install_plan_for "$1" || fail "OLM made no InstallPlan for $package.v$1"
  kubectl patch installplan -n "$operator_ns" "$(install_plan_for "$1")" --type merge -p '{"spec":{"approved":true}}' >/dev/null
}
csv_phase() { kubectl get csv -n "$operator_ns" "$package.v$1" -o jsonpath='{.status.phase}'; }
csv_succeeded() { [[ "$(csv_phase "$1")" == Succeeded ]]; }
csv_gone() { ! kubectl get csv -n "$operator_ns" "$package.v$1" >/dev/null 2>&1; }
# Waits until CSV version $1 succeeded and its InstallPlan is Complete.
installed() {
  wait_until 180 csv_succeeded "$1" || fail "CSV $package.v$1 did not succeed (phase '$(csv_phase "$1")')"
  local plan; plan="$(install_plan_for "$1")"
  plan_complete() { [[ "$(kubectl get installplan -n "$operator_ns" "$plan" -o jsonpath='{.status.phase}')" == Complete ]]; }
  wait_until 60 plan_complete || fail "InstallPlan $plan is not Complete"
  check_log "CSV $package.v$1 Succeeded, InstallPlan $plan Complete"
}

check_log "seeding a simulated OpenShift: $workers workers at $from"
"$sim" seed --version "$from" --workers "$workers" --masters 1 >/dev/null
# Reboots of 6 s give the upgrade and the removal below time to happen while the rollout is in progress.
# OpenShift 4.22: its machine-config operator leaves the pools' spec alone, so the release numo is upgraded from
# (which steered the worker pool's selector) can run its part of the rollout without fighting it.
"$sim" run --reboot 6s --openshift-version 4.22 >"$work/simulator.log" 2>&1 &
background_pids+=($!)

check_log "installing $package.v$previous (manual approval)"
subscribe "$previous" Manual
approve "$previous"
installed "$previous"

start_previous_numo
before="$(pools_state)"

check_log "upgrading the cluster to $to"
"$sim" upgrade --version "$to" >/dev/null
wait_until 600 at_least_completed "$to" 1 || fail "no worker completed"
check_log "worker 1 of $workers done: approving the upgrade to $package.v$current"
approve "$current"
installed "$current"
wait_until 120 csv_gone "$previous" || fail "the replaced CSV $package.v$previous stayed"
image="$(deployment_image)"
[[ "$image" == *":$current" || "$image" == *@sha256:* ]] || fail "the Deployment runs $image after the upgrade"
hand_over_numo "$workers"

check_log "OLM created numo's alerts (PrometheusRule), its ServiceMonitor and the Role for OpenShift's Prometheus"
kubectl get prometheusrule numo-operator -n "$operator_ns" -o json | jq -S .spec >"$work/rule-installed.json" ||
  fail "OLM did not create the PrometheusRule numo-operator in $operator_ns"
diff <(kubectl create --dry-run=client -f config/prometheus/rule.yaml -o json | jq -S .spec) "$work/rule-installed.json" >&2 ||
  fail "the installed PrometheusRule differs from config/prometheus/rule.yaml (above)"
kubectl get servicemonitor numo-operator -n "$operator_ns" >/dev/null || fail "OLM did not create the ServiceMonitor"
kubectl get role,rolebinding numo-prometheus -n "$operator_ns" >/dev/null || fail "OLM did not create numo-prometheus"
can_list="$(kubectl auth can-i list endpoints -n "$operator_ns" --as system:serviceaccount:openshift-monitoring:prometheus-k8s)"
[[ "$can_list" == yes ]] || fail "OpenShift's Prometheus may not list numo's endpoints"

check_log "the CSV as stored equals the bundle's, and OLM's RBAC is what docs/security.md says"
kubectl get csv -n "$operator_ns" "$package.v$current" -o json >"$work/csv-stored.json"
diff <(jq -S .spec "$work/csv-dry-run.json") <(jq -S .spec "$work/csv-stored.json") >&2 ||
  fail "the stored CSV's spec differs from $csv_file (above)"
# OLM replaces the old CSV's roles with the new one's within seconds; the grants must settle on exactly the list.
rbac_as_documented() { hack/olm-rbac.sh "$operator_ns" numo-operator "$package.v$current" >/dev/null; }
wait_until 60 rbac_as_documented ||
  { hack/olm-rbac.sh "$operator_ns" numo-operator "$package.v$current" >&2; fail "OLM's RBAC differs from docs/security.md"; }
hack/olm-rbac.sh "$operator_ns" numo-operator "$package.v$current" >&2

wait_until 600 at_least_completed "$to" $((done_at_upgrade + 1)) || fail "no worker completed after the upgrade"
check_log "removing the operator mid-rollout: Subscription and CSV deleted"
# Until now no request of numo's may have been denied; from here on OLM removes its RBAC before its Deployment.
cp "$work/numo-$numo_runs.log" "$work/before-removal.log"
kubectl delete subscription -n "$operator_ns" "$package" >/dev/null
kubectl delete csv -n "$operator_ns" "$package.v$current" >/dev/null
deployment_gone() { ! kubectl get deployment -n "$operator_ns" numo-operator >/dev/null 2>&1; }
wait_until 120 deployment_gone || fail "OLM left the Deployment after the CSV was deleted"
stop_numo
phase="$(run_config_phase)"
[[ "$phase" == Upgrading ]] || fail "the rollout was not in progress when the operator was removed (phase $phase)"
# What an admin finds: the run config and its status, and on every pool numo changed, who changed it and how it was.
assert_pools_recorded "$before"
check_log "operator removed: the run config stays ($phase, $(completed_nodes) of $workers done), every pool records its original"

check_log "installing $package.v$current again"
subscribe "$current" Automatic
installed "$current"
operator_kubeconfig "$operator_ns/numo-operator"
start_numo "$operator_ns"
wait_until 900 phase_is Completed || fail "the rollout did not complete (phase '$(run_config_phase)')"
assert_rollout_done "$workers" "$to" "$before"
assert_never_denied "$work/numo-1.log" "$work/before-removal.log" "$work/numo-$numo_runs.log"
policy_in_force || fail "numo's admission policy is not in force: $(admission_policy)"
check_log "every worker runs $to, pools restored, one gate and one cleanup Job per worker, numo's admission policy in force"

check_log "removing numo as docs/install.md says: run configs, the operator, its namespace, the CRDs, the user roles"
kubectl delete mutexrunconfigs --all -A --wait --timeout=120s >/dev/null
kubectl delete subscription -n "$operator_ns" "$package" >/dev/null
kubectl delete csv -n "$operator_ns" "$package.v$current" >/dev/null
wait_until 120 deployment_gone || fail "OLM left the Deployment after the CSV was deleted"
stop_numo
kubectl delete namespace "$operator_ns" --wait --timeout=120s >/dev/null
# OLM leaves the CRDs, and with them numo's admission policy (docs/security.md); the policy goes with the CRDs.
policy_in_force || fail "numo's admission policy went before its CRD: $(admission_policy)"
kubectl delete crd mutexrules.openshift-optional.skrzypek.io mutextargets.openshift-optional.skrzypek.io \
  mutexrunconfigs.openshift-optional.skrzypek.io --wait --timeout=120s >/dev/null
kubectl delete clusterrole numo-viewer numo-editor numo-run-config-editor >/dev/null
[[ "$(pools_state)" == "$before" ]] || fail "the pools are not as before numo"
wait_until 60 policy_gone || fail "numo's admission policy stayed after its CRD went: $(admission_policy)"
left="$(kubectl get clusterroles,clusterrolebindings,roles,rolebindings,serviceaccounts,deployments,services -A -o json |
  jq -r '.items[] | select((.metadata.labels // {} | (.["app.kubernetes.io/name"] == "numo" or .["olm.owner"] != null and (.["olm.owner"] | startswith("'"$package"'")))) or
    (.metadata.name | test("numo|'"${package:0:24}"'"))) | "\(.kind) \(.metadata.namespace // "") \(.metadata.name)"')"
left+="$(kubectl get crds -o name | grep skrzypek || true)"
[[ -z "$left" ]] || { echo "$left" >&2; fail "numo's objects stayed after the removal (above)"; }
assert_no_numo_finalizer
check_log "nothing of numo's left: pools as before; no CRD, role, binding, ServiceAccount, Deployment or admission policy"
