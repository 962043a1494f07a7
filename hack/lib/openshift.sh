# Shared helper of the scripts that drive the simulated OpenShift (hack/demo.sh, hack/install-check.sh); sourced,
# not run. Needs kubectl on PATH and KUBECONFIG set.

# Prints "<node> <release>" for every node the label selector $1 selects, the release read as numo reads it by
# default (versionSource Auto): the node's release-image-version label when it has one (NFD, or the simulator's
# NFD stand-in, numo-sim run --nfd-labels), else the release-image-version annotation of the rendered
# MachineConfig its currentConfig annotation names. "unknown" when neither says.
node_releases() {
  local -A rendered=()
  local name config label version
  while IFS='|' read -r name version; do
    rendered[$name]="$version"
  done < <(kubectl get machineconfigs -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.annotations.machineconfiguration\.openshift\.io/release-image-version}{"\n"}{end}')
  while IFS='|' read -r name config label; do
    [[ -n "$name" ]] || continue
    version="$label"
    if [[ -z "$version" && -n "$config" ]]; then version="${rendered[$config]:-}"; fi
    echo "$name ${version:-unknown}"
  done < <(kubectl get nodes -l "$1" -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.annotations.machineconfiguration\.openshift\.io/currentConfig}{"|"}{.metadata.labels.machineconfiguration\.openshift\.io/release-image-version}{"\n"}{end}')
}
