# The numo operator image: one static (musl) numo binary on an empty base, run as a numeric non-root user.
#
#   make docker-build IMG=quay.io/<you>/numo:<version>
#
# The build context is not the repository: hack/container-build.sh builds the static binary on the host
# (`cargo build --release --target <arch>-unknown-linux-musl`) and stages it with the license in a context directory
# shaped like the image (numo, licenses/). Nothing can be pulled to build this image, and nothing needs to be: numo
# links no C library at run time, reads the cluster's CA from its ServiceAccount mount, and writes nothing to disk
# (the Deployment mounts the root filesystem read-only). So the image holds no shell, no package manager and no
# libc, which leaves a scanner nothing to report but numo itself (docs/install.md, "The operator image").
#
# What the image ships belongs to group 0 with the owner's permissions, because OpenShift runs containers as an
# arbitrary UID in group 0.
FROM scratch
ARG VERSION=0.2.0
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
COPY licenses/ /licenses/
COPY numo /usr/local/bin/numo
USER 65532:0
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/numo"]
CMD ["run"]
