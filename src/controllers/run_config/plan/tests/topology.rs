//! Failure-domain waves: the order of the domains, one domain at a time, never two of a domain at once, the domain
//! soak, nodes without the label, and labels or nodes that change mid-rollout.

use super::*;
use crate::api::{KeySource, Topology, TopologyMode};

const RACK: &str = "topology.rook.io/rack";

/// `f` with each worker in the rack `racks` gives it (by index), `None` for no label.
fn racked(workers: usize, rack: impl Fn(usize) -> Option<&'static str>) -> Fixture {
    let mut f = Fixture::new(workers);
    for i in 0..workers {
        if let Some(r) = rack(i) {
            f.s.nodes_mut()
                .get_mut(&format!("worker-{i}"))
                .map(Arc::make_mut)
                .unwrap()
                .labels
                .insert(RACK.into(), r.into());
        }
    }
    f
}

fn topology(mode: Option<TopologyMode>) -> Topology {
    Topology { key: Some(RACK.into()), mode, ..Default::default() }
}

fn rack_of(f: &Fixture, node: &str) -> String {
    f.s.nodes[node].labels.get(RACK).cloned().unwrap_or_default()
}

/// The nodes in flight (between their first gate Job and their last cleanup Job) in the status of `p`.
fn in_flight(p: &Plan) -> Vec<String> {
    p.status.nodes.iter().filter(|e| e.phase.in_flight()).map(|e| e.name.clone()).collect()
}

/// Runs the rollout to its end; returns, for each step, the nodes in flight.
fn run(f: &mut Fixture) -> Vec<Vec<String>> {
    let mut seen = Vec::new();
    for _ in 0..400 {
        let p = f.step();
        seen.push(in_flight(&p));
        if p.status.phase == Some(RunPhase::Completed) {
            return seen;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.answer();
    }
    panic!("the rollout did not complete: {:?}", f.s.run_config.status);
}

/// Racks of 3 (a), 2 (b) and 1 (c) nodes.
fn three_racks() -> Fixture {
    racked(6, |i| Some(["a", "a", "a", "b", "b", "c"][i]))
}

#[test]
fn domain_at_a_time_takes_the_smallest_domain_first_and_never_two_domains_at_once() {
    let mut f = three_racks();
    f.s.run_config.spec.concurrency = 3;
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::DomainAtATime)));
    let seen = run(&mut f);
    let mut order: Vec<String> = Vec::new();
    let mut most = 0;
    for flight in &seen {
        let racks: BTreeSet<String> = flight.iter().map(|n| rack_of(&f, n)).collect();
        assert!(racks.len() <= 1, "nodes of two domains in flight at once: {flight:?}");
        most = most.max(flight.len());
        for rack in racks {
            if order.last() != Some(&rack) {
                order.push(rack);
            }
        }
    }
    assert_eq!(order, ["c", "b", "a"], "the domains in the order of their size, each once");
    assert_eq!(most, 3, "the whole of rack a went at once, as concurrency 3 allows");
    let status = f.s.run_config.status.topology.clone().expect("status.topology");
    assert_eq!((status.key.as_str(), status.key_source), (RACK, Some(KeySource::Spec)));
    let waves: Vec<(&str, u32, u32)> = status.waves.iter().map(|w| (w.domain.as_str(), w.nodes, w.done)).collect();
    assert_eq!(waves, [("c", 1, 1), ("b", 2, 2), ("a", 3, 3)]);
    assert_eq!(status.done, ["c", "b", "a"]);
    assert!(status.waves.iter().all(|w| w.started_at.is_some() && w.finished_at.is_some()), "{status:?}");
}

#[test]
fn each_domain_is_told_when_it_starts_and_when_it_finishes() {
    let mut f = three_racks();
    f.s.run_config.spec.concurrency = 3;
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::DomainAtATime)));
    let mut told = Vec::new();
    for _ in 0..400 {
        let p = f.step();
        told.extend(p.notices.iter().filter(|n| n.reason.starts_with("Domain")).map(|n| (n.reason, n.note.clone())));
        if p.status.phase == Some(RunPhase::Completed) {
            break;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.answer();
    }
    let reasons: Vec<&str> = told.iter().map(|(r, _)| &r[..]).collect();
    assert_eq!(
        reasons,
        ["DomainStarted", "DomainFinished", "DomainStarted", "DomainFinished", "DomainStarted", "DomainFinished"]
    );
    assert!(told[0].1.contains("failure domain c (1 node(s)"), "{told:?}");
}

#[test]
fn spread_never_has_two_nodes_of_a_domain_in_flight() {
    let mut f = three_racks();
    f.s.run_config.spec.concurrency = 3;
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::Spread)));
    let seen = run(&mut f);
    let mut most = 0;
    for flight in &seen {
        let racks: Vec<String> = flight.iter().map(|n| rack_of(&f, n)).collect();
        let distinct: BTreeSet<&String> = racks.iter().collect();
        assert_eq!(distinct.len(), racks.len(), "two nodes of a domain in flight: {flight:?}");
        most = most.max(flight.len());
    }
    assert_eq!(most, 3, "one node of each of the three racks at once");
    assert_eq!(f.s.run_config.status.completed_nodes.len(), 6);
}

#[test]
fn max_nodes_per_domain_caps_a_domain_below_the_concurrency() {
    let mut f = three_racks();
    f.s.run_config.spec.concurrency = 3;
    let mut t = topology(Some(TopologyMode::DomainAtATime));
    t.max_nodes_per_domain = Some(2);
    f.s.run_config.spec.topology = Some(t);
    let most = run(&mut f).iter().map(Vec::len).max().unwrap();
    assert_eq!(most, 2);
}

#[test]
fn listed_domains_go_first_and_nodes_without_the_label_go_last() {
    let mut f = racked(5, |i| [Some("a"), Some("b"), None, Some("c"), Some("c")][i]);
    let mut t = topology(Some(TopologyMode::DomainAtATime));
    t.domains = vec!["c".into(), "zz-not-here".into()];
    f.s.run_config.spec.topology = Some(t);
    let seen = run(&mut f);
    let mut order: Vec<String> = Vec::new();
    for rack in seen.iter().flatten().map(|n| rack_of(&f, n)) {
        if order.last() != Some(&rack) {
            order.push(rack);
        }
    }
    assert_eq!(order, ["c", "a", "b", ""]);
    let waves = &f.s.run_config.status.topology.as_ref().unwrap().waves;
    assert_eq!(waves.iter().map(|w| w.domain.as_str()).collect::<Vec<_>>(), ["c", "a", "b", ""]);
}

#[test]
fn the_next_domain_waits_for_the_domain_soak_and_says_until_when() {
    let mut f = racked(2, |i| Some(["a", "b"][i]));
    let mut t = topology(Some(TopologyMode::DomainAtATime));
    t.domain_soak_time = Some("10m".into());
    f.s.run_config.spec.topology = Some(t);
    let mut held = None;
    for _ in 0..60 {
        let p = f.step();
        if let Some(blocker) = p.status.blocked_by.iter().find(|b| b.check == check::DOMAIN_SOAK) {
            held = Some((blocker.message.clone(), p.requeue_after));
            break;
        }
        f.answer();
    }
    let (message, requeue) = held.expect("a DomainSoak hold after rack a finished");
    assert!(message.contains("domain a finished at") && message.contains("domain b starts"), "{message}");
    let requeue = requeue.expect("a wake-up at the soak's end");
    assert!(requeue > Duration::from_secs(590) && requeue <= Duration::from_secs(601), "{requeue:?}");
    assert!(f.plan().status.nodes.iter().all(|e| e.name != "worker-1" || e.phase == NodePhase::Pending));
    f.s.now += Duration::from_secs(600);
    let p = f.step();
    assert!(p.status.blocked_by.iter().all(|b| b.check != check::DOMAIN_SOAK), "{:?}", p.status.blocked_by);
    assert_eq!(in_flight(&p), ["worker-1"]);
}

#[test]
fn a_failed_node_keeps_its_domain_open_under_continue() {
    let mut f = racked(3, |i| Some(["a", "a", "b"][i]));
    f.s.run_config.spec.on_failure = FailurePolicy::Continue;
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::DomainAtATime)));
    // Rack b (one node) goes first; then rack a, whose first node fails.
    let mut failed = false;
    for _ in 0..60 {
        let p = f.step();
        if in_flight(&p) == ["worker-0"] && !failed {
            f.finish_jobs(JobResult::Failed);
            failed = true;
            continue;
        }
        f.answer();
    }
    assert!(failed);
    let p = f.plan();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed));
    assert_eq!(node_phase(&p, "worker-1"), Some(NodePhase::Done), "the rest of the domain goes on");
    assert_eq!(p.status.topology.as_ref().unwrap().current.as_deref(), Some("a"));
}

#[test]
fn a_node_relabelled_into_another_domain_while_in_flight_holds_new_starts_until_it_is_done() {
    let mut f = racked(4, |i| Some(["a", "a", "b", "b"][i]));
    f.s.run_config.spec.concurrency = 2;
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::DomainAtATime)));
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(in_flight(&p), ["worker-0", "worker-1"]);
    // worker-1 moves to rack b while in flight; worker-0 finishes.
    f.s.nodes_mut().get_mut("worker-1").map(Arc::make_mut).unwrap().labels.insert(RACK.into(), "b".into());
    let mut steps = 0;
    while node_phase(&f.plan(), "worker-0") != Some(NodePhase::Done) && steps < 20 {
        let p = f.step();
        let racks: BTreeSet<String> = in_flight(&p).iter().map(|n| rack_of(&f, n)).collect();
        assert!(racks.len() <= 2, "{racks:?}");
        assert!(!in_flight(&p).iter().any(|n| n == "worker-2" || n == "worker-3"), "a new node started: {:?}", p);
        f.answer();
        steps += 1;
    }
    // Rack b is next, with worker-1 already in it.
    let seen = run(&mut f);
    for flight in seen {
        let racks: BTreeSet<String> = flight.iter().map(|n| rack_of(&f, n)).collect();
        assert!(racks.len() <= 1, "{flight:?}");
    }
    assert_eq!(f.s.run_config.status.completed_nodes.len(), 4);
}

#[test]
fn a_node_that_joins_keeps_the_order_of_the_domains_under_way() {
    let mut f = racked(3, |i| Some(["a", "a", "b"][i]));
    f.s.run_config.spec.topology = Some(topology(Some(TopologyMode::DomainAtATime)));
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(in_flight(&p), ["worker-2"], "rack b (1 node) first");
    // Two nodes join rack b: by size, a would now go first; the order recorded stays.
    for name in ["worker-7", "worker-8"] {
        let mut node = NodeView::clone(&f.s.nodes["worker-2"]);
        node.name = name.into();
        f.s.nodes_mut().insert(name.into(), node.into());
    }
    let seen = run(&mut f);
    let order: Vec<String> = seen.iter().flatten().map(|n| rack_of(&f, n)).fold(Vec::new(), |mut o, r| {
        if o.last() != Some(&r) {
            o.push(r);
        }
        o
    });
    assert_eq!(order, ["b", "a"], "the joined nodes went with their domain, before the next one");
    assert_eq!(f.s.run_config.status.completed_nodes.len(), 5);
}

#[test]
fn the_key_defaults_to_the_storage_clusters_then_the_zone() {
    let mut f = three_racks();
    f.s.run_config.spec.topology = Some(Topology { mode: Some(TopologyMode::Spread), ..Default::default() });
    let p = f.plan();
    let t = p.status.topology.clone().unwrap_or_default();
    assert_eq!(
        (t.key.as_str(), t.key_source),
        ("", None),
        "nothing is shown before the rollout reaches its nodes: {t:?}"
    );
    f.advance_to_gating();
    let t = f.plan().status.topology.unwrap();
    assert_eq!((t.key.as_str(), t.key_source), (crate::api::topology::ZONE_LABEL, Some(KeySource::Default)));
    assert_eq!(t.waves.iter().map(|w| w.domain.as_str()).collect::<Vec<_>>(), [""], "no node has a zone label");
    f.s.storage_domain_key = Some(RACK.into());
    let t = f.plan().status.topology.unwrap();
    assert_eq!((t.key.as_str(), t.key_source), (RACK, Some(KeySource::StorageCluster)));
}

#[test]
fn an_invalid_topology_changes_nothing_and_says_why() {
    let mut f = three_racks();
    f.s.run_config.spec.topology = Some(Topology {
        key: Some("Not A Key".into()),
        mode: Some(TopologyMode::Spread),
        max_nodes_per_domain: Some(2),
        domains: vec!["a".into(), "a".into()],
        domain_soak_time: Some("soon".into()),
    });
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let message = &condition(&p, condition::CONFIG_VALIDATED).message;
    for part in [
        "topology.key \"Not A Key\" is not a label key",
        "topology.domainSoakTime \"soon\" is not a duration",
        "topology.domains lists \"a\" twice",
        "topology.maxNodesPerDomain applies only to mode DomainAtATime (the mode is Spread)",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
}

#[test]
fn without_a_mode_the_order_is_by_name_and_the_domains_are_shown() {
    let mut f = racked(3, |i| Some(["b", "a", "b"][i]));
    f.s.run_config.spec.concurrency = 3;
    f.s.run_config.spec.topology = Some(topology(None));
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(in_flight(&p), ["worker-0", "worker-1", "worker-2"]);
    let t = p.status.topology.unwrap();
    assert_eq!(t.current, None);
    assert_eq!(t.waves.iter().map(|w| (w.domain.as_str(), w.nodes)).collect::<Vec<_>>(), [("a", 1), ("b", 2)]);
}
