//! `numo plan`: what a run config's rollout would do, from numo's own planner run over a copy of the cluster read
//! once with the caller's credentials. The planner's writes are carried out on that copy only (pools claimed,
//! paused and steered, nodes labelled) until the first node would start or a check holds it; then the projection
//! the status's estimate rests on gives every node's start and end. What the operator asks only when a node would
//! start (the pods a PodDisruptionBudget at zero covers, the alerts that fire) is asked as the operator asks it, in
//! the same step ([`on_demand`](super::on_demand)), with the caller's credentials ([`caller`]). Nothing in the
//! cluster changes.

pub mod caller;
pub mod read;
mod show;
pub mod timeline;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::observe::Stores;
use super::on_demand::{self, Ask};
use super::plan::{self, Intent, Plan};
use super::snapshot::{ClaimAnnotations, PoolClaim, Snapshot};
use crate::alerts::AlertmanagerConfig;
use crate::api::{Blocker, Estimate, MutexRunConfig, RunPhase, Step};
use crate::pool_claim::PoolOriginal;
pub use show::{json, table, yaml};

/// How many times the planner runs over the copy at most (claim, pause, label, steer, gate take a few).
const ROUNDS: usize = 12;

/// What a rollout would do.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The run config, `namespace/name`.
    pub run_config: String,
    /// Where the planner finds the rollout (after carrying its writes out on the copy).
    pub phase: Option<RunPhase>,
    /// What the planner says of it.
    pub message: String,
    /// The version the nodes go to.
    pub target_version: Option<String>,
    /// How many nodes the rollout gates.
    pub total_nodes: u32,
    /// How many go at once.
    pub concurrency: u32,
    /// The node that would start now, if one would.
    pub starts_now: Option<String>,
    /// What would hold the first node right now.
    pub held_by: Vec<Blocker>,
    /// The nodes not done, in the order they would go, with their projected steps.
    pub nodes: Vec<PreviewNode>,
    /// Under `spec.topology`: the node label that names a node's failure domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_key: Option<String>,
    /// Under `spec.topology`: the failure domains in the order they would go, with their projected start and end.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<PreviewWave>,
    /// When the rollout would end, and on what that rests.
    pub estimate: Option<Estimate>,
    /// What the preview assumed beyond the cluster as it is (e.g. a version given with `--to`).
    pub notes: Vec<String>,
}

/// One node of the preview.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewNode {
    /// Its place in the order, from 1.
    pub order: usize,
    /// Under `spec.topology`: its failure domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The node.
    pub node: String,
    /// Whether it is under way already.
    pub started: bool,
    /// When its first step still to come would start.
    pub start: Option<DateTime<Utc>>,
    /// When it would be done.
    pub end: Option<DateTime<Utc>>,
    /// Its steps still to come.
    pub steps: Vec<PreviewStep>,
}

/// One failure domain of the preview.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewWave {
    /// The domain (`""` for the nodes without the key label).
    pub domain: String,
    /// How many of the rollout's nodes it has.
    pub nodes: u32,
    /// How many of them are done.
    pub done: u32,
    /// When its first node still to go would start (or is under way since).
    pub start: Option<DateTime<Utc>>,
    /// When its last node would be done.
    pub end: Option<DateTime<Utc>>,
}

/// One projected step.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewStep {
    /// The step.
    pub step: Step,
    /// When it would start.
    pub start: DateTime<Utc>,
    /// When it would end.
    pub end: DateTime<Utc>,
}

/// `numo plan namespace/name`: reads the cluster with `kubeconfig`, and previews the run config's rollout with
/// `to` and the Alertmanager `alertmanager` names.
pub async fn numo_plan(
    kubeconfig: kube::Config,
    namespace: &str,
    name: &str,
    to: Option<&str>,
    alertmanager: &caller::AlertmanagerArgs,
) -> Result<Preview, String> {
    let alertmanager = alertmanager.config(&kubeconfig);
    let client = kube::Client::try_from(kubeconfig).map_err(|e| format!("cannot build the Kubernetes client: {e}"))?;
    let (run_config, stores) = read::read(&client, namespace, name).await?;
    Ok(from_cluster(&client, &run_config, &stores, to, alertmanager.as_ref()).await)
}

/// What `numo plan` shows of `run_config`, from the cluster as `client` read it into `stores`: the custom checks'
/// objects are listed once with `client`, and what the plan asks when a node would start is asked with `client` and
/// of `alertmanager` (None: as if no alert fired, and a note says so). With `to`, as if the cluster went to that
/// version.
pub async fn from_cluster(
    client: &kube::Client,
    run_config: &MutexRunConfig,
    stores: &Stores,
    to: Option<&str>,
    alertmanager: Option<&AlertmanagerConfig>,
) -> Preview {
    let mut snapshot = super::observe::snapshot(stores, run_config, k8s_openapi::jiff::Timestamp::now());
    read::custom_checks(client, &mut snapshot).await;
    let caller = caller::Caller::new(client, alertmanager);
    let mut preview = preview(snapshot, to, &caller).await;
    preview.notes.extend(caller.notes());
    preview
}

/// Runs the planner over `snapshot` (a copy of the cluster), as if the run config were not paused and, with `to`,
/// as if the cluster went to that version with the control plane done; what a round's plan asks when a node would
/// start is asked of `ask`.
pub async fn preview(mut snapshot: Snapshot, to: Option<&str>, ask: &impl Ask) -> Preview {
    let mut notes = Vec::new();
    let run_config = snapshot.run_config.key();
    if let Some(version) = to {
        let cluster = snapshot.cluster.get_or_insert_with(Default::default);
        cluster.target_version = Some(version.to_string());
        cluster.control_plane_completed = true;
        notes.push(format!("as if the cluster went to {version} and its control plane had finished (--to)"));
    }
    if snapshot.run_config.spec.paused {
        snapshot.run_config.spec.paused = false;
        notes.push("the run config is paused: shown as if it were resumed now".to_string());
    }
    let kept = super::plan::Kept::default();
    let mut p = round(&mut snapshot, ask, &kept).await;
    for _ in 1..ROUNDS {
        let settled = starts(&p).is_some()
            || !p.status.blocked_by.is_empty()
            || p.intents.iter().all(|i| matches!(i, Intent::AddFinalizer));
        if settled {
            break;
        }
        carry_out(&mut snapshot, &p);
        p = round(&mut snapshot, ask, &kept).await;
    }
    let starts_now = starts(&p);
    let topology = p.status.topology.clone();
    let domain_of = |node: &str| {
        let key = &topology.as_ref()?.key;
        Some(snapshot.nodes.get(node).and_then(|n| n.labels.get(key)).cloned().unwrap_or_default())
    };
    let nodes = p
        .projection
        .as_ref()
        .map(|projected| projected_nodes(projected, starts_now.as_deref(), domain_of))
        .unwrap_or_default();
    let waves = topology.as_ref().map(|t| waves(t, &nodes)).unwrap_or_default();
    Preview {
        run_config,
        phase: p.status.phase,
        message: p.status.message.clone().unwrap_or_default(),
        target_version: p.status.target_version.clone(),
        total_nodes: p.status.total_nodes,
        concurrency: snapshot.run_config.spec.concurrency,
        starts_now,
        held_by: p.status.blocked_by.clone(),
        nodes,
        topology_key: topology.map(|t| t.key),
        waves,
        estimate: p.status.estimate.clone(),
        notes,
    }
}

/// The nodes of `projected` as the preview shows them, in order: `starts_now` (the node the plan starts) is shown as
/// not under way yet, and `domain_of` gives a node's failure domain.
pub fn projected_nodes(
    projected: &crate::estimate::Projected,
    starts_now: Option<&str>,
    domain_of: impl Fn(&str) -> Option<String>,
) -> Vec<PreviewNode> {
    projected
        .nodes
        .iter()
        .enumerate()
        .map(|(i, planned)| PreviewNode {
            order: i + 1,
            domain: domain_of(&planned.node),
            node: planned.node.clone(),
            started: planned.started && starts_now != Some(planned.node.as_str()),
            start: planned.start(),
            end: planned.end(),
            steps: planned
                .steps
                .iter()
                .map(|(step, start, end)| PreviewStep { step: *step, start: *start, end: *end })
                .collect(),
        })
        .collect()
}

/// The waves of the preview: the status's domains in their order, each with the projected start and end of its
/// nodes still to go.
fn waves(topology: &crate::api::TopologyStatus, nodes: &[PreviewNode]) -> Vec<PreviewWave> {
    topology
        .waves
        .iter()
        .map(|wave| {
            let members = || nodes.iter().filter(|n| n.domain.as_deref() == Some(wave.domain.as_str()));
            PreviewWave {
                domain: wave.domain.clone(),
                nodes: wave.nodes,
                done: wave.done,
                start: members().filter_map(|n| n.start).min(),
                end: members().filter_map(|n| n.end).max(),
            }
        })
        .collect()
}

/// One run of the planner, with the estimate worked out afresh so that the projection comes with the plan, with what
/// it asks answered by `ask`, and with what the preview's earlier rounds kept.
async fn round(snapshot: &mut Snapshot, ask: &impl Ask, kept: &super::plan::Kept) -> Plan {
    snapshot.run_config.status.estimate = None;
    on_demand::plan(snapshot, ask, kept).await
}

/// The node whose first gate Job the plan creates, if any.
fn starts(p: &Plan) -> Option<String> {
    p.intents.iter().find_map(|intent| match intent {
        Intent::CreateJob(job) => {
            job.metadata.annotations.as_ref().and_then(|a| a.get(crate::jobs::NODE_ANNOTATION)).cloned()
        }
        _ => None,
    })
}

/// A pool write as the API server takes it (a field the spec leaves unset stays as it is), with the MCO then
/// reporting the pool Updated.
fn take(view: &mut super::snapshot::PoolView, spec: &plan::PoolSpec) {
    view.paused = spec.paused;
    if spec.node_selector.is_some() {
        view.node_selector = spec.node_selector.clone();
    }
    if spec.max_unavailable.is_some() {
        view.max_unavailable = spec.max_unavailable.clone();
    }
    view.updated = true;
}

/// Carries a plan's writes out on the copy, as the cluster would take them (the MCO reports the pools Updated): its
/// pool and node writes and its status. Jobs are left out (the copy has none; `benches/reconcile_cost.rs` adds them).
pub fn carry_out(snapshot: &mut Snapshot, p: &Plan) {
    for intent in &p.intents {
        match intent {
            Intent::ClaimPool { pool, owner, original, spec, .. } => {
                if let Some(view) = snapshot.pools.get_mut(pool) {
                    let written = PoolOriginal { paused: spec.paused, ..plan::as_is(view) };
                    view.claim = ClaimAnnotations::Claimed(PoolClaim {
                        owner: owner.clone(),
                        original: Ok(original.clone()),
                        written: Some(written),
                        written_present: true,
                    });
                    take(view, spec);
                }
            }
            Intent::SteerPool { pool, spec, .. } => {
                if let Some(view) = snapshot.pools.get_mut(pool) {
                    let written = plan::written_after(view, spec);
                    if let ClaimAnnotations::Claimed(claim) = &mut view.claim {
                        claim.written = Some(written);
                    }
                    take(view, spec);
                }
            }
            Intent::PutBackPool { pool, put_back, .. } => {
                if let Some(view) = snapshot.pools.get_mut(pool) {
                    if let Some(paused) = put_back.paused {
                        view.paused = paused;
                    }
                    if let Some(selector) = &put_back.node_selector {
                        view.node_selector = selector.clone();
                    }
                }
            }
            Intent::LabelNode { node, labels } => {
                if let Some(view) = snapshot.nodes_mut().get_mut(node).map(std::sync::Arc::make_mut) {
                    view.membership = None;
                    view.labels.extend(labels.iter().map(|l| (l.clone(), String::new())));
                    view.labels.remove(crate::labels::RELEASED);
                }
            }
            Intent::ReleaseNode { node, labels, mark } => {
                if let Some(view) = snapshot.nodes_mut().get_mut(node).map(std::sync::Arc::make_mut) {
                    view.membership = None;
                    labels.iter().for_each(|l| {
                        view.labels.remove(l);
                    });
                    view.labels.insert(crate::labels::RELEASED.to_string(), mark.clone());
                }
            }
            Intent::UnlabelNode { node, labels } => {
                if let Some(view) = snapshot.nodes_mut().get_mut(node).map(std::sync::Arc::make_mut) {
                    view.membership = None;
                    labels.iter().for_each(|l| {
                        view.labels.remove(l);
                    });
                }
            }
            Intent::AddFinalizer => snapshot.run_config.has_finalizer = true,
            _ => {}
        }
    }
    snapshot.run_config.status = p.status.clone();
}
