//! The MachineConfigNode writes, each as the component that makes it ([`crate::Platform`]): the operator's sync
//! ([`super::operator`]), the node controller's `spec.configVersion.desired` ([`MachineConfigNodes::set_desired`])
//! and the conditions of one node's update ([`NodeReport`]). None of them ever fails the caller: the real
//! components log a failed MachineConfigNode write and go on, and so does the simulator (a `warn` log).

use std::sync::Arc;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::ResourceExt;
use numo::openshift::MachineConfigPool;
use serde_json::json;

use super::conditions::{next, status_desired};
use super::steps::{Step, Writer};
use super::*;
use crate::platform::Platform;
use crate::release::OpenShiftRelease;

/// Why the operator's MachineConfigNode sync did not complete.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// It stopped at a node matched by several custom pools: the operator's whole sync stops.
    #[error(transparent)]
    Stopped(crate::membership::MultipleCustomPools),
    /// A write failed.
    #[error("{0:#}")]
    Write(anyhow::Error),
}

/// The platform's MachineConfigNode writers of a release that has them
/// ([`OpenShiftRelease::writes_machine_config_nodes`]).
#[derive(Clone)]
pub struct MachineConfigNodes {
    operator: kube::Client,
    controller: kube::Client,
    daemon: kube::Client,
    release: OpenShiftRelease,
    cache: Store<MachineConfigNode>,
}

impl MachineConfigNodes {
    /// The writers of `release`, through the clients of `platform`; `cache` is a watch of every MachineConfigNode
    /// (while it has not listed, for instance because the API is not served, nothing is written).
    pub fn new(platform: &Platform, release: OpenShiftRelease, cache: Store<MachineConfigNode>) -> Self {
        Self {
            operator: platform.machine_config_operator.clone(),
            controller: platform.machine_config_controller.clone(),
            daemon: platform.machine_config_daemon.clone(),
            release,
            cache,
        }
    }

    /// Whether the API is served: the watch has listed.
    pub fn served(&self) -> bool {
        matches!(self.cache.wait_until_ready().now_or_never(), Some(Ok(())))
    }

    /// The operator's sync over the cached nodes and pools ([`super::operator`]): Err([`SyncError::Stopped`]) when
    /// it stopped at a node in several custom pools (after the writes before it), Err([`SyncError::Write`]) when a
    /// write failed (the next sync retries).
    pub async fn sync(&self, nodes: &[Arc<Node>], pools: &[Arc<MachineConfigPool>]) -> Result<(), SyncError> {
        if !self.served() {
            return Ok(());
        }
        let objects = self.cache.state();
        let plan = operator::plan(nodes, pools, &objects);
        let written = operator::apply(&self.operator, plan.actions).await;
        match plan.stopped_at {
            Some(conflict) => Err(SyncError::Stopped(conflict)),
            None => written.map_err(SyncError::Write),
        }
    }

    /// The node controller sets `spec.configVersion.desired` of `node`'s object to `desired` (a read and an
    /// update, field manager [`FIELD_MANAGER`]) before it sets the node's `desiredConfig`
    /// (`pkg/controller/node/node_controller.go` `updateCandidateNode`, `pkg/upgrademonitor/upgrade_monitor.go`
    /// `UpdateMachineConfigNodeSpecDesiredAnnotation`). A missing object is an error, logged.
    pub async fn set_desired(&self, node: &str, desired: &str) {
        if !self.served() {
            return;
        }
        let api: Api<MachineConfigNode> = Api::all(self.controller.clone());
        let result = async {
            let mut object = api.get(node).await?;
            object.spec.config_version.desired = if desired.is_empty() { NOT_YET_SET } else { desired }.to_string();
            let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
            api.replace(node, &params, &object).await
        };
        if let Err(error) = result.await {
            tracing::warn!(%node, %error, "machine-config controller: error populating the MachineConfigNode's desired config");
        }
    }

    /// The writer of `node`'s update, whose primary pool is `pool` (or [`NOT_YET_SET`]); None when the API is not
    /// served.
    pub fn report(&self, node: &Node, pool: Option<&str>) -> Option<NodeReport> {
        self.served().then(|| NodeReport {
            daemon: Api::all(self.daemon.clone()),
            controller: Api::all(self.controller.clone()),
            release: self.release,
            node: node.name_any(),
            uid: node.uid().unwrap_or_default(),
            pool: pool.unwrap_or(NOT_YET_SET).to_string(),
            last: None,
        })
    }
}

/// The MachineConfigNode writes of one node's update, in order. Like the real components it reads the object
/// before a write, but once: each write's response is the next one's starting point (only this update writes the
/// status of its node's object meanwhile).
pub struct NodeReport {
    daemon: Api<MachineConfigNode>,
    controller: Api<MachineConfigNode>,
    release: OpenShiftRelease,
    node: String,
    uid: String,
    pool: String,
    last: Option<MachineConfigNode>,
}

impl NodeReport {
    /// Writes `steps` in order on a node whose `desiredConfig` and `currentConfig` are `desired` and `current`.
    pub async fn write(&mut self, steps: Vec<Step>, desired: &str, current: &str) {
        for step in steps {
            if let Err(error) = self.write_step(&step, desired, current).await {
                tracing::warn!(node = %self.node, condition = step.parent.type_, %error, "error writing the MachineConfigNode");
                self.last = None;
            }
        }
    }

    /// The daemon applies the object's spec once the update is found compatible: node, pool and
    /// `configVersion.desired` = `desired` (`pkg/daemon/update.go` `update` → `upgrade_monitor.go`
    /// `GenerateAndApplyMachineConfigNodeSpec`: server-side apply, forced, or a create with the Node as owner).
    pub async fn apply_spec(&mut self, desired: &str) {
        let result = async {
            let existing = match self.last.take() {
                Some(existing) => Some(existing),
                None => self.daemon.get_opt(&self.node).await?,
            };
            if existing.is_none() {
                let object = object(&self.node, Some(&self.uid), &self.pool, desired);
                return self.daemon.create(&create_params(Writer::Daemon), &object).await;
            }
            let body = json!({
                "apiVersion": "machineconfiguration.openshift.io/v1",
                "kind": "MachineConfigNode",
                "metadata": {"name": self.node},
                "spec": spec(&self.node, &self.pool, desired),
            });
            self.daemon.patch(&self.node, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body)).await
        };
        match result.await {
            Ok(applied) => self.last = Some(applied),
            Err(error) => tracing::warn!(node = %self.node, %error, "error applying the MachineConfigNode's spec"),
        }
    }

    /// One write of `generateAndApplyMachineConfigNodes`: a read (or the last response), the conditions of
    /// [`next`], and a forced server-side apply of the status; when there is no object yet, a create of a bare one
    /// (whose status the API server drops, as the real write's).
    async fn write_step(&mut self, step: &Step, desired: &str, current: &str) -> Result<(), kube::Error> {
        let api = match step.writer {
            Writer::Daemon => &self.daemon,
            Writer::Controller => &self.controller,
        };
        let existing = match self.last.take() {
            Some(existing) => Some(existing),
            None => api.get_opt(&self.node).await?,
        };
        let Some(existing) = existing else {
            let object = object(&self.node, None, &self.pool, desired);
            self.last = Some(api.create(&create_params(step.writer), &object).await?);
            return Ok(());
        };
        let conditions = existing.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        let now = Time(Timestamp::now());
        let spec_desired = existing.spec.config_version.desired.as_str();
        let Some(conditions) = next(conditions, &step.parent, step.child.as_ref(), spec_desired, self.release, &now)
        else {
            self.last = Some(existing);
            return Ok(());
        };
        let status = MachineConfigNodeStatus {
            conditions,
            observed_generation: Some(existing.metadata.generation.unwrap_or_default() + 1),
            config_version: Some(StatusConfigVersion {
                desired: status_desired(&step.parent, desired),
                current: (!current.is_empty()).then(|| current.to_string()),
            }),
        };
        let body = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigNode",
            "metadata": {"name": self.node},
            "status": status,
        });
        let params = PatchParams::apply(FIELD_MANAGER).force();
        self.last = Some(api.patch_status(&self.node, &params, &Patch::Apply(&body)).await?);
        Ok(())
    }
}

/// The spec of `node`'s object.
pub(crate) fn spec(node: &str, pool: &str, desired: &str) -> MachineConfigNodeSpec {
    MachineConfigNodeSpec {
        node: ObjectName { name: node.to_string() },
        pool: ObjectName { name: pool.to_string() },
        config_version: DesiredConfigVersion {
            desired: if desired.is_empty() { NOT_YET_SET } else { desired }.to_string(),
        },
    }
}

/// A new object for `node`, owned by the Node of `uid` when given.
pub(crate) fn object(node: &str, uid: Option<&str>, pool: &str, desired: &str) -> MachineConfigNode {
    let mut object = MachineConfigNode::new(node, spec(node, pool, desired));
    object.metadata = ObjectMeta {
        name: Some(node.to_string()),
        owner_references: uid.map(|uid| vec![node_owner(node, uid)]),
        ..ObjectMeta::default()
    };
    object
}

/// The owner reference to the Node `node` of `uid`, as the operator writes it (no `controller` flag).
pub(crate) fn node_owner(node: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: node.to_string(),
        uid: uid.to_string(),
        ..OwnerReference::default()
    }
}

/// A create as client-go makes it without a field manager: named after the binary.
fn create_params(writer: Writer) -> PostParams {
    let manager = match writer {
        Writer::Daemon => "machine-config-daemon",
        Writer::Controller => "machine-config-controller",
    };
    PostParams { field_manager: Some(manager.into()), ..PostParams::default() }
}
