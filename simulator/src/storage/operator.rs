//! Rook's operator in the storage world, one loop over watched caches (nodes, OSD Deployments and budgets of
//! [`NAMESPACE`]): its OSD controller creates the missing OSDs ([`super::osds`]); the Ceph stand-in and the record
//! follow every change; its disruption controller ([`super::rook`], [`super::budgets`]) reconciles as Rook's does
//! (`add.go`, `osd.go` `requeuePDBController`): at start, when the default budget is updated to zero allowed
//! disruptions, and on its requeues (every [`super::RookTiming::default_missing`] while the default budget is missing,
//! every [`super::RookTiming::default_at_zero`] while it allows none). Writes act as Rook's ServiceAccount; the state map
//! lives in ConfigMap `rook-ceph-pdbstatemap`, so a restarted simulator resumes the draining domain.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::ResourceExt;
use serde_json::json;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::budgets::{self, DEFAULT_BUDGET};
use super::ceph::PlacementGroups;
use super::ledger::Ledger;
use super::rook::{self, Osd, StateMap, Wanted};
use super::{osds, StorageConfig, APP_LABEL, NAMESPACE, OSD_APP};
use crate::node_state;
use crate::platform::FIELD_MANAGER;

/// Rook's state map (`pdbStateMapName`) and its keys.
pub const STATE_MAP: &str = "rook-ceph-pdbstatemap";
const DRAINING_KEY: &str = "draining-failure-domain";
const DRAINING_SINCE_KEY: &str = "draining-failure-domain-duration";
const NO_OUT_KEY: &str = "set-no-out";

/// Starts the watches and the loop; `admin` fills the caches, `rook` writes.
pub(crate) fn start(
    admin: kube::Client,
    rook: kube::Client,
    config: StorageConfig,
    ledger: Arc<Mutex<Ledger>>,
    retry: Duration,
) -> Vec<AbortHandle> {
    let notify = Arc::new(Notify::new());
    let (nodes, nodes_writer) = reflector::store();
    let (deployments, deployments_writer) = reflector::store();
    let (budgets, budgets_writer) = reflector::store();
    let osd_selector = watcher::Config::default().labels(&format!("{APP_LABEL}={OSD_APP}"));
    let tasks = vec![
        watch(Api::<Node>::all(admin.clone()), watcher::Config::default(), nodes_writer, notify.clone()),
        watch(
            Api::<Deployment>::namespaced(admin.clone(), NAMESPACE),
            osd_selector,
            deployments_writer,
            notify.clone(),
        ),
        watch(
            Api::<PodDisruptionBudget>::namespaced(admin, NAMESPACE),
            watcher::Config::default(),
            budgets_writer,
            notify.clone(),
        ),
    ];
    let caches = Caches { nodes, deployments, budgets };
    let run = tokio::spawn(run(Operator::new(rook, config, ledger, retry), caches, notify));
    tasks.into_iter().chain([run.abort_handle()]).collect()
}

struct Caches {
    nodes: Store<Node>,
    deployments: Store<Deployment>,
    budgets: Store<PodDisruptionBudget>,
}

fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
    writer: reflector::store::Writer<K>,
    notify: Arc<Notify>,
) -> AbortHandle
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let events = watcher::watcher(api, config).default_backoff().reflect(writer);
    tokio::spawn(async move {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            if let Err(err) = event {
                tracing::debug!(error = %err, "storage watch error; retrying");
            }
            notify.notify_one();
        }
    })
    .abort_handle()
}

async fn run(mut operator: Operator, caches: Caches, notify: Arc<Notify>) {
    let ready = async {
        caches.nodes.wait_until_ready().await?;
        caches.deployments.wait_until_ready().await?;
        caches.budgets.wait_until_ready().await
    };
    if ready.await.is_err() {
        tracing::error!("a storage watch stopped before its cache was filled; Rook is not simulated");
        return;
    }
    tracing::info!(domain = %operator.config.domain, pgs_clean = ?operator.config.pgs_clean, "simulated Rook running");
    loop {
        let wake = operator.pass(&caches).await;
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep_until(wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))) => {}
        }
    }
}

/// Rook's operator and the Ceph stand-in, between passes.
struct Operator {
    client: kube::Client,
    config: StorageConfig,
    ledger: Arc<Mutex<Ledger>>,
    retry: Duration,
    pgs: PlacementGroups,
    /// The state map, once read.
    state: Option<StateMap>,
    /// When the disruption controller reconciles next.
    due: Option<Instant>,
    /// The default budget's uid and resourceVersion last seen, for the update predicate.
    default_seen: Option<(String, String)>,
    /// Nodes whose OSD was created, until the cache shows it.
    pending: BTreeSet<String>,
    /// The next OSD id at least (ids created may not be in the cache yet).
    next_id: u32,
    /// The OSDs (Deployments) seen up at least once. One that never booted holds no placement groups, so neither
    /// the Ceph stand-in nor Rook's reconcile counts it down (Rook would, from its Deployment; at install its
    /// disruption controller budgets nothing until the pools exist, `poolCount < 1`).
    booted: BTreeSet<String>,
}

impl Operator {
    fn new(client: kube::Client, config: StorageConfig, ledger: Arc<Mutex<Ledger>>, retry: Duration) -> Self {
        Self {
            client,
            config,
            ledger,
            retry,
            pgs: PlacementGroups::default(),
            state: None,
            due: Some(Instant::now()),
            default_seen: None,
            pending: BTreeSet::new(),
            next_id: 0,
            booted: BTreeSet::new(),
        }
    }

    /// One pass; returns when to run again without an event.
    async fn pass(&mut self, caches: &Caches) -> Option<Instant> {
        let now = Instant::now();
        let nodes = caches.nodes.state();
        let deployments = caches.deployments.state();
        let budgets = caches.budgets.state();
        let mut wake = None;
        if let Err(error) = self.ensure_osds(&nodes, &deployments).await {
            tracing::warn!(error = %format!("{error:#}"), "Rook: creating OSDs failed; retrying");
            wake = Some(now + self.retry);
        }
        self.booted.extend(deployments.iter().filter(|d| osds::is_up(d)).map(|d| d.name_any()));
        let deployments: Vec<Arc<Deployment>> =
            deployments.into_iter().filter(|d| self.booted.contains(&d.name_any())).collect();
        let any_down = deployments.iter().any(|d| !osds::is_up(d));
        self.pgs.observe(now, any_down);
        let down = down_by_domain(&nodes, self.config.domain);
        if let Ok(mut ledger) = self.ledger.lock() {
            ledger.observe(now, &down);
        }
        if self.default_updated_to_zero(&budgets) {
            self.due = Some(now);
        }
        if self.due.is_some_and(|due| due <= now) {
            self.due = match self.reconcile(&nodes, &deployments, &budgets, any_down).await {
                Ok(requeue) => requeue.map(|after| now + after),
                Err(error) => {
                    tracing::warn!(error = %format!("{error:#}"), "Rook: disruption reconcile failed; retrying");
                    Some(now + self.retry)
                }
            };
        }
        [wake, self.due].into_iter().flatten().min()
    }

    /// Rook's OSD controller: an OSD Deployment for each storage node without one.
    async fn ensure_osds(&mut self, nodes: &[Arc<Node>], deployments: &[Arc<Deployment>]) -> anyhow::Result<()> {
        let placed: BTreeSet<&str> = deployments.iter().filter_map(|d| osds::node_of(d)).collect();
        self.pending.retain(|n| !placed.contains(n.as_str()));
        let nodes: Vec<&Node> =
            nodes.iter().map(Arc::as_ref).filter(|n| !self.pending.contains(&n.name_any())).collect();
        let existing: Vec<&Deployment> = deployments.iter().map(Arc::as_ref).collect();
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
        for deployment in osds::missing(&nodes, &existing, self.config.domain, self.next_id) {
            let node = osds::node_of(&deployment).unwrap_or_default().to_string();
            self.next_id = self.next_id.max(osds::id_of(&deployment).map_or(0, |id| id + 1));
            match api.create(&params, &deployment).await {
                Ok(_) => tracing::info!(osd = %deployment.name_any(), %node, "Rook: created OSD"),
                Err(error) => return Err(error).with_context(|| format!("creating OSD {}", deployment.name_any())),
            }
            self.pending.insert(node);
        }
        Ok(())
    }

    /// Rook's predicate on budget updates: the default budget (`maxUnavailable: 1`) now allows no disruption.
    fn default_updated_to_zero(&mut self, budgets: &[Arc<PodDisruptionBudget>]) -> bool {
        let Some(default) = budgets.iter().find(|b| b.name_any() == DEFAULT_BUDGET) else {
            self.default_seen = None;
            return false;
        };
        let seen = (default.uid().unwrap_or_default(), default.resource_version().unwrap_or_default());
        let updated = self.default_seen.as_ref().is_some_and(|(uid, version)| *uid == seen.0 && *version != seen.1);
        self.default_seen = Some(seen);
        let one = matches!(default.spec.as_ref().and_then(|s| s.max_unavailable.as_ref()), Some(IntOrString::Int(1)));
        updated && one && disruptions_allowed(default) == Some(0)
    }

    /// The disruption controller's reconcile; returns its requeue.
    async fn reconcile(
        &mut self,
        nodes: &[Arc<Node>],
        deployments: &[Arc<Deployment>],
        budgets: &[Arc<PodDisruptionBudget>],
        any_down: bool,
    ) -> anyhow::Result<Option<Duration>> {
        let by_name: BTreeMap<String, &Node> = nodes.iter().map(|n| (n.name_any(), n.as_ref())).collect();
        let location = self.config.domain.location_label();
        let osds: Vec<Osd> = deployments
            .iter()
            .filter_map(|d| {
                let domain = d.labels().get(&location)?.clone();
                let node = osds::node_of(d).and_then(|n| by_name.get(n));
                let node_drained = node.is_none_or(|n| n.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false));
                Some(Osd { domain, up: osds::is_up(d), node_drained })
            })
            .collect();
        if osds.is_empty() {
            // No pool yet: nothing to budget; look again as Rook's requeue would.
            return Ok(Some(self.config.rook.default_missing));
        }
        let state = match &self.state {
            Some(state) => state.clone(),
            None => self.read_state().await?,
        };
        let clean = self.pgs.clean(Instant::now(), any_down, self.config.pgs_clean);
        let next = rook::next_state(&state, &osds, clean);
        let wanted = rook::wanted(&next, &osds);
        let all: BTreeSet<String> = osds.iter().map(|o| o.domain.clone()).collect();
        let crush_type = self.config.domain.crush_type();
        let changes = budgets::changes(&budgets::names(budgets), &wanted, crush_type, &all);
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), NAMESPACE);
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
        let created_default = changes.create.iter().any(|b| b.name_any() == DEFAULT_BUDGET);
        for budget in &changes.create {
            match api.create(&post, budget).await {
                Ok(_) => log_created(budget, &next),
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(error) => return Err(error).with_context(|| format!("creating budget {}", budget.name_any())),
            }
        }
        for name in &changes.delete {
            match api.delete(name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(budget = %name, "Rook: deleting pdb {name:?}"),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error).with_context(|| format!("deleting budget {name}")),
            }
        }
        if next != state || self.state.is_none() {
            self.write_state(&next).await?;
        }
        self.state = Some(next);
        let default = budgets.iter().find(|b| b.name_any() == DEFAULT_BUDGET);
        let requeue = match wanted {
            Wanted::Blocking(_) => Some(self.config.rook.default_missing),
            Wanted::Default if created_default || default.is_none() => Some(self.config.rook.default_missing),
            Wanted::Default if default.and_then(|d| disruptions_allowed(d)) == Some(0) => {
                Some(self.config.rook.default_at_zero)
            }
            Wanted::Default => None,
        };
        Ok(requeue)
    }

    async fn read_state(&self) -> anyhow::Result<StateMap> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let map = api.get_opt(STATE_MAP).await.with_context(|| format!("reading ConfigMap {STATE_MAP}"))?;
        let data = map.and_then(|m| m.data).unwrap_or_default();
        Ok(StateMap {
            draining: data.get(DRAINING_KEY).cloned().unwrap_or_default(),
            no_out: data.get(NO_OUT_KEY).is_some_and(|v| v == "true"),
        })
    }

    async fn write_state(&self, state: &StateMap) -> anyhow::Result<()> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let mut data = BTreeMap::from([
            (DRAINING_KEY.to_string(), state.draining.clone()),
            (NO_OUT_KEY.to_string(), if state.no_out { "true" } else { "" }.to_string()),
        ]);
        if !state.draining.is_empty() {
            data.insert(DRAINING_SINCE_KEY.to_string(), Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": STATE_MAP, "namespace": NAMESPACE}, "data": data});
        api.patch(STATE_MAP, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .with_context(|| format!("writing ConfigMap {STATE_MAP}"))?;
        tracing::info!(draining = %state.draining, "Rook: draining failure domain {:?}", state.draining);
        Ok(())
    }
}

fn log_created(budget: &PodDisruptionBudget, state: &StateMap) {
    if budget.name_any() == DEFAULT_BUDGET {
        tracing::info!("Rook: all PGs are active+clean. Restoring default OSD pdb settings");
    } else {
        tracing::info!(budget = %budget.name_any(), draining = %state.draining,
            "Rook: creating temporary blocking pdb with maxUnavailable=0");
    }
}

/// `status.disruptionsAllowed`, once the disruption controller has written a status.
fn disruptions_allowed(budget: &PodDisruptionBudget) -> Option<i32> {
    budget.status.as_ref().map(|s| s.disruptions_allowed)
}

/// For every failure domain of the storage nodes, how many of its nodes are down: not Ready, or cordoned.
pub fn down_by_domain(nodes: &[Arc<Node>], domain: super::FailureDomain) -> BTreeMap<String, usize> {
    let mut down = BTreeMap::new();
    for node in nodes {
        let Some(name) = osds::domain_of(node, domain) else { continue };
        let count = down.entry(name).or_insert(0);
        if !node_state::is_ready(node) {
            *count += 1;
        }
    }
    down
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_state::tests::{cordoned, node};
    use crate::storage::{FailureDomain, STORAGE_NODE_LABEL};

    fn storage(mut n: Node, rack: &str) -> Arc<Node> {
        n.labels_mut().insert(STORAGE_NODE_LABEL.into(), String::new());
        n.labels_mut().insert(FailureDomain::Rack.node_label().into(), rack.into());
        Arc::new(n)
    }

    #[test]
    fn a_cordoned_storage_node_is_down_in_its_domain() {
        let nodes = [
            storage(node("w-0", "a", "a", "Done"), "rack0"),
            storage(cordoned(node("w-1", "a", "a", "Done")), "rack1"),
            storage(cordoned(node("w-4", "a", "a", "Done")), "rack1"),
            Arc::new(cordoned(node("w-9", "a", "a", "Done"))),
        ];
        let down = down_by_domain(&nodes, FailureDomain::Rack);
        assert_eq!(down, BTreeMap::from([("rack0".to_string(), 0), ("rack1".to_string(), 2)]));
    }
}
