#!/usr/bin/env bash
# `make image-check`: builds the operator image and the bundle image the way `make docker-build` and
# `make bundle-build` do (buildah, FROM scratch), then checks what a registry, a scanner and OLM would see:
#
#  - the operator image: one layer's worth of files (numo and its license, nothing else), a numeric non-root user in
#    group 0, numo as the entrypoint, its labels; the numo binary taken out of the image is statically linked and
#    prints this tree's version (`numo --version`) and carries the console plugin's files (`numo console-plugin`
#    lists them); it is kept as target/image-check/numo (hack/test.sh has
#    `make olm-check` run it);
#  - the bundle image: the registry+v1 labels of bundle/metadata/annotations.yaml, and /manifests and /metadata
#    holding exactly bundle/'s files.
#
#   hack/image-check.sh      # images are tagged localhost/numo-check:<version> and removed at the end
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
log() { printf '[image-check %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "$*"; exit 1; }
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
command -v buildah >/dev/null || fail "buildah is required (hack/install-prerequisites.sh installs it)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
image="localhost/numo-check:$version" bundle_image="localhost/numo-check-bundle:$version"
work="$(mktemp -d "${TMPDIR:-/tmp}/numo-image-check.XXXXXX")"
containers=()
started=$SECONDS
finish() {
  local rc=$?
  for c in "${containers[@]}"; do buildah rm "$c" >/dev/null 2>&1 || true; done
  buildah rmi "$image" "$bundle_image" >/dev/null 2>&1 || true
  rm -rf "$work"
  log "$([[ $rc == 0 ]] && echo ok || echo FAILED) in $((SECONDS - started))s"
  exit "$rc"
}
trap finish EXIT

# Mounts the root filesystem of image $1 (in a working container removed at the end); sets $root to it.
mount_image() {
  local container
  container="$(buildah from --quiet "$1")"
  containers+=("$container")
  root="$(buildah mount "$container")"
}
files_under() { (cd "$1" && find . -mindepth 1 \( -type f -o -type l \) | sed 's|^\./||' | sort); }

CONTAINER_TOOL=buildah hack/container-build.sh operator "$image"
CONTAINER_TOOL=buildah hack/container-build.sh build bundle.Dockerfile "$bundle_image"

log "the operator image $image"
buildah inspect --type image "$image" >"$work/image.json"
jq -e '.OCIv1.config.User == "65532:0"' "$work/image.json" >/dev/null || fail "the image does not run as 65532:0"
jq -e '.OCIv1.config.Entrypoint == ["/usr/local/bin/numo"] and .OCIv1.config.Cmd == ["run"]' "$work/image.json" \
  >/dev/null || fail "the image's entrypoint is not numo run"
for label in name vendor version summary description io.k8s.display-name org.opencontainers.image.licenses; do
  [[ -n "$(jq -r --arg l "$label" '.OCIv1.config.Labels[$l] // empty' "$work/image.json")" ]] || fail "label $label is missing"
done
jq -e --arg v "$version" '.OCIv1.config.Labels.version == $v' "$work/image.json" >/dev/null ||
  fail "the image's version label is not $version"
mount_image "$image"
expected_files=$'licenses/numo/LICENSE\nusr/local/bin/numo'
[[ "$(files_under "$root")" == "$expected_files" ]] || { files_under "$root" >&2; fail "the image holds other files (above)"; }
cmp -s "$root/licenses/numo/LICENSE" LICENSE || fail "the image's license differs from LICENSE"
[[ "$(stat -c %g "$root/usr/local/bin/numo")" == 0 ]] || fail "numo in the image does not belong to group 0"
# Kept where hack/test.sh finds it, so that `make olm-check` runs the numo taken out of the image.
extracted="${CARGO_TARGET_DIR:-$repo/target}/image-check/numo"
mkdir -p "$(dirname "$extracted")" && cp "$root/usr/local/bin/numo" "$extracted"
# Statically linked: no program interpreter, so it runs on an empty base.
if readelf -l "$extracted" | grep -q 'Requesting program interpreter'; then fail "numo in the image is dynamically linked"; fi
out="$("$extracted" --version)"
[[ "$out" == "numo $version" ]] || fail "numo --version from the image printed '$out', expected 'numo $version'"
plugin_files="$("$extracted" console-plugin)" || fail "numo in the image carries no console plugin"
grep -q ' plugin-manifest.json$' <<<"$plugin_files" && grep -q ' plugin-entry.js$' <<<"$plugin_files" ||
  fail "numo in the image lacks the console plugin's manifest or entry: $plugin_files"
log "numo in the image serves the console plugin: $(tail -n 1 <<<"$plugin_files" | xargs)"
log "the image runs as 65532:0 and holds only numo and its license; its numo is static and says '$out' ($(du -h "$extracted" | cut -f1)), kept as $extracted"

log "the bundle image $bundle_image"
buildah inspect --type image "$bundle_image" >"$work/bundle.json"
# Every annotation of bundle/metadata/annotations.yaml is a label of the image, with the same value.
while IFS= read -r line; do
  key="${line%%: *}" value="${line#*: }"
  key="${key#"${key%%[![:space:]]*}"}"
  [[ "$(jq -r --arg k "$key" '.OCIv1.config.Labels[$k] // empty' "$work/bundle.json")" == "$value" ]] ||
    fail "the bundle image's label $key is not '$value'"
done < <(sed -n 's/^  \([a-z].*: .*\)$/\1/p' bundle/metadata/annotations.yaml)
mount_image "$bundle_image"
diff <(files_under "$root") <( (cd bundle && files_under .) ) >&2 || fail "the bundle image's files differ from bundle/ (above)"
diff -r "$root/manifests" bundle/manifests >&2 && diff -r "$root/metadata" bundle/metadata >&2 ||
  fail "the bundle image's manifests differ from bundle/"
log "the bundle image carries bundle/metadata's labels and exactly bundle/'s manifests and metadata"
