# Pinned versions of the test-world tools; sourced by the hack/ scripts.
# Changing a version changes the cache key, so the next run rebuilds that tool.
K8S_VERSION="${K8S_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
OPERATOR_SDK_VERSION="${OPERATOR_SDK_VERSION:-v1.42.0}"
# OLM (olm-operator, catalog-operator) and opm, from operator-registry at the version OLM's own go.mod requires.
OLM_VERSION="${OLM_VERSION:-v0.38.0}"
OPM_VERSION="${OPM_VERSION:-v1.61.0}"
# Prometheus Alertmanager, for the alert health check's tests. v0.32 and later embed a web UI that is built with npm
# and not part of the Go module, so `go install` from the proxy fails for them; v0.31.1 is the newest it builds.
ALERTMANAGER_VERSION="${ALERTMANAGER_VERSION:-v0.31.1}"
# Prometheus's promtool, for `promtool test rules` of numo's alerts (config/prometheus): the Go module tags Prometheus
# 3.x as v0.3xx.y (v0.316.0 is Prometheus 3.16.0), the newest the module proxy builds.
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
# The Prometheus Operator's CRDs (ServiceMonitor, PrometheusRule), which every OpenShift serves, for the OLM check
# (numo's bundle ships both): as the module proxy serves the prometheus-operator module, its newest version.
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.85.0}"
# openshift/api, for OpenShift CRDs the shared ones lack (ConsolePlugin): the version OLM's go.mod requires, which
# the module proxy serves (it refuses openshift/api's branches and most of its pseudo-versions).
OPENSHIFT_API_VERSION="${OPENSHIFT_API_VERSION:-v0.0.0-20221021112143-4226c2167e40}"
# openshift/api with machineconfiguration.openshift.io/v1 MachineOSConfig (image mode), for the test of a target pool
# in image mode: the newest pseudo-version the module proxy serves that has it (February 2025, the CRD still feature-
# gated there; its spec.machineConfigPool is the field numo reads, unchanged at GA in 4.19).
OPENSHIFT_API_IMAGE_MODE_VERSION="${OPENSHIFT_API_IMAGE_MODE_VERSION:-v0.0.0-20250228110707-635291d6fdf1}"
# The fleet tools whose CRDs config/samples/fleet/ is validated against (tests/fleet_samples.rs). Open Cluster
# Management's policy framework (ConfigurationPolicy; Policy and PlacementBinding) and its API (Placement,
# ManagedClusterSetBinding), at the versions TALM's go.mod requires; the module proxy serves these versions but not
# the modules' version lists.
OCM_POLICY_VERSION="${OCM_POLICY_VERSION:-v0.16.0}"
OCM_API_VERSION="${OCM_API_VERSION:-v0.16.1}"
# TALM (cluster-group-upgrades-operator) has no tags: the newest pseudo-version the checksum database knows
# (release-4.17, September 2024; later ones are served but not verifiable).
TALM_VERSION="${TALM_VERSION:-v0.0.0-20240918194836-a0a3f896c283}"
# Argo CD: the newest release whose go.mod the Go toolchain here accepts (v3.6 asks for Go 1.27).
ARGO_CD_VERSION="${ARGO_CD_VERSION:-v3.5.7}"

NUMO_CACHE="${NUMO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/numo}"
K8S_BIN="$NUMO_CACHE/kubernetes-$K8S_VERSION/bin"
ETCD_BIN="$NUMO_CACHE/etcd-$ETCD_VERSION/bin"
KWOK_BIN="$NUMO_CACHE/kwok-$KWOK_VERSION/bin"
OPERATOR_SDK_BIN="$NUMO_CACHE/operator-sdk-$OPERATOR_SDK_VERSION/bin"
OLM_HOME="$NUMO_CACHE/olm-$OLM_VERSION-opm-$OPM_VERSION"
OLM_BIN="$OLM_HOME/bin"   # olm, catalog, opm
OLM_CRDS="$OLM_HOME/crds" # OLM's CRDs, from the operator-framework/api module OLM requires
OLM_OPENSHIFT_CRDS="$OLM_HOME/openshift-crds" # OpenShift CRDs OLM needs besides numo's test world (Proxy, ConsoleYAMLSample)
# consoleplugins.crd.yaml, machineosconfigs.crd.yaml
OPENSHIFT_API_CRDS="$NUMO_CACHE/openshift-api-$OPENSHIFT_API_VERSION-$OPENSHIFT_API_IMAGE_MODE_VERSION/crds"
ALERTMANAGER_BIN="$NUMO_CACHE/alertmanager-$ALERTMANAGER_VERSION/bin"
PROMETHEUS_BIN="$NUMO_CACHE/prometheus-$PROMETHEUS_VERSION/bin" # promtool
# servicemonitors.crd.yaml, prometheusrules.crd.yaml
PROMETHEUS_OPERATOR_CRDS="$NUMO_CACHE/prometheus-operator-$PROMETHEUS_OPERATOR_VERSION/crds"
# configurationpolicies, policies, placementbindings, placements, managedclustersetbindings, clustergroupupgrades,
# applications, applicationsets (.crd.yaml)
# ACM's configuration policy controller (what evaluates a ConfigurationPolicy on each managed cluster), at
# OCM_POLICY_VERSION: tests/fleet_samples.rs runs it on the test cluster to evaluate the fleet policies.
CONFIG_POLICY_CONTROLLER_BIN="$NUMO_CACHE/config-policy-controller-$OCM_POLICY_VERSION/bin"
FLEET_CRDS="$NUMO_CACHE/fleet-crds-ocm-$OCM_POLICY_VERSION-$OCM_API_VERSION-talm-${TALM_VERSION##*-}-argocd-$ARGO_CD_VERSION/crds"
