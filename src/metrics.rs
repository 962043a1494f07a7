//! Prometheus metrics, registered under the `numo` prefix and served on `/metrics`.
//!
//! Every label has a bounded set of values: controller names, error kinds, phases and results are fixed enums; the
//! `run_config` label names a run config (`namespace/name`), of which a cluster has a handful, and its series are
//! removed when the run config goes away ([`Metrics::forget_run_config`]), but for `numo_held_pools`, which drops to
//! 0 and stays until numo restarts.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::api::{JobResult, NodePhase, Trigger};

/// Labels of the reconcile error counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    controller: &'static str,
    error: &'static str,
}

/// Labels naming a controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: &'static str,
}

/// Labels of the nodes-by-phase gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodePhaseLabels {
    run_config: String,
    phase: &'static str,
}

/// How many of a run config's nodes wait for an admin, by why (`numo_nodes_awaiting_admin`, one series each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AwaitingAdmin {
    /// Failed nodes: retry or skip them.
    pub failed: u32,
    /// Ungated nodes not accepted yet: accept (retry annotation) or skip them.
    pub ungated: u32,
    /// Skipped nodes, while one of them keeps its restored pool from `Updated` (`NodeUpgrade=False`,
    /// `SkippedNodeNotUpdated`): fix the node or take it out of its pool.
    pub skipped: u32,
}

impl AwaitingAdmin {
    /// Each count with its `phase` label.
    fn by_phase(self) -> [(NodePhase, u32); 3] {
        [(NodePhase::Failed, self.failed), (NodePhase::Ungated, self.ungated), (NodePhase::Skipped, self.skipped)]
    }
}

/// Labels of the health-check gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    run_config: String,
    check: &'static str,
}

/// Labels of a gauge per run config.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunConfigLabels {
    run_config: String,
}

/// Labels of the config-change gauge: the run config and its trigger.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    run_config: String,
    trigger: &'static str,
}

/// Labels of the contested gauge: the run config and the `Contested` condition's reason.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContestedLabels {
    run_config: String,
    reason: &'static str,
}

/// Labels of the finished-Jobs counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    phase: &'static str,
    result: &'static str,
}

/// Labels of the API request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: &'static str,
    resource: String,
}

/// Labels of the node duration histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

fn reconcile_histogram() -> Histogram {
    // 1 ms .. ~33 s
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

fn node_histogram() -> Histogram {
    // 10 s .. ~11 h
    Histogram::new(exponential_buckets(10.0, 2.0, 13))
}

/// What was counted of one run config: the rollout (target version) and the transitions counted in it.
type Counted = (Option<String>, std::collections::HashSet<String>);

/// The operator's metrics. `Metrics::default()` registers every family.
pub struct Metrics {
    registry: Registry,
    reconcile_errors: Family<ErrorLabels, Counter>,
    reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    nodes_by_phase: Family<NodePhaseLabels, Gauge>,
    check_blocking: Family<CheckLabels, Gauge>,
    config_change_overdue: Family<TriggerLabels, Gauge>,
    next_minor_held: Family<RunConfigLabels, Gauge>,
    estimated_end: Family<RunConfigLabels, Gauge>,
    held_since: Family<RunConfigLabels, Gauge>,
    pools_paused_since: Family<RunConfigLabels, Gauge>,
    held_pools: Family<RunConfigLabels, Gauge>,
    awaiting_admin: Family<NodePhaseLabels, Gauge>,
    contested: Family<ContestedLabels, Gauge>,
    jobs_finished: Family<JobLabels, Counter>,
    node_duration: Family<OutcomeLabels, Histogram, fn() -> Histogram>,
    leader: Gauge,
    api_requests: Family<RequestLabels, Counter>,
    status_writes: Counter,
    status_write_bytes: Counter,
    /// What was counted already, per run config and rollout (its target version): a reconcile that reads a status
    /// older than the last one written (a cache that lags) must not count a finished Job or node twice.
    counted: std::sync::Mutex<std::collections::HashMap<String, Counted>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("numo");
        let reconcile_errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Reconciles that failed, by controller and kind of error",
            reconcile_errors.clone(),
        );
        let reconcile_duration =
            Family::<ControllerLabels, Histogram, fn() -> Histogram>::new_with_constructor(reconcile_histogram);
        registry.register(
            "reconcile_duration_seconds",
            "How long one reconcile took, by controller",
            reconcile_duration.clone(),
        );
        let nodes_by_phase = Family::<NodePhaseLabels, Gauge>::default();
        registry.register("nodes", "Nodes of a run config's rollout, by phase", nodes_by_phase.clone());
        let check_blocking = Family::<CheckLabels, Gauge>::default();
        registry.register(
            "health_check_blocking",
            "1 while the check (a window, a health check, a soak) holds the next node of a run config, else 0",
            check_blocking.clone(),
        );
        let config_change_overdue = Family::<TriggerLabels, Gauge>::default();
        registry.register(
            "config_change_overdue",
            "1 while a run config's rollout has left a target node behind its pool's rendered config for longer than \
             overdueAfter, else 0; labelled with the run config's trigger",
            config_change_overdue.clone(),
        );
        let next_minor_held = Family::<RunConfigLabels, Gauge>::default();
        registry.register(
            "next_minor_update_held",
            "1 while the kube-apiserver operator refuses the cluster's next minor update because nodes a run config \
             holds behind are too far behind the API server (condition NextMinorUpdateHeld), else 0",
            next_minor_held.clone(),
        );
        let estimated_end = Family::<RunConfigLabels, Gauge>::default();
        registry.register(
            "rollout_estimated_end_timestamp_seconds",
            "When a run config's rollout should end (status.estimate.end), as Unix seconds; no series while none is \
             estimated",
            estimated_end.clone(),
        );
        let held_since = Family::<RunConfigLabels, Gauge>::default();
        registry.register(
            "rollout_held_since_timestamp_seconds",
            "Since when something has held a run config's next node (status.heldSince), as Unix seconds; no series \
             while nothing holds it",
            held_since.clone(),
        );
        let pools_paused_since = Family::<RunConfigLabels, Gauge>::default();
        registry.register(
            "target_pools_paused_since_timestamp_seconds",
            "Since when a run config's paused target pools have held back an update, as Unix seconds: under Upgrade \
             since numo paused them, under AnyConfigChange since a target node fell behind its pool's rendered config; \
             no series while they hold back nothing",
            pools_paused_since.clone(),
        );
        let held_pools = Family::<RunConfigLabels, Gauge>::default();
        registry.register(
            "held_pools",
            "How many MachineConfigPools a run config holds (status.heldPools); 0 once a deleted run config let them go",
            held_pools.clone(),
        );
        let awaiting_admin = Family::<NodePhaseLabels, Gauge>::default();
        registry.register(
            "nodes_awaiting_admin",
            "Nodes of a run config's rollout that wait for an admin: Failed (retry or skip), Ungated (not accepted yet), \
             Skipped (while one keeps its restored pool from Updated: fix it or take it out of its pool)",
            awaiting_admin.clone(),
        );
        let contested = Family::<ContestedLabels, Gauge>::default();
        registry.register(
            "foreign_change_contested",
            "1 while a run config's Contested condition is True, labelled with its reason (ForeignChange, \
             ChangedBackRepeatedly); no series otherwise",
            contested.clone(),
        );
        let jobs_finished = Family::<JobLabels, Counter>::default();
        registry.register(
            "jobs_finished",
            "Gate and cleanup Jobs that finished, by phase and result",
            jobs_finished.clone(),
        );
        let node_duration = Family::<OutcomeLabels, Histogram, fn() -> Histogram>::new_with_constructor(node_histogram);
        registry.register(
            "node_duration_seconds",
            "Time from a node's first gate Job until it finished, by outcome (done, failed, skipped)",
            node_duration.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the leader lease and runs the controllers",
            leader.clone(),
        );
        let api_requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "api_requests",
            "Requests numo sent to the API server, by verb (watch, read, create, update, patch, delete) and resource",
            api_requests.clone(),
        );
        let status_writes = Counter::default();
        registry.register("status_writes", "Run-config status writes sent", status_writes.clone());
        let status_write_bytes = Counter::default();
        registry.register(
            "status_write_bytes",
            "Bytes of the run-config status writes sent (the request bodies)",
            status_write_bytes.clone(),
        );
        Self {
            registry,
            api_requests,
            status_writes,
            status_write_bytes,
            reconcile_errors,
            reconcile_duration,
            nodes_by_phase,
            check_blocking,
            config_change_overdue,
            next_minor_held,
            estimated_end,
            held_since,
            pools_paused_since,
            held_pools,
            awaiting_admin,
            contested,
            jobs_finished,
            node_duration,
            leader,
            counted: Default::default(),
        }
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Counts a failed reconcile of `controller`, labelled with the error's kind.
    pub fn reconcile_error(&self, controller: &'static str, err: &crate::Error) {
        self.reconcile_errors.get_or_create(&ErrorLabels { controller, error: err.metric_label() }).inc();
    }

    /// Records how long a reconcile of `controller` took.
    pub fn reconcile_duration(&self, controller: &'static str, seconds: f64) {
        self.reconcile_duration.get_or_create(&ControllerLabels { controller }).observe(seconds);
    }

    /// Sets how many nodes of `run_config` (`namespace/name`) are in `phase`.
    pub fn set_nodes_by_phase(&self, run_config: &str, phase: NodePhase, count: u32) {
        let labels = NodePhaseLabels { run_config: run_config.to_string(), phase: phase.name() };
        self.nodes_by_phase.get_or_create(&labels).set(i64::from(count));
    }

    /// Sets whether `check` holds the next node of `run_config`.
    pub fn set_check_blocking(&self, run_config: &str, check: &'static str, blocking: bool) {
        let labels = CheckLabels { run_config: run_config.to_string(), check };
        self.check_blocking.get_or_create(&labels).set(i64::from(blocking));
    }

    /// Sets whether `run_config`'s config change is overdue; `trigger` is its `spec.trigger`.
    pub fn set_config_change_overdue(&self, run_config: &str, trigger: Trigger, overdue: bool) {
        for other in Trigger::ALL.into_iter().filter(|t| *t != trigger) {
            let labels = TriggerLabels { run_config: run_config.to_string(), trigger: other.as_str() };
            self.config_change_overdue.remove(&labels);
        }
        let labels = TriggerLabels { run_config: run_config.to_string(), trigger: trigger.as_str() };
        self.config_change_overdue.get_or_create(&labels).set(i64::from(overdue));
    }

    /// Sets whether nodes `run_config` holds behind hold the cluster's next minor update.
    pub fn set_next_minor_held(&self, run_config: &str, held: bool) {
        self.next_minor_held
            .get_or_create(&RunConfigLabels { run_config: run_config.to_string() })
            .set(i64::from(held));
    }

    /// Sets when `run_config`'s rollout should end (Unix seconds), or removes the series when nothing is estimated.
    pub fn set_estimated_end(&self, run_config: &str, end: Option<i64>) {
        set_or_remove(&self.estimated_end, RunConfigLabels { run_config: run_config.to_string() }, end);
    }

    /// Sets since when something holds `run_config`'s next node (Unix seconds), or removes the series when nothing
    /// does.
    pub fn set_held_since(&self, run_config: &str, since: Option<i64>) {
        set_or_remove(&self.held_since, RunConfigLabels { run_config: run_config.to_string() }, since);
    }

    /// Sets since when `run_config`'s paused target pools hold back an update (Unix seconds), or removes the series
    /// when they hold back nothing.
    pub fn set_pools_paused_since(&self, run_config: &str, since: Option<i64>) {
        set_or_remove(&self.pools_paused_since, RunConfigLabels { run_config: run_config.to_string() }, since);
    }

    /// Sets how many pools `run_config` holds.
    pub fn set_held_pools(&self, run_config: &str, count: usize) {
        let labels = RunConfigLabels { run_config: run_config.to_string() };
        self.held_pools.get_or_create(&labels).set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Sets how many of `run_config`'s nodes wait for an admin, by why.
    pub fn set_nodes_awaiting_admin(&self, run_config: &str, awaiting: AwaitingAdmin) {
        for (phase, count) in awaiting.by_phase() {
            let labels = NodePhaseLabels { run_config: run_config.to_string(), phase: phase.name() };
            self.awaiting_admin.get_or_create(&labels).set(i64::from(count));
        }
    }

    /// Sets whether `run_config` is contested, with the `Contested` condition's reason (`ForeignChange` or
    /// `ChangedBackRepeatedly`; any other reads as `ForeignChange`).
    pub fn set_contested(&self, run_config: &str, reason: Option<&str>) {
        let reason =
            reason.map(|r| if r == CHANGED_BACK_REPEATEDLY { CHANGED_BACK_REPEATEDLY } else { FOREIGN_CHANGE });
        for other in [FOREIGN_CHANGE, CHANGED_BACK_REPEATEDLY] {
            if Some(other) != reason {
                self.contested.remove(&ContestedLabels { run_config: run_config.to_string(), reason: other });
            }
        }
        if let Some(reason) = reason {
            self.contested.get_or_create(&ContestedLabels { run_config: run_config.to_string(), reason }).set(1);
        }
    }

    /// Removes every series of `run_config` (call when the run config is deleted), but for its held pools, which
    /// drop to 0 and stay (until numo restarts): the pools were let go, and a numo that stops soon after must not look as if it still held
    /// them (see the NumoDownWhileHoldingPools alert).
    pub fn forget_run_config(&self, run_config: &str) {
        if self.held_pools.remove(&RunConfigLabels { run_config: run_config.to_string() }) {
            self.set_held_pools(run_config, 0);
        }
        self.set_held_since(run_config, None);
        self.set_pools_paused_since(run_config, None);
        self.set_contested(run_config, None);
        for (phase, _) in AwaitingAdmin::default().by_phase() {
            let labels = NodePhaseLabels { run_config: run_config.to_string(), phase: phase.name() };
            self.awaiting_admin.remove(&labels);
        }
        self.estimated_end.remove(&RunConfigLabels { run_config: run_config.to_string() });
        self.next_minor_held.remove(&RunConfigLabels { run_config: run_config.to_string() });
        self.counted.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(run_config);
        for phase in NodePhase::ALL {
            let labels = NodePhaseLabels { run_config: run_config.to_string(), phase: phase.name() };
            self.nodes_by_phase.remove(&labels);
        }
        for check in crate::api::check::ALL {
            self.check_blocking.remove(&CheckLabels { run_config: run_config.to_string(), check });
        }
        for trigger in Trigger::ALL {
            let labels = TriggerLabels { run_config: run_config.to_string(), trigger: trigger.as_str() };
            self.config_change_overdue.remove(&labels);
        }
    }

    /// Whether `what` (a finished Job or node) of `run_config`'s rollout to `rollout` is counted for the first time;
    /// it is remembered as counted.
    pub fn first_count(&self, run_config: &str, rollout: Option<&str>, what: &str) -> bool {
        let mut counted = self.counted.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (version, seen) = counted.entry(run_config.to_string()).or_default();
        if version.as_deref() != rollout {
            *version = rollout.map(String::from);
            seen.clear();
        }
        seen.insert(what.to_string())
    }

    /// Counts a finished Job; `phase` is `gate` or `cleanup`.
    pub fn job_finished(&self, phase: &'static str, result: JobResult) {
        let result = match result {
            JobResult::Running => "running",
            JobResult::Succeeded => "succeeded",
            JobResult::Failed => "failed",
        };
        self.jobs_finished.get_or_create(&JobLabels { phase, result }).inc();
    }

    /// Records how long a node took from its first gate Job until it finished; `outcome` is `done`, `failed` or
    /// `skipped`.
    pub fn node_finished(&self, outcome: &'static str, seconds: f64) {
        self.node_duration.get_or_create(&OutcomeLabels { outcome }).observe(seconds);
    }

    /// Records whether this replica is the leader.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Counts one request to the API server.
    pub fn api_request(&self, verb: &'static str, resource: &str) {
        self.api_requests.get_or_create(&RequestLabels { verb, resource: resource.to_string() }).inc();
    }

    /// Counts one run-config status write of `bytes` bytes.
    pub fn status_written(&self, bytes: usize) {
        self.status_writes.inc();
        self.status_write_bytes.inc_by(bytes as u64);
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// The `Contested` reasons, as the `reason` label of `numo_foreign_change_contested`.
const FOREIGN_CHANGE: &str = "ForeignChange";
const CHANGED_BACK_REPEATEDLY: &str = "ChangedBackRepeatedly";

/// Sets the series of `labels` to `value`, or removes it when there is none.
fn set_or_remove(family: &Family<RunConfigLabels, Gauge>, labels: RunConfigLabels, value: Option<i64>) {
    match value {
        Some(value) => {
            family.get_or_create(&labels).set(value);
        }
        None => {
            family.remove(&labels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_exposed_with_the_numo_prefix() {
        let metrics = Metrics::default();
        metrics.reconcile_error("mutex_rule", &crate::Error::MissingField("x"));
        metrics.reconcile_duration("mutex_rule", 0.02);
        metrics.set_nodes_by_phase("ns/rc", NodePhase::Gating, 2);
        metrics.job_finished("gate", JobResult::Succeeded);
        metrics.node_finished("done", 120.0);
        metrics.set_leader(true);
        metrics.api_request("patch", "nodes");
        metrics.status_written(120);
        metrics.set_check_blocking("ns/rc", "ClusterOperators", true);
        metrics.set_estimated_end("ns/rc", Some(1_795_000_000));
        let text = metrics.encode().unwrap_or_default();
        assert!(
            text.contains(r#"numo_rollout_estimated_end_timestamp_seconds{run_config="ns/rc"} 1795000000"#),
            "{text}"
        );
        assert!(
            text.contains(r#"numo_reconcile_errors_total{controller="mutex_rule",error="missing_field"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"numo_reconcile_duration_seconds_count{controller="mutex_rule"} 1"#), "{text}");
        assert!(text.contains(r#"numo_nodes{run_config="ns/rc",phase="Gating"} 2"#), "{text}");
        assert!(text.contains(r#"numo_jobs_finished_total{phase="gate",result="succeeded"} 1"#), "{text}");
        assert!(text.contains(r#"numo_node_duration_seconds_count{outcome="done"} 1"#), "{text}");
        assert!(text.contains("numo_leader 1"), "{text}");
        assert!(text.contains(r#"numo_api_requests_total{verb="patch",resource="nodes"} 1"#), "{text}");
        assert!(text.contains("numo_status_writes_total 1"), "{text}");
        assert!(text.contains("numo_status_write_bytes_total 120"), "{text}");
        assert!(
            text.contains(r#"numo_health_check_blocking{run_config="ns/rc",check="ClusterOperators"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn a_forgotten_run_config_leaves_no_series() {
        let metrics = Metrics::default();
        metrics.set_nodes_by_phase("ns/rc", NodePhase::Done, 5);
        metrics.set_nodes_by_phase("ns/other", NodePhase::Done, 1);
        metrics.set_check_blocking("ns/rc", "Soak", true);
        metrics.set_estimated_end("ns/rc", Some(1));
        metrics.forget_run_config("ns/rc");
        let text = metrics.encode().unwrap_or_default();
        assert!(!text.contains("ns/rc"), "{text}");
        assert!(text.contains("ns/other"), "{text}");
    }

    #[test]
    fn a_forgotten_run_config_shows_its_pools_let_go() {
        let metrics = Metrics::default();
        metrics.set_held_pools("ns/rc", 2);
        metrics.set_held_since("ns/rc", Some(100));
        metrics.set_pools_paused_since("ns/rc", Some(90));
        metrics.set_nodes_awaiting_admin("ns/rc", AwaitingAdmin { failed: 1, ungated: 0, skipped: 2 });
        metrics.set_contested("ns/rc", Some("ForeignChange"));
        metrics.forget_run_config("ns/rc");
        let text = metrics.encode().unwrap_or_default();
        let left: Vec<&str> = text.lines().filter(|l| l.contains("ns/rc")).collect();
        assert_eq!(left, [r#"numo_held_pools{run_config="ns/rc"} 0"#], "{text}");
    }

    #[test]
    fn a_contested_hold_has_one_series_with_its_reason() {
        let metrics = Metrics::default();
        metrics.set_contested("ns/rc", Some("ForeignChange"));
        metrics.set_contested("ns/rc", Some("ChangedBackRepeatedly"));
        let text = metrics.encode().unwrap_or_default();
        let line = r#"numo_foreign_change_contested{run_config="ns/rc",reason="ChangedBackRepeatedly"} 1"#;
        assert!(text.contains(line), "{text}");
        assert!(!text.contains(r#"reason="ForeignChange""#), "{text}");
        metrics.set_contested("ns/rc", Some("SomethingNew"));
        let text = metrics.encode().unwrap_or_default();
        assert!(text.contains(r#"reason="ForeignChange"} 1"#), "an unknown reason reads as ForeignChange: {text}");
        metrics.set_contested("ns/rc", None);
        assert!(!metrics.encode().unwrap_or_default().contains("numo_foreign_change_contested{"));
    }

    #[test]
    fn a_transition_is_counted_once_per_rollout() {
        let metrics = Metrics::default();
        assert!(metrics.first_count("ns/rc", Some("4.16.5"), "job a Succeeded"));
        assert!(!metrics.first_count("ns/rc", Some("4.16.5"), "job a Succeeded"), "a stale status shows it again");
        assert!(metrics.first_count("ns/other", Some("4.16.5"), "job a Succeeded"));
        assert!(metrics.first_count("ns/rc", Some("4.17.0"), "job a Succeeded"), "a new rollout counts anew");
        metrics.forget_run_config("ns/rc");
        assert!(metrics.first_count("ns/rc", Some("4.17.0"), "job a Succeeded"));
    }
}
