//! The nodes a plan sets apart (`untouched`): the untouched ones past those that may start, and those done. Every
//! plan a test makes is made a second time reading every node one by one, and the two must be the same (`plan`
//! asserts it); these rollouts are large enough that nodes are set apart at every step, and take every turn that
//! moves a node out of the group (a label removed, a skip, a failure and its retry).

use super::*;
use crate::controllers::run_config::plan::node_state::History;
use crate::controllers::run_config::plan::resolve::{self, Verdict};
use crate::controllers::run_config::plan::target::Target;
use crate::controllers::run_config::plan::untouched;
use crate::controllers::run_config::plan::Kept;

/// How many untouched and finished nodes a plan of `f` sets apart.
fn set_apart(f: &Fixture) -> (usize, usize) {
    let (kept, slot) = (Kept::default(), std::cell::OnceCell::new());
    let Verdict::Valid(resolved) = resolve::resolve(&f.s, Some(&kept), &slot) else { panic!("a valid configuration") };
    let target = Target::upgrade(NEW);
    let history = History::of(&f.s.run_config.status, NEW).with_jobs(&f.s.jobs, NEW);
    let narrowed = untouched::set_apart(&f.s, &resolved, &target, &history);
    narrowed.map(|n| (n.apart().waiting, n.apart().finished.len())).unwrap_or_default()
}

#[test]
fn a_rollout_of_many_nodes_plans_the_same_with_its_waiting_and_finished_nodes_set_apart() {
    let mut f = Fixture::new(16).rules(vec![rule("first", true), rule("second", false)]);
    f.s.run_config.spec.concurrency = 3;
    // worker-11 runs the target already: done without a Job, and listed so, it is set apart with the finished.
    f.upgrade("worker-11");
    f.advance_to_gating();
    assert_eq!(f.s.jobs.iter().map(|j| j.node.as_str()).collect::<BTreeSet<_>>().len(), 3);
    // Three in flight, three more untouched read (they may start next), nine set apart; and worker-11.
    assert_eq!(set_apart(&f), (9, 1));
    let p = f.plan();
    assert_eq!((p.status.pending_nodes, p.status.total_nodes), (12, 16), "{:?}", p.status.message);

    while f.s.run_config.status.completed_nodes.len() < 5 {
        f.answer();
        f.step();
        // The Jobs of the nodes done go at their TTL.
        let done = &f.s.run_config.status.completed_nodes;
        f.s.jobs.retain(|j| !done.contains(&j.node));
    }
    // Held again with the rule labels (their Jobs gone, nothing says they were released), they are set apart.
    f.step();
    let (waiting, finished) = set_apart(&f);
    assert!(finished >= 4 && waiting > 0, "{waiting} waiting and {finished} finished set apart");

    // Someone removes a rule label from a node set apart: it is read again, and held again.
    let waiting_node = "worker-9";
    assert_eq!(node_phase(&f.plan(), waiting_node), None);
    let label = f.s.rules[0].label();
    Arc::make_mut(f.s.nodes_mut().get_mut(waiting_node).unwrap()).labels.remove(&label);
    let p = f.step();
    assert!(
        p.intents.iter().any(|i| matches!(i, Intent::LabelNode { node, .. } if node == waiting_node)),
        "{:?}",
        p.intents
    );
    // An admin skips a node that waits: it is listed as skipped.
    f.s.run_config.skip.insert("worker-8".into());
    let p = f.step();
    assert!(p.status.skipped_nodes.contains(&"worker-8".to_string()), "{:?}", p.status.skipped_nodes);

    // Gate Jobs fail: the rollout holds until the retry annotation names each failed node.
    f.answer();
    f.step();
    f.finish_jobs(JobResult::Failed);
    let p = f.step();
    let failed: Vec<String> =
        p.status.nodes.iter().filter(|e| e.phase == NodePhase::Failed).map(|e| e.name.clone()).collect();
    assert!(!failed.is_empty(), "{:?}", p.status.nodes);
    for node in failed {
        f.s.run_config.retry = Some(node.clone());
        let p = f.step();
        assert_ne!(node_phase(&p, &node), Some(NodePhase::Failed));
    }

    let end = run_to_end(&mut f);
    assert_eq!(end.status.completed_nodes.len(), 15, "{:?}", end.status.completed_nodes);
    assert_eq!(end.status.skipped_nodes, vec!["worker-8".to_string()]);
    assert_eq!(end.status.progress.as_deref(), Some("16/16"));
}
