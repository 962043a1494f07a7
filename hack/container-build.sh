#!/usr/bin/env bash
# Builds or pushes numo's container images with podman or buildah (docker too, when its daemon answers).
#
#   hack/container-build.sh operator <image>              # the operator image (Dockerfile), FROM scratch
#   hack/container-build.sh build <Dockerfile> <image>    # any other image; context: the repository root
#   hack/container-build.sh push <image>
#
# The operator image needs no base image and no build container: its one binary is numo built here, statically
# linked against musl (`rustup target add <arch>-unknown-linux-musl`, Debian's musl-tools), with the console
# plugin's files (built by hack/console-plugin.sh with Node.js and npm) inside it, and staged with the license in a
# context directory shaped like the image.
#
# CONTAINER_TOOL=podman|buildah|docker picks the engine; otherwise the first of podman, buildah, docker that works.
# buildah needs no daemon (Debian: apt-get install buildah); it runs here with the vfs storage driver and chroot
# isolation unless STORAGE_DRIVER / BUILDAH_ISOLATION say otherwise, so it also works inside a container.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[container-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

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

usage() { log "usage: $0 operator <image> | build <Dockerfile> <image> | push <image>"; exit 2; }

# build DOCKERFILE CONTEXT IMAGE [BUILD-ARG...]
build() {
  local dockerfile="$1" context="$2" image="$3"
  shift 3
  local args=()
  for a in "$@"; do args+=(--build-arg "$a"); done
  log "$tool: building $image from $dockerfile"
  case "$tool" in
    buildah)
      STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}" \
        buildah build --quiet -f "$dockerfile" "${args[@]}" -t "$image" "$context" >/dev/null ;;
    *) "$tool" build -f "$dockerfile" "${args[@]}" -t "$image" "$context" ;;
  esac
}

# Stages the static numo binary, with the console plugin's files built into it, and the license as the operator
# image's build context, in the directory $context.
operator_context() {
  local target
  target="$(uname -m)-unknown-linux-musl"
  command -v musl-gcc >/dev/null || { log "error: musl-gcc is missing (Debian: apt-get install musl-tools)"; exit 1; }
  "$repo/hack/console-plugin.sh" build
  log "cargo build --release --target $target --features console-plugin (numo, statically linked)"
  (cd "$repo" && cargo build --quiet --release --locked --target "$target" --package numo --bin numo \
    --features console-plugin)
  local bin="${CARGO_TARGET_DIR:-$repo/target}/$target/release/numo"
  context="${CARGO_TARGET_DIR:-$repo/target}/image-context"
  rm -rf "$context" && mkdir -p "$context/licenses/numo"
  # Stripped of its symbol table: about a third smaller, and numo's logs and panics do not need it.
  install -s -m 0775 "$bin" "$context/numo"
  install -m 0664 "$repo/LICENSE" "$context/licenses/numo/LICENSE"
}

[[ $# -ge 1 ]] || usage
tool="$(engine)"
case "$1" in
  operator)
    [[ $# -eq 2 ]] || usage
    version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/Cargo.toml" | head -n 1)"
    operator_context
    build "$repo/Dockerfile" "$context" "$2" "VERSION=$version"
    log "built $2"
    ;;
  build)
    [[ $# -eq 3 ]] || usage
    build "$repo/$2" "$repo" "$3"
    log "built $3"
    ;;
  push)
    [[ $# -eq 2 ]] || usage
    log "$tool: pushing $2"
    case "$tool" in
      buildah) STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" buildah push "$2" ;;
      *) "$tool" push "$2" ;;
    esac
    ;;
  *) usage ;;
esac
