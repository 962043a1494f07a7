//! A held pool replaced or deleted mid-rollout, where numo's admission policy is not in force (OpenShift before
//! 4.17): a GitOps tool puts back (PUT) the `worker` and canary pools' manifests from before the rollout, dropping
//! numo's claim; or someone deletes `worker` and the machine-config operator creates it again, unpaused. numo holds
//! them again at once from its own record (`status.heldPools`) with the originals it recorded, reports the writer,
//! never counts a node the MCO took meanwhile as gated (it is `Ungated`, and the retry annotation lets the rollout go
//! on), completes the rollout with exactly one Job of its own per step, and restores the pools exactly. With the policy
//! in force (numo as installed), the API server refuses the replace, the delete, and a rule label removed through a
//! node's status, and every node is gated.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use numo::api::{MutexRunConfig, NodePhase, RunPhase};
use numo::openshift::MachineConfigPool;
use serde_json::json;
use support::*;

const WORKERS: usize = 3;

/// The pool as a manifest kept from before the rollout: its spec and its own labels, nothing numo added.
fn manifest(pool: &MachineConfigPool) -> MachineConfigPool {
    let mut kept = MachineConfigPool::new(&pool.name_any(), pool.spec.clone());
    kept.metadata.labels = pool.metadata.labels.clone();
    kept
}

/// Lets the rollout go on past every Ungated node, one retry at a time, until it completes.
async fn complete(setup: &Setup) -> anyhow::Result<MutexRunConfig> {
    let run_configs = setup.run_configs();
    for _ in 0..=WORKERS {
        let rc =
            numo_testkit::wait_until(&run_configs, "gated", ROLLOUT, "Completed or held", |rc: &MutexRunConfig| {
                let status = rc.status.clone().unwrap_or_default();
                status.phase == Some(RunPhase::Completed)
                    || status.nodes.iter().any(|e| e.phase == NodePhase::Ungated && e.accepted_at.is_none())
            })
            .await?;
        let status = rc.status.clone().unwrap_or_default();
        let Some(ungated) = status.nodes.iter().find(|e| e.phase == NodePhase::Ungated && e.accepted_at.is_none())
        else {
            return Ok(rc);
        };
        let retry = json!({"metadata": {"annotations": {numo::labels::RETRY_ANNOTATION: ungated.name}}});
        run_configs.patch("gated", &PatchParams::default(), &Patch::Merge(&retry)).await?;
        let name = ungated.name.clone();
        numo_testkit::wait_until(&run_configs, "gated", ROLLOUT, "the Ungated node accepted", move |rc| {
            rc.status.as_ref().is_some_and(|s| s.nodes.iter().any(|e| e.name == name && e.accepted_at.is_some()))
        })
        .await?;
    }
    anyhow::bail!("the rollout did not complete")
}

/// Starts a three-worker rollout (with numo's policy in force or not) and returns the pools' manifests from before it.
async fn rollout_under_way(
    setup: &mut Setup,
    policy: bool,
) -> anyhow::Result<(DesiredSeen, BTreeMap<String, MachineConfigPool>)> {
    setup.policy = policy;
    setup.check_workers("gated", job_spec("3s", false), None, json!({})).await?;
    let desired = record_desired(setup);
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let mut before = BTreeMap::new();
    for name in ["worker", "canary"] {
        before.insert(name.to_string(), pools.get(name).await?);
    }
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("gated", "worker-1", NodePhase::Gating).await?;
    Ok((desired, before))
}

/// What the user sees at the end: completed, every node gated or Ungated (never counted), one numo Job per worker,
/// the pools exactly as before, and the writer named.
async fn ends_well(
    setup: &Setup,
    desired: &DesiredSeen,
    before: &BTreeMap<String, MachineConfigPool>,
    writer: &str,
) -> anyhow::Result<()> {
    let done = complete(setup).await?;
    ends_as_before(setup, &done, desired, before).await?;
    let told = |events: &[(String, String, String)]| {
        events.iter().any(|(kind, reason, note)| {
            kind == "Warning"
                && reason == "ForeignChange"
                && note.contains("MachineConfigPool/worker")
                && note.contains(writer)
        })
    };
    let events = setup.events_when("gated", told).await?;
    assert!(told(&events), "{events:?}");
    Ok(())
}

/// Every node gated or Ungated (never counted as done), one numo Job per worker, the pools exactly as before; returns
/// the Ungated nodes.
async fn ends_as_before(
    setup: &Setup,
    done: &MutexRunConfig,
    desired: &DesiredSeen,
    before: &BTreeMap<String, MachineConfigPool>,
) -> anyhow::Result<Vec<String>> {
    let status = done.status.clone().unwrap_or_default();
    let ungated = honest(setup, done, desired).await?;
    assert!(ungated.iter().all(|n| !status.completed_nodes.contains(n)), "{status:?}");
    assert!(status.held_pools.is_empty(), "{:?}", status.held_pools);
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for job in setup.jobs().await?.iter().filter(|j| made_by_numo(j)) {
        let node = job.annotations().get(numo::jobs::NODE_ANNOTATION).cloned().unwrap_or_default();
        *per_node.entry(node).or_default() += 1;
    }
    assert!(per_node.values().all(|n| *n == 1), "no step run twice: {per_node:?}");
    assert!(status.completed_nodes.iter().all(|n| per_node.get(n) == Some(&1)), "none missing: {per_node:?}");
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    for (name, was) in before {
        let now = pools.get(name).await?;
        assert_eq!(now.spec.paused, was.spec.paused, "{name}");
        assert_eq!(now.spec.node_selector, was.spec.node_selector, "{name}");
        assert_eq!(now.spec.max_unavailable, was.spec.max_unavailable, "{name}");
        assert!(!now.annotations().keys().any(|k| k.starts_with("openshift-optional.skrzypek.io/")), "{name}");
    }
    Ok(ungated)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_replaced_mid_rollout_are_held_again_with_their_originals() -> anyhow::Result<()> {
    let mut setup = Setup::new("pools-replaced", WORKERS).await?;
    let (desired, before) = rollout_under_way(&mut setup, false).await?;
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let replace = PostParams { field_manager: Some("kubectl-replace".into()), ..Default::default() };
    for name in ["worker", "canary"] {
        // As a GitOps tool's replace: read, put, and again on a conflict (the machine-config operator writes the
        // pool's status meanwhile).
        let mut attempts = 0;
        loop {
            let mut put = manifest(&before[name]);
            put.metadata.resource_version = pools.get(name).await?.resource_version();
            match pools.replace(name, &replace, &put).await {
                Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => attempts += 1,
                other => break other.map(|_| ())?,
            }
        }
    }
    ends_well(&setup, &desired, &before, "kubectl-replace").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_pool_deleted_mid_rollout_and_created_again_is_held_again() -> anyhow::Result<()> {
    let mut setup = Setup::new("pool-recreated", WORKERS).await?;
    let (desired, before) = rollout_under_way(&mut setup, false).await?;
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let uid = pools.get("worker").await?.uid();
    pools.delete("worker", &DeleteParams::default()).await?;
    // The machine-config operator creates it again from its manifest.
    numo_testkit::wait_until(
        &pools,
        "worker",
        Duration::from_secs(30),
        "created again",
        move |p: &MachineConfigPool| p.uid() != uid,
    )
    .await?;
    ends_well(&setup, &desired, &before, "deleted and created again").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_policy_a_held_pool_is_neither_replaced_nor_deleted_and_no_label_goes_through_the_status(
) -> anyhow::Result<()> {
    let mut setup = Setup::new("pools-refused", WORKERS).await?;
    let (desired, before) = rollout_under_way(&mut setup, true).await?;
    let refused = |result: Result<(), kube::Error>, what: &str| match result {
        Err(kube::Error::Api(status)) if status.code == 403 => {
            assert!(status.message.contains("is held by numo"), "{what}: {}", status.message);
            assert!(status.message.contains("oc delete validatingadmissionpolicybinding numo-holds"), "{what}");
        }
        other => panic!("{what} was not refused: {other:?}"),
    };
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let replace = PostParams { field_manager: Some("kubectl-replace".into()), ..Default::default() };
    for name in ["worker", "canary"] {
        // Read again on a conflict (the machine-config operator writes the pool's status meanwhile), as a GitOps
        // tool's replace does; the policy's answer is what counts.
        let mut attempts = 0;
        let result = loop {
            let mut put = manifest(&before[name]);
            put.metadata.resource_version = pools.get(name).await?.resource_version();
            match pools.replace(name, &replace, &put).await {
                Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => attempts += 1,
                other => break other.map(|_| ()),
            }
        };
        refused(result, &format!("the replace of {name}"));
    }
    refused(pools.delete("worker", &DeleteParams::default()).await.map(|_| ()), "the delete of worker");
    // worker-2 waits, held by its rule label: removing it through the node's status is refused too.
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone());
    let held = nodes.get("worker-2").await?;
    let label = held.labels().keys().find(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)).cloned();
    let label = label.ok_or_else(|| anyhow::anyhow!("worker-2 carries no rule label"))?;
    let strip = json!({"metadata": {"labels": {label: null}}});
    refused(nodes.patch_status("worker-2", &PatchParams::default(), &Patch::Merge(&strip)).await.map(|_| ()), "status");
    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let ungated = ends_as_before(&setup, &done, &desired, &before).await?;
    assert_eq!(ungated, Vec::<String>::new(), "every worker gated");
    Ok(())
}
