#!/usr/bin/env bash
# Builds or pushes a container image with podman or buildah (docker too, when its daemon answers).
#
#   hack/container-build.sh build <Dockerfile> <image>    # context: the repository root
#   hack/container-build.sh push <image>
#
# CONTAINER_TOOL=podman|buildah|docker picks the engine; otherwise the first of podman, buildah, docker that works.
# buildah needs no daemon (Debian: apt-get install buildah).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[container-build] %s\n' "$*" >&2; }

engine() {
  if [[ -n "${CONTAINER_TOOL:-}" ]]; then
    command -v "$CONTAINER_TOOL" >/dev/null || { log "error: CONTAINER_TOOL=$CONTAINER_TOOL is not installed"; exit 1; }
    echo "$CONTAINER_TOOL"; return
  fi
  if command -v podman >/dev/null; then echo podman; return; fi
  if command -v buildah >/dev/null; then echo buildah; return; fi
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then echo docker; return; fi
  log "error: no container engine found: install podman or buildah (e.g. apt-get install buildah), or start docker"
  exit 1
}

usage() { log "usage: $0 build <Dockerfile> <image> | push <image>"; exit 2; }

[[ $# -ge 1 ]] || usage
tool="$(engine)"
case "$1" in
  build)
    [[ $# -eq 3 ]] || usage
    dockerfile="$2" image="$3"
    log "$tool: building $image from $dockerfile"
    case "$tool" in
      buildah) buildah build --layers -f "$repo/$dockerfile" -t "$image" "$repo" ;;
      *) "$tool" build -f "$repo/$dockerfile" -t "$image" "$repo" ;;
    esac
    ;;
  push)
    [[ $# -eq 2 ]] || usage
    log "$tool: pushing $2"
    "$tool" push "$2"
    ;;
  *) usage ;;
esac
