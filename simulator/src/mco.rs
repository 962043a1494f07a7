//! The simulated machine-config controller, one pass over the cached cluster at a time: render every pool (create
//! its rendered MachineConfig, point `spec.configuration` at it), decide membership, target the next nodes of each
//! unpaused pool within `maxUnavailable` (tainting those not yet targeted `UpdateInProgress:PreferNoSchedule`),
//! start the daemon on nodes that have work, and write each pool's status.
//!
//! The caches lag the writes of the pass before. So that a stale cache never lets two passes target more nodes than
//! `maxUnavailable` allows, the controller remembers what it wrote (a node's `desiredConfig`, a pool's target and
//! status) until the cache shows it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use numo::openshift::{ConfigSource, MachineConfig, MachineConfigPool, MachineConfigPoolStatus, DESIRED_CONFIG};
use serde_json::json;
use tokio::sync::Notify;
use tokio::task::{AbortHandle, Id, JoinSet};

use crate::daemon::{self, Outcome};
use crate::machine_config_nodes::MachineConfigNodes;
use crate::membership::Membership;
use crate::platform::FIELD_MANAGER;
use crate::record::{self, SharedRecord};
use crate::render::{self, Rendered};
use crate::{rollout, status};

/// What one pass sees: the caches' contents.
pub struct View {
    /// Every node.
    pub nodes: Vec<Arc<Node>>,
    /// Every pool.
    pub pools: Vec<Arc<MachineConfigPool>>,
    /// Every MachineConfig.
    pub configs: Vec<Arc<MachineConfig>>,
}

/// The controller's memory between passes.
pub struct Mco {
    client: kube::Client,
    /// What the daemons it starts work with.
    daemon: daemon::Context,
    retry: Duration,
    notify: Arc<Notify>,
    /// Node → the `desiredConfig` last written, until the cache shows it.
    desired: HashMap<String, String>,
    /// Node → whether the update taint was last added or removed, until the cache shows it.
    taints: HashMap<String, bool>,
    /// Pool → the `spec.configuration.name` last written, until the cache shows it.
    targets: HashMap<String, String>,
    /// Pool → the status last written, until the cache shows it.
    statuses: HashMap<String, MachineConfigPoolStatus>,
    /// Rendered configs created, until the cache shows them.
    created: HashSet<String>,
    daemons: Daemons,
    /// Whether pools boot OS image streams (4.23+, [`crate::OpenShiftRelease::plays_os_image_streams`]).
    os_image_streams: bool,
    /// Pool → whether it was paused when last seen, and since when it is unpaused (see [`UNPAUSE_DELAY`]).
    unpaused: HashMap<String, (bool, Option<std::time::Instant>)>,
}

/// How long an unpaused pool waits before the controller targets its nodes. The MCO's node controller enqueues a
/// pool after `updateDelay` (5 s) on every change of it and reads the pool again then
/// (openshift/machine-config-operator `pkg/controller/node/node_controller.go`: `defaultUpdateDelay`,
/// `enqueueDefault`), so a pool paused again within that time never moves a node; scaled down as the simulator's
/// other times are. Only the unpause waits here: the simulator reacts to the other pool changes at once.
pub const UNPAUSE_DELAY: Duration = Duration::from_secs(1);

impl Mco {
    /// A controller writing through `client`; daemons drain and "reboot" for `timing`, wait `retry` after an
    /// error, and poke `notify` when they end.
    pub fn new(
        client: kube::Client,
        timing: daemon::Timing,
        retry: Duration,
        notify: Arc<Notify>,
        record: SharedRecord,
    ) -> Self {
        Self {
            daemon: daemon::Context {
                client: client.clone(),
                timing,
                machine_config_nodes: None,
                drainer: None,
                record,
            },
            client,
            retry,
            notify,
            desired: HashMap::new(),
            taints: HashMap::new(),
            targets: HashMap::new(),
            statuses: HashMap::new(),
            created: HashSet::new(),
            daemons: Daemons::default(),
            os_image_streams: false,
            unpaused: HashMap::new(),
        }
    }

    /// The same controller, rendering each pool's OS image from its OS image stream (`spec.osImageStream`, a
    /// custom pool inheriting `worker`'s; release-4.23 `pkg/controller/render/render_controller.go`
    /// `getOSImageStreamForPool`).
    pub fn with_os_image_streams(mut self) -> Self {
        self.os_image_streams = true;
        self
    }

    /// The same controller, also writing MachineConfigNodes as the node controller (`spec.configVersion.desired`)
    /// and, through its daemons, as the daemon and the drain controller.
    pub fn with_machine_config_nodes(mut self, writers: MachineConfigNodes) -> Self {
        self.daemon.machine_config_nodes = Some(writers);
        self
    }

    /// The same controller, its drains also evicting OSD pods ([`crate::storage::drain`]).
    pub fn with_drainer(mut self, drainer: crate::storage::drain::Drainer) -> Self {
        self.daemon.drainer = Some(drainer);
        self
    }

    /// One pass; errors of single objects are logged and reported together at the end (the caller retries).
    pub async fn reconcile(&mut self, view: &View) -> anyhow::Result<()> {
        let mut errors = Vec::new();
        if self.daemons.collect() {
            errors.push(anyhow::anyhow!("a node update was interrupted by an error"));
        }
        let mut nodes = self.nodes_as_written(view);
        self.forget_seen_writes(view);
        let mut pools: Vec<&MachineConfigPool> = view.pools.iter().map(Arc::as_ref).collect();
        pools.sort_by_key(|p| p.name_any());
        let configs: Vec<&MachineConfig> = view.configs.iter().map(Arc::as_ref).collect();
        let membership = Membership::of(nodes.values(), &pools);
        record::with(&self.daemon.record, |r| r.membership(SystemTime::now(), membership.multi_pool_nodes()));

        let worker = pools.iter().copied().find(|p| p.metadata.name.as_deref() == Some(crate::membership::WORKER));
        for pool in &pools {
            let stream = pool.effective_os_image_stream(worker).filter(|_| self.os_image_streams);
            if let Err(err) = self.sync_pool(pool, stream, &configs, &membership, &mut nodes).await {
                if is_conflict(&err) {
                    tracing::debug!(pool = %pool.name_any(), error = %format!("{err:#}"), "stale cache; retrying");
                } else {
                    tracing::warn!(pool = %pool.name_any(), error = %format!("{err:#}"), "syncing pool failed");
                }
                errors.push(err);
            }
        }
        self.start_daemons(&nodes, &membership);
        match errors.into_iter().next() {
            None => Ok(()),
            Some(first) => Err(first),
        }
    }

    /// Renders, updates and reports one pool.
    async fn sync_pool(
        &mut self,
        pool: &MachineConfigPool,
        stream: Option<&str>,
        configs: &[&MachineConfig],
        membership: &Membership,
        nodes: &mut BTreeMap<String, Node>,
    ) -> anyhow::Result<()> {
        let name = pool.name_any();
        let sources = render::sources(pool, configs.iter().copied());
        let (target, render_error) = match render::render_on_stream(pool, &sources, stream) {
            Ok(rendered) => {
                self.ensure_rendered(pool, &rendered, configs).await?;
                self.ensure_target(pool, &rendered).await?;
                (Some(rendered.name), None)
            }
            // Like the MCO: the pool keeps its target (and its nodes keep rolling to it) until it renders again.
            Err(err) => {
                tracing::debug!(pool = %name, error = ?err, "cannot render");
                (pool.spec.configuration.as_ref().and_then(|c| c.name.clone()), Some(err.to_string()))
            }
        };

        let member_names = membership.members_of(&name);
        let mut taint_error = None;
        let settling = self.settling(&name, pool.spec.paused);
        if let Some(target) =
            target.as_deref().filter(|_| !pool.spec.paused && !settling && pool.metadata.deletion_timestamp.is_none())
        {
            for node in member_names {
                let Some(n) = nodes.get(node) else { continue };
                let wanted = rollout::wants_update_taint(n, target);
                if wanted != rollout::has_update_taint(n) {
                    let updated = rollout::with_update_taint(n.clone(), wanted);
                    match self.set_update_taint(&updated, wanted).await {
                        Ok(()) => {
                            nodes.insert(node.clone(), updated);
                        }
                        // A stale cache (409) or a passing error: the taint is cosmetic to the rollout, go on.
                        Err(err) => taint_error = Some(err),
                    }
                }
            }
            let members: Vec<&Node> = member_names.iter().filter_map(|n| nodes.get(n)).collect();
            match rollout::max_unavailable(pool.spec.max_unavailable.as_ref(), members.len()) {
                Ok(max) => {
                    for node in rollout::next_targets(&members, target, max) {
                        self.set_desired(&node, target).await?;
                        if let Some(n) = nodes.get_mut(&node) {
                            n.annotations_mut().insert(DESIRED_CONFIG.into(), target.to_string());
                        }
                        tracing::info!(pool = %name, %node, %target, "targeted node");
                    }
                }
                Err(err) => tracing::warn!(pool = %name, error = %err, "cannot compute maxUnavailable"),
            }
        }

        let members: Vec<&Node> = member_names.iter().filter_map(|n| nodes.get(n)).collect();
        let mut current = pool.clone();
        if let Some(written) = self.statuses.get(&name) {
            current.status = Some(written.clone());
        }
        let inputs = status::Inputs {
            pool: &current,
            target: target.as_deref(),
            members: &members,
            conflicts: membership.conflicts_of(&name),
            render_error: render_error.as_deref(),
        };
        let computed = status::compute(inputs, &Time(Timestamp::now()));
        if current.status.as_ref() != Some(&computed) {
            let api: Api<MachineConfigPool> = Api::all(self.client.clone());
            api.patch_status(&name, &params(), &Patch::Merge(&json!({"status": computed})))
                .await
                .with_context(|| format!("writing the status of pool {name}"))?;
            self.statuses.insert(name, computed);
        }
        match taint_error {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Creates the rendered MachineConfig unless it exists.
    /// Whether pool `name`, paused as `paused` says, was unpaused less than [`UNPAUSE_DELAY`] ago; if so, a pass is
    /// asked for when that time is up. A pool first seen unpaused has been so for long.
    fn settling(&mut self, name: &str, paused: bool) -> bool {
        let now = std::time::Instant::now();
        let (was_paused, since) = self.unpaused.get(name).copied().unwrap_or((paused, None));
        let since = match (paused, was_paused) {
            (true, _) => None,
            (false, true) => Some(now),
            (false, false) => since,
        };
        self.unpaused.insert(name.to_string(), (paused, since));
        let Some(left) = since.and_then(|t| UNPAUSE_DELAY.checked_sub(now.duration_since(t))) else { return false };
        let notify = self.notify.clone();
        tokio::spawn(async move {
            tokio::time::sleep(left).await;
            notify.notify_one();
        });
        true
    }

    async fn ensure_rendered(
        &mut self,
        pool: &MachineConfigPool,
        rendered: &Rendered,
        configs: &[&MachineConfig],
    ) -> anyhow::Result<()> {
        if self.created.contains(&rendered.name) || configs.iter().any(|c| c.name_any() == rendered.name) {
            return Ok(());
        }
        let api: Api<MachineConfig> = Api::all(self.client.clone());
        let object = render::rendered_config(pool, rendered);
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
        match api.create(&post, &object).await {
            Ok(_) => tracing::info!(pool = %pool.name_any(), config = %rendered.name, "rendered a new config"),
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(err) => return Err(err).with_context(|| format!("creating MachineConfig {}", rendered.name)),
        }
        self.created.insert(rendered.name.clone());
        Ok(())
    }

    /// Points the pool's `spec.configuration` at its rendered config.
    async fn ensure_target(&mut self, pool: &MachineConfigPool, rendered: &Rendered) -> anyhow::Result<()> {
        let name = pool.name_any();
        let cached = pool.spec.configuration.as_ref().and_then(|c| c.name.as_deref());
        let written = self.targets.get(&name).map(String::as_str);
        if written.or(cached) == Some(rendered.name.as_str()) {
            return Ok(());
        }
        let source: Vec<_> = rendered.sources.iter().map(|s| ConfigSource::machine_config(s)).collect();
        let body = json!({"spec": {"configuration": {"name": rendered.name, "source": source}}});
        let api: Api<MachineConfigPool> = Api::all(self.client.clone());
        api.patch(&name, &params(), &Patch::Merge(&body)).await.with_context(|| format!("retargeting pool {name}"))?;
        tracing::info!(pool = %name, config = %rendered.name, "pool now targets a new config");
        self.targets.insert(name, rendered.name.clone());
        Ok(())
    }

    /// Sets a node's `desiredConfig` (and first its MachineConfigNode's, as the node controller does).
    async fn set_desired(&mut self, node: &str, config: &str) -> anyhow::Result<()> {
        if let Some(writers) = &self.daemon.machine_config_nodes {
            writers.set_desired(node, config).await;
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let body = json!({"metadata": {"annotations": {DESIRED_CONFIG: config}}});
        api.patch(node, &params(), &Patch::Merge(&body)).await.with_context(|| format!("targeting node {node}"))?;
        self.desired.insert(node.to_string(), config.to_string());
        Ok(())
    }

    /// Writes `node`'s taints (with the update taint added or removed). Taints are replaced as a whole list (they
    /// have no merge key), so the write is conditional on the node's resourceVersion: a stale cache gets a conflict
    /// instead of dropping someone else's taint.
    async fn set_update_taint(&mut self, node: &Node, tainted: bool) -> anyhow::Result<()> {
        let name = node.name_any();
        let taints = node.spec.as_ref().and_then(|s| s.taints.clone());
        let body = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"taints": taints},
        });
        let api: Api<Node> = Api::all(self.client.clone());
        api.patch(&name, &params(), &Patch::Merge(&body)).await.with_context(|| {
            format!("{} the update taint of node {name}", if tainted { "adding" } else { "removing" })
        })?;
        self.taints.insert(name, tainted);
        Ok(())
    }

    /// The cached nodes with the `desiredConfig` and update taint this controller wrote and the cache does not show
    /// yet.
    fn nodes_as_written(&self, view: &View) -> BTreeMap<String, Node> {
        view.nodes
            .iter()
            .map(|n| {
                let mut node = Node::clone(n);
                let name = node.name_any();
                if let Some(desired) = self.desired.get(&name) {
                    node.annotations_mut().insert(DESIRED_CONFIG.into(), desired.clone());
                }
                if let Some(tainted) = self.taints.get(&name) {
                    node = rollout::with_update_taint(node, *tainted);
                }
                (name, node)
            })
            .collect()
    }

    /// Drops the memory of writes the cache now shows (or whose objects are gone).
    fn forget_seen_writes(&mut self, view: &View) {
        let nodes: HashMap<String, &Node> = view.nodes.iter().map(|n| (n.name_any(), n.as_ref())).collect();
        self.desired.retain(|name, desired| {
            nodes.get(name).is_some_and(|n| crate::node_state::desired_config(n) != desired.as_str())
        });
        self.taints.retain(|name, tainted| nodes.get(name).is_some_and(|n| rollout::has_update_taint(n) != *tainted));
        let pools: HashMap<String, &MachineConfigPool> =
            view.pools.iter().map(|p| (p.name_any(), p.as_ref())).collect();
        self.targets.retain(|name, target| {
            pools
                .get(name)
                .is_some_and(|p| p.spec.configuration.as_ref().and_then(|c| c.name.as_deref()) != Some(target.as_str()))
        });
        self.statuses.retain(|name, status| pools.get(name).is_some_and(|p| p.status.as_ref() != Some(status)));
        let configs: HashSet<String> = view.configs.iter().map(|c| c.name_any()).collect();
        self.created.retain(|name| !configs.contains(name));
        self.daemons.forget_finished(&nodes);
    }

    /// Starts the daemon on every node with work and no daemon running.
    fn start_daemons(&mut self, nodes: &BTreeMap<String, Node>, membership: &Membership) {
        for (name, node) in nodes {
            if daemon::has_work(node) && !self.daemons.runs.contains_key(name) {
                let (context, retry) = (self.daemon.clone(), self.retry);
                let notify = self.notify.clone();
                let node_name = name.clone();
                let pool = membership.pool_managing(name).map(str::to_string);
                let handle = self.daemons.set.spawn(async move {
                    let outcome = daemon::update(context, node_name.clone(), pool).await;
                    if outcome.is_err() {
                        tokio::time::sleep(retry).await;
                    }
                    notify.notify_one();
                    (node_name, outcome)
                });
                self.daemons.runs.insert(name.clone(), Run { handle, outcome: None });
            }
        }
    }
}

/// The daemon tasks; dropping this aborts them.
#[derive(Default)]
struct Daemons {
    set: JoinSet<(String, anyhow::Result<Outcome>)>,
    runs: HashMap<String, Run>,
}

/// One daemon task of a node.
struct Run {
    handle: AbortHandle,
    /// How it ended, once it has.
    outcome: Option<Outcome>,
}

impl Daemons {
    /// Records the outcome of finished tasks; a task that failed with an error is forgotten at once, so the next
    /// pass starts it again. Returns whether any failed with an error.
    fn collect(&mut self) -> bool {
        let mut errored = false;
        while let Some(joined) = self.set.try_join_next_with_id() {
            match joined {
                Ok((_, (node, Ok(outcome)))) => {
                    if let Some(run) = self.runs.get_mut(&node) {
                        run.outcome = Some(outcome);
                    }
                }
                Ok((_, (node, Err(err)))) => {
                    tracing::warn!(%node, error = %format!("{err:#}"), "node update interrupted; will retry");
                    self.runs.remove(&node);
                    errored = true;
                }
                Err(err) => {
                    self.forget_task(err.id());
                    errored = true;
                }
            }
        }
        errored
    }

    fn forget_task(&mut self, id: Id) {
        self.runs.retain(|_, run| run.handle.id() != id);
    }

    /// Forgets finished runs once the cache shows their result, so a stale cache does not start a node twice.
    fn forget_finished(&mut self, nodes: &HashMap<String, &Node>) {
        self.runs.retain(|name, run| {
            let Some(node) = nodes.get(name) else {
                run.handle.abort();
                return false;
            };
            match &run.outcome {
                None => true,
                Some(Outcome::Nothing) => false,
                Some(Outcome::Updated { config }) => {
                    crate::node_state::current_config(node) != config
                        && crate::node_state::desired_config(node) == config
                }
                Some(Outcome::Failed { config }) => {
                    crate::node_state::desired_config(node) == config && !crate::node_state::is_degraded(node)
                }
            }
        });
    }
}

/// Whether the error is a write conflict (the cache was stale).
fn is_conflict(err: &anyhow::Error) -> bool {
    err.chain().any(|e| matches!(e.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 409))
}

fn params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() }
}
