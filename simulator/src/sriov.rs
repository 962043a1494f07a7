//! The SR-IOV network operator's drain controller, opt-in with [`crate::SimConfig::sriov`]: it pauses a node's
//! MachineConfigPool around its own drain of that node, so that the MCO does not reboot the node while SR-IOV
//! reconfigures its NICs, and unpauses the pool afterwards. It acts as its own ServiceAccount
//! ([`crate::platform::SRIOV_USER`]), through [`crate::Platform::sriov_operator`].
//!
//! Followed from openshift/sriov-network-operator (master, 2026): `controllers/drain_controller.go` and
//! `controllers/drain_controller_helper.go` (the per-node state machine and the drain slots),
//! `pkg/drain/drainer.go` (`DrainNode`: `BeforeDrainNode`, then cordon and drain; `CompleteDrainNode`: uncordon,
//! then `AfterCompleteDrainNode`) and `pkg/orchestrator/openshift/openshift.go` (the pool's pause and unpause;
//! `pkg/platforms/openshift/openshift.go` before the orchestrator split did the same):
//! - **Trigger.** A node annotated [`crate::faults::SRIOV_RECONFIGURE`]` = "true"` is one whose config daemon asks
//!   for a drain (`sriovnetwork.openshift.io/state: Drain_Required`). Once SR-IOV is done the simulator removes the
//!   annotation (the daemon goes back to `Idle`).
//! - **Drain slots** (`tryDrainNode`): a node takes a slot before anything else; the nodes of no
//!   `SriovNetworkPoolConfig` share the default one, with `maxUnavailable` 1, so one node at a time.
//! - **Which pool** (`GetNodeMachinePoolName`): the owner of the node's `desiredConfig` rendered MachineConfig.
//! - **Before the drain** (`BeforeDrainNode`): a pool that carries [`STATE`]` = `[`PAUSED`] is SR-IOV's already: if
//!   it is not paused SR-IOV pauses it once its `spec.configuration` equals its `status.configuration`, and goes
//!   on. Otherwise SR-IOV waits while `spec.configuration` differs from `status.configuration` (the MCO is updating
//!   the pool), then annotates the pool [`PAUSED`] and sets `spec.paused: true` — also on a pool that is paused
//!   already: it does not look at `spec.paused` — and reads the pool again: if its configuration moved meanwhile it
//!   unpauses it and annotates it [`IDLE`], and tries again later.
//! - **The drain** is a timer ([`crate::SimConfig::sriov_drain`]); the daemon's NIC configuration takes no time.
//! - **After the drain** (`AfterCompleteDrainNode`): the pool again from the node's `desiredConfig`. No [`STATE`]
//!   annotation or [`IDLE`]: done, nothing to unpause. Another node the pool's `nodeSelector` selects still under
//!   SR-IOV's configuration: done, that node's drain unpauses. Otherwise `spec.paused: false`, then [`IDLE`].
//!   SR-IOV unpauses a pool it annotated whether or not the pool was paused before it came.
//! - **A refused write** returns an error to controller-runtime, which tries the whole step again with backoff;
//!   here after [`crate::SimConfig::retry`]. A step that is "not complete yet" is tried again after 5 s
//!   (`DrainControllerRequeueTime`), here on the next event or after the same retry.
//!
//! Every drain and every refused write is kept in the [`Report`] ([`crate::SimulatorHandle::sriov`]).
//!
//! Not modelled: cordon and eviction (SR-IOV cordons with kubectl's drain helper and uncordons before it
//! unpauses), `SriovNetworkNodeState` objects and pool configs other than the default, reboots the daemon asks for,
//! Hypershift (no pools).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use numo::openshift::MachineConfigPool;
use serde_json::json;
use tokio::time::{Duration, Instant};

use crate::mco::View;
use crate::platform::FIELD_MANAGER;
use crate::{faults, node_state};

/// SR-IOV's annotation on a pool it pauses (`consts.MachineConfigPoolPausedAnnotation`).
pub const STATE: &str = "sriovnetwork.openshift.io/state";
/// [`STATE`] while SR-IOV holds the pool paused (`MachineConfigPoolPausedAnnotationPaused`).
pub const PAUSED: &str = "Paused";
/// [`STATE`] once SR-IOV unpaused the pool (`MachineConfigPoolPausedAnnotationIdle`).
pub const IDLE: &str = "Idle";
/// SR-IOV's field manager (controller-runtime names its writes after the binary).
pub const SRIOV_FIELD_MANAGER: &str = "sriov-network-operator";

/// One drain SR-IOV completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drain {
    /// The node drained.
    pub node: String,
    /// The pool SR-IOV paused for it (when its pool had one).
    pub pool: Option<String>,
    /// When SR-IOV started the drain (after its pause).
    pub started: SystemTime,
    /// When SR-IOV was done with the node (after its unpause, if it made one).
    pub completed: SystemTime,
}

/// A write of SR-IOV the API server refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The node SR-IOV worked on.
    pub node: String,
    /// The pool it wrote.
    pub pool: String,
    /// What it wrote (`paused=false`, `state=Idle`, ...).
    pub write: String,
    /// The HTTP status code.
    pub code: u16,
    /// The API server's message.
    pub message: String,
    /// When.
    pub at: SystemTime,
}

/// What SR-IOV did so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Every drain completed, in order.
    pub drains: Vec<Drain>,
    /// Every write refused, in order.
    pub refused: Vec<Refused>,
}

/// The report as the simulator's tasks share it.
pub type SharedReport = Arc<Mutex<Report>>;

/// Where SR-IOV is with a node.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// The node holds a drain slot; SR-IOV waits to pause its pool (`BeforeDrainNode`).
    BeforeDrain,
    /// Draining until then.
    Draining { since: SystemTime, until: Instant },
    /// Drained and configured; SR-IOV unpauses (`AfterCompleteDrainNode`).
    AfterDrain { since: SystemTime },
}

/// SR-IOV's drain controller.
pub struct Sriov {
    client: kube::Client,
    drain: Duration,
    retry: Duration,
    steps: BTreeMap<String, Step>,
    /// Nodes SR-IOV is done with, until the cache shows their request cleared.
    done: std::collections::BTreeSet<String>,
    /// No step before then (a write failed).
    backoff: Option<Instant>,
    report: SharedReport,
}

/// What one step of SR-IOV's came to.
enum Outcome {
    /// Done with this step.
    Next,
    /// Not yet (SR-IOV returns `false`: requeue).
    NotYet,
}

impl Sriov {
    /// SR-IOV acting through `client`, each drain taking `drain`, trying again `retry` after a failed write.
    pub fn new(client: kube::Client, drain: Duration, retry: Duration, report: SharedReport) -> Self {
        Self { client, drain, retry, steps: BTreeMap::new(), done: Default::default(), backoff: None, report }
    }

    /// One pass over the nodes that want SR-IOV; returns when to look again (a drain's end, a retry).
    pub async fn reconcile(&mut self, view: &View) -> Option<Instant> {
        let now = Instant::now();
        if self.backoff.is_some_and(|at| at > now) {
            return self.backoff;
        }
        self.backoff = None;
        let asking: Vec<&Node> = view.nodes.iter().map(AsRef::as_ref).filter(|n| wants(n)).collect();
        self.done.retain(|name| asking.iter().any(|n| n.name_any() == *name));
        let wanted: Vec<&Node> = asking.into_iter().filter(|n| !self.done.contains(&n.name_any())).collect();
        self.steps.retain(|name, _| wanted.iter().any(|n| n.name_any() == *name));
        // `tryDrainNode`: the default pool config lets one node drain at a time.
        if self.steps.is_empty() {
            if let Some(first) = wanted.first() {
                self.steps.insert(first.name_any(), Step::BeforeDrain);
            }
        }
        let mut wake = None;
        let names: Vec<String> = self.steps.keys().cloned().collect();
        for name in names {
            let Some(node) = wanted.iter().find(|n| n.name_any() == name) else { continue };
            match self.step(node, &wanted, view).await {
                Ok(Some(at)) => wake = earliest(wake, Some(at)),
                Ok(None) => {}
                Err(()) => {
                    self.backoff = Some(Instant::now() + self.retry);
                    return self.backoff;
                }
            }
        }
        // A step that is not complete yet is tried again (`DrainControllerRequeueTime`), also without an event.
        if !self.steps.is_empty() {
            wake = earliest(wake, Some(Instant::now() + self.retry));
        }
        wake
    }

    /// The node's next step; when to wake for it.
    async fn step(&mut self, node: &Node, wanted: &[&Node], view: &View) -> Result<Option<Instant>, ()> {
        let name = node.name_any();
        match self.steps.get(&name).cloned() {
            Some(Step::BeforeDrain) => {
                if let Outcome::Next = self.before_drain(node, view).await? {
                    let until = Instant::now() + self.drain;
                    tracing::info!(node = %name, "SR-IOV drains the node");
                    self.steps.insert(name, Step::Draining { since: SystemTime::now(), until });
                    return Ok(Some(until));
                }
                Ok(None)
            }
            Some(Step::Draining { since, until }) if Instant::now() >= until => {
                self.steps.insert(name.clone(), Step::AfterDrain { since });
                Box::pin(self.step(node, wanted, view)).await
            }
            Some(Step::Draining { until, .. }) => Ok(Some(until)),
            Some(Step::AfterDrain { since }) => {
                let Outcome::Next = self.after_drain(node, wanted, view).await? else { return Ok(None) };
                let pool = pool_of(node, view);
                self.report.lock().map_err(|_| ())?.drains.push(Drain {
                    node: name.clone(),
                    pool,
                    started: since,
                    completed: SystemTime::now(),
                });
                tracing::info!(node = %name, "SR-IOV completed its drain of the node");
                self.steps.remove(&name);
                self.done.insert(name.clone());
                // The config daemon is back to Idle: the request is fulfilled.
                let body = json!({"metadata": {"annotations": {faults::SRIOV_RECONFIGURE: null}}});
                let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
                if let Err(err) =
                    Api::<Node>::all(self.client.clone()).patch(&name, &params, &Patch::Merge(&body)).await
                {
                    tracing::debug!(node = %name, error = %err, "clearing the SR-IOV request failed");
                }
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// `BeforeDrainNode` (`pkg/orchestrator/openshift/openshift.go`).
    async fn before_drain(&mut self, node: &Node, view: &View) -> Result<Outcome, ()> {
        // A node without a pool (not the MCO's): nothing to pause.
        let Some(pool_name) = pool_of(node, view) else { return Ok(Outcome::Next) };
        let node = node.name_any();
        let pool = self.get(&pool_name).await?;
        if state(&pool) == Some(PAUSED) {
            if !pool.spec.paused {
                if !settled(&pool) {
                    return Ok(Outcome::NotYet);
                }
                self.write(&node, &pool_name, Write::Paused(true)).await?;
            }
            return Ok(Outcome::Next);
        }
        if configuration(&pool, true) != configuration(&pool, false) {
            return Ok(Outcome::NotYet);
        }
        self.write(&node, &pool_name, Write::State(PAUSED)).await?;
        self.write(&node, &pool_name, Write::Paused(true)).await?;
        let again = self.get(&pool_name).await?;
        if configuration(&again, true) != configuration(&again, false) {
            self.write(&node, &pool_name, Write::Paused(false)).await?;
            self.write(&node, &pool_name, Write::State(IDLE)).await?;
            return Ok(Outcome::NotYet);
        }
        Ok(Outcome::Next)
    }

    /// `AfterCompleteDrainNode` (`pkg/orchestrator/openshift/openshift.go`).
    async fn after_drain(&mut self, node: &Node, wanted: &[&Node], view: &View) -> Result<Outcome, ()> {
        let Some(pool_name) = pool_of(node, view) else { return Ok(Outcome::Next) };
        let name = node.name_any();
        let pool = self.get(&pool_name).await?;
        match state(&pool) {
            None | Some(IDLE) => return Ok(Outcome::Next),
            Some(_) => {}
        }
        // Another node of the pool still under SR-IOV's configuration unpauses it when its own drain is done.
        let selector = pool.spec.node_selector.as_ref();
        let others_busy = wanted
            .iter()
            .filter(|other| other.name_any() != name)
            .any(|other| selector.is_some() && numo::selector::matches(selector, other.labels()));
        if others_busy {
            return Ok(Outcome::Next);
        }
        self.write(&name, &pool_name, Write::Paused(false)).await?;
        self.write(&name, &pool_name, Write::State(IDLE)).await?;
        Ok(Outcome::Next)
    }

    /// Reads `pool` from the API server (SR-IOV's client is not cached).
    async fn get(&self, pool: &str) -> Result<MachineConfigPool, ()> {
        Api::<MachineConfigPool>::all(self.client.clone()).get(pool).await.map_err(|err| {
            tracing::debug!(%pool, error = %err, "SR-IOV could not read the pool");
        })
    }

    /// One merge patch of SR-IOV's; a refusal is recorded.
    async fn write(&self, node: &str, pool: &str, write: Write) -> Result<(), ()> {
        let body = match write {
            Write::Paused(paused) => json!({"spec": {"paused": paused}}),
            Write::State(value) => json!({"metadata": {"annotations": {STATE: value}}}),
        };
        let params = PatchParams { field_manager: Some(SRIOV_FIELD_MANAGER.into()), ..Default::default() };
        match Api::<MachineConfigPool>::all(self.client.clone()).patch(pool, &params, &Patch::Merge(&body)).await {
            Ok(_) => {
                tracing::info!(%node, %pool, write = %write.describe(), "SR-IOV wrote the pool");
                Ok(())
            }
            Err(kube::Error::Api(status)) => {
                tracing::warn!(%node, %pool, write = %write.describe(), message = %status.message,
                    "SR-IOV's write was refused; it tries again");
                if let Ok(mut report) = self.report.lock() {
                    report.refused.push(Refused {
                        node: node.to_string(),
                        pool: pool.to_string(),
                        write: write.describe(),
                        code: status.code,
                        message: status.message.clone(),
                        at: SystemTime::now(),
                    });
                }
                Err(())
            }
            Err(err) => {
                tracing::debug!(%node, %pool, error = %err, "SR-IOV's write failed; it tries again");
                Err(())
            }
        }
    }
}

/// A write of SR-IOV's to a pool.
#[derive(Clone, Copy, Debug)]
enum Write {
    Paused(bool),
    State(&'static str),
}

impl Write {
    fn describe(self) -> String {
        match self {
            Write::Paused(paused) => format!("spec.paused={paused}"),
            Write::State(value) => format!("{STATE}={value}"),
        }
    }
}

/// Whether the node asks SR-IOV for a drain ([`faults::SRIOV_RECONFIGURE`]).
pub fn wants(node: &Node) -> bool {
    faults::sriov_reconfigure(node.annotations())
}

/// The pool SR-IOV acts on for `node`: the owner of its `desiredConfig` (`GetNodeMachinePoolName`).
pub fn pool_of(node: &Node, view: &View) -> Option<String> {
    let desired = node_state::desired_config(node);
    let config = view.configs.iter().find(|c| !desired.is_empty() && c.name_any() == desired)?;
    config.owner_references().iter().find(|o| o.kind == "MachineConfigPool").map(|o| o.name.clone())
}

/// The pool's [`STATE`] annotation.
pub fn state(pool: &MachineConfigPool) -> Option<&str> {
    pool.annotations().get(STATE).map(String::as_str)
}

/// The pool's `spec.configuration.name` (`spec`) or `status.configuration.name`.
fn configuration(pool: &MachineConfigPool, spec: bool) -> Option<&str> {
    let rendered = if spec {
        pool.spec.configuration.as_ref()
    } else {
        pool.status.as_ref().and_then(|s| s.configuration.as_ref())
    };
    rendered.and_then(|c| c.name.as_deref())
}

/// Both configurations named and equal: the MCO is not updating the pool.
fn settled(pool: &MachineConfigPool) -> bool {
    configuration(pool, true).is_some_and(|spec| configuration(pool, false) == Some(spec))
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numo::openshift::{MachineConfigPoolStatus, RenderedConfiguration};

    fn pool(spec: Option<&str>, status: Option<&str>) -> MachineConfigPool {
        let mut pool = MachineConfigPool::new("worker", Default::default());
        pool.spec.configuration = spec.map(|n| RenderedConfiguration { name: Some(n.into()), ..Default::default() });
        pool.status = Some(MachineConfigPoolStatus {
            configuration: status.map(|n| RenderedConfiguration { name: Some(n.into()), ..Default::default() }),
            ..Default::default()
        });
        pool
    }

    #[test]
    fn a_pool_is_settled_when_both_configurations_are_named_and_equal() {
        assert!(settled(&pool(Some("a"), Some("a"))));
        assert!(!settled(&pool(Some("b"), Some("a"))), "the MCO updates it");
        assert!(!settled(&pool(None, None)), "openshift.go: an empty name is not settled");
    }

    #[test]
    fn the_state_annotation_is_read_from_the_pool() {
        let mut p = pool(None, None);
        assert_eq!(state(&p), None);
        p.annotations_mut().insert(STATE.into(), PAUSED.into());
        assert_eq!(state(&p), Some(PAUSED));
    }
}
