//! The console plugin end to end during a live rollout: its PRODUCTION build (`console-plugin/dist`), served by
//! numo's own HTTPS server (in this process, the certificate signed by a test CA), loaded by the console shell
//! (`console-plugin/e2e/shell`: the console 4.22's plugin loader and share scope, as `tests/console_plugin_load.rs`
//! checks it) in Debian's headless Chromium, driven by `console-plugin/e2e/run.mjs` through the shell's proxy to the
//! test cluster's API server, while numo (in this process) gates the rollout: the rows of the run config's Rollout
//! tab advance with the page open, a degraded ClusterOperator shows as the hold (and in the next node's Upgrade gate
//! item), Pause and Resume set `spec.paused`, Retry (from the Actions menu the console builds from the plugin's
//! `console.action/resource-provider` hook) and Skip set numo's annotations on a failed node. The screenshots are
//! kept in `target/test-output/console-plugin/`.
//!
//! Needs the plugin's build and the shell's (`make test` does both): `hack/console-plugin.sh build` and
//! `hack/console-plugin.sh shell`; Node.js and Chromium (`hack/install-prerequisites.sh`); skipped with
//! `NUMO_SKIP_BROWSER=1`.

mod support;

use std::time::Duration;

use kube::ResourceExt;
use numo::api::RunPhase;
use numo_simulator::faults;
use numo_testkit::browser_script;
use numo_testkit::kwok::JOB_RESULT;
use serde_json::{json, Value};
use support::*;

/// The checks run.mjs must report, each once and passed, in this order.
const CHECKS: [&str; 17] = [
    "page-loaded",
    "world-upgrade",
    "row-gating",
    "world-degrade",
    "row-advances",
    "progress-advances",
    "hold-shown",
    "node-status-held",
    "pause-sets-paused",
    "resume-sets-paused",
    "world-break-gate",
    "world-recover",
    "node-failed",
    "retry-annotates",
    "retry-runs-again",
    "world-fix-gate",
    "skip-annotates",
];
/// After the checks above, before `done`.
const LAST_CHECKS: [&str; 3] = ["rollout-goes-on", "no-page-errors", "done"];

const WORKERS: [&str; 4] = ["worker-0", "worker-1", "worker-2", "worker-3"];
/// The health check's message while the ClusterOperator is degraded (what the hold reason shows).
const HOLD_TEXT: &str = "ClusterOperator ingress is Degraded";
/// How long run.mjs may take, all stages (it has its own limit a little shorter).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_follows_a_live_rollout_and_its_actions_reach_the_run_config() -> anyhow::Result<()> {
    let Some(mut shell) = browser_script::console_shell("console_plugin") else {
        return Ok(());
    };

    let mut setup = Setup::new("console-plugin", WORKERS.len()).await?;
    // numo's plugin server draws the timelines with the projections of the operator running here.
    shell.projections = setup.projections.clone();
    // Gate Jobs slow enough that the page sees each node gating before it is done.
    setup.check_workers("gated", job_spec("6s", false), None, json!({"healthChecks": {}})).await?;
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;

    let checks = shell
        .run(
            "run.mjs",
            &script_args(&setup.ns),
            "console-plugin",
            SCRIPT_TIMEOUT,
            "screenshots, e2e.log and plugin-requests.json",
        )
        .await?
        .checks;
    let names: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    let expected: Vec<&str> = CHECKS.iter().chain(LAST_CHECKS.iter()).copied().collect();
    assert_eq!(names, expected, "the checks run.mjs reported, in order");

    // What the page showed, as run.mjs saw it.
    let check = |name: &str| checks.iter().find(|c| c["check"] == name).cloned().unwrap_or_default();
    assert_eq!(check("row-advances")["node"], "worker-0");
    assert_eq!(check("row-advances")["reloaded"], false, "the rows advanced without a reload");
    // The timeline followed too: numo laid it out, the plugin fetched it through the console's plugin proxy with the
    // user's token (every fetch answered), and drew the first node done and the hold.
    let timeline = check("progress-advances")["timeline"].clone();
    assert_eq!(timeline["outcome"], "Done", "{timeline}");
    assert!(timeline["fetches"].as_u64().is_some_and(|n| n >= 2), "fetched again as the status changed: {timeline}");
    assert_eq!(timeline["statuses"], json!([200]), "{timeline}");
    let path = format!("/api/proxy/plugin/{}/numo/api/timeline/{}/gated", numo::console_plugin::NAME, setup.ns);
    assert_eq!(timeline["path"], path.as_str(), "{timeline}");
    let held = check("hold-shown");
    assert!(held["reason"].as_str().is_some_and(|r| r.contains(HOLD_TEXT)), "{held}");
    assert!(held["timelineHolds"].as_u64().is_some_and(|n| n >= 1), "the hold on the timeline: {held}");
    let status = check("node-status-held");
    assert_eq!(status["node"], "worker-1");
    assert!(status["status"].as_str().is_some_and(|s| s.contains(HOLD_TEXT)), "{status}");
    // What the page sent, as the proxy saw it: the leaves its PATCH set.
    let sets = |name: &str| check(name)["sent"]["sets"].clone();
    assert_eq!(sets("pause-sets-paused")["/spec/paused"], true);
    assert_eq!(sets("resume-sets-paused")["/spec/paused"], false);
    let annotation = |key: &str| format!("/metadata/annotations/{key}");
    assert_eq!(sets("retry-annotates")[annotation(numo::labels::RETRY_ANNOTATION)], "worker-1");
    assert_eq!(sets("skip-annotates")[annotation(numo::labels::SKIP_ANNOTATION)], "worker-1");

    // numo took the UI's word: the skipped node is skipped, not paused, and the rollout completes.
    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.skipped_nodes, ["worker-1"], "{status:?}");
    assert!(!done.spec.paused);
    assert_eq!(done.annotations().get(numo::labels::SKIP_ANNOTATION).map(String::as_str), Some("worker-1"));
    Ok(())
}

/// run.mjs's own arguments: the run config, its nodes, and the world's faults as merge patches it applies through
/// its proxy, at its stages.
fn script_args(ns: &str) -> Vec<String> {
    let rule = format!("/apis/openshift-optional.skrzypek.io/v1alpha1/namespaces/{ns}/mutexrules/check");
    let operator = "/apis/config.openshift.io/v1/clusteroperators/ingress";
    let gate =
        |result: Value| json!({"spec": {"jobSpec": {"template": {"metadata": {"annotations": {JOB_RESULT: result}}}}}});
    let degraded = |message: Value| json!({"metadata": {"annotations": {faults::DEGRADED: message}}});
    let upgrade = json!({"spec": {"desiredUpdate": {
        "version": NEW, "image": format!("quay.io/openshift-release-dev/ocp-release:{NEW}-x86_64")
    }}});
    let patches = [
        ("upgrade", "/apis/config.openshift.io/v1/clusterversions/version", upgrade),
        ("degrade", operator, degraded(json!("2 of 2 router pods crash"))),
        ("recover", operator, degraded(Value::Null)),
        ("break-gate", &rule, gate(json!("fail"))),
        ("fix-gate", &rule, gate(Value::Null)),
    ];
    let mut args: Vec<String> = vec![
        "--namespace".into(),
        ns.into(),
        "--run-config".into(),
        "gated".into(),
        "--nodes".into(),
        WORKERS.join(","),
        "--hold-text".into(),
        HOLD_TEXT.into(),
    ];
    for (stage, path, patch) in patches {
        args.push("--patch".into());
        args.push(format!("{stage}={path}={patch}"));
    }
    args
}
