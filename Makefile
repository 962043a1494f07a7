# numo — the Node Upgrade Mutex Operator. `make help` lists the targets.
SHELL := /usr/bin/env bash
CLUSTER ?= numo

.PHONY: help tools cluster-up cluster-down test lint fmt crds demo

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

crds: ## regenerate config/crd from the Rust types
	cargo run --quiet --bin numo -- crds --output-dir config/crd

demo: ## a local cluster, a simulated OpenShift, numo and a live upgrade
	hack/demo.sh
