# Shared helpers of hack/cluster-up.sh, hack/cluster-down.sh and hack/test.sh; sourced, not run.
#
# kwokctl keeps every cluster's state (pki, etcd data, logs, pids, kubeconfig) under
#   $KWOK_WORKDIR/clusters/<name>/      (default KWOK_WORKDIR: $NUMO_CACHE/kwok-workdir, outside the repository)
# Operations that create or delete a cluster hold an exclusive flock on $KWOK_WORKDIR, so concurrent callers
# (two test binaries, a demo and a test run) never race on kwokctl's port picking or on one cluster's state.

hack_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_dir="$(cd "$hack_dir/.." && pwd)"
# shellcheck source=hack/versions.sh
source "$hack_dir/versions.sh"

export KWOK_WORKDIR="${KWOK_WORKDIR:-$NUMO_CACHE/kwok-workdir}"
# kwokctl runs kubectl from PATH: the locally built one comes first, never /usr/bin/kubectl.
export PATH="$K8S_BIN:$KWOK_BIN:$PATH"

command -v flock >/dev/null || { echo "error: flock (util-linux) is required" >&2; exit 1; }

log() { printf '[%s %s] %s\n' "${log_prefix:-cluster}" "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# A cluster name kwokctl accepts and that is safe in paths.
check_cluster_name() {
  [[ "$1" =~ ^[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?$ ]] || die "invalid cluster name '$1' (lowercase letters, digits, '-')"
}

cluster_dir() { echo "$KWOK_WORKDIR/clusters/$1"; }
cluster_kubeconfig() { echo "$(cluster_dir "$1")/kubeconfig.yaml"; }

# Runs "$@" while holding the exclusive lock of the kwok work directory.
with_workdir_lock() {
  mkdir -p "$KWOK_WORKDIR"
  exec {lock_fd}<"$KWOK_WORKDIR"
  if ! flock -n "$lock_fd"; then
    log "waiting for another cluster operation to finish (lock on $KWOK_WORKDIR)"
    flock "$lock_fd"
  fi
  local rc=0
  "$@" || rc=$?
  exec {lock_fd}<&-
  return "$rc"
}

# PIDs of processes that still run out of the cluster's directory: kwokctl starts every component (etcd,
# kube-apiserver, ...) with `cd <cluster dir>`, so this finds them even when kwokctl's pid files are gone.
cluster_processes() {
  local dir cwd pid
  dir="$(cluster_dir "$1")"
  for cwd in /proc/[0-9]*/cwd; do
    [[ "$(readlink "$cwd" 2>/dev/null)" == "$dir" ]] || continue
    pid="${cwd#/proc/}"
    echo "${pid%/cwd}"
  done
}

# Whether the cluster's API server answers /readyz with the cluster's own credentials.
cluster_ready() {
  local kubeconfig
  kubeconfig="$(cluster_kubeconfig "$1")"
  [[ -f "$kubeconfig" ]] && kubectl --kubeconfig "$kubeconfig" --request-timeout=5s get --raw /readyz >/dev/null 2>&1
}
