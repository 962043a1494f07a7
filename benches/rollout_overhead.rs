//! Measures numo's own overhead in a gated rollout: a 10-node upgrade in the simulated OpenShift, with two rules
//! (gate and cleanup Jobs of 1s each). Every step's trigger (a Job finishing, a node reaching the version) and numo's
//! reaction (the next Job created, the labels removed) are observed through watches; the gaps between them are the
//! operator's overhead. Prints the breakdown; asserts nothing about time.
//!
//! By default the cluster has no NFD: numo reads each node's release from its rendered config. `NFD=1` turns on the
//! simulator's NFD stand-in, so numo reads the release label instead (written after the node's config moved).
//!
//!   cargo bench --bench rollout_overhead          (WORKERS=10 by default)

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use numo::api::RunPhase;
use serde_json::json;
use support::*;

/// What the watches saw, in order, with the time they saw it.
#[derive(Clone, Debug)]
enum Step {
    JobCreated { phase: String },
    JobDone,
    Released,
    Upgraded,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let workers: usize = std::env::var("WORKERS").ok().and_then(|w| w.parse().ok()).unwrap_or(10);
    let nfd = if std::env::var("NFD").is_ok_and(|v| v == "1") { Nfd::On } else { Nfd::Off };
    let mut setup = Setup::with("overhead", workers, nfd).await?;
    setup.rule("check", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.rule("backup", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("bench", &["check", "backup"], &["workers"], json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("bench", RunPhase::Idle, Duration::from_secs(60)).await?;

    let seen: Arc<Mutex<Vec<(SystemTime, Step)>>> = Arc::default();
    record_jobs(&mut setup, seen.clone());
    record_nodes(&mut setup, seen.clone());
    let started = SystemTime::now();
    setup.upgrade_cluster(NEW).await?;
    setup.wait_phase("bench", RunPhase::Completed, Duration::from_secs(900)).await?;
    let total = SystemTime::now().duration_since(started)?;

    let steps = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let mut gaps: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
    let mut last_trigger: Option<SystemTime> = None;
    for (at, step) in &steps {
        match step {
            Step::JobDone | Step::Upgraded => last_trigger = Some(*at),
            Step::JobCreated { phase, .. } => {
                if let Some(trigger) = last_trigger.take() {
                    let kind = if phase == "gate" {
                        "job done → next gate Job"
                    } else {
                        "job done/node upgraded → cleanup Job"
                    };
                    gaps.entry(kind).or_default().push(at.duration_since(trigger).unwrap_or_default());
                }
            }
            Step::Released => {
                if let Some(trigger) = last_trigger.take() {
                    gaps.entry("last gate Job done → labels removed")
                        .or_default()
                        .push(at.duration_since(trigger).unwrap_or_default());
                }
            }
        }
    }
    let measured: usize = gaps.values().map(Vec::len).sum();
    // Per node: a gate Job after each but the first, the release, and a cleanup Job per rule (a few may be missed at
    // the rollout's edges); far fewer means the watches saw too little to measure anything.
    anyhow::ensure!(
        measured >= workers * 3,
        "the watches saw only {measured} steps of {workers} nodes; nothing measured"
    );
    let overhead: Duration = gaps.values().flatten().sum();
    println!(
        "rollout of {workers} nodes ({}), 2 rules with gate and cleanup Jobs (1s each): {:.1}s in all",
        if nfd == Nfd::On { "NFD labels" } else { "no NFD" },
        total.as_secs_f64()
    );
    for (kind, durations) in &gaps {
        let sum: Duration = durations.iter().sum();
        let max = durations.iter().max().copied().unwrap_or_default();
        println!(
            "  {kind:<40} {:>3} steps, mean {:>6.1} ms, max {:>6.1} ms",
            durations.len(),
            sum.as_secs_f64() * 1000.0 / durations.len().max(1) as f64,
            max.as_secs_f64() * 1000.0
        );
    }
    println!(
        "numo's own overhead between steps: {:.2}s of {:.1}s ({:.1}%)",
        overhead.as_secs_f64(),
        total.as_secs_f64(),
        100.0 * overhead.as_secs_f64() / total.as_secs_f64()
    );
    Ok(())
}

fn record_jobs(setup: &mut Setup, seen: Arc<Mutex<Vec<(SystemTime, Step)>>>) {
    let api: Api<Job> = Api::all(setup.client.clone());
    setup.world.spawn(async move {
        let config = watcher::Config::default().labels("app.kubernetes.io/managed-by=numo");
        let mut done = std::collections::BTreeSet::new();
        let mut created = std::collections::BTreeSet::new();
        let events = watcher::watcher(api, config).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            // Init/InitDone/Delete and watch errors (the watcher retries) say nothing about a step.
            let Ok(Event::Apply(job) | Event::InitApply(job)) = event else { continue };
            let phase = job.labels().get("openshift-optional.skrzypek.io/phase").cloned().unwrap_or_default();
            let now = SystemTime::now();
            if created.insert(job.name_any()) {
                push(&seen, now, Step::JobCreated { phase });
            }
            let complete = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) > 0;
            if complete && done.insert(job.name_any()) {
                push(&seen, now, Step::JobDone);
            }
        }
    });
}

fn record_nodes(setup: &mut Setup, seen: Arc<Mutex<Vec<(SystemTime, Step)>>>) {
    let client = setup.client.clone();
    let api: Api<Node> = Api::all(client.clone());
    setup.world.spawn(async move {
        let mut rendered = BTreeMap::new();
        let mut held = std::collections::BTreeSet::new();
        let mut upgraded = std::collections::BTreeSet::new();
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(node) | Event::InitApply(node)) = event else { continue };
            let name = node.name_any();
            let now = SystemTime::now();
            let is_held = node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX));
            if is_held {
                held.insert(name.clone());
            } else if held.remove(&name) {
                push(&seen, now, Step::Released);
            }
            let config = node.annotations().get(numo::openshift::CURRENT_CONFIG);
            if config.is_some_and(|c| !rendered.contains_key(c)) {
                // A config not seen yet (a new rendered config): read them again; this happens once per pool.
                rendered = rendered_versions(&client).await.unwrap_or(rendered);
            }
            let at_new = version_of(&node, &rendered).as_deref() == Some(NEW);
            if at_new && name.starts_with("worker") && upgraded.insert(name.clone()) {
                push(&seen, now, Step::Upgraded);
            }
        }
    });
}

fn push(seen: &Arc<Mutex<Vec<(SystemTime, Step)>>>, at: SystemTime, step: Step) {
    if let Ok(mut s) = seen.lock() {
        s.push((at, step));
    }
}
