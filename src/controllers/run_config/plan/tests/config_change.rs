//! Trigger `AnyConfigChange`: target pools held paused for as long as the run config exists, every change of their
//! rendered config gated node by node, judged by content, and the rename that lets a paused pool report Updated.

use super::*;
use crate::api::check;
use crate::api::Trigger;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const C: &str = "cccccccccccccccccccccccccccccccc";

fn rendered(pool: &str, hash: &str) -> String {
    format!("rendered-{pool}-{hash}")
}

/// `workers` workers at 4.16.5 on the worker pool's config A; the canary renders A too; trigger AnyConfigChange.
fn fixture(workers: usize) -> Fixture {
    let mut f = Fixture::new(workers);
    f.s.run_config.spec.trigger = Trigger::AnyConfigChange;
    f.s.pools.get_mut("worker").unwrap().configuration = Some(rendered("worker", A));
    f.s.pools.get_mut("canary").unwrap().configuration = Some(rendered("canary", A));
    for node in f.s.nodes_mut().values_mut().map(Arc::make_mut).filter(|n| n.name.starts_with("worker")) {
        node.version = Some(NEW.into());
        node.current_config = Some(rendered("worker", A));
        node.desired_config = Some(rendered("worker", A));
        node.mcd_state = Some("Done".into());
    }
    f
}

/// A MachineConfig for the worker role: both pools render new content `hash`.
fn render(f: &mut Fixture, hash: &str, canary_too: bool) {
    f.s.pools.get_mut("worker").unwrap().configuration = Some(rendered("worker", hash));
    if canary_too {
        f.s.pools.get_mut("canary").unwrap().configuration = Some(rendered("canary", hash));
    }
}

/// What the MCO does between reconciles: each worker is in the pool the MCO's membership rule gives it by the
/// pools' current selectors (a node numo marked released is in the steered canary), and an unpaused pool moves its
/// nodes to its own config.
fn mco(f: &mut Fixture) {
    let pools = f.s.pools.clone();
    let worker = f.s.pools["worker"].clone();
    let selectors: Vec<crate::membership::PoolSelector<'_>> = pools
        .values()
        .map(|p| crate::membership::PoolSelector { name: &p.name, node_selector: p.node_selector.as_ref() })
        .collect();
    for node in f.s.nodes_mut().values_mut().map(Arc::make_mut).filter(|n| n.name.starts_with("worker")) {
        let Ok(Some(name)) = crate::membership::pool_of(&node.labels, &selectors) else { continue };
        let pool = &pools[name];
        if pool.paused {
            continue;
        }
        let config = pool.configuration.clone();
        if node.current_config != config {
            node.current_config = config.clone();
            node.desired_config = config;
            node.mcd_state = Some("Done".into());
        }
    }
    let updated =
        f.s.nodes.values().filter(|n| n.name.starts_with("worker")).all(|n| n.current_config == worker.configuration);
    f.s.pools.get_mut("worker").unwrap().updated = updated;
}

/// Steps with Jobs succeeding and the MCO acting until the run config is Completed; returns every plan.
fn run(f: &mut Fixture) -> Vec<Plan> {
    let mut plans = Vec::new();
    for _ in 0..80 {
        f.finish_jobs(JobResult::Succeeded);
        mco(f);
        let p = f.step();
        let done = p.status.phase == Some(RunPhase::Completed) && p.intents.is_empty();
        plans.push(p);
        if done {
            return plans;
        }
    }
    panic!("the config rollout did not complete: {:?}", f.s.run_config.status);
}

fn created(plans: &[Plan]) -> Vec<(String, String, u32)> {
    plans.iter().flat_map(jobs_created).collect()
}

#[test]
fn the_target_pools_are_held_paused_even_with_nothing_to_roll_and_the_canary_is_left_alone() {
    let mut f = fixture(2);
    let p = f.step();
    let claimed: Vec<&str> = p
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::ClaimPool { pool, spec, .. } => Some((pool.as_str(), spec.paused)),
            _ => None,
        })
        .map(|(pool, paused)| {
            assert!(paused, "{pool} is claimed paused");
            pool
        })
        .collect();
    assert_eq!(claimed, ["worker"]);
    let p = f.step();
    assert!(p.intents.is_empty(), "nothing else changes: {:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Idle));
    let paused = condition(&p, condition::TARGET_POOLS_PAUSED);
    assert_eq!((paused.status.as_str(), paused.reason.as_str()), ("True", "HeldForConfigChanges"));
    assert_eq!(condition(&p, condition::UPGRADE_AVAILABLE).status, "False");
}

#[test]
fn a_new_rendered_config_gates_every_target_node_one_by_one_and_the_pools_end_paused_as_they_were() {
    let mut f = fixture(3);
    f.step();
    f.step();
    render(&mut f, B, true);
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Pausing));
    assert!(p.notices.iter().any(|n| n.reason == "ConfigChangeDetected"), "{:?}", p.notices);
    let config = p.status.target_config.clone().expect("targetConfig");
    assert!(config.rollout.starts_with("4.16.5-"), "{}", config.rollout);
    assert_eq!(
        config.pools,
        vec![crate::api::PoolConfig { pool: "worker".into(), rendered_config: rendered("worker", B) }]
    );
    assert!(p.intents.iter().any(|i| matches!(i, Intent::ClaimPool { pool, .. } if pool == "canary")));

    let plans = run(&mut f);
    // One gate and one cleanup Job per node, never two nodes at once, in order.
    let jobs = created(&plans);
    let expected: Vec<(String, String, u32)> = (0..3)
        .flat_map(|i| {
            [(format!("worker-{i}"), "gate".to_string(), 1), (format!("worker-{i}"), "cleanup".to_string(), 1)]
        })
        .collect();
    assert_eq!(jobs, expected);
    for job in &f.s.jobs {
        assert_eq!(job.target_version, config.rollout, "the Jobs belong to the rollout");
    }
    // Each gate Job tells the node's target config.
    let gate = plans
        .iter()
        .flat_map(|p| &p.intents)
        .find_map(|i| match i {
            Intent::CreateJob(job) => Some(job.clone()),
            _ => None,
        })
        .unwrap();
    let env = gate.spec.unwrap().template.spec.unwrap().containers[0].env.clone().unwrap();
    assert!(env
        .iter()
        .any(|e| e.name == "TARGET_CONFIG" && e.value.as_deref() == Some(rendered("worker", B).as_str())));
    // Every node runs B's content; the worker pool is back as recorded but paused, the canary restored.
    for node in f.s.nodes.values().filter(|n| n.name.starts_with("worker")) {
        assert_eq!(node.current_config.as_deref().map(crate::openshift::config_content), Some(B));
        assert!(node.labels.keys().all(|k| !k.starts_with(RULE_LABEL_PREFIX)), "{node:?}");
    }
    let worker = &f.s.pools["worker"];
    assert!(worker.paused);
    assert_eq!(worker.owner(), Some(ME));
    assert_eq!(worker.node_selector, Some(selector("node-role.kubernetes.io/worker")));
    let canary = &f.s.pools["canary"];
    assert_eq!((canary.paused, canary.owner()), (false, None));
    assert_eq!(canary.node_selector, Some(canary_selector()));
    let last = plans.last().unwrap();
    assert_eq!(last.status.completed_nodes.len(), 3);
    assert!(last.notices.is_empty() || plans.iter().any(|p| p.notices.iter().any(|n| n.reason == "RolloutCompleted")));
}

#[test]
fn released_nodes_that_reached_their_config_are_held_again_so_the_canary_never_rolls_a_later_change_to_them() {
    let mut f = fixture(2);
    f.step();
    f.step();
    render(&mut f, B, true);
    let label = crate::labels::rule_label("first", "ops");
    for _ in 0..30 {
        f.finish_jobs(JobResult::Succeeded);
        mco(&mut f);
        let p = f.step();
        if node_phase(&p, "worker-0") == Some(NodePhase::Done) {
            break;
        }
    }
    assert!(f.s.nodes["worker-0"].labels.contains_key(&label), "worker-0 is back in its paused pool");
    // A second MachineConfig now: worker-1, not started, gets it in this rollout; worker-0 does not move.
    render(&mut f, C, true);
    let plans = run(&mut f);
    assert_eq!(f.s.nodes["worker-1"].current_config.as_deref().map(crate::openshift::config_content), Some(C));
    // worker-0 went through the gate again, in a rollout of its own, with Jobs of other names.
    let names: Vec<&String> = f.s.jobs.iter().map(|j| &j.name).collect();
    let unique: BTreeSet<&String> = names.iter().copied().collect();
    assert_eq!(names.len(), unique.len(), "no Job name twice");
    let worker0_gates = f.s.jobs.iter().filter(|j| j.node == "worker-0" && j.phase == JobPhase::Gate).count();
    assert_eq!(worker0_gates, 2, "once per change it received");
    let worker1_gates = f.s.jobs.iter().filter(|j| j.node == "worker-1" && j.phase == JobPhase::Gate).count();
    assert_eq!(worker1_gates, 1, "both changes in one pass");
    assert_eq!(f.s.nodes["worker-0"].current_config.as_deref().map(crate::openshift::config_content), Some(C));
    assert!(plans.iter().filter(|p| p.notices.iter().any(|n| n.reason == "ConfigChangeDetected")).count() >= 1);
}

#[test]
fn a_change_the_canary_does_not_render_holds_the_next_node_and_says_why() {
    let mut f = fixture(2);
    f.step();
    f.step();
    render(&mut f, B, false);
    for _ in 0..6 {
        let p = f.step();
        assert!(jobs_created(&p).is_empty(), "no gate Job: the canary would not bring B");
    }
    let p = f.step();
    let blocker = p.status.blocked_by.iter().find(|b| b.check == check::CANARY_CONFIG).expect("CanaryConfig blocker");
    assert!(blocker.message.contains("rendered-canary-"), "{}", blocker.message);
    assert!(blocker.message.contains(&rendered("worker", B)), "{}", blocker.message);
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    // Once the canary renders the same content, the node starts.
    render(&mut f, B, true);
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 1)]);
}

#[test]
fn a_pool_whose_nodes_run_its_content_under_the_canarys_name_is_unpaused_until_updated_then_paused_again() {
    let mut f = fixture(2);
    f.step();
    f.step();
    // After a rollout the nodes run the canary's rendered config with the worker pool's content.
    for node in f.s.nodes_mut().values_mut().map(Arc::make_mut).filter(|n| n.name.starts_with("worker")) {
        node.current_config = Some(rendered("canary", A));
        node.desired_config = Some(rendered("canary", A));
    }
    f.s.pools.get_mut("worker").unwrap().updated = false;
    // Not while the MCO has a render to do: it could roll that config through the unpaused pool.
    f.s.pools.get_mut("worker").unwrap().render_pending = true;
    let p = f.step();
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { spec, .. } if !spec.paused)), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Restoring), "the pool still has to be renamed");
    f.s.pools.get_mut("worker").unwrap().render_pending = false;
    let p = f.step();
    let unpause =
        p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, spec, .. } if pool == "worker" && !spec.paused));
    assert!(unpause, "{:?}", p.intents);
    assert!(p.status.message.as_deref().unwrap_or_default().contains("no reboot"), "{:?}", p.status.message);
    // The MCO renames; the pool reports Updated; numo pauses it again.
    mco(&mut f);
    assert!(f.s.pools["worker"].updated);
    let p = f.step();
    let pause =
        p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, spec, .. } if pool == "worker" && spec.paused));
    assert!(pause, "{:?}", p.intents);
    // A node with other content is never renamed: it needs the gate.
    let mut f = fixture(2);
    f.step();
    f.step();
    f.s.nodes_mut().get_mut("worker-1").map(Arc::make_mut).unwrap().current_config = Some(rendered("canary", B));
    f.s.pools.get_mut("worker").unwrap().updated = false;
    let p = f.step();
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { spec, .. } if !spec.paused)), "{:?}", p.intents);
}

#[test]
fn an_upgrade_under_any_config_change_is_gated_after_the_control_plane_like_under_upgrade() {
    let mut f = fixture(2);
    f.step();
    f.step();
    f.s.cluster = Some(ClusterView { target_version: Some("4.17.0".into()), control_plane_completed: false });
    for _ in 0..5 {
        let p = f.step();
        assert!(jobs_created(&p).is_empty(), "no node before the control plane finished");
    }
    assert_eq!(f.s.run_config.status.target_version.as_deref(), Some("4.17.0"));
    assert!(f.s.pools["worker"].paused);
    // The control plane finishes, the MCO renders the new release for both pools; nodes report it once updated.
    f.s.cluster = Some(ClusterView { target_version: Some("4.17.0".into()), control_plane_completed: true });
    render(&mut f, B, true);
    for _ in 0..80 {
        f.finish_jobs(JobResult::Succeeded);
        mco(&mut f);
        for node in f.s.nodes_mut().values_mut().map(Arc::make_mut).filter(|n| n.name.starts_with("worker")) {
            if node.current_config.as_deref().map(crate::openshift::config_content) == Some(B) {
                node.version = Some("4.17.0".into());
            }
        }
        let p = f.step();
        if p.status.phase == Some(RunPhase::Completed) && p.intents.is_empty() {
            break;
        }
    }
    let gates = f.s.jobs.iter().filter(|j| j.phase == JobPhase::Gate).count();
    assert_eq!(gates, 2, "each node gated once");
    assert!(f
        .s
        .nodes
        .values()
        .filter(|n| n.name.starts_with("worker"))
        .all(|n| n.version.as_deref() == Some("4.17.0")));
    assert_eq!(f.s.run_config.status.phase, Some(RunPhase::Completed));
}

#[test]
fn a_restart_mid_rollout_resumes_the_same_rollout_with_no_job_twice() {
    let mut f = fixture(2);
    f.step();
    f.step();
    render(&mut f, B, true);
    for _ in 0..6 {
        f.finish_jobs(JobResult::Succeeded);
        mco(&mut f);
        f.step();
    }
    let key = f.s.run_config.status.target_config.clone().unwrap().rollout;
    // A restarted numo plans from the status and Jobs in the cluster, later.
    f.s.now += Duration::from_secs(3600);
    let p = f.plan();
    assert_eq!(p.status.target_config.as_ref().map(|t| t.rollout.as_str()), Some(key.as_str()));
    run(&mut f);
    let names: Vec<&String> = f.s.jobs.iter().map(|j| &j.name).collect();
    let unique: BTreeSet<&String> = names.iter().copied().collect();
    assert_eq!(names.len(), unique.len());
    assert_eq!(f.s.jobs.iter().filter(|j| j.phase == JobPhase::Gate).count(), 2);
}

#[test]
fn a_config_change_held_longer_than_overdue_after_says_so_once() {
    let mut f = fixture(2);
    f.s.run_config.spec.paused = true;
    f.step();
    f.step();
    render(&mut f, B, true);
    for _ in 0..5 {
        f.step();
    }
    let p = f.step();
    assert_eq!(condition(&p, condition::CONFIG_CHANGE_OVERDUE).status, "False");
    assert!(jobs_created(&p).is_empty(), "paused: nothing starts");
    // numo looks again when the change becomes overdue, whatever else happens.
    let wake = p.requeue_after.expect("a requeue at the overdue instant");
    assert!(wake <= Duration::from_secs(24 * 3600) && wake > Duration::from_secs(23 * 3600), "{wake:?}");
    f.s.now += Duration::from_secs(25 * 3600);
    let p = f.step();
    let overdue = condition(&p, condition::CONFIG_CHANGE_OVERDUE);
    assert_eq!(overdue.status, "True");
    assert!(overdue.message.contains(&rendered("worker", B)), "{}", overdue.message);
    assert_eq!(p.notices.iter().filter(|n| n.reason == "ConfigChangeOverdue").count(), 1);
    let p = f.step();
    assert!(!p.notices.iter().any(|n| n.reason == "ConfigChangeOverdue"), "said once");
    // Under trigger Upgrade nothing is ever overdue.
    let mut f = Fixture::new(2);
    f.s.now += Duration::from_secs(48 * 3600);
    let p = f.step();
    assert_eq!(condition(&p, condition::CONFIG_CHANGE_OVERDUE).status, "False");
}

#[test]
fn switching_to_any_config_change_mid_upgrade_goes_on_with_the_upgrade_and_runs_no_job_twice() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating));
    let before = f.s.jobs.len();
    f.s.run_config.spec.trigger = Trigger::AnyConfigChange;
    for node in f.s.nodes_mut().values_mut().map(Arc::make_mut) {
        node.mcd_state = Some("Done".into());
    }
    let p = f.step();
    assert_eq!(p.status.target_config.as_ref().map(|t| t.rollout.as_str()), Some(NEW), "the upgrade's rollout");
    assert_eq!(f.s.jobs.len(), before, "no Job created again");
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating));
}

#[test]
fn a_released_node_whose_config_the_canary_no_longer_renders_says_so_once() {
    let mut f = fixture(2);
    f.step();
    f.step();
    render(&mut f, B, true);
    // Gate worker-0 and release it, but let the MCO not act yet.
    for _ in 0..8 {
        f.finish_jobs(JobResult::Succeeded);
        let p = f.step();
        if node_phase(&p, "worker-0") == Some(NodePhase::Upgrading) {
            break;
        }
    }
    assert_eq!(node_phase(&f.plan(), "worker-0"), Some(NodePhase::Upgrading));
    // A MachineConfig the canary does not select re-renders only the worker pool.
    render(&mut f, C, false);
    let p = f.step();
    let entry = p.status.nodes.iter().find(|e| e.name == "worker-0").unwrap();
    let message = entry.message.clone().unwrap_or_default();
    assert!(message.contains(&rendered("worker", C)) && message.contains("canary"), "{message}");
    assert_eq!(p.notices.iter().filter(|n| n.reason == "ConfigUnreachable").count(), 1);
    let p = f.step();
    assert!(!p.notices.iter().any(|n| n.reason == "ConfigUnreachable"), "said once");
    // The canary catches up: the node gets there and goes on.
    render(&mut f, C, true);
    let plans = run(&mut f);
    assert!(plans.iter().all(|p| !p.notices.iter().any(|n| n.reason == "ConfigUnreachable")));
    assert_eq!(f.s.nodes["worker-0"].current_config.as_deref().map(crate::openshift::config_content), Some(C));
}
