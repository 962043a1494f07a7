# syntax=docker/dockerfile:1
# The numo operator image: a static (musl) numo binary on UBI micro, run as a numeric non-root user.
#
#   make docker-build IMG=quay.io/<you>/numo:<version>     # podman or buildah, from the repository root
#
# numo writes nothing to disk (the Deployment mounts the root filesystem read-only), so no directory needs to be
# writable; what the image ships belongs to group 0 with the owner's permissions, because OpenShift runs containers
# as an arbitrary UID in group 0. Pin both base images by digest for release builds.
ARG RUST_IMAGE=docker.io/library/rust:1.95-alpine
ARG BASE_IMAGE=registry.access.redhat.com/ubi9/ubi-micro:latest

FROM ${RUST_IMAGE} AS build
# Alpine's Rust targets musl and links statically by default; ring (TLS) needs a C toolchain and the musl headers.
RUN apk add --no-cache gcc musl-dev
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --package numo --bin numo \
 && install -D -m 0755 target/release/numo /out/usr/local/bin/numo
RUN install -D -m 0644 LICENSE /out/licenses/numo/LICENSE \
 && chgrp -R 0 /out \
 && chmod -R g=u /out

FROM ${BASE_IMAGE}
ARG VERSION=0.1.0
LABEL name="numo" \
      vendor="numo project" \
      version="${VERSION}" \
      release="1" \
      summary="numo, the Node Upgrade Mutex Operator" \
      description="Gates OpenShift worker-node upgrades behind admin-defined Jobs, one node (or N nodes) at a time, through a canary MachineConfigPool." \
      url="https://github.com/numo-operator/numo" \
      io.k8s.display-name="Node Upgrade Mutex Operator" \
      io.k8s.description="Gates OpenShift worker-node upgrades behind admin-defined Jobs, one node (or N nodes) at a time, through a canary MachineConfigPool." \
      io.openshift.tags="openshift,operator,upgrade,machineconfigpool,nodes" \
      org.opencontainers.image.title="numo" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/numo-operator/numo" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/ /
USER 65532:0
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/numo"]
CMD ["run"]
