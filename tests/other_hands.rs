//! Other hands on what numo holds where its admission policy is not in force (OpenShift before 4.17), against the
//! real kube-apiserver with the simulated CVO and MCO (whose MCO moves an unpaused pool's nodes as soon as it sees
//! the pool): the console's "Resume all updates", a foreign selector on the canary, a GitOps self-heal that keeps
//! changing the pools back, a script that strips the rule labels from every held node, and a restart of numo while
//! a foreign change is unresolved. In every case numo puts the change back, says who made it, and no node counts as
//! gated unless its gate Jobs succeeded before the MCO moved it (a node the MCO moved first is reported `Ungated`).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::api::{MutexRunConfig, NodePhase, RunPhase};
use numo::openshift::MachineConfigPool;
use serde_json::json;
use support::*;

/// A rollout of four workers, one at a time, with a 3 s gate Job (so nodes wait held) and a 1 s cleanup Job.
async fn rollout(test: &str, name: &str) -> anyhow::Result<(Setup, DesiredSeen)> {
    let mut setup = Setup::new(test, 4).await?;
    setup.policy = false;
    setup.check_workers(name, job_spec("3s", false), Some(job_spec("1s", false)), json!({})).await?;
    let desired = record_desired(&mut setup);
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase(name, "worker-0", NodePhase::Gating).await?;
    Ok((setup, desired))
}

/// Writes `patch` (a merge patch) to pool `pool` as field manager `manager`, as another tool would.
async fn patch_pool(setup: &Setup, pool: &str, manager: &str, patch: serde_json::Value) -> anyhow::Result<()> {
    let params = PatchParams { field_manager: Some(manager.into()), ..Default::default() };
    Api::<MachineConfigPool>::all(setup.client.clone()).patch(pool, &params, &Patch::Merge(&patch)).await?;
    Ok(())
}

/// Replaces pool `pool`'s `spec.nodeSelector` with `selector` as field manager `manager`.
async fn set_selector(setup: &Setup, pool: &str, manager: &str, selector: &serde_json::Value) -> anyhow::Result<()> {
    let params = PatchParams { field_manager: Some(manager.into()), ..Default::default() };
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/nodeSelector", "value": selector}]))?;
    Api::<MachineConfigPool>::all(setup.client.clone()).patch(pool, &params, &Patch::<()>::Json(patch)).await?;
    Ok(())
}

/// How long until `pool`'s `paused` flag is `paused` again (numo's answer), waiting at most 30 s.
async fn until_paused(setup: &Setup, pool: &str, since: Instant) -> anyhow::Result<Duration> {
    let api = Api::<MachineConfigPool>::all(setup.client.clone());
    numo_testkit::wait_until(&api, pool, Duration::from_secs(30), "paused again", |p: &MachineConfigPool| {
        p.spec.paused
    })
    .await?;
    Ok(since.elapsed())
}

/// Lets the rollout `name` finish: a node reported Ungated holds it (onFailure Hold), and the retry annotation lets
/// it go on, as an admin would once they looked at that node. Returns the final run config.
async fn finish(setup: &Setup, name: &str) -> anyhow::Result<MutexRunConfig> {
    let deadline = Instant::now() + ROLLOUT;
    loop {
        let rc = setup.run_configs().get(name).await?;
        let status = rc.status.clone().unwrap_or_default();
        if status.phase == Some(RunPhase::Completed) {
            return Ok(rc);
        }
        let waiting = status.nodes.iter().find(|e| e.phase == NodePhase::Ungated && e.accepted_at.is_none());
        if let (Some(RunPhase::Failed), Some(node)) = (status.phase, waiting) {
            let patch = json!({"metadata": {"annotations": {numo::labels::RETRY_ANNOTATION: node.name}}});
            setup.run_configs().patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
        }
        anyhow::ensure!(Instant::now() < deadline, "the rollout did not complete: {status:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn has_event(events: &[(String, String, String)], reason: &str, words: &[&str]) -> bool {
    events.iter().any(|(kind, r, note)| kind == "Warning" && r == reason && words.iter().all(|w| note.contains(w)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_all_updates_in_the_console_mid_rollout_is_undone_and_reported() -> anyhow::Result<()> {
    let (setup, desired) = rollout("console-resume", "console").await?;
    // The console's "Resume all updates" patches spec.paused as the browser's field manager.
    let since = Instant::now();
    patch_pool(&setup, "worker", "Mozilla", json!({"spec": {"paused": false}})).await?;
    let took = until_paused(&setup, "worker", since).await?;
    eprintln!("worker paused again {took:?} after the console unpaused it");
    let events = setup
        .events_when("console", |e| has_event(e, "ForeignChange", &["MachineConfigPool/worker spec.paused", "Mozilla"]))
        .await?;
    assert!(has_event(&events, "ForeignChange", &["MachineConfigPool/worker spec.paused", "Mozilla"]), "{events:?}");
    // numo queues its Events before it writes the status that records the change.
    let recorded = "status.foreignChanges names the console's write";
    numo_testkit::wait_until(&setup.run_configs(), "console", Duration::from_secs(30), recorded, |rc| {
        let records = rc.status.as_ref().map(|s| s.foreign_changes.as_slice()).unwrap_or_default();
        records.iter().any(|r| {
            r.field == "spec.paused" && r.changed_by.contains("Mozilla") && r.object == "MachineConfigPool/worker"
        })
    })
    .await?;
    let rc = finish(&setup, "console").await?;
    let ungated = honest(&setup, &rc, &desired).await?;
    eprintln!("ungated: {ungated:?} (the simulated MCO moves an unpaused pool's nodes as soon as it sees it)");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_selector_on_the_canary_is_put_back_and_the_worker_pools_is_left_alone() -> anyhow::Result<()> {
    let (setup, desired) = rollout("foreign-selector", "selectors").await?;
    let steered = setup.pools().await?;
    let canary = json!({"matchLabels": {"node-role.kubernetes.io/worker": ""}, "matchExpressions": [{"key": "isCanary", "operator": "Exists"}]});
    set_selector(&setup, "canary", "kubectl-edit", &canary).await?;
    let api = Api::<MachineConfigPool>::all(setup.client.clone());
    let want = steered["canary"].1.clone();
    numo_testkit::wait_until(&api, "canary", Duration::from_secs(30), "steered again", move |p: &MachineConfigPool| {
        serde_json::to_value(&p.spec.node_selector).is_ok_and(|s| s == want)
    })
    .await?;
    let events = setup
        .events_when("selectors", |e| {
            has_event(e, "ForeignChange", &["MachineConfigPool/canary spec.nodeSelector", "kubectl-edit"])
        })
        .await?;
    assert!(!events.iter().any(|(_, _, note)| note.contains("MachineConfigPool/worker")), "{events:?}");
    let rc = finish(&setup, "selectors").await?;
    assert_eq!(honest(&setup, &rc, &desired).await?, Vec::<String>::new());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gitops_self_heal_every_two_seconds_ends_in_a_hold_not_a_fight() -> anyhow::Result<()> {
    let (mut setup, desired) = rollout("self-heal", "healed").await?;
    // What git has: the pools' selectors as they were before the rollout. Every 2 s for 30 s, a self-heal puts
    // back whatever differs.
    let git = BTreeMap::from([
        ("worker", json!({"matchLabels": {"node-role.kubernetes.io/worker": ""}})),
        (
            "canary",
            json!({"matchLabels": {"node-role.kubernetes.io/worker": ""}, "matchExpressions": [{"key": "isCanary", "operator": "Exists"}]}),
        ),
    ]);
    let writes = Arc::new(Mutex::new(0u32));
    let healer = {
        let (client, writes) = (setup.client.clone(), writes.clone());
        let git = git.clone();
        async move {
            let api = Api::<MachineConfigPool>::all(client);
            let params = PatchParams { field_manager: Some("argocd-controller".into()), ..Default::default() };
            let end = Instant::now() + Duration::from_secs(30);
            while Instant::now() < end {
                for (pool, selector) in &git {
                    let Ok(current) = api.get(pool).await else { continue };
                    if serde_json::to_value(&current.spec.node_selector).is_ok_and(|s| s != *selector) {
                        let patch = json!([{"op": "replace", "path": "/spec/nodeSelector", "value": selector}]);
                        let Ok(patch) = serde_json::from_value::<json_patch::Patch>(patch) else { continue };
                        if api.patch(pool, &params, &Patch::<()>::Json(patch)).await.is_ok() {
                            *writes.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    };
    let healing = setup.world.spawn(healer);
    let events = setup
        .events_when("healed", |e| has_event(e, "ForeignChangeConceded", &["argocd-controller", "ignoreDifferences"]))
        .await?;
    assert!(has_event(&events, "ForeignChangeConceded", &["argocd-controller", "ignoreDifferences"]), "{events:?}");
    // numo holds the next node while it does not write the selector.
    let rc = numo_testkit::wait_until(
        &setup.run_configs(),
        "healed",
        Duration::from_secs(30),
        "held",
        |rc: &MutexRunConfig| {
            rc.status.as_ref().is_some_and(|s| s.blocked_by.iter().any(|b| b.check == "ForeignChange"))
        },
    )
    .await?;
    let contested = rc.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "Contested").cloned());
    assert_eq!(contested.map(|c| c.status), Some("True".to_string()));
    tokio::time::sleep(Duration::from_secs(32)).await;
    setup.world.stop(healing);
    let healer_writes = *writes.lock().unwrap_or_else(|e| e.into_inner());
    eprintln!("the self-heal wrote {healer_writes} times in 30 s");
    assert!(healer_writes < 15, "numo stopped fighting: the self-heal found little to change back ({healer_writes})");
    let rc = finish(&setup, "healed").await?;
    assert_eq!(honest(&setup, &rc, &desired).await?, Vec::<String>::new(), "no node upgraded ungated");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_labels_stripped_from_every_held_node_are_put_back_and_every_node_stays_gated() -> anyhow::Result<()> {
    let (setup, desired) = rollout("stripped-labels", "stripped").await?;
    let label = numo::labels::rule_label("check", &setup.ns);
    let nodes = Api::<Node>::all(setup.client.clone());
    let params = PatchParams { field_manager: Some("relabel-script".into()), ..Default::default() };
    let patch = Patch::Merge(json!({"metadata": {"labels": {label.clone(): null}}}));
    let strips = ["worker-1", "worker-2", "worker-3"].map(|n| nodes.patch(n, &params, &patch));
    for result in futures::future::join_all(strips).await {
        result?;
    }
    // Each stripped node is reported and its labels put back. The canary takes only the nodes numo marked
    // released, so removing labels leaves every node in its paused pool: none is Ungated.
    let told = |e: &[(String, String, String)], node: &str| {
        has_event(e, "ForeignChange", &[&format!("Node/{node} metadata.labels")])
    };
    let events =
        setup.events_when("stripped", |e| ["worker-1", "worker-2", "worker-3"].iter().all(|n| told(e, n))).await?;
    for node in ["worker-1", "worker-2", "worker-3"] {
        assert!(told(&events, node), "{node}: {events:?}");
    }
    let rc = finish(&setup, "stripped").await?;
    assert_eq!(honest(&setup, &rc, &desired).await?, Vec::<String>::new(), "every node gated");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_unpaused_while_numo_is_down_is_paused_again_when_it_is_back() -> anyhow::Result<()> {
    let (mut setup, desired) = rollout("restart-contested", "restarted").await?;
    setup.kill_operator();
    patch_pool(&setup, "worker", "kubectl-patch", json!({"spec": {"paused": false}})).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let since = Instant::now();
    setup.start_operator().await?;
    let took = until_paused(&setup, "worker", since).await?;
    eprintln!("worker paused again {took:?} after numo started");
    let events =
        setup.events_when("restarted", |e| has_event(e, "ForeignChange", &["spec.paused", "kubectl-patch"])).await?;
    assert!(
        has_event(&events, "ForeignChange", &["MachineConfigPool/worker spec.paused", "kubectl-patch"]),
        "{events:?}"
    );
    let rc = finish(&setup, "restarted").await?;
    honest(&setup, &rc, &desired).await?;
    Ok(())
}
