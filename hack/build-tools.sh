#!/usr/bin/env bash
# Builds the test-world binaries from the Go module proxy and caches them outside the repository,
# keyed by version (see hack/versions.sh). With a warm cache this takes well under a second.
#
#   hack/build-tools.sh [kubernetes] [etcd] [kwok] [olm] [alertmanager] [prometheus] [prometheus-operator]
#                       [openshift-api] [fleet-crds] [config-policy-controller] [operator-sdk]
#   (default: the first three)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=hack/versions.sh
source "$here/versions.sh"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"
command -v go >/dev/null || { echo "error: go is required to build the test-world tools" >&2; exit 1; }

log() { printf '[build-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Runs "$@" while printing a heartbeat every 30s, so long cold builds show progress.
with_progress() {
  local what="$1"; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -0 "$pid" 2>/dev/null && log "$what: still building ($((SECONDS - start))s)"
  done
  wait "$pid"
  log "$what: done in $((SECONDS - start))s"
}

# A scratch module in a temporary directory; removed on exit.
scratch() {
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/numo-build.XXXXXX")"
  echo "$dir"
}

build_kubernetes() {
  local want=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  local missing=0
  for b in "${want[@]}"; do [[ -x "$K8S_BIN/$b" ]] || missing=1; done
  if [[ $missing == 0 ]]; then return; fi
  log "building Kubernetes $K8S_VERSION (${want[*]}); cold builds take tens of minutes"
  local dir; dir="$(scratch)"
  trap 'rm -rf "$dir"' RETURN
  local gomod
  gomod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -f "$gomod" ]] || { log "could not download k8s.io/kubernetes@$K8S_VERSION"; return 1; }
  local staging_version="v0.${K8S_VERSION#v1.}"
  {
    echo "module numo.invalid/kubernetes-build"
    echo
    echo "go $(sed -n 's/^go //p' "$gomod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # Every staging module k8s.io/kubernetes replaces with ./staging/... is published at v0.<minor>.<patch>.
    sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*$#\1#p' "$gomod" |
      while read -r m; do echo "	$m => $m $staging_version"; done
    echo ")"
  } >"$dir/go.mod"
  log "scratch module with $(grep -c ' => ' "$dir/go.mod") staging replacements"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  local pkgs=()
  for b in "${want[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  (cd "$dir" && with_progress "resolve kubernetes modules" go get "${pkgs[@]/%/@$K8S_VERSION}")
  mkdir -p "$K8S_BIN.partial"
  for b in "${want[@]}"; do
    (cd "$dir" && with_progress "$b" go build -trimpath -ldflags "$ld" -o "$K8S_BIN.partial/$b" "k8s.io/kubernetes/cmd/$b")
  done
  mkdir -p "$(dirname "$K8S_BIN")"
  rm -rf "$K8S_BIN" && mv "$K8S_BIN.partial" "$K8S_BIN"
}

build_etcd() {
  [[ -x "$ETCD_BIN/etcd" ]] && return
  log "building etcd $ETCD_VERSION"
  local dir; dir="$(scratch)"
  trap 'rm -rf "$dir"' RETURN
  printf 'module numo.invalid/etcd-build\n\ngo 1.24\n' >"$dir/go.mod"
  (cd "$dir" && with_progress "resolve etcd modules" go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
  mkdir -p "$ETCD_BIN.partial"
  (cd "$dir" && with_progress etcd go build -trimpath -ldflags "-s -w" -o "$ETCD_BIN.partial/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$ETCD_BIN" && mv "$ETCD_BIN.partial" "$ETCD_BIN"
}

build_kwok() {
  [[ -x "$KWOK_BIN/kwok" && -x "$KWOK_BIN/kwokctl" ]] && return
  log "building kwok and kwokctl $KWOK_VERSION"
  mkdir -p "$KWOK_BIN.partial"
  with_progress kwok env GOBIN="$KWOK_BIN.partial" go install -trimpath -ldflags "-s -w" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwokctl@$KWOK_VERSION"
  rm -rf "$KWOK_BIN" && mv "$KWOK_BIN.partial" "$KWOK_BIN"
}

build_alertmanager() {
  [[ -x "$ALERTMANAGER_BIN/alertmanager" ]] && return
  log "building Alertmanager $ALERTMANAGER_VERSION"
  mkdir -p "$ALERTMANAGER_BIN.partial"
  with_progress alertmanager env GOBIN="$ALERTMANAGER_BIN.partial" go install -trimpath -ldflags "-s -w" \
    "github.com/prometheus/alertmanager/cmd/alertmanager@$ALERTMANAGER_VERSION"
  smoke_alertmanager "$ALERTMANAGER_BIN.partial/alertmanager"
  rm -rf "$ALERTMANAGER_BIN" && mv "$ALERTMANAGER_BIN.partial" "$ALERTMANAGER_BIN"
}

# Starts the Alertmanager just built on a loopback port, posts an alert and reads it back through the v2 API.
smoke_alertmanager() {
  local binary="$1" dir port pid
  dir="$(scratch)"
  # A loopback port nothing answers on.
  for _ in {1..100}; do
    port=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
  done
  printf "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n" >"$dir/alertmanager.yml"
  "$binary" --config.file="$dir/alertmanager.yml" --storage.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= >"$dir/log" 2>&1 &
  pid=$!
  local url="http://127.0.0.1:$port" ok=0
  for _ in $(seq 100); do
    if curl -fsS "$url/-/ready" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.1
  done
  if [[ $ok == 1 ]]; then
    curl -fsS -X POST -H 'Content-Type: application/json' "$url/api/v2/alerts" \
      -d '[{"labels": {"alertname": "NumoSmoke", "severity": "critical"}}]' >/dev/null
    ok=0
    for _ in $(seq 50); do
      if curl -fsS "$url/api/v2/alerts" | grep -q NumoSmoke; then ok=1; break; fi
      sleep 0.1
    done
  fi
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  if [[ $ok != 1 ]]; then
    log "Alertmanager smoke check failed:"; cat "$dir/log" >&2; rm -rf "$dir"; return 1
  fi
  rm -rf "$dir"
  log "Alertmanager answers its v2 API (an alert posted and read back)"
}

build_prometheus() {
  # promtool only (`promtool check rules`, `promtool test rules`); the Prometheus server is not needed.
  [[ -x "$PROMETHEUS_BIN/promtool" ]] && return
  log "building promtool (Prometheus $PROMETHEUS_VERSION); a cold build takes several minutes"
  mkdir -p "$PROMETHEUS_BIN.partial"
  with_progress promtool env GOBIN="$PROMETHEUS_BIN.partial" go install -trimpath \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
  "$PROMETHEUS_BIN.partial/promtool" --version >/dev/null
  rm -rf "$PROMETHEUS_BIN" && mv "$PROMETHEUS_BIN.partial" "$PROMETHEUS_BIN"
}

# The directory of module $1 at version $2, downloaded from the module proxy into the module cache (nothing built).
module_dir() {
  local dir
  dir="$(scratch)"
  (cd "$dir" && GOFLAGS=-mod=mod go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  rm -rf "$dir"
}

build_prometheus_operator() {
  # Nothing to compile: the ServiceMonitor and PrometheusRule CRDs as the Prometheus Operator's module ships them.
  [[ -f "$PROMETHEUS_OPERATOR_CRDS/servicemonitors.crd.yaml" && -f "$PROMETHEUS_OPERATOR_CRDS/prometheusrules.crd.yaml" ]] &&
    return
  log "prometheus-operator $PROMETHEUS_OPERATOR_VERSION: the ServiceMonitor and PrometheusRule CRDs"
  local module crds
  module="$(module_dir github.com/prometheus-operator/prometheus-operator "$PROMETHEUS_OPERATOR_VERSION")"
  crds="$module/example/prometheus-operator-crd"
  [[ -n "$module" && -f "$crds/monitoring.coreos.com_servicemonitors.yaml" ]] ||
    { log "error: prometheus-operator@$PROMETHEUS_OPERATOR_VERSION has no CRDs in example/prometheus-operator-crd"; return 1; }
  rm -rf "$PROMETHEUS_OPERATOR_CRDS.partial" && mkdir -p "$PROMETHEUS_OPERATOR_CRDS.partial"
  cp "$crds/monitoring.coreos.com_servicemonitors.yaml" "$PROMETHEUS_OPERATOR_CRDS.partial/servicemonitors.crd.yaml"
  cp "$crds/monitoring.coreos.com_prometheusrules.yaml" "$PROMETHEUS_OPERATOR_CRDS.partial/prometheusrules.crd.yaml"
  chmod -R u+w "$PROMETHEUS_OPERATOR_CRDS.partial"
  rm -rf "$PROMETHEUS_OPERATOR_CRDS" && mv "$PROMETHEUS_OPERATOR_CRDS.partial" "$PROMETHEUS_OPERATOR_CRDS"
}

build_olm() {
  # olm (olm-operator), catalog (catalog-operator) and opm, from one scratch module that requires both of their
  # modules: they share most dependencies, so one build graph compiles each package once. The module proxy refuses
  # `go install …@version` for these modules (it answers 403 for their version lists), but serves the pinned
  # versions themselves; OLM's go.mod has no replace directive to repeat.
  local want=(olm catalog opm)
  local missing=0
  for b in "${want[@]}"; do [[ -x "$OLM_BIN/$b" ]] || missing=1; done
  compgen -G "$OLM_CRDS/*.yaml" >/dev/null || missing=1
  [[ -f "$OLM_OPENSHIFT_CRDS/proxies.crd.yaml" && -f "$OLM_OPENSHIFT_CRDS/consoleyamlsamples.crd.yaml" ]] || missing=1
  if [[ $missing == 0 ]]; then return; fi
  log "building OLM $OLM_VERSION (olm, catalog) and opm $OPM_VERSION; cold builds take several minutes"
  local dir; dir="$(scratch)"
  trap 'rm -rf "$dir"' RETURN
  local olm=github.com/operator-framework/operator-lifecycle-manager registry=github.com/operator-framework/operator-registry
  printf 'module numo.invalid/olm-build\n\ngo 1.24.6\n' >"$dir/go.mod"
  (cd "$dir" && with_progress "resolve OLM modules" go get "$olm@$OLM_VERSION" "$registry@$OPM_VERSION" &&
    go get "$olm/cmd/olm@$OLM_VERSION" "$olm/cmd/catalog@$OLM_VERSION" "$registry/cmd/opm@$OPM_VERSION")
  # -X of a package a command does not link is ignored, so one set of flags serves all three.
  local ld="-s -w -X $olm/pkg/version.OLMVersion=$OLM_VERSION -X $olm/pkg/version.GitCommit=$OLM_VERSION"
  ld+=" -X $registry/cmd/opm/version.opmVersion=$OPM_VERSION -X $registry/cmd/opm/version.gitCommit=$OPM_VERSION"
  rm -rf "$OLM_HOME.partial" && mkdir -p "$OLM_HOME.partial"/{bin,crds,openshift-crds}
  local api openshift_api
  api="$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/operator-framework/api)"
  cp "$api"/crds/*.yaml "$OLM_HOME.partial/crds/"
  # Two OpenShift APIs that OLM needs and numo's test world lacks, from the openshift/api module OLM is built
  # against: OLM watches config.openshift.io/v1 Proxy wherever that API group is served (the simulated OpenShift's
  # ClusterVersion serves it), and numo's bundle ships ConsoleYAMLSamples, which OLM can only create where the
  # console's API exists.
  openshift_api="$(cd "$dir" && go list -m -f '{{.Dir}}' github.com/openshift/api)"
  cp "$openshift_api/config/v1/0000_03_config-operator_01_proxy.crd.yaml" "$OLM_HOME.partial/openshift-crds/proxies.crd.yaml"
  cp "$openshift_api/console/v1/0000_10_consoleyamlsample.crd.yaml" \
    "$OLM_HOME.partial/openshift-crds/consoleyamlsamples.crd.yaml"
  # One `go build` for the three commands shares the compile of their common packages.
  (cd "$dir" && with_progress "olm, catalog, opm" go build -trimpath -tags containers_image_openpgp,json1 \
    -ldflags "$ld" -o "$OLM_HOME.partial/bin/" \
    "$olm/cmd/olm" "$olm/cmd/catalog" "$registry/cmd/opm")
  chmod -R u+w "$OLM_HOME.partial"
  rm -rf "$OLM_HOME" && mv "$OLM_HOME.partial" "$OLM_HOME"
}

build_openshift_api() {
  # Nothing to compile: CRDs as openshift/api ships them: ConsolePlugin (console.openshift.io/v1), for the tests of
  # the ConsolePlugin numo applies, and MachineOSConfig (machineconfiguration.openshift.io/v1), for image mode.
  [[ -f "$OPENSHIFT_API_CRDS/consoleplugins.crd.yaml" && -f "$OPENSHIFT_API_CRDS/machineosconfigs.crd.yaml" ]] && return
  log "openshift/api $OPENSHIFT_API_VERSION and $OPENSHIFT_API_IMAGE_MODE_VERSION: the ConsolePlugin and MachineOSConfig CRDs"
  local module image_mode mosc
  module="$(module_dir github.com/openshift/api "$OPENSHIFT_API_VERSION")"
  [[ -n "$module" && -f "$module/console/v1/0000_10_consoleplugin.crd.yaml" ]] ||
    { log "error: github.com/openshift/api@$OPENSHIFT_API_VERSION has no console/v1 ConsolePlugin CRD"; return 1; }
  image_mode="$(module_dir github.com/openshift/api "$OPENSHIFT_API_IMAGE_MODE_VERSION")"
  mosc="$image_mode/machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosconfigs-TechPreviewNoUpgrade.crd.yaml"
  [[ -n "$image_mode" && -f "$mosc" ]] ||
    { log "error: github.com/openshift/api@$OPENSHIFT_API_IMAGE_MODE_VERSION has no MachineOSConfig CRD"; return 1; }
  rm -rf "$OPENSHIFT_API_CRDS.partial" && mkdir -p "$OPENSHIFT_API_CRDS.partial"
  cp "$module/console/v1/0000_10_consoleplugin.crd.yaml" "$OPENSHIFT_API_CRDS.partial/consoleplugins.crd.yaml"
  cp "$mosc" "$OPENSHIFT_API_CRDS.partial/machineosconfigs.crd.yaml"
  chmod -R u+w "$OPENSHIFT_API_CRDS.partial"
  rm -rf "$OPENSHIFT_API_CRDS" && mv "$OPENSHIFT_API_CRDS.partial" "$OPENSHIFT_API_CRDS"
}

build_fleet_crds() {
  # Nothing to compile: the CRDs of the fleet tools, as their modules ship them, for tests/fleet_samples.rs, which
  # validates config/samples/fleet/ against them: Open Cluster Management's ConfigurationPolicy, Policy,
  # PlacementBinding, Placement and ManagedClusterSetBinding (what ACM serves on hub and managed clusters), TALM's
  # ClusterGroupUpgrade and Argo CD's Application and ApplicationSet.
  local want=(configurationpolicies policies placementbindings placements managedclustersetbindings
    clustergroupupgrades applications applicationsets)
  local missing=0
  for c in "${want[@]}"; do [[ -f "$FLEET_CRDS/$c.crd.yaml" ]] || missing=1; done
  if [[ $missing == 0 ]]; then return; fi
  log "fleet CRDs: OCM policy framework $OCM_POLICY_VERSION, OCM API $OCM_API_VERSION, TALM $TALM_VERSION, Argo CD $ARGO_CD_VERSION"
  local config_policy propagator api talm argocd
  config_policy="$(module_dir open-cluster-management.io/config-policy-controller "$OCM_POLICY_VERSION")"
  propagator="$(module_dir open-cluster-management.io/governance-policy-propagator "$OCM_POLICY_VERSION")"
  api="$(module_dir open-cluster-management.io/api "$OCM_API_VERSION")"
  talm="$(module_dir github.com/openshift-kni/cluster-group-upgrades-operator "$TALM_VERSION")"
  argocd="$(module_dir github.com/argoproj/argo-cd/v3 "$ARGO_CD_VERSION")"
  local sources=(
    "configurationpolicies=$config_policy/deploy/crds/policy.open-cluster-management.io_configurationpolicies.yaml"
    "policies=$propagator/deploy/crds/policy.open-cluster-management.io_policies.yaml"
    "placementbindings=$propagator/deploy/crds/policy.open-cluster-management.io_placementbindings.yaml"
    "placements=$api/cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml"
    "managedclustersetbindings=$api/cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml"
    "clustergroupupgrades=$talm/config/crd/bases/ran.openshift.io_clustergroupupgrades.yaml"
    "applications=$argocd/manifests/crds/application-crd.yaml"
    "applicationsets=$argocd/manifests/crds/applicationset-crd.yaml"
  )
  rm -rf "$FLEET_CRDS.partial" && mkdir -p "$FLEET_CRDS.partial"
  local entry
  for entry in "${sources[@]}"; do
    [[ -f "${entry#*=}" ]] || { log "error: ${entry#*=} is missing (was the module downloaded?)"; return 1; }
    cp "${entry#*=}" "$FLEET_CRDS.partial/${entry%%=*}.crd.yaml"
  done
  chmod -R u+w "$FLEET_CRDS.partial"
  mkdir -p "$(dirname "$FLEET_CRDS")"
  rm -rf "$FLEET_CRDS" && mv "$FLEET_CRDS.partial" "$FLEET_CRDS"
}

build_config_policy_controller() {
  # ACM's configuration policy controller, which evaluates (and enforces) ConfigurationPolicies on a managed
  # cluster. `go install …@version` asks the module proxy for the module's version list, which it refuses (403), so
  # the build goes through a scratch module, as OLM's does.
  [[ -x "$CONFIG_POLICY_CONTROLLER_BIN/config-policy-controller" ]] && return
  log "building ACM's config-policy-controller $OCM_POLICY_VERSION; a cold build takes several minutes"
  local dir module=open-cluster-management.io/config-policy-controller
  dir="$(scratch)"
  trap 'rm -rf "$dir"' RETURN
  printf 'module numo.invalid/config-policy-controller-build\n\ngo 1.24\n' >"$dir/go.mod"
  (cd "$dir" && with_progress "resolve config-policy-controller modules" go get "$module@$OCM_POLICY_VERSION")
  mkdir -p "$CONFIG_POLICY_CONTROLLER_BIN.partial"
  (cd "$dir" && with_progress config-policy-controller go build -trimpath -ldflags "-s -w" \
    -o "$CONFIG_POLICY_CONTROLLER_BIN.partial/config-policy-controller" "$module")
  rm -rf "$CONFIG_POLICY_CONTROLLER_BIN" && mv "$CONFIG_POLICY_CONTROLLER_BIN.partial" "$CONFIG_POLICY_CONTROLLER_BIN"
}

build_operator_sdk() {
  # The module proxy serves only operator-sdk's source zip, not its go.mod: see hack/build-operator-sdk.sh.
  "$here/build-operator-sdk.sh"
}

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(kubernetes etcd kwok)
start=$SECONDS
for t in "${targets[@]}"; do
  case "$t" in
    kubernetes) build_kubernetes ;;
    etcd) build_etcd ;;
    kwok) build_kwok ;;
    olm) build_olm ;;
    openshift-api) build_openshift_api ;;
    fleet-crds) build_fleet_crds ;;
    config-policy-controller) build_config_policy_controller ;;
    alertmanager) build_alertmanager ;;
    prometheus) build_prometheus ;;
    prometheus-operator) build_prometheus_operator ;;
    operator-sdk) build_operator_sdk ;;
    *) echo "unknown tool: $t" >&2; exit 2 ;;
  esac
done
log "tools ready in $((SECONDS - start))s (cache: $NUMO_CACHE)"
