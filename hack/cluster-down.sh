#!/usr/bin/env bash
# Stops a local cluster started by hack/cluster-up.sh and removes all its state: no process and no file remain.
#
#   hack/cluster-down.sh [NAME]          (default NAME: numo)
set -euo pipefail
log_prefix=cluster-down
# shellcheck source=hack/lib/cluster.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/cluster.sh"

name="${1:-numo}"
check_cluster_name "$name"
started=$SECONDS

[[ -x "$KWOK_BIN/kwokctl" ]] || die "kwokctl is not built ($KWOK_BIN); nothing can have started a cluster"

# Whether process $1 runs (a zombie waiting for its parent to reap it does not count).
running() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z ]]
}

# Waits up to $1 seconds for the PIDs that follow to exit; prints those still running.
survivors_after_wait() {
  local deadline=$((SECONDS + $1)) alive
  shift
  while :; do
    alive=()
    for pid in "$@"; do running "$pid" && alive+=("$pid"); done
    if [[ ${#alive[@]} -eq 0 || $SECONDS -ge $deadline ]]; then break; fi
    sleep 0.2
  done
  echo "${alive[@]}"
}

stop_and_remove() {
  local dir pids survivors
  dir="$(cluster_dir "$name")"
  if [[ ! -d "$dir" ]]; then
    log "cluster $name does not exist"
    return
  fi
  mapfile -t pids < <(cluster_processes "$name")
  log "deleting cluster $name (${#pids[@]} processes)"
  # --kubeconfig names the kubeconfig kwokctl removes the cluster's context from: its own one, deleted anyway,
  # so ~/.kube/config is never touched (kwokctl rejects an empty path here).
  local wait_for_kwokctl=0
  if kwokctl --name "$name" delete cluster --kubeconfig "$(cluster_kubeconfig "$name")" >&2; then
    wait_for_kwokctl=30
  else
    log "kwokctl delete failed; stopping the processes directly"
  fi
  read -r -a survivors <<<"$(survivors_after_wait "$wait_for_kwokctl" "${pids[@]}")"
  if [[ ${#survivors[@]} -gt 0 ]]; then
    # kube-apiserver and etcd may take a minute to shut down gracefully; their state is deleted anyway.
    log "terminating leftover processes ${survivors[*]}"
    kill "${survivors[@]}" 2>/dev/null || true
    read -r -a survivors <<<"$(survivors_after_wait 10 "${survivors[@]}")"
    if [[ ${#survivors[@]} -gt 0 ]]; then
      kill -9 "${survivors[@]}" 2>/dev/null || true
      survivors_after_wait 5 "${survivors[@]}" >/dev/null
    fi
  fi
  rm -rf "$dir"
  local left
  left="$(cluster_processes "$name")"
  [[ -z "$left" ]] || die "processes of cluster $name are still running: $left"
  [[ ! -e "$dir" ]] || die "state of cluster $name remains in $dir"
}
with_workdir_lock stop_and_remove

# Remove the work directory when no cluster is left in it.
rmdir "$KWOK_WORKDIR/clusters" "$KWOK_WORKDIR" 2>/dev/null || true
log "cluster $name is gone ($((SECONDS - started))s)"
