//! numo and the platform's own writers, on each OpenShift release the simulator plays, numo as installed (its own
//! ServiceAccount, its admission policy `numo-holds` in force), `healthChecks: {}` (every default check on):
//! - on 4.21 the machine-config operator puts the `worker` pool's selectors back to its manifest on every sync, as
//!   its own ServiceAccount; on 4.22 it enforces only the pool's metadata;
//! - numo never steers the built-in pool's selectors, so the operator has nothing to put back and nothing of it is
//!   refused: `machine-config` never turns Degraded, no health check holds on it, no `Contested`, no Warning;
//! - every worker is gated: its `desiredConfig` changes only after its gate Job succeeded.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Patch, PatchParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use numo::api::{MutexRunConfig, RunPhase};
use numo::openshift::{ClusterOperator, MachineConfigPool};
use numo_simulator::OpenShiftRelease;
use serde_json::json;
use support::*;

const WORKERS: usize = 6;

/// Every `reason: message` of condition `type_` while it was True on object `name` of `api`, as a watch saw it.
fn record_true<K>(
    setup: &mut Setup,
    api: Api<K>,
    name: &str,
    type_: &'static str,
    conditions: impl Fn(K) -> Vec<(String, String, String, String)> + Send + 'static,
) -> Arc<Mutex<Vec<String>>>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    setup.world.spawn(async move {
        let mut stream = watcher(api, config).applied_objects().boxed();
        while let Some(Ok(object)) = stream.next().await {
            for (_, _, reason, message) in conditions(object).into_iter().filter(|(t, s, ..)| t == type_ && s == "True")
            {
                if let Ok(mut seen) = record.lock() {
                    seen.push(format!("{reason}: {message}"));
                }
            }
        }
    });
    seen
}

/// Every `Degraded=True` the `machine-config` ClusterOperator reported, as `reason: message`.
fn record_machine_config_degraded(setup: &mut Setup) -> Arc<Mutex<Vec<String>>> {
    let operators = Api::<ClusterOperator>::all(setup.client.clone());
    record_true(setup, operators, "machine-config", "Degraded", |operator: ClusterOperator| {
        let conditions = operator.status.map(|s| s.conditions).unwrap_or_default();
        conditions
            .into_iter()
            .map(|c| (c.type_, c.status, c.reason.unwrap_or_default(), c.message.unwrap_or_default()))
            .collect()
    })
}

/// Every reason `Contested` was True with, as the run config's watch saw it.
fn record_contested(setup: &mut Setup, name: &str) -> Arc<Mutex<Vec<String>>> {
    let run_configs = setup.run_configs();
    record_true(setup, run_configs, name, "Contested", |rc: MutexRunConfig| {
        let conditions = rc.status.map(|s| s.conditions).unwrap_or_default();
        conditions.into_iter().map(|c| (c.type_, c.status, c.reason, c.message)).collect()
    })
}

async fn a_six_worker_upgrade_meets_the_platform_and_never_fights_it(release: &str) -> anyhow::Result<()> {
    let openshift = OpenShiftRelease::parse(release).map_err(anyhow::Error::msg)?;
    let test = format!("platform-{}", release.replace('.', "-"));
    let mut setup = Setup::on(&test, WORKERS, Nfd::Off, openshift).await?;
    assert!(setup.policy, "numo runs as installed, its policy in force");
    setup
        .check_workers("gated", job_spec("1s", false), Some(job_spec("1s", false)), json!({"healthChecks": {}}))
        .await?;
    let degraded = record_machine_config_degraded(&mut setup);
    let contested = record_contested(&mut setup, "gated");
    let desired = record_desired(&mut setup);
    setup.start_operator().await?;
    // numo puts its admission policy in place beside its first reconciles: the run config may be Idle while
    // ForeignWritesRefused is still Unknown. Wait until it says the policy is in force.
    let in_force = |rc: &MutexRunConfig| {
        rc.status.as_ref().is_some_and(|s| {
            s.phase == Some(RunPhase::Idle) && numo::conditions::is_true(&s.conditions, "ForeignWritesRefused")
        })
    };
    let what = "Idle, ForeignWritesRefused=True (the admission policy is in force)";
    numo_testkit::wait_until(&setup.run_configs(), "gated", Duration::from_secs(60), what, in_force).await?;

    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("gated", "worker-1", numo::api::NodePhase::Gating).await?;
    // Mid-rollout, someone edits the worker pool's selector: the pool is held (claimed, paused), yet its selector
    // is the machine-config operator's, so numo neither refuses the write nor fights it. On 4.21 the operator puts
    // it back at once, as its own ServiceAccount, and the policy lets it.
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let edit = json!({"spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": "", "team": "a"}}}});
    let by_hand = PatchParams { field_manager: Some("kubectl-edit".into()), ..Default::default() };
    pools.patch("worker", &by_hand, &Patch::Merge(&edit)).await?;
    let manifest = json!({"matchLabels": {"node-role.kubernetes.io/worker": ""}});
    if openshift.enforces_pool_selectors() {
        let want = manifest.clone();
        let back =
            numo_testkit::wait_until(&pools, "worker", Duration::from_secs(30), "put back by the MCO", move |p| {
                serde_json::to_value(&p.spec.node_selector).is_ok_and(|s| s == want)
            })
            .await?;
        let managers: Vec<String> = back.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
        assert!(managers.iter().any(|m| m == "machine-config-operator"), "{managers:?}");
    } else {
        // 4.22 leaves the spec to the admin; they take their edit back.
        let undo = json!({"spec": {"nodeSelector": {"matchLabels": {"team": null}}}});
        pools.patch("worker", &PatchParams::default(), &Patch::Merge(&undo)).await?;
    }

    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some(format!("{WORKERS}/{WORKERS}").as_str()), "{status:?}");
    assert_eq!(honest(&setup, &done, &desired).await?, Vec::<String>::new(), "every worker gated");
    let degraded = degraded.lock().map(|d| d.clone()).unwrap_or_default();
    assert!(degraded.is_empty(), "machine-config turned Degraded: {degraded:?}");
    let contested = contested.lock().map(|c| c.clone()).unwrap_or_default();
    assert!(contested.is_empty(), "a platform write taken for another hand: {contested:?}");
    // Health checks may hold a node while the control plane's own node reboots; no Warning says that numo and the
    // platform met.
    let events = setup.events_about("gated").await?;
    let clash = |(kind, reason, note): &&(String, String, String)| {
        kind == "Warning"
            && (["ForeignChange", "ForeignChangeConceded", "NodeUngated", "NodeFailed"].contains(&reason.as_str())
                || note.contains("machine-config")
                || note.contains("MachineConfigPool"))
    };
    let warnings: Vec<_> = events.iter().filter(clash).collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    // The pools end exactly as the platform wants them, no release mark is left.
    let worker = pools.get("worker").await?;
    assert_eq!(serde_json::to_value(&worker.spec.node_selector)?, manifest);
    assert!(!worker.spec.paused);
    for node in setup.nodes().await? {
        assert!(!node.labels().contains_key(numo::labels::RELEASED), "{} keeps its release mark", node.name_any());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_21_the_machine_config_operator_keeps_the_worker_selectors_and_the_rollout_completes() -> anyhow::Result<()>
{
    a_six_worker_upgrade_meets_the_platform_and_never_fights_it("4.21").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_22_the_machine_config_operator_keeps_only_metadata_and_the_rollout_completes() -> anyhow::Result<()> {
    a_six_worker_upgrade_meets_the_platform_and_never_fights_it("4.22").await
}
