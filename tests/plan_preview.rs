//! `numo plan` against the real kube-apiserver: the preview numo's own planner gives from the cluster as an admin's
//! kubeconfig reads it changes nothing, and the rollout then goes as it said: the same first node, the same order,
//! and an end the status's estimate keeps.

mod support;

use std::time::Duration;

use kube::ResourceExt;
use numo::api::{RunPhase, Step};
use numo::controllers::run_config::preview;
use serde_json::json;
use support::*;

async fn preview_now(setup: &Setup, to: Option<&str>) -> anyhow::Result<preview::Preview> {
    let (rc, stores) = preview::read::read(&setup.client, &setup.ns, "example").await.map_err(anyhow::Error::msg)?;
    Ok(preview::from_cluster(&setup.client, &rc, &stores, to, None).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numo_plan_previews_the_order_and_the_first_node_numo_then_starts() -> anyhow::Result<()> {
    let mut setup = Setup::new("plan-preview", 3).await?;
    setup.check_workers("example", job_spec("1s", false), Some(job_spec("1s", false)), json!({})).await?;
    let pools_before = setup.pools().await?;
    setup.start_operator().await?;
    setup.wait_phase("example", RunPhase::Idle, Duration::from_secs(60)).await?;

    // No upgrade is pending: the preview says so and lists no node.
    let idle = preview_now(&setup, None).await?;
    assert_eq!((idle.starts_now.as_deref(), idle.nodes.len()), (None, 0), "{idle:?}");

    // An upgrade to NEW, previewed before the cluster starts it.
    let previewed = preview_now(&setup, Some(NEW)).await?;
    let table = preview::table(&previewed);
    println!("{table}");
    let order: Vec<&str> = previewed.nodes.iter().map(|n| n.node.as_str()).collect();
    assert_eq!(order.len(), 3, "{previewed:?}");
    assert_eq!(previewed.starts_now.as_deref(), order.first().copied(), "nothing holds the first node: {table}");
    let estimate = previewed.estimate.clone().ok_or_else(|| anyhow::anyhow!("no estimate: {previewed:?}"))?;
    assert_eq!(estimate.remaining_nodes, 3);
    assert!(table.contains("would start now") && table.contains("The rollout would end"), "{table}");
    let json = preview::json(&previewed);
    assert!(json.contains("\"startsNow\"") && json.contains("\"Gate\""), "{json}");

    // The preview changed nothing: the pools are as they were, no node carries a rule label, the run config is
    // still Idle and no Job exists.
    assert_eq!(setup.pools().await?, pools_before);
    for node in setup.nodes().await? {
        assert!(!node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)), "{}", node.name_any());
    }
    let status = setup.run_configs().get("example").await?.status.unwrap_or_default();
    assert_eq!(status.phase, Some(RunPhase::Idle));
    assert!(setup.jobs().await?.is_empty());

    // numo then runs the upgrade: the nodes are gated in the previewed order.
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("example", RunPhase::Completed, ROLLOUT).await?;
    let mut gates: Vec<(String, String)> = setup
        .jobs()
        .await?
        .iter()
        .filter(|j| j.labels().get(numo::labels::JOB_PHASE).map(String::as_str) == Some("gate"))
        .map(|j| {
            let created = j.metadata.creation_timestamp.as_ref().map(|t| t.0.to_string()).unwrap_or_default();
            let node = j.annotations().get(numo::jobs::NODE_ANNOTATION).cloned().unwrap_or_default();
            (created, node)
        })
        .collect();
    gates.sort();
    let gated: Vec<&str> = gates.iter().map(|(_, node)| node.as_str()).collect();
    assert_eq!(gated, order, "the nodes went in the previewed order");
    // The completed rollout left its figures for the next one.
    let history = done.status.clone().unwrap_or_default().history;
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].nodes, 3);

    // numo timeline draws it from what numo stored: a real browser shows one row per node (and the restore walk)
    // and the steps numo measured.
    let record = preview::read::record(&setup.client, &setup.ns, "example").await.map_err(anyhow::Error::msg)?;
    let picture = preview::timeline::timeline(&done, &record, None, &Default::default(), chrono::Utc::now());
    let rows: Vec<&str> = picture.rows.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(rows, order, "one row per node, in the order they went");
    let shown = numo_testkit::browser::shoot(&numo::timeline::render(&picture), "timeline-after-a-rollout")
        .map_err(anyhow::Error::msg)?;
    let layout = numo::timeline::LAYOUT;
    let markers = shown.runs_down(
        layout.marker_x + layout.marker_width / 2,
        numo_testkit::browser::rgb(layout.marker_colour),
        12,
    );
    assert_eq!(markers, 4, "three nodes and the restore walk");
    // In the chart, not the legend (which shows every colour whatever was drawn).
    let drawn = |step: Step| {
        let colour = numo_testkit::browser::rgb(numo::timeline::colour(step));
        shown.count_in(layout.chart_left..layout.chart_right, layout.chart_top..shown.height, colour, 8)
    };
    for step in [Step::Gate, Step::Cleanup] {
        assert!(drawn(step) > 0, "{step:?} is not drawn in the chart");
    }
    // The upgrade is drawn whole, or (where MachineConfigNodes told the drain's end, OpenShift 4.20+) as its drain
    // and its reboot.
    assert!(drawn(Step::Upgrade) + drawn(Step::Reboot) > 0, "the upgrade is not drawn in the chart");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_estimate_when_the_first_node_is_done_is_within_a_quarter_of_the_actual_end() -> anyhow::Result<()> {
    let mut setup = Setup::new("estimate-accuracy", 4).await?;
    setup.check_workers("example", job_spec("2s", false), Some(job_spec("2s", false)), json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("example", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;

    // The estimate numo keeps once the first node is done.
    let deadline = tokio::time::Instant::now() + ROLLOUT;
    let estimate = loop {
        let status = setup.run_configs().get("example").await?.status.unwrap_or_default();
        if status.target_version.as_deref() == Some(NEW) && !status.completed_nodes.is_empty() {
            break status.estimate.ok_or_else(|| anyhow::anyhow!("no estimate once a node is done"))?;
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "no node done: {status:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(estimate.basis, numo::api::EstimateBasis::ThisRollout, "{estimate:?}");

    let done = setup.wait_phase("example", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    let second = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.as_ref().map(|t| t.0.as_millisecond() as f64 / 1000.0).unwrap_or_default()
    };
    let (started, finished) = (second(&status.started_at), second(&status.finished_at));
    let estimated = estimate.end.0.as_millisecond() as f64 / 1000.0;
    let (length, error) = (finished - started, (estimated - finished).abs());
    println!(
        "rollout of {length:.1}s; estimated at the first node's end to finish {:+.1}s from the actual end ({})",
        estimated - finished,
        estimate.assumes
    );
    assert!(error <= 0.25 * length, "estimate off by {error:.1}s of a {length:.1}s rollout: {estimate:?}");
    Ok(())
}
