# numo — the Node Upgrade Mutex Operator. `make help` lists the targets.
SHELL := /usr/bin/env bash
CLUSTER ?= numo

.PHONY: help tools cluster-up cluster-down test lint fmt crds demo bench-scale bench-topology

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

tools: ## build (or reuse) kube-apiserver, etcd, kwok... into ~/.cache/numo
	hack/build-tools.sh

cluster-up: ## start a local cluster (CLUSTER=name) with kwok nodes and the OpenShift CRDs
	hack/cluster-up.sh $(CLUSTER)

cluster-down: ## stop the local cluster (CLUSTER=name) and remove its state
	hack/cluster-down.sh $(CLUSTER)

test: ## run every test: unit, schema, and integration against a local cluster
	hack/test.sh

lint: ## rustfmt and clippy, as CI runs them
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

fmt: ## format the code
	cargo fmt --all

crds: ## regenerate config/crd, the console plugin's names and types of them (console-plugin/src/api-{names,types}.ts) and of the timeline numo serves it (timeline-types.ts), numo's ClusterRole (config/rbac/role.yaml), the docs' parts on the checks and the bundle, from the Rust sources
	cargo run --quiet --bin numo -- crds --output-dir config/crd
	cargo xtask plugin-names
	cargo xtask plugin-types
	cargo xtask plugin-timeline
	cargo xtask rbac
	cargo xtask docs
	cargo xtask bundle

bench-scale: ## one rollout of N workers, C at a time, by numo's release build on a fresh cluster (N=100 C=5)
	hack/bench-scale.sh $(or $(N),100) $(or $(C),5)

bench-topology: ## name order vs DomainAtATime vs Spread on a simulated storage cluster (SHAPE=racks9|zones60, CASES=...)
	hack/bench-topology.sh $(or $(SHAPE),racks9)

demo: ## a local cluster, a simulated OpenShift, numo and a live upgrade, watched in the console shell (CONSOLE=0: not)
	hack/demo.sh

# --- Images and the OLM bundle (podman or buildah; see README) ---
VERSION ?= $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
IMG ?= quay.io/numo-operator/numo:$(VERSION)
BUNDLE_IMG ?= quay.io/numo-operator/numo-bundle:$(VERSION)
.PHONY: bundle bundle-validate docker-build docker-push bundle-build bundle-push install-check olm-check image-check

bundle: ## regenerate the OLM bundle (bundle/, bundle.Dockerfile) from config/
	cargo xtask bundle

bundle-validate: ## check the bundle matches config/ and passes operator-sdk validation with no warning
	hack/validate-bundle.sh

docker-build: ## build the operator image IMG (FROM scratch, a static numo) with podman or buildah
	hack/container-build.sh operator $(IMG)

docker-push: ## push the operator image IMG
	hack/container-build.sh push $(IMG)

bundle-build: ## build the OLM bundle image BUNDLE_IMG
	hack/container-build.sh build bundle.Dockerfile $(BUNDLE_IMG)

bundle-push: ## push the OLM bundle image BUNDLE_IMG
	hack/container-build.sh push $(BUNDLE_IMG)

install-check: ## kubectl: install the previous release, upgrade it mid-rollout, remove it (in order; mid-rollout + restore by hand)
	hack/install-check.sh

olm-check: ## install numo through real OLM, upgrade it mid-rollout, remove it mid-rollout and for good (fresh cluster)
	hack/olm-check.sh

image-check: ## build both images with buildah and check their files, labels and the numo binary inside
	hack/image-check.sh
