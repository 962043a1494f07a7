//! What a plan says the next one reads of the nodes: between rollouts (Idle, Restoring, Completed) only which nodes
//! exist, their labels and their versions. Checked by changing every other fact of every node in those states (as
//! the MCO's walk back into the restored pools, a reboot or a cordon does) and planning again: nothing differs.

use super::*;

/// The facts [`NodeReads::MembershipAndVersion`] leaves out, each changed one way.
fn other_facts_changed(node: &NodeView) -> Vec<NodeView> {
    let changed = |f: &dyn Fn(&mut NodeView)| {
        let mut node = node.clone();
        f(&mut node);
        node
    };
    vec![
        changed(&|n| n.ready = !n.ready),
        changed(&|n| n.cordoned = !n.cordoned),
        changed(&|n| n.mcd_state = Some("Working".into())),
        changed(&|n| {
            n.current_config = Some("rendered-worker-2".into());
            n.desired_config = Some("rendered-worker-3".into());
            n.desired_version = Some(OLD.into());
        }),
    ]
}

/// Asserts that changing any left-out fact of any node leaves the plan of `f`'s snapshot as it is.
fn assert_only_membership_and_version_read(f: &Fixture, when: &str) {
    let base = format!("{:?}", f.plan());
    for (name, node) in f.s.nodes.iter() {
        for other in other_facts_changed(node) {
            let mut s = f.s.clone();
            s.nodes_mut().insert(name.clone(), other.clone().into());
            assert_eq!(format!("{:?}", plan(&s)), base, "{when}: {name} changed to {other:?}");
        }
    }
}

#[test]
fn between_rollouts_a_node_matters_only_by_its_labels_and_version() {
    let mut f = Fixture::new(3);
    let mut seen = BTreeSet::new();
    let mut walk = 0;
    for _ in 0..200 {
        let p = f.step();
        let phase = p.status.phase.expect("a phase");
        match p.node_reads {
            NodeReads::MembershipAndVersion => {
                assert!(matches!(phase, RunPhase::Restoring | RunPhase::Completed), "{phase:?}");
                assert_only_membership_and_version_read(&f, &format!("{phase:?}"));
                seen.insert(format!("{phase:?}"));
            }
            NodeReads::Everything => {
                assert!(!matches!(phase, RunPhase::Completed), "a completed rollout reads everything");
            }
        }
        if phase == RunPhase::Completed {
            break;
        }
        if phase == RunPhase::Restoring {
            // The MCO walks the nodes back for a few reconciles before the pools say Updated.
            walk += 1;
            if walk > 3 {
                f.s.pools.values_mut().for_each(|pool| pool.updated = true);
            }
        }
        f.answer();
    }
    assert_eq!(seen, BTreeSet::from(["Completed".to_string(), "Restoring".to_string()]));
}

#[test]
fn an_idle_run_config_reads_only_membership_and_version() {
    let mut f = Fixture::new(3);
    for node in ["worker-0", "worker-1", "worker-2"] {
        f.upgrade(node);
    }
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Idle));
    assert_eq!(p.node_reads, NodeReads::MembershipAndVersion);
    assert_only_membership_and_version_read(&f, "Idle");
    // A node that falls behind (a new one, or one whose version went back) starts a rollout.
    f.s.nodes_mut().get_mut("worker-1").map(Arc::make_mut).unwrap().version = Some(OLD.into());
    assert_eq!(f.step().status.phase, Some(RunPhase::Pausing));
}

#[test]
fn while_nodes_are_gated_and_for_config_changes_everything_is_read() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Upgrading));
    assert_eq!(p.node_reads, NodeReads::Everything);
    // Here the left-out facts do change what numo decides (so the check above can tell): a released node that
    // runs the version is done only once it is Ready.
    f.finish_jobs(JobResult::Succeeded);
    f.step();
    f.step();
    f.upgrade("worker-0");
    let base = format!("{:?}", f.plan());
    let differs = f.s.nodes.iter().any(|(name, node)| {
        other_facts_changed(node).into_iter().any(|other| {
            let mut s = f.s.clone();
            s.nodes_mut().insert(name.clone(), other.into());
            format!("{:?}", plan(&s)) != base
        })
    });
    assert!(differs, "while a node is gated, its readiness, cordon or config matters");
    let mut f = Fixture::new(1);
    f.s.run_config.spec.trigger = crate::api::Trigger::AnyConfigChange;
    f.upgrade("worker-0");
    assert_eq!(f.step().node_reads, NodeReads::Everything);
}
