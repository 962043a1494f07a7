# Generated from config/ by `cargo xtask bundle`; do not edit.
# Build from the repository root: make bundle-build
FROM scratch

LABEL com.redhat.openshift.versions=v4.16
LABEL operators.operatorframework.io.bundle.channel.default.v1=stable
LABEL operators.operatorframework.io.bundle.channels.v1=stable
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=openshift-node-upgrade-mutex-operator

COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
