#!/usr/bin/env bash
# Installs what the build and tests need on a fresh machine: Rust toolchain components and Debian packages.
# Everything else (the Kubernetes control plane, etcd, kwok, OLM, opm) is built from the Go module proxy by
# hack/build-tools.sh. The operator image is built with buildah from a static (musl) numo binary, so the musl target,
# musl-tools (ring's C code) and buildah are installed here too, Chromium for the tests that render pictures and
# drive the console plugin, Node.js with npm (when missing) to build the plugin, and openssl for `make demo`'s console.
set -euo pipefail
log() { printf '[prerequisites] %s\n' "$*" >&2; }

if command -v rustup >/dev/null; then
  for component in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$component" || { log "installing $component"; rustup component add "$component"; }
  done
  musl_target="$(uname -m)-unknown-linux-musl"
  rustup target list --installed 2>/dev/null | grep -qx "$musl_target" || { log "installing $musl_target"; rustup target add "$musl_target"; }
fi

missing=()
for tool in curl git jq make unzip buildah; do command -v "$tool" >/dev/null || missing+=("$tool"); done
command -v column >/dev/null || missing+=(bsdextrautils)
command -v musl-gcc >/dev/null || missing+=(musl-tools)
# The timeline picture's tests render it in a real browser: Debian's Chromium, headless.
command -v chromium >/dev/null || missing+=(chromium)
# The console plugin is built and tested with Node.js and npm (console-plugin/, hack/console-plugin.sh).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
# `make demo` signs the throwaway certificate numo serves its console plugin with for 127.0.0.1.
command -v openssl >/dev/null || missing+=(openssl)
if [[ ${#missing[@]} -gt 0 ]]; then
  log "installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [[ $(id -u) == 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq && "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
command -v go >/dev/null || { log "Go is required to build the test cluster (install Go 1.24+)"; exit 1; }
log "ok"
