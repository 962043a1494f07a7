//! `numo plan` against the real kube-apiserver: the preview numo's own planner gives from the cluster as an admin's
//! kubeconfig reads it changes nothing, and the rollout then goes as it said: the same first node, the same order,
//! and an end the status's estimate keeps. With PodDisruptionBudgets, alerts (a real Alertmanager) and a custom
//! check, it is held by what holds the operator, in the same words, and starts the node the operator starts.

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
    let picture = preview::timeline::timeline(&done, &record, &[], Some(&Default::default()), chrono::Utc::now());
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
    // The estimate takes the rest of the rollout's steps to be as long as the first node's; how far the rest's
    // measured steps (the rollout's figures, kept at its end) moved from that is the world's doing, not the estimate's.
    let figures = status.history.last().ok_or_else(|| anyhow::anyhow!("no figures kept at the end: {status:?}"))?;
    let world = world_drift(&estimate, figures);
    println!(
        "rollout of {length:.1}s; estimated at the first node's end to finish {:+.1}s from the actual end, of which \
         up to {world:.1}s is the steps' own change of pace ({})",
        estimated - finished,
        estimate.assumes
    );
    assert!(
        error <= 0.25 * length + world,
        "estimate off by {error:.1}s of a {length:.1}s rollout (the steps' change of pace explains {world:.1}s): \
         {estimate:?} {figures:?}"
    );
    Ok(())
}

/// How many seconds of an estimate's error the steps' change of pace explains: for each step the estimate assumed,
/// how far the rollout's measured median ended from what it assumed, times the rounds of it still to go when the
/// estimate was made (each remaining node's steps, and the restore walk's rounds).
fn world_drift(estimate: &numo::api::Estimate, figures: &numo::api::RolloutFigures) -> f64 {
    estimate
        .step_seconds
        .iter()
        .filter_map(|assumed| {
            let measured = figures.steps.iter().find(|f| f.step == assumed.step)?;
            let rounds = match assumed.step {
                Step::Restore => estimate.restore_rounds,
                _ => estimate.remaining_nodes,
            };
            Some((f64::from(measured.median_seconds) - f64::from(assumed.seconds)).abs() * f64::from(rounds))
        })
        .sum()
}

/// The admin's kubeconfig of the test cluster, as `numo plan` would infer it.
async fn admin_kubeconfig() -> anyhow::Result<kube::Config> {
    let cluster = numo_testkit::cluster().await?;
    let file = kube::config::Kubeconfig::read_from(cluster.kubeconfig())?;
    Ok(kube::Config::from_custom_kubeconfig(file, &Default::default()).await?)
}

/// `numo plan <ns>/<name> --alertmanager-url <url>`, as the command builds it.
async fn numo_plan(setup: &Setup, name: &str, alertmanager: Option<&str>) -> anyhow::Result<preview::Preview> {
    let args = preview::caller::AlertmanagerArgs { url: alertmanager.map(String::from), ..Default::default() };
    preview::numo_plan(admin_kubeconfig().await?, &setup.ns, name, None, &args).await.map_err(anyhow::Error::msg)
}

/// What a user reads of the operator and of the preview alike: what holds the first node (check and words), the
/// phase, and the node that starts.
type Seen = (Vec<numo::api::Blocker>, Option<RunPhase>, Option<String>);

fn previewed(p: &preview::Preview) -> Seen {
    (p.held_by.clone(), p.phase, p.starts_now.clone())
}

/// The nodes whose gate Jobs numo created, the first first.
async fn gated_nodes(setup: &Setup) -> anyhow::Result<Vec<String>> {
    let mut gates: Vec<(Option<k8s_openapi::jiff::Timestamp>, String)> = setup
        .jobs()
        .await?
        .iter()
        .filter(|j| j.labels().get(numo::labels::JOB_PHASE).map(String::as_str) == Some("gate"))
        .filter_map(|j| {
            Some((j.creation_timestamp().map(|t| t.0), j.annotations().get(numo::jobs::NODE_ANNOTATION)?.clone()))
        })
        .collect();
    gates.sort();
    Ok(gates.into_iter().map(|(_, node)| node).collect())
}

/// Waits until the operator's status is held by exactly `checks` with its pools steered, and returns what it shows.
async fn operator_held_by(setup: &Setup, name: &str, checks: &'static [&'static str]) -> anyhow::Result<Seen> {
    let rc = numo_testkit::wait_until(&setup.run_configs(), name, ROLLOUT, &format!("held by {checks:?}"), move |rc| {
        let status = rc.status.clone().unwrap_or_default();
        let held: Vec<&str> = status.blocked_by.iter().map(|b| b.check.as_str()).collect();
        numo::conditions::is_true(&status.conditions, "MCPUpdated") && held == checks
    })
    .await?;
    let status = rc.status.unwrap_or_default();
    Ok((status.blocked_by, status.phase, gated_nodes(setup).await?.into_iter().next()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numo_plan_holds_and_starts_as_the_operator_does_with_budgets_alerts_and_custom_checks() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Patch, PatchParams, PostParams};
    use kube::Api;
    use numo::api::check;

    let alertmanager = numo_testkit::alertmanager::Alertmanager::start().await?;
    let mut setup = Setup::new("plan-parity", 2).await?;
    setup.ask_alertmanager(&alertmanager.url);
    let pp = PostParams::default();
    // A custom check on a ConfigMap that says the storage is healthy, which numo may read in this namespace.
    let storage: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "storage"}, "data": {"health": "HEALTH_OK"}}))?;
    Api::<ConfigMap>::namespaced(setup.client.clone(), &setup.ns).create(&pp, &storage).await?;
    let grant = ("numo-reads-configmaps", Some(setup.ns.as_str()), ("", "configmaps"));
    numo_testkit::rbac::grant_operator_read(&setup.client, grant.0, grant.1, grant.2).await?;
    // A database pod on worker-0, the first node, and a budget that allows it no disruption.
    let pods = setup.database_held_by_budget("worker-0").await?;
    let custom = json!([{
        "apiVersion": "v1", "kind": "ConfigMap", "namespace": setup.ns, "name": "storage",
        "expression": "object.data.health == 'HEALTH_OK'", "message": "the storage is not healthy"
    }]);
    let checks = json!({"healthChecks": {"alerts": {}, "custom": custom}});
    setup.check_workers("parity", job_spec("1s", false), None, checks).await?;
    alertmanager.fire(&[("alertname", "EtcdMembersDown"), ("severity", "critical"), ("job", "etcd")]).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    let am = Some(alertmanager.url.as_str());

    // (a) The critical alert fires and the budget covers worker-0's pod: the operator and numo plan are held by
    // both, with the same words, and start nothing.
    let operator = operator_held_by(&setup, "parity", &[check::POD_DISRUPTION_BUDGETS, check::ALERTS]).await?;
    let plan = numo_plan(&setup, "parity", am).await?;
    println!("{}", preview::table(&plan));
    assert_eq!(previewed(&plan), operator, "{plan:?}");
    assert_eq!(operator.2, None, "no node starts");
    let alert = operator.0.iter().find(|b| b.check == check::ALERTS).map(|b| b.message.as_str());
    assert_eq!(alert, Some("alert EtcdMembersDown (job=etcd, severity=critical) fires"));
    assert!(plan.notes.is_empty(), "numo plan asked Alertmanager: {:?}", plan.notes);
    // Without an Alertmanager, numo plan says it took no alert to fire; with one it cannot ask, it holds as the
    // operator would, saying why.
    let unasked = numo_plan(&setup, "parity", None).await?;
    let checks_of = |p: &preview::Preview| p.held_by.iter().map(|b| b.check.clone()).collect::<Vec<_>>();
    assert_eq!(checks_of(&unasked), [check::POD_DISRUPTION_BUDGETS]);
    assert_eq!(unasked.notes, [preview::caller::NO_ALERTMANAGER]);
    assert!(preview::table(&unasked).contains("--alertmanager-url"), "{}", preview::table(&unasked));
    let unreachable = numo_plan(&setup, "parity", Some("http://127.0.0.1:1")).await?;
    assert_eq!(checks_of(&unreachable), [check::POD_DISRUPTION_BUDGETS, check::ALERTS]);
    let why = unreachable.held_by.iter().find(|b| b.check == check::ALERTS).map(|b| b.message.clone());
    let why = why.unwrap_or_default();
    assert!(
        why.starts_with("Alertmanager at http://127.0.0.1:1 cannot be queried") && why.ends_with("alerts are unknown")
    );

    // (b) The alert is silenced: the budget alone holds worker-0, for the operator and numo plan alike.
    alertmanager.silence("EtcdMembersDown").await?;
    let operator = operator_held_by(&setup, "parity", &[check::POD_DISRUPTION_BUDGETS]).await?;
    let plan = numo_plan(&setup, "parity", am).await?;
    assert_eq!(previewed(&plan), operator, "{plan:?}");
    let expected = format!(
        "PodDisruptionBudget {ns}/pg-pdb allows no disruption and covers pod {ns}/pg-1 on worker-0",
        ns = setup.ns
    );
    assert_eq!(operator.0[0].message, expected);
    assert!(preview::table(&plan).contains(&format!("Held now by PodDisruptionBudgets: {expected}")));

    // (c) The run config is paused, so that numo starts nothing while numo plan looks; the database leaves
    // worker-0. numo plan (which shows a paused run config as resumed) starts worker-0; resumed, so does numo.
    let runs = setup.run_configs();
    runs.patch("parity", &PatchParams::default(), &Patch::Merge(json!({"spec": {"paused": true}}))).await?;
    numo_testkit::wait_until(&runs, "parity", ROLLOUT, "the pause seen", |rc| {
        rc.status.as_ref().and_then(|s| s.observed_generation) == rc.metadata.generation
    })
    .await?;
    pods.delete("pg-1", &Default::default()).await?;
    let gone = tokio::time::Instant::now() + Duration::from_secs(60);
    while pods.get_opt("pg-1").await?.is_some() {
        anyhow::ensure!(tokio::time::Instant::now() < gone, "pod pg-1 is still there");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let plan = numo_plan(&setup, "parity", am).await?;
    println!("{}", preview::table(&plan));
    assert!(gated_nodes(&setup).await?.is_empty(), "numo started nothing while paused");
    runs.patch("parity", &PatchParams::default(), &Patch::Merge(json!({"spec": {"paused": false}}))).await?;
    let started = numo_testkit::wait_until(&runs, "parity", ROLLOUT, "a node started", |rc| {
        rc.status.as_ref().is_some_and(|s| s.nodes.iter().any(|n| n.phase != numo::api::NodePhase::Pending))
    })
    .await?;
    let status = started.status.unwrap_or_default();
    let first = gated_nodes(&setup).await?.into_iter().next();
    assert_eq!(previewed(&plan), (status.blocked_by, status.phase, first), "{plan:?}");
    assert_eq!(plan.starts_now.as_deref(), Some("worker-0"));
    setup.wait_phase("parity", RunPhase::Completed, ROLLOUT).await?;
    Ok(())
}
