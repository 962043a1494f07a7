//! Custom target pools with configs of their own: the canary renders the config of the pool whose nodes it takes,
//! a node of another content waits until the canary is empty, a finished node goes home at once (a rename), and no
//! write order puts a node in two custom pools or in none.

use super::*;
use crate::api::check;

const WORKER: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const INFRA: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
/// What the canary renders from a pool's MachineConfigs on another OS image stream than that pool's.
const OTHER_STREAM: &str = "cccccccccccccccccccccccccccccccc";
const ROLE: &str = "machineconfiguration.openshift.io/role";

fn roles(values: &[&str]) -> LabelSelector {
    LabelSelector {
        match_labels: None,
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: ROLE.into(),
            operator: "In".into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }]),
    }
}

fn role(value: &str) -> LabelSelector {
    LabelSelector { match_labels: Some(BTreeMap::from([(ROLE.to_string(), value.to_string())])), ..Default::default() }
}

/// `workers` workers and `infra` infra nodes (labelled worker too, as OpenShift's infra nodes are), both pools
/// targeted; infra's MachineConfigs (kernel arguments) give it content of its own; the reference's canary selects
/// `role: worker`.
fn fixture(workers: usize, infra: usize) -> Fixture {
    let mut f = Fixture::new(workers);
    let mut infra_pool = pool("infra", selector("node-role.kubernetes.io/infra"));
    infra_pool.machine_config_selector = Some(roles(&["worker", "infra"]));
    infra_pool.configuration = Some(format!("rendered-infra-{INFRA}"));
    f.s.pools.insert("infra".into(), infra_pool);
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.machine_config_selector = Some(role("worker"));
    worker.configuration = Some(format!("rendered-worker-{WORKER}"));
    let canary = f.s.pools.get_mut("canary").unwrap();
    canary.machine_config_selector = Some(role("worker"));
    canary.configuration = Some(format!("rendered-canary-{WORKER}"));
    for i in 0..infra {
        let name = format!("infra-{i}");
        f.s.nodes_mut().insert(name.clone(), ready_node(&name, &["worker", "infra"], OLD));
    }
    f.s.targets[0].found = Some(Ok(vec!["worker".into(), "infra".into()]));
    f
}

/// The machine-config operator's render of the canary: the content of the MachineConfigs its selector selects now
/// (those of `worker` or of `infra`, here told apart by the pools' selectors).
fn render_canary(f: &mut Fixture) {
    let selects = f.s.pools["canary"].machine_config_selector.clone();
    let like = if selects == f.s.pools["infra"].machine_config_selector { "infra" } else { "worker" };
    // The OS image is part of the content: on another stream than that pool's, the content is the canary's own.
    let same_stream = f.s.pools["canary"].effective_os_image_stream == f.s.pools[like].effective_os_image_stream;
    let content = match (like, same_stream) {
        (_, false) => OTHER_STREAM,
        ("infra", true) => INFRA,
        _ => WORKER,
    };
    f.s.pools.get_mut("canary").unwrap().configuration = Some(format!("rendered-canary-{content}"));
}

fn home_content(node: &str) -> &'static str {
    if node.starts_with("infra") {
        INFRA
    } else {
        WORKER
    }
}

fn marked(f: &Fixture) -> Vec<String> {
    f.s.nodes.values().filter(|n| n.labels.contains_key(crate::labels::RELEASED)).map(|n| n.name.clone()).collect()
}

/// Runs the rollout to its end; at every release, checks that the canary renders the released node's own pool's
/// content and that the canary never holds nodes of two contents. Returns every plan.
fn run(f: &mut Fixture) -> Vec<Plan> {
    let mut plans = Vec::new();
    for _ in 0..300 {
        render_canary(f);
        let p = f.plan();
        for intent in &p.intents {
            if let Intent::ReleaseNode { node, .. } = intent {
                let home = if node.starts_with("infra") { "infra" } else { "worker" };
                let (canary, own) = (&f.s.pools["canary"], &f.s.pools[home]);
                assert_eq!(
                    canary.effective_os_image_stream, own.effective_os_image_stream,
                    "{node} released into a canary on another OS image stream"
                );
                let offered = f.s.pools["canary"].configuration.clone().unwrap_or_default();
                assert_eq!(
                    crate::openshift::config_content(&offered),
                    home_content(node),
                    "{node} released into a canary rendering {offered}"
                );
            }
        }
        f.absorb(&p);
        let contents: BTreeSet<&str> = marked(f).iter().map(|n| home_content(n)).collect();
        assert!(contents.len() <= 1, "the canary holds nodes of two pools' contents: {:?}", marked(f));
        let phase = p.status.phase;
        plans.push(p);
        if phase == Some(RunPhase::Completed) {
            return plans;
        }
        if phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.answer();
    }
    panic!("the rollout did not complete: {:?}", f.s.run_config.status);
}

#[test]
fn a_custom_pools_nodes_run_their_own_config_in_the_canary_and_go_home_when_done() {
    let mut f = fixture(2, 2);
    let plans = run(&mut f);
    let completed = plans.last().unwrap();
    assert_eq!(completed.status.progress.as_deref(), Some("4/4"));
    // The canary served worker's config, then infra's, then was put back as it was.
    let steered: Vec<Option<LabelSelector>> = plans
        .iter()
        .flat_map(|p| &p.intents)
        .filter_map(|i| match i {
            Intent::SteerPool { pool, spec, .. } if pool == "canary" => spec.machine_config_selector.clone(),
            _ => None,
        })
        .map(Some)
        .collect();
    assert_eq!(steered, vec![Some(roles(&["worker", "infra"]))], "the canary was pointed at infra's configs once");
    assert_eq!(f.s.pools["canary"].machine_config_selector, Some(role("worker")), "the canary's own selector is back");
    // Every node went home as soon as it reached its target, before its cleanup Jobs (the last one in the plan
    // that restores, before the restore).
    let unmarked = |p: &Plan, node: &str| {
        p.intents.iter().position(|i| {
            matches!(i, Intent::UnlabelNode { node: n, labels }
            if n == node && labels.iter().any(|l| l == crate::labels::RELEASED))
        })
    };
    let cleanup_created =
        |p: &Plan, node: &str| jobs_created(p).iter().any(|(n, phase, _)| n == node && phase == "cleanup");
    for node in ["worker-0", "worker-1", "infra-0"] {
        let home = plans.iter().position(|p| unmarked(p, node).is_some()).expect("went home");
        let phase = node_phase(&plans[home], node);
        assert!(
            matches!(phase, Some(NodePhase::CleaningUp | NodePhase::Done)),
            "{node} went home at its target: {phase:?}"
        );
        assert!(!plans[..=home].iter().any(|p| cleanup_created(p, node)), "{node} went home before its cleanup");
        assert_ne!(plans[home].status.phase, Some(RunPhase::Restoring), "{node} went home before the restore");
    }
    let restoring = plans.iter().position(|p| p.status.phase == Some(RunPhase::Restoring)).expect("a restore");
    let last_home = plans.iter().position(|p| unmarked(p, "infra-1").is_some());
    assert!(last_home.is_some_and(|home| home < restoring), "the last node went home before the restore");
    assert!(marked(&f).is_empty());
}

#[test]
fn a_node_of_another_config_waits_for_the_canary_to_empty_and_to_render_its_config() {
    let mut f = fixture(1, 1);
    f.s.run_config.spec.concurrency = 2;
    let mut waited = None;
    let mut held_for_render = None;
    for _ in 0..100 {
        // The machine-config operator renders the canary between reconciles: the plan that points the canary at
        // infra's MachineConfigs still sees it render worker's.
        render_canary(&mut f);
        let p = f.step();
        let infra = node_phase(&p, "infra-0").or(Some(NodePhase::Pending));
        let worker = node_phase(&p, "worker-0").or(Some(NodePhase::Pending));
        if worker.is_some_and(|w| w != NodePhase::Done && w != NodePhase::Pending) {
            assert_eq!(infra, Some(NodePhase::Pending), "infra-0 started while worker-0 is in the canary");
            if let Some(b) = p.status.blocked_by.iter().find(|b| b.check == check::CANARY_CONFIG) {
                waited = Some(b.message.clone());
            }
        }
        if let Some(b) = p.status.blocked_by.iter().find(|b| b.message.contains("numo pointed the canary")) {
            held_for_render = Some(b.message.clone());
        }
        if infra.is_some_and(|p| p != NodePhase::Pending) {
            break;
        }
        f.answer();
    }
    let waited = waited.expect("infra-0 waited with a CanaryConfig blocker");
    assert!(waited.contains("serves the config of MachineConfigPool worker"), "{waited}");
    assert!(waited.contains("node infra-0 of MachineConfigPool infra"), "{waited}");
    let held = held_for_render.expect("infra-0 waited for the canary's render");
    assert!(held.contains("MachineConfigPool infra"), "{held}");
    assert_eq!(
        crate::openshift::config_content(f.s.pools["canary"].configuration.as_deref().unwrap_or_default()),
        INFRA,
        "infra-0 started once the canary rendered infra's content"
    );
}

#[test]
fn marks_go_before_the_pools_are_restored_so_no_node_is_in_two_custom_pools() {
    // Deleting the run config while infra-0 is in the canary.
    let mut f = fixture(0, 2);
    for _ in 0..20 {
        render_canary(&mut f);
        f.step();
        if marked(&f).contains(&"infra-0".to_string()) {
            break;
        }
        f.finish_jobs(JobResult::Succeeded);
    }
    assert_eq!(marked(&f), vec!["infra-0".to_string()], "infra-0 is in the canary");
    f.s.run_config.deleting = true;
    let p = f.plan();
    let unmark = position(&p, |i| {
        matches!(i, Intent::UnlabelNode { node, labels }
        if node == "infra-0" && labels.iter().any(|l| l == crate::labels::RELEASED))
    });
    let first_restore = position(&p, |i| matches!(i, Intent::RestorePool { .. }));
    assert!(unmark.is_some() && unmark < first_restore, "{:?}", p.intents);
    assert!(first_restore.is_some());
    // Restored, the canary selects its own MachineConfigs again.
    f.absorb(&p);
    assert_eq!(f.s.pools["canary"].machine_config_selector, Some(role("worker")));
}

/// Runs `f` until numo claims the canary, takes out of the claim's record what `forget` removes (as an earlier numo
/// recorded less), and plans a few rounds more; returns the last plan.
fn after_an_older_claim(f: &mut Fixture, forget: impl FnOnce(&mut PoolOriginal)) -> Plan {
    while f.s.pools["canary"].owner().is_none() {
        f.step();
    }
    if let ClaimAnnotations::Claimed(claim) = &mut f.s.pools.get_mut("canary").unwrap().claim {
        if let Ok(original) = &mut claim.original {
            forget(original);
        }
    }
    let mut p = f.step();
    for _ in 0..5 {
        render_canary(f);
        p = f.step();
    }
    p
}

#[test]
fn a_canary_claimed_without_its_selector_on_record_is_left_as_it_is_and_holds_the_other_pools_nodes() {
    let mut f = fixture(0, 1);
    // A claim an earlier numo made records no machineConfigSelector.
    let p = after_an_older_claim(&mut f, |original| original.machine_config_selector = None);
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, spec, .. }
        if pool == "canary" && spec.machine_config_selector.is_some())));
    let blocker = p.status.blocked_by.iter().find(|b| b.check == check::CANARY_CONFIG).expect("held");
    assert!(blocker.message.contains("Make the canary select exactly"), "{}", blocker.message);
    assert_eq!(node_phase(&p, "infra-0"), None, "infra-0 has not started");
}

#[test]
fn another_hand_that_changes_the_canarys_selector_under_a_released_node_is_put_back_and_named() {
    let mut f = fixture(0, 1);
    for _ in 0..20 {
        render_canary(&mut f);
        f.step();
        f.finish_jobs(JobResult::Succeeded);
        if marked(&f).contains(&"infra-0".to_string()) {
            break;
        }
    }
    assert_eq!(f.s.pools["canary"].machine_config_selector, Some(roles(&["worker", "infra"])));
    // A GitOps controller puts the canary back as git has it while infra-0 is in it.
    f.s.pools.get_mut("canary").unwrap().machine_config_selector = Some(role("worker"));
    let p = f.step();
    let put_back = p.intents.iter().find_map(|i| match i {
        Intent::PutBackPool { pool, put_back, .. } if pool == "canary" => put_back.machine_config_selector.clone(),
        _ => None,
    });
    assert_eq!(put_back, Some(roles(&["worker", "infra"])));
    let change = p.status.foreign_changes.iter().find(|c| c.field == "spec.machineConfigSelector").expect("recorded");
    assert_eq!(change.object, "MachineConfigPool/canary");
    assert_eq!(f.s.pools["canary"].machine_config_selector, Some(roles(&["worker", "infra"])));
}

#[test]
fn a_pool_that_renders_the_new_release_a_moment_after_the_canary_holds_nothing_when_both_select_the_same_configs() {
    let mut f = fixture(1, 0);
    for pool in ["worker", "canary"] {
        f.s.pools.get_mut(pool).unwrap().sources = vec!["00-worker".into(), "99-worker-ssh".into()];
    }
    // The canary rendered the new release; the paused worker pool still names the old one.
    f.s.pools.get_mut("canary").unwrap().configuration = Some(format!("rendered-canary-{INFRA}"));
    for _ in 0..6 {
        f.step();
    }
    let p = f.step();
    assert!(p.status.blocked_by.iter().all(|b| b.check != check::CANARY_CONFIG), "{:?}", p.status.blocked_by);
    assert!(f.s.jobs.iter().any(|j| j.node == "worker-0"), "worker-0 started");
    // Another MachineConfig in the canary's sources: held.
    let mut f = fixture(1, 0);
    f.s.pools.get_mut("worker").unwrap().sources = vec!["00-worker".into()];
    f.s.pools.get_mut("canary").unwrap().sources = vec!["00-worker".into(), "50-canary-only".into()];
    f.s.pools.get_mut("canary").unwrap().configuration = Some(format!("rendered-canary-{INFRA}"));
    for _ in 0..6 {
        f.step();
    }
    let p = f.step();
    assert!(p.status.blocked_by.iter().any(|b| b.check == check::CANARY_CONFIG), "{:?}", p.status.blocked_by);
}

fn position(p: &Plan, wanted: impl Fn(&Intent) -> bool) -> Option<usize> {
    p.intents.iter().position(wanted)
}

#[test]
fn the_canary_boots_the_os_image_stream_of_the_pool_it_serves_and_its_own_again_at_the_end() {
    let mut f = fixture(2, 2);
    // infra was moved to a stream of its own; worker and the canary boot the default one.
    f.s.pools.get_mut("infra").unwrap().os_image_stream = Some("rhel-10".into());
    f.s.pools.get_mut("infra").unwrap().effective_os_image_stream = Some("rhel-10".into());
    let plans = run(&mut f);
    assert_eq!(plans.last().unwrap().status.progress.as_deref(), Some("4/4"));
    let streams: Vec<Option<String>> = plans
        .iter()
        .flat_map(|p| &p.intents)
        .filter_map(|i| match i {
            Intent::SteerPool { pool, spec, .. } if pool == "canary" => spec.os_image_stream.clone(),
            Intent::RestorePool { pool, spec, .. } if pool == "canary" => spec.os_image_stream.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(streams, vec![Some("rhel-10".to_string()), None], "pointed at infra's stream, then back to none");
    assert_eq!(f.s.pools["canary"].os_image_stream, None);
}

#[test]
fn a_canary_claimed_without_its_stream_on_record_is_left_as_it_is_and_holds_nodes_of_another_stream() {
    let mut f = fixture(0, 1);
    f.s.pools.get_mut("infra").unwrap().os_image_stream = Some("rhel-10".into());
    f.s.pools.get_mut("infra").unwrap().effective_os_image_stream = Some("rhel-10".into());
    // A claim an earlier numo made records no osImageStream.
    let p = after_an_older_claim(&mut f, |original| original.os_image_stream = None);
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, spec, .. }
        if pool == "canary" && spec.os_image_stream.is_some())));
    let blocker = p.status.blocked_by.iter().find(|b| b.check == check::CANARY_CONFIG);
    let blocker = blocker.unwrap_or_else(|| panic!("held: {:?} {:?}", p.status.blocked_by, f.s.pools["canary"]));
    assert!(blocker.message.contains("boots OS image stream the default"), "{}", blocker.message);
    assert!(blocker.message.contains("set the canary's spec.osImageStream"), "{}", blocker.message);
    assert_eq!(node_phase(&p, "infra-0"), None, "infra-0 has not started");
}
