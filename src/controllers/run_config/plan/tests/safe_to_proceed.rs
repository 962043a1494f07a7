//! Windows, health checks and soak: what holds the next node, what never holds a node in flight, and the status
//! and Events an admin sees.

use super::*;
use crate::api::{BlackoutWindow, HealthChecks, MaintenanceWindow};
use crate::controllers::run_config::checks::Question;
use crate::controllers::run_config::snapshot::BudgetView;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A fixture whose clock reads `now`.
fn fixture_at(workers: usize, now: &str) -> Fixture {
    let mut f = Fixture::new(workers);
    f.s.now = at(now);
    f
}

fn nightly(f: &mut Fixture) {
    f.s.run_config.spec.maintenance_windows =
        vec![MaintenanceWindow { schedule: "0 22 * * *".into(), duration: "2h".into(), time_zone: None }];
}

fn health_checks(f: &mut Fixture) {
    f.s.run_config.spec.health_checks = Some(HealthChecks::default());
}

fn ready_for_next(p: &Plan) -> (String, String, String) {
    let c = condition(p, condition::READY_FOR_NEXT_NODE);
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

fn events(p: &Plan, reason: &str) -> usize {
    p.notices.iter().filter(|n| n.reason == reason).count()
}

/// Steps (answering Jobs with success and upgrading released nodes) until `node` is Done.
fn finish_node(f: &mut Fixture, node: &str) -> Plan {
    for _ in 0..20 {
        f.finish_jobs(JobResult::Succeeded);
        if node_phase(&f.plan(), node) == Some(NodePhase::Upgrading) {
            f.upgrade(node);
        }
        let p = f.step();
        if matches!(node_phase(&p, node), Some(NodePhase::Done | NodePhase::Soaking)) {
            return p;
        }
    }
    panic!("{node} did not finish: {:?}", f.s.run_config.status);
}

#[test]
fn outside_the_window_no_node_starts_and_the_status_says_when_one_will() {
    let mut f = fixture_at(2, "2026-11-23T21:00:00Z");
    nightly(&mut f);
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty(), "no gate Job outside the window: {:?}", jobs_created(&p));
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    let message = p.status.message.clone().unwrap_or_default();
    assert!(message.contains("outside the maintenance window; the next opens 2026-11-23T22:00:00Z"), "{message}");
    let (status, reason, _) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "MaintenanceWindow"));
    assert_eq!(p.status.blocked_by.len(), 1);
    let window = p.status.next_window.clone().unwrap_or_else(|| panic!("nextWindow"));
    assert_eq!(window.start.0, at("2026-11-23T22:00:00Z"));
    assert_eq!(window.end.map(|t| t.0), Some(at("2026-11-24T00:00:00Z")));
    // numo wakes by itself when the window opens (the fixture's clock advanced a second per step).
    let wait = p.requeue_after.unwrap_or_else(|| panic!("a requeue at the window's start"));
    let expected = at("2026-11-23T22:00:00Z").duration_since(f.s.now - Duration::from_secs(1));
    let expected = Duration::try_from(expected).unwrap_or_default();
    assert!(wait >= expected && wait < expected + Duration::from_secs(1), "{wait:?} vs {expected:?}");
    // Held once: the Event is not repeated while the same check holds.
    let first_held = f.s.run_config.status.blocked_by.clone();
    assert!(!first_held.is_empty());
    assert_eq!(events(&f.step(), "RolloutHeld"), 0);

    f.s.now = at("2026-11-23T22:00:00Z");
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 1)]);
    assert_eq!(ready_for_next(&p).0, "True");
    assert!(p.status.blocked_by.is_empty());
    assert_eq!(events(&p, "RolloutResumed"), 1);
    assert_eq!(p.status.phase, Some(RunPhase::Upgrading));
}

#[test]
fn a_window_that_closes_lets_the_node_in_flight_finish_and_holds_the_next() {
    let mut f = fixture_at(2, "2026-11-23T23:59:00Z");
    nightly(&mut f);
    f.advance_to_gating();
    assert_eq!(node_phase(&f.plan(), "worker-0"), Some(NodePhase::Gating));
    f.s.now = at("2026-11-24T00:30:00Z");
    let p = finish_node(&mut f, "worker-0");
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Done), "the node in flight finished after the window");
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    assert_eq!(node_phase(&p, "worker-1"), None, "worker-1 waits for the next window");
    assert_eq!(p.status.pending_nodes, 1);
    let message = p.status.message.unwrap_or_default();
    assert!(message.contains("the next opens 2026-11-24T22:00:00Z"), "{message}");
}

#[test]
fn a_blackout_holds_even_inside_an_open_window() {
    let mut f = fixture_at(1, "2026-11-23T22:30:00Z");
    nightly(&mut f);
    let time = |s: &str| Time(at(s));
    f.s.run_config.spec.blackout_windows = vec![BlackoutWindow {
        start: time("2026-11-23T22:00:00Z"),
        end: time("2026-11-23T23:00:00Z"),
        reason: Some("database failover drill".into()),
    }];
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "BlackoutWindow"));
    assert!(message.contains("in a blackout window (database failover drill) until 2026-11-23T23:00:00Z"), "{message}");
    f.s.now = at("2026-11-23T23:00:00Z");
    assert_eq!(jobs_created(&f.step()).len(), 1, "the node starts when the blackout ends, inside the window");
}

#[test]
fn at_every_window_edge_the_status_lists_every_check_that_holds_and_numo_wakes_there() {
    // The window opens at T = 22:00; a blackout runs from T-10s to T+20s.
    let mut f = fixture_at(1, "2026-11-23T21:59:40Z");
    nightly(&mut f);
    let time = |s: &str| Time(at(s));
    f.s.run_config.spec.blackout_windows =
        vec![BlackoutWindow { start: time("2026-11-23T21:59:50Z"), end: time("2026-11-23T22:00:20Z"), reason: None }];
    f.advance_to_gating();
    let checks = |p: &Plan| p.status.blocked_by.iter().map(|b| b.check.clone()).collect::<Vec<_>>();
    let wake = |p: &Plan| p.requeue_after.unwrap_or_else(|| panic!("no wake-up: {:?}", p.status));
    f.s.now = at("2026-11-23T21:59:55Z");
    let both = f.plan();
    assert_eq!(checks(&both), ["BlackoutWindow", "MaintenanceWindow"]);
    assert!(wake(&both) <= Duration::from_secs(6), "numo wakes when the window opens: {:?}", wake(&both));
    f.s.now = at("2026-11-23T22:00:00Z");
    let blackout = f.plan();
    assert_eq!(checks(&blackout), ["BlackoutWindow"], "the window is open: only the blackout holds");
    let (status, _, message) = ready_for_next(&blackout);
    assert_eq!(status, "False");
    assert!(!message.contains("outside the maintenance window"), "{message}");
    assert!(wake(&blackout) <= Duration::from_secs(21), "numo wakes when the blackout ends");
    f.s.now = at("2026-11-23T22:00:20Z");
    assert_eq!(jobs_created(&f.plan()).len(), 1, "the node starts when nothing holds");
}

#[test]
fn a_bad_window_makes_the_run_config_invalid_and_changes_nothing() {
    let mut f = Fixture::new(1);
    f.s.run_config.spec.maintenance_windows =
        vec![MaintenanceWindow { schedule: "at ten".into(), duration: "2h".into(), time_zone: Some("Nowhere".into()) }];
    let p = f.plan();
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let message = p.status.message.clone().unwrap_or_default();
    assert!(
        message.contains("maintenanceWindows[0].schedule \"at ten\" is not a 5-field cron expression"),
        "{message}"
    );
    assert!(message.contains("timeZone \"Nowhere\" is not an IANA time zone"), "{message}");
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
}

#[test]
fn without_any_of_it_the_condition_says_nothing_holds_and_nothing_waits() {
    let mut f = Fixture::new(1);
    let p = f.step();
    assert_eq!(ready_for_next(&p), ("True".into(), "NoNodeWaiting".into(), "No node waits to start.".into()));
    assert_eq!(p.status.next_window, None);
    assert!(p.status.blocked_by.is_empty());
}

#[test]
fn a_degraded_cluster_operator_holds_the_next_node_unless_ignored() {
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    f.s.health.cluster_operators =
        Ok(vec![("ingress".into(), "is Degraded (IngressDegraded: 2 of 2 router pods crash)".into())]);
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "ClusterOperators"));
    assert_eq!(message, "ClusterOperator ingress is Degraded (IngressDegraded: 2 of 2 router pods crash)");
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));

    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.cluster_operators.ignore = vec!["ingress".into()];
    }
    assert_eq!(jobs_created(&f.step()).len(), 1, "an ignored operator holds nothing");
}

#[test]
fn the_recovery_of_a_cluster_operator_releases_the_next_node_with_one_event_each_way() {
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    f.s.health.cluster_operators = Ok(vec![("dns".into(), "is not Available".into())]);
    let held: usize = (0..7).map(|_| events(&f.step(), "RolloutHeld")).sum();
    assert_eq!(held, 1, "one Event when the rollout becomes held, none while it stays held");
    f.s.health.cluster_operators = Ok(Vec::new());
    let p = f.step();
    assert_eq!(events(&p, "RolloutResumed"), 1);
    assert_eq!(jobs_created(&p).len(), 1);
}

#[test]
fn a_check_that_cannot_read_its_source_holds_the_rollout_and_says_so() {
    let mut f = Fixture::new(1);
    health_checks(&mut f);
    f.s.health.cluster_operators = Err("clusteroperators.config.openshift.io is forbidden".into());
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let message = ready_for_next(&p).2;
    assert!(
        message.contains("ClusterOperators cannot be read, so their health is unknown: clusteroperators"),
        "{message}"
    );
    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.cluster_operators.enabled = false;
    }
    assert_eq!(jobs_created(&f.step()).len(), 1, "a check switched off reads nothing and holds nothing");
}

#[test]
fn a_degraded_pool_holds_the_next_node() {
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    f.advance_to_gating();
    f.s.pools.get_mut("master").unwrap().degraded = Some("NodeDegraded: 1 node is reporting degraded status".into());
    let p = f.step();
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "MachineConfigPools"));
    assert_eq!(message, "MachineConfigPool master is NodeDegraded: 1 node is reporting degraded status");
}

#[test]
fn a_degradation_of_a_node_an_admin_skipped_holds_nothing_and_the_status_says_what_was_left_out() {
    let mut f = Fixture::new(3);
    health_checks(&mut f);
    f.advance_to_gating();
    // worker-0's update failed: the daemon says Degraded, its pool NodeDegraded, and the machine-config operator's
    // wait for the degraded pool ended in RequiredPoolsFailed.
    let degrade = |f: &mut Fixture| {
        f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().mcd_state = Some("Degraded".into());
        f.s.pools.get_mut("worker").unwrap().degraded =
            Some("NodeDegraded: 1 node is reporting degraded status".into());
        f.s.health.cluster_operators = Ok(vec![(
            "machine-config".into(),
            "is Degraded (RequiredPoolsFailed: error during syncRequiredMachineConfigPools)".into(),
        )]);
    };
    degrade(&mut f);
    let p = f.step();
    let (status, reason, _) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "ClusterOperators"), "not skipped: it holds");

    f.s.run_config.skip.insert("worker-0".into());
    let p = f.step();
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("True", "NothingHolds"), "{message}");
    assert!(message.contains("leave out"), "{message}");
    assert!(message.contains("MachineConfigPool worker is degraded while node worker-0, which an admin skipped"));
    assert!(message.contains("ClusterOperator machine-config is Degraded (RequiredPoolsFailed"), "{message}");
    assert_eq!(jobs_created(&p).len(), 1, "worker-1 starts");

    // Another node degraded too: nothing is excused.
    f.s.nodes_mut().get_mut("worker-2").map(Arc::make_mut).unwrap().mcd_state = Some("Degraded".into());
    let p = f.step();
    let message = ready_for_next(&p).2;
    assert!(!message.contains("leave out"), "{message}");
    assert!(p.status.blocked_by.iter().any(|b| b.check == "MachineConfigPools"), "{:?}", p.status.blocked_by);
}

#[test]
fn a_node_down_elsewhere_holds_the_next_node_but_the_node_in_flight_does_not() {
    let mut f = Fixture::new(3);
    health_checks(&mut f);
    f.advance_to_gating();
    // worker-0 is in flight: its drain cordons it and its reboot makes it NotReady; that holds nothing.
    let worker0 = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
    (worker0.ready, worker0.cordoned) = (false, true);
    let p = f.step();
    assert_eq!(ready_for_next(&p).0, "True", "{:?}", ready_for_next(&p));
    // A master cordoned by someone else, and a pending worker that is NotReady, hold the next node.
    f.s.nodes_mut().get_mut("master-0").map(Arc::make_mut).unwrap().cordoned = true;
    f.s.nodes_mut().get_mut("worker-2").map(Arc::make_mut).unwrap().ready = false;
    let p = f.step();
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Nodes"));
    assert_eq!(message, "node master-0 is cordoned; node worker-2 is not Ready");
    // The node in flight goes on meanwhile: a check only holds the next node.
    let worker0 = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
    (worker0.ready, worker0.cordoned) = (true, false);
    let p = finish_node(&mut f, "worker-0");
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Done));
    assert!(jobs_created(&f.step()).is_empty(), "worker-1 waits");
}

fn budget(namespace: &str, name: &str) -> BudgetView {
    BudgetView { namespace: namespace.into(), name: name.into(), selector: Some(selector("app")) }
}

#[test]
fn a_budget_at_zero_asks_where_its_pods_run_and_holds_only_the_node_it_covers() {
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    f.s.health.budgets_at_zero = Ok(vec![budget("db", "pg-pdb")]);
    f.advance_to_gating();
    // Before the pods are known, no node starts and the controller is asked to look.
    let p = f.plan();
    assert_eq!(p.asks, [Question::BudgetPods(vec!["worker-0".to_string()])]);
    assert!(jobs_created(&p).is_empty());
    // Its pod runs on worker-0, the next node: held, naming budget, pod and node.
    f.s.health.budget_pods = Some(Ok(BTreeMap::from([("db/pg-pdb".into(), vec![("pg-1".into(), "worker-0".into())])])));
    let p = f.plan();
    assert!(p.asks.is_empty());
    assert!(jobs_created(&p).is_empty());
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "PodDisruptionBudgets"));
    assert_eq!(message, "PodDisruptionBudget db/pg-pdb allows no disruption and covers pod db/pg-1 on worker-0");
    // The pod moved to worker-1: worker-0 may go.
    f.s.health.budget_pods = Some(Ok(BTreeMap::from([("db/pg-pdb".into(), vec![("pg-1".into(), "worker-1".into())])])));
    assert_eq!(jobs_created(&f.plan()), vec![("worker-0".to_string(), "gate".to_string(), 1)]);
}

#[test]
fn budgets_are_not_looked_at_while_no_slot_is_free() {
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    f.advance_to_gating();
    assert_eq!(node_phase(&f.plan(), "worker-0"), Some(NodePhase::Gating));
    f.s.health.budgets_at_zero = Ok(vec![budget("db", "pg-pdb")]);
    let p = f.step();
    assert!(p.asks.is_empty(), "worker-1 cannot start yet: no pod list is needed");
    assert_eq!(ready_for_next(&p).0, "True");
}

#[test]
fn a_soak_keeps_the_slot_until_it_passed_and_starts_again_when_the_node_is_unhealthy() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.soak_time = Some("10m".into());
    f.advance_to_gating();
    let p = finish_node(&mut f, "worker-0");
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Soaking));
    assert!(events(&p, "NodeSoaking") == 1);
    let soak_start = p.status.nodes[0].soak_started_at.clone().unwrap_or_else(|| panic!("soakStartedAt"));
    assert!(p.requeue_after.is_some_and(|r| r > Duration::from_secs(590)), "{:?}", p.requeue_after);
    let p = f.step();
    assert!(jobs_created(&p).is_empty(), "the soak holds worker-0's slot");
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Soak"));
    assert!(message.starts_with("node worker-0 soaks until "), "{message}");
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    assert_eq!(p.status.progress.as_deref(), Some("0/2"), "a soaking node is not done yet");

    // The node goes NotReady during the soak: the soak starts again once it is Ready.
    f.s.now += Duration::from_secs(300);
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().ready = false;
    let p = f.step();
    assert_eq!(events(&p, "SoakRestarted"), 1);
    assert_eq!(p.status.nodes[0].soak_started_at, None);
    assert!(ready_for_next(&p).2.contains("starts again once it is healthy: node worker-0 is not Ready"));
    f.s.now += Duration::from_secs(60);
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().ready = true;
    let p = f.step();
    let restarted = p.status.nodes[0].soak_started_at.clone().unwrap_or_else(|| panic!("soakStartedAt"));
    assert!(restarted.0 > soak_start.0 + Duration::from_secs(300), "the soak starts from when it was healthy again");

    f.s.now = restarted.0 + Duration::from_secs(600);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Done));
    assert_eq!(events(&p, "NodeUpgraded"), 1);
    assert_eq!(jobs_created(&p), vec![("worker-1".to_string(), "gate".to_string(), 1)]);
}

#[test]
fn a_rollout_with_every_check_passing_runs_to_the_end_like_one_without() {
    let mut f = Fixture::new(3);
    health_checks(&mut f);
    f.s.run_config.spec.blackout_windows = vec![BlackoutWindow {
        start: Time(at("2000-01-01T00:00:00Z")),
        end: Time(at("2000-01-02T00:00:00Z")),
        reason: None,
    }];
    let p = run_to_end(&mut f);
    assert_eq!(p.status.completed_nodes.len(), 3);
    assert_eq!(ready_for_next(&p).1, "NoNodeWaiting");
}

fn alert(name: &str, node: &str) -> crate::alerts::FiringAlert {
    let labels = BTreeMap::from([
        ("alertname".to_string(), name.to_string()),
        ("severity".to_string(), "critical".to_string()),
        ("node".to_string(), node.to_string()),
    ]);
    crate::alerts::FiringAlert { name: name.into(), labels }
}

#[test]
fn a_firing_alert_holds_the_next_node_unless_ignored_and_alertmanager_is_asked_only_when_a_node_would_start() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.health_checks =
        Some(HealthChecks { alerts: Some(crate::api::AlertsCheck::default()), ..Default::default() });
    f.advance_to_gating();
    // Before worker-0 starts, Alertmanager is asked.
    let p = f.plan();
    assert_eq!(p.asks, [Question::FiringAlerts]);
    assert!(jobs_created(&p).is_empty());
    f.s.health.alerts = Some(Ok(vec![alert("KubeNodeNotReady", "master-0")]));
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Alerts"));
    assert_eq!(message, "alert KubeNodeNotReady (node=master-0, severity=critical) fires");
    if let Some(alerts) = f.s.run_config.spec.health_checks.as_mut().and_then(|h| h.alerts.as_mut()) {
        alerts.ignore = vec!["KubeNodeNotReady".into()];
    }
    assert_eq!(jobs_created(&f.step()).len(), 1);
    // With worker-0 in flight no slot is free: Alertmanager is not asked.
    f.s.health.alerts = None;
    assert!(f.plan().asks.is_empty());
}

#[test]
fn an_alertmanager_that_cannot_be_asked_holds_the_rollout() {
    let mut f = Fixture::new(1);
    f.s.run_config.spec.health_checks =
        Some(HealthChecks { alerts: Some(crate::api::AlertsCheck::default()), ..Default::default() });
    f.s.health.alerts = Some(Err("Alertmanager at https://am:9094 cannot be queried: HTTP 403 Forbidden".into()));
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    assert!(ready_for_next(&p).2.contains("HTTP 403 Forbidden; alerts are unknown"), "{:?}", ready_for_next(&p));
}

fn storage_check() -> crate::api::CustomCheck {
    crate::api::CustomCheck {
        api_version: "ceph.rook.io/v1".into(),
        kind: "CephCluster".into(),
        namespace: Some("rook-ceph".into()),
        name: None,
        label_selector: None,
        expression: "object.status.ceph.health == 'HEALTH_OK'".into(),
        message: "Ceph is not healthy".into(),
    }
}

fn ceph(health: &str) -> serde_json::Value {
    json!({"metadata": {"name": "rook-ceph", "namespace": "rook-ceph"}, "status": {"ceph": {"health": health}}})
}

#[test]
fn a_custom_check_holds_while_its_expression_is_false_and_says_why_it_cannot_tell() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.health_checks = Some(HealthChecks { custom: vec![storage_check()], ..Default::default() });
    f.s.health.custom = vec![Ok(vec![ceph("HEALTH_WARN")])];
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "Custom"));
    assert_eq!(message, "Ceph is not healthy (CephCluster rook-ceph/rook-ceph)");

    f.s.health.custom = vec![Err("CephCluster ceph.rook.io/v1 cannot be watched: forbidden".into())];
    let message = ready_for_next(&f.step()).2;
    assert_eq!(message, "custom check 0 cannot read CephCluster ceph.rook.io/v1: CephCluster ceph.rook.io/v1 cannot be watched: forbidden");
    f.s.health.custom = vec![Ok(Vec::new())];
    let message = ready_for_next(&f.step()).2;
    assert_eq!(message, "custom check 0 selects no CephCluster ceph.rook.io/v1 object in namespace rook-ceph");
    f.s.health.custom = vec![Ok(vec![json!({"metadata": {"name": "rook-ceph", "namespace": "rook-ceph"}})])];
    let message = ready_for_next(&f.step()).2;
    assert!(
        message.starts_with("custom check 0 cannot be evaluated on CephCluster rook-ceph/rook-ceph: "),
        "{message}"
    );

    f.s.health.custom = vec![Ok(vec![ceph("HEALTH_OK")])];
    assert_eq!(jobs_created(&f.step()).len(), 1);
}

#[test]
fn a_custom_expression_that_does_not_compile_makes_the_run_config_invalid() {
    let mut f = Fixture::new(1);
    let mut check = storage_check();
    check.expression = "object.status.ceph.health ==".into();
    f.s.run_config.spec.health_checks = Some(HealthChecks { custom: vec![check], ..Default::default() });
    let p = f.plan();
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let message = p.status.message.clone().unwrap_or_default();
    assert!(message.contains("healthChecks.custom[0].expression does not compile"), "{message}");
    assert!(only_finalizer_or_nothing(&p));
}

#[test]
fn a_custom_check_may_not_read_what_numo_reads_for_its_own_work() {
    let mut f = Fixture::new(1);
    let mut check = storage_check();
    (check.api_version, check.kind) = ("machineconfiguration.openshift.io/v1".into(), "MachineConfig".into());
    f.s.run_config.spec.health_checks = Some(HealthChecks { custom: vec![check], ..Default::default() });
    let p = f.plan();
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let message = p.status.message.clone().unwrap_or_default();
    assert!(message.contains("healthChecks.custom[0]: numo reads MachineConfig"), "{message}");
}

#[test]
fn alertmanager_is_not_asked_while_a_window_holds_the_rollout() {
    let mut f = fixture_at(1, "2026-11-23T21:00:00Z");
    nightly(&mut f);
    f.s.run_config.spec.health_checks =
        Some(HealthChecks { alerts: Some(crate::api::AlertsCheck::default()), ..Default::default() });
    f.s.health.budgets_at_zero = Ok(vec![budget("db", "pg-pdb")]);
    f.advance_to_gating();
    let p = f.plan();
    assert_eq!(ready_for_next(&p).1, "MaintenanceWindow");
    assert!(p.asks.is_empty(), "nothing is asked while the window is closed");
}

#[test]
fn a_skipped_node_the_daemon_later_finishes_is_said_once_with_no_cleanup_job_run() {
    let mut f = Fixture::new(2);
    for _ in 0..20 {
        let p = f.step();
        if node_phase(&p, "worker-0") == Some(NodePhase::Upgrading) {
            break;
        }
        f.finish_jobs(JobResult::Succeeded);
    }
    // worker-0's update failed in the canary; the admin skips it.
    f.s.run_config.skip.insert("worker-0".into());
    let p = f.step();
    assert_eq!(events(&p, "SkippedNodeUpgraded"), 0);
    // The daemon's own retry finishes it later.
    f.upgrade("worker-0");
    let p = f.step();
    assert_eq!(events(&p, "SkippedNodeUpgraded"), 1, "{:?}", p.notices);
    let entry = p.status.nodes.iter().find(|e| e.name == "worker-0").expect("kept in an entry");
    assert!(entry.message.as_deref().unwrap_or_default().contains("numo ran no cleanup Job"), "{entry:?}");
    let cleanups =
        |f: &Fixture| f.s.jobs.iter().filter(|j| j.node == "worker-0" && j.phase == JobPhase::Cleanup).count();
    assert_eq!(cleanups(&f), 0);
    let p = f.step();
    assert_eq!(events(&p, "SkippedNodeUpgraded"), 0, "said once");
    assert_eq!(p.status.skipped_nodes, vec!["worker-0".to_string()]);
}

/// What the MachineConfigNodes say of `NodeDegraded`: (node, status, message) each.
fn node_degraded(f: &mut Fixture, said: &[(&str, &str, &str)]) {
    use crate::controllers::run_config::snapshot::{ConditionSaid, Watched};
    let said = said
        .iter()
        .map(|(node, status, message)| ConditionSaid {
            object: node.to_string(),
            status: status.to_string(),
            reason: "UpdateFailed".into(),
            message: message.to_string(),
        })
        .collect();
    f.s.health.conditions = vec![((Watched::MachineConfigNode, "NodeDegraded"), Ok(said))];
}

#[test]
fn a_machine_config_node_that_says_its_node_is_degraded_holds_the_next_node_when_its_check_is_on() {
    let said = [
        ("worker-1", "False", "Node worker-1 upgrade succeeded"),
        ("master-0", "True", "Node master-0 upgrade failure. disk full"),
    ];
    // Off unless present.
    let mut f = Fixture::new(3);
    health_checks(&mut f);
    node_degraded(&mut f, &said);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating), "{:?}", ready_for_next(&p));

    let mut f = Fixture::new(3);
    health_checks(&mut f);
    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.machine_config_nodes = Some(Default::default());
    }
    node_degraded(&mut f, &said);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), None, "worker-0 waits");
    let (status, reason, message) = ready_for_next(&p);
    assert_eq!((status.as_str(), reason.as_str()), ("False", "MachineConfigNodes"));
    assert_eq!(message, "MachineConfigNode master-0 is NodeDegraded: Node master-0 upgrade failure. disk full");

    // A node an admin skipped is left out, and the status says so.
    f.s.run_config.skip.insert("master-0".into());
    let p = f.step();
    let (status, _, message) = ready_for_next(&p);
    assert_eq!(status, "True", "{message}");
    let left_out = "MachineConfigNode master-0 is NodeDegraded (Node master-0 upgrade failure. disk full)";
    assert!(message.contains(left_out), "{message}");
    assert_eq!(jobs_created(&p).len(), 1);
}

#[test]
fn machine_config_nodes_that_cannot_be_read_hold_saying_why_and_switched_off_hold_nothing() {
    use crate::controllers::run_config::snapshot::Watched;
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.machine_config_nodes = Some(Default::default());
    }
    let unread = Err("the server could not find the requested resource".to_string());
    f.s.health.conditions = vec![((Watched::MachineConfigNode, "NodeDegraded"), unread)];
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (_, reason, message) = ready_for_next(&p);
    assert_eq!(reason, "MachineConfigNodes");
    assert!(message.contains("MachineConfigNodes cannot be read (OpenShift serves them from 4.20)"), "{message}");
    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.machine_config_nodes = Some(crate::api::BuiltInCheck { enabled: false });
    }
    assert_eq!(jobs_created(&f.step()).len(), 1, "switched off, it holds nothing");
}

#[test]
fn a_machine_config_node_numo_cannot_decode_holds_the_next_node_saying_why() {
    use crate::controllers::run_config::snapshot::{ConditionSaid, Watched, CANNOT_BE_READ};
    let mut f = Fixture::new(2);
    health_checks(&mut f);
    if let Some(checks) = &mut f.s.run_config.spec.health_checks {
        checks.machine_config_nodes = Some(Default::default());
    }
    let unread = ConditionSaid {
        object: "worker-1".into(),
        status: "Unknown".into(),
        reason: CANNOT_BE_READ.into(),
        message: "status.conditions: invalid type: string \"x\", expected a sequence".into(),
    };
    f.s.health.conditions = vec![((Watched::MachineConfigNode, "NodeDegraded"), Ok(vec![unread]))];
    f.advance_to_gating();
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    let (_, reason, message) = ready_for_next(&p);
    assert_eq!(reason, "MachineConfigNodes");
    assert!(message.starts_with("MachineConfigNode worker-1 cannot be read: status.conditions"), "{message}");
}
