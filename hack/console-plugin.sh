#!/usr/bin/env bash
# Builds and tests numo's console plugin (console-plugin/) from its lockfile, with the machine's Node.js and npm.
#
#   hack/console-plugin.sh build      # npm ci when needed, then the production build into console-plugin/dist
#   hack/console-plugin.sh check      # npm ci when needed, the type check, the lint (ESLint, Prettier), the i18n
#                                     # check (the English catalogue is what the sources generate) and the
#                                     # component tests (jest)
#   hack/console-plugin.sh shell      # the end-to-end tests' page: the console shell that loads the production
#                                     # build (e2e/shell/dist)
#   hack/console-plugin.sh all        # check, build and shell
#
# `npm ci` runs when node_modules is missing or older than package-lock.json; npm keeps its downloads in its own
# cache (~/.npm), so a warm machine installs offline-fast. Nothing is downloaded but packages from the npm registry:
# puppeteer-core brings no browser (the tests use Debian's Chromium).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
plugin="$repo/console-plugin"
log() { printf '[console-plugin %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

command -v node >/dev/null && command -v npm >/dev/null ||
  { log "error: Node.js and npm are required (Debian: apt-get install nodejs npm; hack/install-prerequisites.sh)"; exit 1; }

install() {
  if [[ -d "$plugin/node_modules" && "$plugin/node_modules/.package-lock.json" -nt "$plugin/package-lock.json" ]]; then
    return
  fi
  log "npm ci (from package-lock.json; node $(node --version), npm $(npm --version))"
  local start=$SECONDS
  (cd "$plugin" && npm ci --no-audit --no-fund --loglevel=error)
  log "npm ci done in $((SECONDS - start))s"
}

run() {
  local start=$SECONDS
  log "npm run $1"
  (cd "$plugin" && npm run --silent "$1")
  log "npm run $1 done in $((SECONDS - start))s"
}

build() {
  run build
  log "dist: $(find "$plugin/dist" -type f | wc -l) files, $(du -sb "$plugin/dist" | cut -f1) bytes"
}

# The end-to-end scripts' own helpers (kubeconfig reader, patch checks, manifest checks): node --test, no cluster.
e2e_units() {
  local start=$SECONDS
  log "node --test e2e/"
  (cd "$plugin" && node --test e2e/ >/dev/null) || { (cd "$plugin" && node --test e2e/); return 1; }
  log "node --test e2e/ done in $((SECONDS - start))s"
}

# Everything but the builds: the type check, ESLint and Prettier, the English catalogue (locales/en) equal to what
# i18next-parser writes from the sources (a word added, changed or removed without `npm run i18n` fails), the
# component tests and the end-to-end scripts' helpers.
check() {
  run typecheck && run lint && i18n_check && run test && e2e_units
}

i18n_check() {
  local start=$SECONDS
  log "npm run i18n:check"
  (cd "$plugin" && npm run --silent i18n:check >/dev/null 2>&1) || {
    log "error: console-plugin/locales/en/plugin__numo-console-plugin.json is not what the sources generate:"
    log "run \`npm run i18n\` in console-plugin/ and commit the result"
    return 1
  }
  log "npm run i18n:check done in $((SECONDS - start))s"
}

[[ $# -eq 1 ]] || { log "usage: $0 build|check|shell|all"; exit 2; }
install
case "$1" in
  build) build ;;
  check) check ;;
  shell) run build:shell ;;
  all) check && build && run build:shell ;;
  *) log "usage: $0 build|check|shell|all"; exit 2 ;;
esac
