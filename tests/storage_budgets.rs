//! numo's PodDisruptionBudget health check on a simulated storage cluster (ODF's storage nodes, Rook's managed
//! disruption budgets: `numo_simulator::storage`), against the real kube-apiserver and kube-controller-manager: once a
//! node of rack0 drained, Rook's blocking budget on rack1 covers the next node's OSD, and numo holds that node until
//! Rook restores its default budget, so no drain ever waits on a budget.

mod support;

use std::time::Duration;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use numo::api::{MutexRunConfig, RunPhase};
use numo_simulator::storage::{seed_storage, FailureDomain, RookTiming, StorageConfig, StorageShape, NAMESPACE};
use numo_simulator::SimConfig;
use serde_json::json;
use support::*;

fn config() -> SimConfig {
    let mut storage = StorageConfig::new(FailureDomain::Rack);
    storage.pgs_clean = Duration::from_secs(5);
    storage.rook =
        RookTiming { default_missing: Duration::from_millis(500), default_at_zero: Duration::from_millis(500) };
    storage.drain.eviction_retry = Duration::from_millis(500);
    SimConfig { reboot: Duration::from_secs(1), storage: Some(storage), ..SimConfig::default() }
}

/// The run config's holds by the PodDisruptionBudget check, as messages.
fn budget_holds(rc: &MutexRunConfig) -> Vec<String> {
    let blocked = rc.status.as_ref().map(|s| s.blocked_by.as_slice()).unwrap_or_default();
    blocked.iter().filter(|b| b.check == "PodDisruptionBudgets").map(|b| b.message.clone()).collect()
}

#[tokio::test]
async fn numo_holds_the_next_node_while_rooks_blocking_budget_covers_its_osd() -> anyhow::Result<()> {
    let mut setup = Setup::with_config("storage-budgets", 3, config()).await?;
    seed_storage(&setup.client, &StorageShape { domain: FailureDomain::Rack, domains: 3 }).await?;
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(setup.client.clone(), NAMESPACE);
    let healthy = |b: &PodDisruptionBudget| {
        b.status.as_ref().is_some_and(|s| s.current_healthy == 3 && s.disruptions_allowed == 1)
    };
    numo_testkit::wait_until(&budgets, "rook-ceph-osd", ROLLOUT, "every OSD up", healthy).await?;
    setup.check_workers("rc", job_spec("1s", false), None, json!({"healthChecks": {}})).await?;
    setup.start_operator().await?;
    setup.wait_phase("rc", RunPhase::Idle, ROLLOUT).await?;
    setup.upgrade_cluster(NEW).await?;

    // worker-0 (rack0) goes first; from its drain until the PGs are clean again, rack1 and rack2 are blocked.
    let held = numo_testkit::wait_until(&setup.run_configs(), "rc", ROLLOUT, "held by Rook's budget", |rc| {
        budget_holds(rc).iter().any(|m| m.contains("rook-ceph-osd-rack-rack1") && m.contains("on worker-1"))
    })
    .await?;
    let message = budget_holds(&held).join("; ");
    assert!(
        message.contains("PodDisruptionBudget openshift-storage/rook-ceph-osd-rack-rack1 allows no disruption"),
        "{message}"
    );
    setup.wait_phase("rc", RunPhase::Completed, ROLLOUT).await?;

    let report = setup.world.simulator().and_then(|s| s.storage_report()).unwrap_or_default();
    assert_eq!(report.drains, 3, "{report:?}");
    assert!(report.drain_waits.is_empty(), "numo released no node a budget at zero covered: {report:?}");
    assert_eq!(report.most_down_in_a_domain(), 1);
    Ok(())
}
