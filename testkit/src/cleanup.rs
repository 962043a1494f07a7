//! Removes what earlier tests left in the shared cluster, so each test starts from an empty world: numo's
//! ValidatingAdmissionPolicy and its binding, the machine-config operator's (as the simulator installs them),
//! numo's objects (finalizers of a killed operator removed first), test namespaces with their pods, the OpenShift
//! objects (the ClusterVersion, every ClusterOperator — so a test's world has only the healthy ones seeding
//! creates —, pools, MachineConfigs, MachineConfigNodes where that API is served), the simulated storage world's
//! OSD Deployments, budgets and state map, and nodes. Every step waits until the
//! objects are really gone.
//!
//! Objects are read through numo's `Guarded`, so a leftover that cannot be decoded (a hostile test's rule nesting
//! 10,000 levels deep) is removed like any other instead of failing every later test's cleanup.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Client, Resource};
use numo::api::{MutexRule, MutexRunConfig, MutexTarget};
use numo::guard::Guarded;
use numo::openshift::{ClusterVersion, MachineConfig, MachineConfigPool};
use numo_simulator::cluster_operators::ClusterOperator;
use numo_simulator::machine_config_nodes::MachineConfigNode;

/// Label on every namespace the test kit creates; its value is the test's name (label-safe).
pub const TEST_NAMESPACE_LABEL: &str = "testkit.numo.openshift-optional.skrzypek.io/test";

/// How long one kind may take to disappear.
const GONE_TIMEOUT: Duration = Duration::from_secs(120);

/// One kind of object to remove.
struct Kind {
    resource: ApiResource,
    namespaced: bool,
    /// Only objects with these labels (`None`: all).
    selector: Option<String>,
    /// Only objects in this namespace (`None`: all namespaces).
    namespace: Option<String>,
    /// Only objects with these fields (`None`: all).
    field_selector: Option<String>,
    /// The API may not be served (a CRD the cluster may lack): nothing to remove then.
    optional: bool,
}

impl Kind {
    fn of<K: kube::Resource<DynamicType = ()>>(namespaced: bool) -> Self {
        Self {
            resource: ApiResource::erase::<K>(&()),
            namespaced,
            selector: None,
            namespace: None,
            field_selector: None,
            optional: false,
        }
    }

    fn if_served(self) -> Self {
        Self { optional: true, ..self }
    }

    fn labelled(self, selector: &str) -> Self {
        Self { selector: Some(selector.to_string()), ..self }
    }

    fn within(self, namespace: &str) -> Self {
        Self { namespace: Some(namespace.to_string()), ..self }
    }

    /// Only the object of this name.
    fn named(self, name: &str) -> Self {
        Self { field_selector: Some(format!("metadata.name={name}")), ..self }
    }

    fn list_params(&self) -> ListParams {
        let params = match &self.selector {
            Some(selector) => ListParams::default().labels(selector),
            None => ListParams::default(),
        };
        match &self.field_selector {
            Some(fields) => params.fields(fields),
            None => params,
        }
    }

    fn watcher_config(&self) -> watcher::Config {
        let config = match &self.selector {
            Some(selector) => watcher::Config::default().labels(selector),
            None => watcher::Config::default(),
        };
        match &self.field_selector {
            Some(fields) => config.fields(fields),
            None => config,
        }
    }

    /// The API of every object of this kind (in [`Kind::namespace`] when set).
    fn api_all(&self, client: &Client) -> Api<Guarded<DynamicObject>> {
        match &self.namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &self.resource),
            None => Api::all_with(client.clone(), &self.resource),
        }
    }

    fn api_for(&self, client: &Client, object: &Guarded<DynamicObject>) -> Api<Guarded<DynamicObject>> {
        match object.meta().namespace.as_deref().filter(|_| self.namespaced) {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &self.resource),
            None => Api::all_with(client.clone(), &self.resource),
        }
    }
}

/// Deletes the leftovers of earlier tests and waits until they are gone.
pub async fn remove_leftovers(client: &Client) -> anyhow::Result<()> {
    // numo's ValidatingAdmissionPolicy (tests/admission_policy.rs) before anything else: left in force, it would
    // refuse the writes of later tests that play other hands.
    let managed = format!("app.kubernetes.io/managed-by={}", numo::labels::MANAGER);
    for kind in [
        Kind::of::<ValidatingAdmissionPolicyBinding>(false).labelled(&managed),
        Kind::of::<ValidatingAdmissionPolicy>(false).labelled(&managed),
    ] {
        delete_all(client, &kind).await?;
    }
    // The machine-config operator's (numo_simulator::admission_policies), which only some releases install: left
    // in force, they would judge the pools of a later test's world on a release without them.
    for (policy, binding) in numo_simulator::admission_policies::ALL {
        for kind in [
            Kind::of::<ValidatingAdmissionPolicyBinding>(false).named(binding),
            Kind::of::<ValidatingAdmissionPolicy>(false).named(policy),
        ] {
            delete_all(client, &kind).await?;
        }
    }
    // numo's objects first (and its Jobs, which keep a finalizer until their result is recorded): their finalizers
    // would otherwise hold their namespaces in Terminating forever.
    let jobs = Kind::of::<Job>(true).labelled(&format!("{}={}", numo::labels::JOB_MANAGED_BY, numo::labels::MANAGER));
    for kind in [Kind::of::<MutexRunConfig>(true), Kind::of::<MutexTarget>(true), Kind::of::<MutexRule>(true), jobs] {
        delete_all(client, &kind).await?;
    }
    // Test namespaces next, while the nodes their pods run on still exist. Their pods go at once, finalizers
    // removed: a pod whose node or Job controller is gone would otherwise hold its namespace.
    let namespaces = Kind::of::<Namespace>(false).labelled(TEST_NAMESPACE_LABEL);
    let terminating = request_deletion(client, &namespaces, &DeleteParams::background()).await?;
    let now = DeleteParams { grace_period_seconds: Some(0), ..DeleteParams::background() };
    for namespace in &terminating {
        request_deletion(client, &Kind::of::<Pod>(true).within(namespace), &now).await?;
    }
    if !terminating.is_empty() {
        wait_all_gone(client, &namespaces).await?;
    }
    // The storage world's (numo_simulator::storage): its OSD Deployments with their pods, Rook's budgets and state.
    let storage = numo_simulator::storage::NAMESPACE;
    for kind in [
        Kind::of::<Deployment>(true).within(storage),
        Kind::of::<ReplicaSet>(true).within(storage),
        Kind::of::<PodDisruptionBudget>(true).within(storage),
        Kind::of::<ConfigMap>(true).within(storage).named(numo_simulator::storage::operator::STATE_MAP),
    ] {
        delete_all(client, &kind).await?;
    }
    let storage_pods = Kind::of::<Pod>(true).within(storage);
    if !request_deletion(client, &storage_pods, &now).await?.is_empty() {
        wait_all_gone(client, &storage_pods).await?;
    }
    for kind in [
        Kind::of::<ClusterVersion>(false),
        Kind::of::<ClusterOperator>(false),
        Kind::of::<MachineConfigPool>(false),
        Kind::of::<MachineConfig>(false),
        Kind::of::<MachineConfigNode>(false).if_served(),
        Kind::of::<Node>(false),
    ] {
        delete_all(client, &kind).await?;
    }
    Ok(())
}

/// Deletes every object of `kind` (finalizers removed) and waits until none is left.
async fn delete_all(client: &Client, kind: &Kind) -> anyhow::Result<()> {
    if !request_deletion(client, kind, &DeleteParams::background()).await?.is_empty() {
        wait_all_gone(client, kind).await?;
    }
    Ok(())
}

/// Removes the finalizers of every object of `kind` and deletes it; returns the names of the objects.
async fn request_deletion(client: &Client, kind: &Kind, params: &DeleteParams) -> anyhow::Result<Vec<String>> {
    let objects = match kind.api_all(client).list(&kind.list_params()).await {
        Err(kube::Error::Api(status)) if kind.optional && status.is_not_found() => return Ok(Vec::new()),
        listed => listed.with_context(|| format!("listing {}", kind.resource.plural))?,
    };
    if !objects.items.is_empty() {
        tracing::debug!(kind = %kind.resource.kind, count = objects.items.len(), "removing leftovers");
    }
    let mut names = Vec::with_capacity(objects.items.len());
    for object in &objects.items {
        let name = object.meta().name.clone().unwrap_or_default();
        let api = kind.api_for(client, object);
        if object.meta().finalizers.as_ref().is_some_and(|f| !f.is_empty()) {
            let patch = serde_json::json!({ "metadata": { "finalizers": null } });
            ignore_not_found(api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await)
                .with_context(|| format!("removing the finalizers of {} {}", kind.resource.kind, key(object)))?;
        }
        ignore_not_found(api.delete(&name, params).await)
            .with_context(|| format!("deleting {} {}", kind.resource.kind, key(object)))?;
        names.push(name);
    }
    Ok(names)
}

/// Watches `kind` until no object of it is left, or fails after [`GONE_TIMEOUT`] naming those that remain.
async fn wait_all_gone(client: &Client, kind: &Kind) -> anyhow::Result<()> {
    let mut remaining = BTreeSet::new();
    let events = watcher::watcher(kind.api_all(client), kind.watcher_config()).default_backoff();
    let watching = async {
        futures::pin_mut!(events);
        let mut listing = BTreeSet::new();
        let mut listed = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Init) => listing.clear(),
                Ok(Event::InitApply(object)) => {
                    listing.insert(key(&object));
                }
                Ok(Event::InitDone) => {
                    remaining = std::mem::take(&mut listing);
                    listed = true;
                }
                Ok(Event::Apply(object)) => {
                    remaining.insert(key(&object));
                }
                Ok(Event::Delete(object)) => {
                    remaining.remove(&key(&object));
                }
                Err(err) => tracing::debug!(%err, "watch error while waiting for leftovers to go"),
            }
            if listed && remaining.is_empty() {
                return;
            }
        }
    };
    let started = std::time::Instant::now();
    tokio::time::timeout(GONE_TIMEOUT, watching).await.map_err(|_| {
        anyhow::anyhow!(
            "{} left by earlier tests still exist after {GONE_TIMEOUT:?}: {remaining:?}",
            kind.resource.plural
        )
    })?;
    tracing::debug!(kind = %kind.resource.kind, elapsed = ?started.elapsed(), "leftovers gone");
    Ok(())
}

fn key(object: &Guarded<DynamicObject>) -> String {
    let metadata = object.meta();
    match &metadata.namespace {
        Some(namespace) => format!("{namespace}/{}", metadata.name.as_deref().unwrap_or_default()),
        None => metadata.name.clone().unwrap_or_default(),
    }
}

fn ignore_not_found<T>(result: kube::Result<T>) -> kube::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(err) => Err(err),
    }
}
