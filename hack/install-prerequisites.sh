#!/usr/bin/env bash
# Installs what the build and tests need on a fresh machine: Rust toolchain components and Debian packages.
# Everything else (the Kubernetes control plane, etcd, kwok) is built from the Go module proxy by hack/build-tools.sh.
set -euo pipefail
log() { printf '[prerequisites] %s\n' "$*" >&2; }

if command -v rustup >/dev/null; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" || { log "installing $component"; rustup component add "$component"; }
  done
fi

missing=()
for tool in curl git make unzip; do command -v "$tool" >/dev/null || missing+=("$tool"); done
command -v column >/dev/null || missing+=(bsdextrautils)
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq && "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
command -v go >/dev/null || { log "Go is required to build the test cluster (install Go 1.24+)"; exit 1; }
log "ok"
