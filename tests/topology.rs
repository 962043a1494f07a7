//! Failure-domain waves on the real API server, numo as installed: `DomainAtATime` takes one rack at a time (the
//! smallest first, the nodes without the label last), resumes in the same rack after a restart, and takes in a node
//! whose rack label changes mid-rollout; `Spread` never has two nodes of a rack in flight. What is asserted is what an
//! admin sees: the run config's status as a watch saw it, its Events, and numo plan.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::api::{MutexRunConfig, NodePhase, RunPhase, TopologyMode};
use serde_json::json;
use support::*;

const RACK: &str = "topology.rook.io/rack";

/// Labels worker `i` with rack `racks[i]` (None: no label).
async fn rack_workers(setup: &Setup, racks: &[Option<&str>]) -> anyhow::Result<()> {
    let nodes = Api::<Node>::all(setup.client.clone());
    for (i, rack) in racks.iter().enumerate() {
        let patch = json!({"metadata": {"labels": {RACK: rack}}});
        nodes.patch(&format!("worker-{i}"), &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    Ok(())
}

/// Each status the run config had, as a watch saw it: the nodes in flight (with their racks as numo saw them: the
/// node labels are read when asserting), and the domain in progress.
type Seen = Arc<Mutex<Vec<(Vec<String>, Option<String>)>>>;

fn watch_flights(setup: &mut Setup, name: &str) -> Seen {
    setup.record_statuses(name, |status| {
        let flying = status.nodes.iter().filter(|e| e.phase.in_flight()).map(|e| e.name.clone()).collect();
        vec![(flying, status.topology.and_then(|t| t.current))]
    })
}

/// The order in which racks had nodes in flight (`rack_of` a node), each rack once per stretch.
fn rack_order(seen: &Seen, rack_of: impl Fn(&str) -> String) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for (flying, _) in seen.lock().map(|s| s.clone()).unwrap_or_default() {
        for rack in flying.iter().map(|n| rack_of(n)) {
            if order.last() != Some(&rack) {
                order.push(rack);
            }
        }
    }
    order
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_at_a_time_goes_rack_by_rack_resumes_in_the_same_rack_and_takes_in_a_relabelled_node(
) -> anyhow::Result<()> {
    let mut setup = Setup::new("topology-domain-at-a-time", 6).await?;
    // Rack a has three workers, rack b two, and worker-5 has no rack label.
    let initial = [Some("a"), Some("a"), Some("a"), Some("b"), Some("b"), None];
    rack_workers(&setup, &initial).await?;
    setup.rule("ceph-ok", job_spec("2s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    let topology = json!({"topology": {"key": RACK, "mode": "DomainAtATime"}, "concurrency": 2});
    setup.run_config("racks", &["ceph-ok"], &["workers"], topology).await?;
    let seen = watch_flights(&mut setup, "racks");
    setup.start_operator().await?;
    setup.wait_phase("racks", RunPhase::Idle, Duration::from_secs(60)).await?;

    // numo plan shows the waves before anything starts: b (2 nodes), a (3), then the unlabelled worker.
    let (rc, stores) = numo::controllers::run_config::preview::read::read(&setup.client, &setup.ns, "racks")
        .await
        .map_err(anyhow::Error::msg)?;
    let preview =
        numo::controllers::run_config::preview::from_cluster(&setup.client, &rc, &stores, Some(NEW), None).await;
    let waves: Vec<(&str, u32)> = preview.waves.iter().map(|w| (w.domain.as_str(), w.nodes)).collect();
    assert_eq!(waves, [("b", 2), ("a", 3), ("", 1)], "{}", numo::controllers::run_config::preview::table(&preview));
    assert!(preview.waves.windows(2).all(|w| w[0].end <= w[1].start), "waves one after another: {:?}", preview.waves);
    assert!(numo::controllers::run_config::preview::table(&preview).contains("Waves by topology.rook.io/rack:"));

    setup.upgrade_cluster(NEW).await?;
    // While rack b is under way, worker-5 gets rack b's label: it joins rack b, before rack a.
    setup.wait_node_phase("racks", "worker-3", NodePhase::Gating).await?;
    let nodes = Api::<Node>::all(setup.client.clone());
    let relabel = json!({"metadata": {"labels": {RACK: "b"}}});
    nodes.patch("worker-5", &PatchParams::default(), &Patch::Merge(&relabel)).await?;

    // Mid-rack a, numo restarts: it resumes in rack a.
    let mid_a = numo_testkit::wait_until(&setup.run_configs(), "racks", ROLLOUT, "a node of rack a in flight", |rc| {
        rc.status.as_ref().is_some_and(|s| {
            s.nodes.iter().any(|e| e.name.as_str() < "worker-3" && e.phase == NodePhase::Gating)
                && s.completed_nodes.len() < 5
        })
    })
    .await?;
    let current = mid_a.status.as_ref().and_then(|s| s.topology.as_ref()).and_then(|t| t.current.clone());
    assert_eq!(current.as_deref(), Some("a"));
    setup.kill_operator();
    tokio::time::sleep(Duration::from_secs(2)).await;
    setup.start_operator().await?;

    let done = setup.wait_phase("racks", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some("6/6"));
    let rack_of = |node: &str| match node {
        "worker-0" | "worker-1" | "worker-2" => "a".to_string(),
        _ => "b".to_string(),
    };
    for (flying, _) in seen.lock().map(|s| s.clone()).unwrap_or_default() {
        let racks: BTreeSet<String> = flying.iter().map(|n| rack_of(n)).collect();
        assert!(racks.len() <= 1, "nodes of two racks in flight at once: {flying:?}");
        assert!(flying.len() <= 2, "more than concurrency 2 in flight: {flying:?}");
    }
    assert_eq!(rack_order(&seen, rack_of), ["b", "a"], "rack b (with worker-5) whole, then rack a, once each");
    let topology = status.topology.clone().expect("status.topology");
    assert_eq!(topology.key, RACK);
    assert_eq!(topology.mode, Some(TopologyMode::DomainAtATime));
    let waves: Vec<(&str, u32, u32)> = topology.waves.iter().map(|w| (w.domain.as_str(), w.nodes, w.done)).collect();
    assert_eq!(waves, [("b", 3, 3), ("a", 3, 3)]);
    assert_eq!(topology.done, ["b", "a"]);

    let told = |notes: &[(String, String, String)]| notes.iter().filter(|(_, r, _)| r == "DomainFinished").count() == 2;
    let notes = setup.events_when("racks", told).await?;
    let started: Vec<&str> =
        notes.iter().filter(|(_, r, _)| r == "DomainStarted").map(|(_, _, n)| n.as_str()).collect();
    assert_eq!(started.len(), 2, "each rack told once, the restart did not tell it again: {notes:?}");
    assert!(started.iter().any(|n| n.contains("failure domain b")), "{started:?}");
    // Exactly one gate Job per worker: the restart repeated nothing.
    let gates = setup.jobs().await?.into_iter().filter(|j| {
        j.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.get("openshift-optional.skrzypek.io/phase").map(String::as_str) == Some("gate"))
    });
    assert_eq!(gates.count(), 6);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spread_never_has_two_nodes_of_a_rack_in_flight() -> anyhow::Result<()> {
    let mut setup = Setup::new("topology-spread", 6).await?;
    rack_workers(&setup, &[Some("a"), Some("a"), Some("b"), Some("b"), Some("c"), Some("c")]).await?;
    setup.rule("ceph-ok", job_spec("2s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let topology = json!({"topology": {"key": RACK, "mode": "Spread"}, "concurrency": 3});
    setup.run_config("spread", &["ceph-ok"], &["workers"], topology).await?;
    let seen = watch_flights(&mut setup, "spread");
    setup.start_operator().await?;
    setup.wait_phase("spread", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("spread", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(done.status.as_ref().and_then(|s| s.progress.as_deref()), Some("6/6"));
    let rack_of =
        |node: &str| ["a", "a", "b", "b", "c", "c"][node.trim_start_matches("worker-").parse::<usize>().unwrap_or(0)];
    let mut most = 0;
    for (flying, current) in seen.lock().map(|s| s.clone()).unwrap_or_default() {
        let racks: Vec<&str> = flying.iter().map(|n| rack_of(n)).collect();
        let distinct: BTreeSet<&&str> = racks.iter().collect();
        assert_eq!(distinct.len(), racks.len(), "two nodes of a rack in flight: {flying:?}");
        assert_eq!(current, None, "Spread has no domain in progress");
        most = most.max(flying.len());
    }
    assert_eq!(most, 3, "one node of each rack at once");

    // The storage-aware sample is a valid run config for the real API server (strict: no unknown field).
    let sample = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/samples/storage-aware/openshift-optional.skrzypek.io_v1alpha1_mutexrunconfig.yaml"
    ))?;
    let raw: serde_json::Value = serde_yaml::from_str(&sample)?;
    let sample: MutexRunConfig = serde_json::from_value(raw.clone())?;
    // Every field of the sample's topology is one numo knows (nothing dropped on the way in).
    assert_eq!(serde_json::to_value(&sample.spec)?["topology"], raw["spec"]["topology"]);
    assert_eq!(sample.spec.topology.as_ref().and_then(|t| t.mode), Some(TopologyMode::DomainAtATime));
    let strict = kube::api::PostParams { dry_run: true, ..Default::default() };
    setup.run_configs().create(&strict, &sample).await?;
    Ok(())
}
