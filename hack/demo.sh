#!/usr/bin/env bash
# `make demo`: a local cluster, a simulated OpenShift with 6 workers at 4.16.4, numo running, and a live upgrade to
# 4.16.5 — node by node, with gate and cleanup Jobs — until every node runs 4.16.5 and the pools are restored.
#
# The simulated cluster has no NFD: numo reads each node's release from its rendered MachineConfig. NFD=1 adds the
# simulator's NFD stand-in, which labels every node with its release, as on a cluster set up for the reference.
#
# The simulator plays the platform's writers of OpenShift 4.21 (its machine-config operator puts the worker pool's
# selectors back on every sync), the release most clusters run; OPENSHIFT=4.23 plays the newest.
#
# The rollout can be watched in the OpenShift console's own page for it, without OpenShift: numo serves its console
# plugin over HTTPS (console-plugin/dist, with a throwaway certificate for 127.0.0.1), and the console shell
# (console-plugin/e2e/shell: the plugin loaded as the console 4.22 loads it) serves the run config's Rollout tab on
# http://127.0.0.1:$CONSOLE_PORT, live, until the script ends. CONSOLE=0 leaves it out (no Node.js needed then).
#
# Environment: CLUSTER (default numo-demo), WORKERS (default 6), FROM (4.16.4), TO (4.16.5), NFD (0 or 1),
# OPENSHIFT (4.16 to 4.23, default 4.21), CONSOLE (1 or 0), CONSOLE_PORT (default 9080).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=hack/versions.sh
source hack/versions.sh
# shellcheck source=hack/lib/openshift.sh
source hack/lib/openshift.sh
cluster="${CLUSTER:-numo-demo}" workers="${WORKERS:-6}" from="${FROM:-4.16.4}" to="${TO:-4.16.5}"
sim_flags=(--openshift-version "${OPENSHIFT:-4.21}") nfd_note="no NFD: versions from the rendered MachineConfigs"
if [[ "${NFD:-0}" == 1 ]]; then sim_flags+=(--nfd-labels) nfd_note="NFD stand-in: versions from the node labels"; fi
console="${CONSOLE:-1}" console_port="${CONSOLE_PORT:-9080}" console_url=""
logs="$NUMO_CACHE/demo-logs"
mkdir -p "$logs"
say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
started=$SECONDS

if [[ "$console" == 1 ]]; then
  for tool in node npm openssl; do
    command -v "$tool" >/dev/null || {
      echo "The console shell needs $tool: run hack/install-prerequisites.sh, or CONSOLE=0 make demo to go without it." >&2
      exit 1
    }
  done
fi

say "Starting a fresh local cluster '$cluster' (binaries are built once and cached in $NUMO_CACHE)"
# Every demo starts from a clean slate: a cluster left by an earlier demo is replaced (a cold start takes seconds).
hack/cluster-down.sh "$cluster" >/dev/null 2>&1 || true
kubeconfig="$(hack/cluster-up.sh "$cluster" | tail -n 1)"
export KUBECONFIG="$kubeconfig" PATH="$K8S_BIN:$PATH"

say "Building numo and the OpenShift simulator"
cargo build --quiet --bin numo -p numo --bin numo-sim -p numo-simulator
numo="${CARGO_TARGET_DIR:-$repo/target}/debug/numo" sim="${CARGO_TARGET_DIR:-$repo/target}/debug/numo-sim"

# numo serves its plugin as on OpenShift (HTTPS, a certificate signed by a CA the console's backend trusts), here
# from console-plugin/dist on a free port of 127.0.0.1, with a certificate signed by a CA made for this demo, which
# only the console shell's server trusts (its key is deleted once the certificate is signed).
plugin_flags=() plugin_port="" tls="$NUMO_CACHE/demo-console"
if [[ "$console" == 1 ]]; then
  say "Building numo's console plugin and the console shell (logs: $logs/console-build.log; CONSOLE=0 skips them)"
  { hack/console-plugin.sh build && hack/console-plugin.sh shell; } >"$logs/console-build.log" 2>&1 ||
    { tail -n 20 "$logs/console-build.log" >&2; echo "Building the console plugin failed (CONSOLE=0 skips it)." >&2; exit 1; }
  rm -rf "$tls" && mkdir -p "$tls/certs"
  {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj '/CN=numo demo console plugin CA' \
      -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -keyout "$tls/ca.key" -out "$tls/ca.pem"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '/CN=127.0.0.1' \
      -keyout "$tls/certs/tls.key" -out "$tls/tls.csr"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$tls/tls.ext"
    openssl x509 -req -days 2 -in "$tls/tls.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
      -extfile "$tls/tls.ext" -out "$tls/certs/tls.crt"
  } >"$tls/openssl.log" 2>&1 || { cat "$tls/openssl.log" >&2; exit 1; }
  rm -f "$tls/ca.key" "$tls/tls.csr" "$tls/tls.ext" "$tls/ca.srl"
  plugin_port="$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
  plugin_flags=(--console-plugin-address "127.0.0.1:$plugin_port" --console-plugin-cert-dir "$tls/certs"
    --console-plugin-assets console-plugin/dist)
fi

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

say "Installing numo's CRDs and seeding a simulated OpenShift ${OPENSHIFT:-4.21}: 3 masters, $workers workers at $from ($nfd_note)"
"$numo" crds | kubectl apply --server-side -f - >/dev/null
"$sim" seed --version "$from" --workers "$workers" --masters 3
"$sim" run "${sim_flags[@]}" >"$logs/simulator.log" 2>&1 &
pids+=($!)
kubectl create namespace numo-demo --dry-run=client -o yaml | kubectl apply -f - >/dev/null

say "Starting numo (logs: $logs/numo.log)"
"$numo" run --leader-election=false --metrics-address 127.0.0.1:0 "${plugin_flags[@]}" >"$logs/numo.log" 2>&1 &
pids+=($!)

if [[ "$console" == 1 ]]; then
  # The console's logged-in user: a ServiceAccount bound to cluster-admin, as an admin at the console. Its token is
  # what the shell's plugin proxy forwards to numo's backend (as the console does for the ConsolePlugin's proxy,
  # `authorization: UserToken`): numo reads the timeline it serves as that user.
  kubectl create serviceaccount numo-console-user -n default --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl create clusterrolebinding numo-console-user --clusterrole cluster-admin \
    --serviceaccount default:numo-console-user --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  user_token="$(kubectl create token numo-console-user -n default --duration 24h)"
  say "Serving the console shell with numo's plugin on 127.0.0.1:$console_port (logs: $logs/console.log)"
  node console-plugin/e2e/shell/serve.mjs --kubeconfig "$kubeconfig" --plugin-url "https://127.0.0.1:$plugin_port" \
    --plugin-ca "$tls/ca.pem" --user-token "$user_token" --namespace numo-demo --run-config demo --node worker-0 \
    --port "$console_port" >"$logs/console.url" 2>"$logs/console.log" &
  pids+=($!)
  console_pid=$!
fi

say "Creating the admin's objects (hack/demo/rollout.yaml): canary pool, two rules, the worker target, the run config"
kubectl apply -f hack/demo/rollout.yaml >/dev/null
kubectl wait -n numo-demo mutexrunconfig/demo --for=jsonpath='{.status.phase}'=Idle --timeout=120s >/dev/null

if [[ "$console" == 1 ]]; then
  # serve.mjs prints the page's address once numo's server answered it the plugin's manifest, certificate verified.
  until console_url="$(sed -n 's/^Console shell: //p' "$logs/console.url")" && [[ -n "$console_url" ]]; do
    if ! kill -0 "$console_pid" 2>/dev/null; then
      cat "$logs/console.log" >&2
      echo "The console shell did not start: CONSOLE_PORT=<port> serves it elsewhere, CONSOLE=0 goes without it." >&2
      exit 1
    fi
    sleep 0.5
  done
  say "Watch it in the console: $console_url"
  echo "(the run config's Rollout tab and worker-0's Upgrade gate, as numo's plugin shows them in the OpenShift console)"
fi

say "Upgrading the cluster to $to (what 'oc adm upgrade --to=$to' does)"
"$sim" upgrade --version "$to"

show() {
  [[ -t 1 ]] && printf '\033[H\033[2J'
  printf '\033[1mnumo demo — upgrading %s → %s   (%ss)\033[0m\n' "$from" "$to" "$((SECONDS - started))"
  [[ -z "$console_url" ]] || printf 'Watch it in the console: %s\n' "$console_url"
  echo
  kubectl get mutexrunconfig -n numo-demo -o wide 2>/dev/null || true
  kubectl get mutexrunconfig demo -n numo-demo \
    -o jsonpath='{"ETA: "}{.status.estimate.end}{" ("}{.status.estimate.remainingNodes}{" nodes to go; basis "}{.status.estimate.basis}{")\n"}' 2>/dev/null || true
  echo
  kubectl get clusterversion version \
    -o custom-columns='CLUSTER VERSION:.spec.desiredUpdate.version,CONTROL PLANE:.status.history[0].state' 2>/dev/null || true
  echo
  kubectl get machineconfigpools \
    -o custom-columns='POOL:.metadata.name,PAUSED:.spec.paused,MACHINES:.status.machineCount,UPDATED:.status.updatedMachineCount,SELECTOR:.spec.nodeSelector.matchExpressions[*].operator' 2>/dev/null || true
  echo
  local -A version=()
  local node release state cordoned
  while read -r node release; do version[$node]="$release"; done < <(node_releases node-role.kubernetes.io/worker 2>/dev/null)
  printf '%-12s %-10s %-10s %s\n' NODE VERSION 'MCO STATE' CORDONED
  kubectl get nodes -l node-role.kubernetes.io/worker -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.annotations.machineconfiguration\.openshift\.io/state}{"|"}{.spec.unschedulable}{"\n"}{end}' 2>/dev/null |
    while IFS='|' read -r node state cordoned; do
      printf '%-12s %-10s %-10s %s\n' "$node" "${version[$node]:-}" "$state" "${cordoned:-false}"
    done || true
  echo
  kubectl get mutexrunconfig demo -n numo-demo \
    -o custom-columns='IN FLIGHT:.status.nodes[*].name,PHASE:.status.nodes[*].phase,DONE:.status.completedNodes' 2>/dev/null || true
  echo
  kubectl get jobs -n numo-demo --sort-by=.metadata.creationTimestamp \
    -o custom-columns='JOB:.metadata.name,NODE:.metadata.labels.openshift-optional\.skrzypek\.io/node,PHASE:.metadata.labels.openshift-optional\.skrzypek\.io/phase,SUCCEEDED:.status.succeeded' 2>/dev/null | tail -n 8 || true
}

deadline=$((SECONDS + 900))
while :; do
  show
  phase="$(kubectl get mutexrunconfig demo -n numo-demo -o jsonpath='{.status.phase}' 2>/dev/null || true)"
  [[ "$phase" == Completed ]] && break
  if [[ "$phase" == Failed || $SECONDS -gt $deadline ]]; then
    echo "The rollout stopped in phase '$phase'; see $logs/numo.log and 'kubectl describe mrc demo -n numo-demo'." >&2
    exit 1
  fi
  sleep 2 # the display refresh only; numo itself reacts to watch events
done

say "Done in $((SECONDS - started))s: every worker runs $to and the pools are restored exactly."
"$numo" timeline numo-demo/demo -o "$logs/rollout.svg"
say "The rollout's timeline: $logs/rollout.svg (open it in a browser; numo timeline numo-demo/demo draws it)"
cat <<MSG
Look around (the cluster keeps running; numo, the simulator${console_url:+ and the console shell} stopped with this script):
  export KUBECONFIG=$kubeconfig PATH=$K8S_BIN:\$PATH
  kubectl get mutexrunconfig,mutexrule,mutextarget -n numo-demo       # or: kubectl get numo -n numo-demo
  kubectl describe mutexrunconfig demo -n numo-demo                     # conditions and the Events of every step
  kubectl get events -n numo-demo --sort-by=.metadata.creationTimestamp
  kubectl get jobs -n numo-demo -L openshift-optional.skrzypek.io/node,openshift-optional.skrzypek.io/phase
  kubectl get machineconfigpools
Remove it all with: make cluster-down CLUSTER=$cluster
MSG
