//! Which changes of a watched object can change a run config's plan: each watch's events pass a predicate that
//! hashes what numo reads of the object, and only a change of that wakes the run configs.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::{Resource, ResourceExt};

use super::snapshot::Watched;
use crate::api::MutexRunConfig;
use crate::guard::Guarded;
use crate::openshift::{self, ClusterOperator, MachineConfig, MachineConfigNode, MachineConfigPool};

/// Run configs react to spec, annotation (retry/skip), finalizer and deletion changes, not to their own status writes.
pub fn run_config_predicate(rc: &Guarded<MutexRunConfig>) -> Option<u64> {
    let meta = rc.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.as_ref().map(|t| t.0.as_second()).hash(&mut hasher);
    meta.uid.hash(&mut hasher);
    Some(hasher.finish())
}

/// Pools matter when what numo reads of them changes (see `observe::pool_view`): their spec, annotations and
/// generation, the generation their status describes, their rendered configuration, the conditions numo reads, and
/// who set the fields numo holds, and how many machines it has — not the counts of updated, ready and unavailable
/// machines the MCO updates for every node it moves (2,000 updates in the restore walk of 2,000 nodes). An object numo
/// cannot decode matters at every change.
pub fn pool_predicate(pool: &Guarded<MachineConfigPool>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    let meta = pool.meta();
    meta.uid.hash(&mut hasher);
    meta.generation.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    let Ok(pool) = &pool.0 else {
        meta.resource_version.hash(&mut hasher);
        return Some(hasher.finish());
    };
    serde_json::to_string(&pool.spec).ok().hash(&mut hasher);
    if let Some(status) = &pool.status {
        status.observed_generation.hash(&mut hasher);
        // How many machines it has (its members changed), not how many of them are updated yet.
        status.machine_count.hash(&mut hasher);
        serde_json::to_string(&status.configuration).ok().hash(&mut hasher);
        let read = ["Updated", "Degraded", "NodeDegraded", "RenderDegraded"];
        for c in status.conditions.iter().filter(|c| read.contains(&c.type_.as_str())) {
            (&c.type_, &c.status, &c.message).hash(&mut hasher);
        }
    }
    for path in crate::field_managers::POOL_FIELDS {
        format!("{:?}", crate::field_managers::writer_of(meta.managed_fields.as_deref(), path)).hash(&mut hasher);
    }
    Some(hasher.finish())
}

/// MachineConfigs matter when their annotations (a rendered config's release) or labels (the pools that select them,
/// so a render the MCO has yet to do) change.
pub fn machine_config_predicate(config: &Guarded<PartialObjectMeta<MachineConfig>>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    config.meta().uid.hash(&mut hasher);
    config.meta().labels.hash(&mut hasher);
    config.meta().annotations.hash(&mut hasher);
    Some(hasher.finish())
}

/// Nodes matter when their labels, readiness or machine-config annotations change — not on every heartbeat.
pub fn node_predicate(node: &Guarded<Node>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    node.meta().uid.hash(&mut hasher);
    node.meta().labels.hash(&mut hasher);
    node.meta().deletion_timestamp.is_some().hash(&mut hasher);
    node.decoded().and_then(|n| n.spec.as_ref()).and_then(|s| s.unschedulable).hash(&mut hasher);
    for key in [openshift::CURRENT_CONFIG, openshift::DESIRED_CONFIG, openshift::MCD_STATE, openshift::MCD_REASON] {
        node.annotations().get(key).hash(&mut hasher);
    }
    let ready = node
        .decoded()
        .and_then(|n| n.status.as_ref())
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.status.clone());
    ready.hash(&mut hasher);
    Some(hasher.finish())
}

/// A ClusterOperator matters when whether (and why) it is unhealthy changes, or (the `kube-apiserver`'s) whether
/// kubelet skew holds the next minor update.
pub fn operator_predicate(co: &Guarded<ClusterOperator>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    co.meta().uid.hash(&mut hasher);
    // A degraded operator deleted no longer holds anything (the watch marks a delete event so).
    co.meta().deletion_timestamp.is_some().hash(&mut hasher);
    co.decoded().map(ClusterOperator::problem).hash(&mut hasher);
    co.decoded().and_then(ClusterOperator::kubelet_skew).hash(&mut hasher);
    if let Some(co) = co.decoded() {
        for type_ in super::checks::conditions_read(Watched::ClusterOperator) {
            let condition = co.status.as_ref().and_then(|s| s.condition(type_));
            condition.map(|c| (&c.status, &c.reason, &c.message)).hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}

/// A MachineConfigNode matters to the health checks when a condition they read
/// ([`super::checks::conditions_read`]) changes its status, reason or message, or the object goes.
pub fn checked_conditions_predicate(progress: &Guarded<MachineConfigNode>) -> Option<u64> {
    let read = super::checks::conditions_read(Watched::MachineConfigNode);
    let mut hasher = DefaultHasher::new();
    progress.meta().uid.hash(&mut hasher);
    progress.meta().deletion_timestamp.is_some().hash(&mut hasher);
    if let Some(progress) = progress.decoded() {
        for type_ in read {
            progress.condition(type_).map(|c| (&c.status, &c.reason, &c.message)).hash(&mut hasher);
        }
    }
    Some(hasher.finish())
}

/// A MachineConfigNode matters when a drain ends: `Drained=True` at a new time, with the update it speaks of (what
/// numo records as the node's `drainedAt`). Not on the other phases the machine-config operator reports, nor when a
/// drain starts (`Unknown`) or the update ends and resets it (`False`): about ten writes per node update, of which
/// numo needs one.
pub fn drain_predicate(progress: &Guarded<MachineConfigNode>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    progress.meta().uid.hash(&mut hasher);
    if let Some(progress) = progress.decoded() {
        let drained = progress.condition(crate::openshift::machine_config_node::DRAINED).filter(|c| c.status == "True");
        drained.map(|c| (&progress.spec.config_version.desired, c.last_transition_time.0)).hash(&mut hasher);
    }
    Some(hasher.finish())
}

/// A numo Job matters when what numo caches of it changes (see [`crate::cached_job::CachedJob`]): that it exists
/// (its uid), what it is for, how it ended and why, its finalizers, and each step of its deletion. Not on the Job
/// controller's other status writes while it runs (its pod active, ready, counted), about half of a Job's events.
pub fn job_predicate(job: &Guarded<crate::cached_job::CachedJob>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    let meta = job.meta();
    meta.uid.hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    if meta.deletion_timestamp.is_some() {
        // Being deleted, each change counts: its finalizer released, then gone (the watch's delete event).
        meta.resource_version.hash(&mut hasher);
    }
    match job.decoded() {
        Some(cached) => {
            cached.run_config.hash(&mut hasher);
            cached
                .facts
                .as_ref()
                .map(|f| (&f.run_config_labels, &f.node, &f.rule, f.phase, f.attempt, &f.target_version))
                .hash(&mut hasher);
            format!("{:?}", cached.result).hash(&mut hasher);
            cached.failure.hash(&mut hasher);
            cached.creator.hash(&mut hasher);
        }
        // One numo cannot decode wakes its run config at each change, so that its status says why.
        None => meta.resource_version.hash(&mut hasher),
    }
    Some(hasher.finish())
}

/// A StorageCluster matters when the failure-domain key it says changes (not on each of its status updates).
pub fn storage_predicate(cluster: &Guarded<crate::openshift::StorageCluster>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    cluster.meta().uid.hash(&mut hasher);
    cluster.meta().deletion_timestamp.is_some().hash(&mut hasher);
    cluster.decoded().and_then(|c| c.status.as_ref()).map(|s| &s.failure_domain_key).hash(&mut hasher);
    Some(hasher.finish())
}

/// A PodDisruptionBudget matters when whether it allows a disruption, or what it selects, changes; also on every
/// change of its status counts (its pods moved), which is when the pods it covers may have; and when it goes (a
/// budget at zero deleted frees the node it held: Rook deletes its blocking budgets so).
pub fn budget_predicate(pdb: &Guarded<PodDisruptionBudget>) -> Option<u64> {
    let mut hasher = DefaultHasher::new();
    pdb.meta().uid.hash(&mut hasher);
    pdb.meta().deletion_timestamp.is_some().hash(&mut hasher);
    if let Some(pdb) = pdb.decoded() {
        serde_json::to_string(&pdb.spec).ok().hash(&mut hasher);
        let status = pdb.status.as_ref();
        let counts = status.map(|s| (s.disruptions_allowed, s.current_healthy, s.expected_pods, s.desired_healthy));
        counts.hash(&mut hasher);
    }
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    fn pool(change: impl FnOnce(&mut Value)) -> Guarded<MachineConfigPool> {
        let mut pool = json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
            "metadata": {"name": "worker", "uid": "u1", "generation": 2, "resourceVersion": "10"},
            "spec": {"paused": false, "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
                     "configuration": {"name": "rendered-worker-2"}},
            "status": {"observedGeneration": 2, "machineCount": 2000, "updatedMachineCount": 10,
                       "configuration": {"name": "rendered-worker-2"},
                       "conditions": [{"type": "Updated", "status": "False"}, {"type": "Updating", "status": "True",
                                       "message": "All nodes are updating to MachineConfig rendered-worker-2"}]}});
        change(&mut pool);
        serde_json::from_value(pool).expect("a pool")
    }

    fn job(change: impl FnOnce(&mut Value)) -> Guarded<crate::cached_job::CachedJob> {
        let mut job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "check-gate-worker-0", "namespace": "ops", "uid": "j1", "resourceVersion": "10",
                "finalizers": ["openshift-optional.skrzypek.io/job-result"],
                "labels": {"app.kubernetes.io/managed-by": "numo",
                    "openshift-optional.skrzypek.io/run-config": "example",
                    "openshift-optional.skrzypek.io/run-config-namespace": "ops",
                    "openshift-optional.skrzypek.io/phase": "gate",
                    "openshift-optional.skrzypek.io/attempt": "1"},
                "annotations": {"openshift-optional.skrzypek.io/node": "worker-0",
                    "openshift-optional.skrzypek.io/rule": "ops/check",
                    "openshift-optional.skrzypek.io/target-version": "4.16.5",
                    "openshift-optional.skrzypek.io/run-config": "ops/example"}},
            "status": {"active": 1, "ready": 0}});
        change(&mut job);
        serde_json::from_value(job).expect("a Job")
    }

    #[test]
    fn a_job_matters_when_what_numo_caches_of_it_changes_not_at_each_count_of_its_pods() {
        let base = job_predicate(&job(|_| {}));
        let same = |change: fn(&mut Value)| job_predicate(&job(change)) == base;
        assert!(same(|j| j["metadata"]["resourceVersion"] = json!("11")));
        assert!(same(|j| j["status"] = json!({"active": 1, "ready": 1, "startTime": "2026-11-27T10:00:00Z"})));
        assert!(!same(
            |j| j["status"] = json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]})
        ));
        assert!(!same(|j| j["status"] = json!({"failed": 1, "conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]})));
        assert!(!same(|j| j["metadata"]["finalizers"] = json!([])), "its result released");
        assert!(!same(|j| j["metadata"]["uid"] = json!("j2")), "another Job of that name");
        // Being deleted, each step counts, down to the watch's delete event.
        let deleting = |rv: &str| {
            job_predicate(&job(|j| {
                j["metadata"]["deletionTimestamp"] = json!("2026-11-27T10:00:00Z");
                j["metadata"]["finalizers"] = json!([]);
                j["metadata"]["resourceVersion"] = json!(rv);
            }))
        };
        assert_ne!(deleting("12"), base);
        assert_ne!(deleting("12"), deleting("13"), "its finalizer released, then gone");
    }

    #[test]
    fn a_pool_matters_for_what_numo_reads_not_for_the_machine_counts_of_the_restore_walk() {
        let base = pool_predicate(&pool(|_| {}));
        let same = |change: fn(&mut Value)| pool_predicate(&pool(change)) == base;
        assert!(same(|p| p["status"]["updatedMachineCount"] = json!(11)), "a node moved");
        assert!(!same(|p| p["status"]["machineCount"] = json!(0)), "its members changed");
        assert!(same(|p| p["metadata"]["resourceVersion"] = json!("11")));
        assert!(same(|p| p["status"]["conditions"][1]["message"] = json!("1990 nodes to go")), "not read");
        assert!(!same(|p| p["status"]["conditions"][0]["status"] = json!("True")), "Updated");
        assert!(!same(|p| p["spec"]["paused"] = json!(true)));
        assert!(!same(|p| p["status"]["observedGeneration"] = json!(1)), "status of an older spec");
        assert!(!same(|p| p["metadata"]["annotations"] = json!({"openshift-optional.skrzypek.io/claimed-by": "a/b"})));
        assert!(!same(|p| p["status"]["conditions"] = json!([{"type": "Degraded", "status": "True"}])));
        assert!(!same(|p| {
            p["metadata"]["managedFields"] = json!([{"manager": "gitops", "operation": "Apply",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]);
        }));
    }

    #[test]
    fn an_operator_and_a_storage_cluster_matter_when_they_go() {
        let operator = |deleted: bool| -> Guarded<ClusterOperator> {
            let mut co = json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
                "metadata": {"name": "storage", "uid": "u1"},
                "status": {"conditions": [{"type": "Degraded", "status": "True", "reason": "R", "message": "m",
                    "lastTransitionTime": "2026-11-26T07:00:00Z"}]}});
            if deleted {
                co["metadata"]["deletionTimestamp"] = json!("2026-11-26T07:08:09Z");
            }
            serde_json::from_value(co).expect("an operator")
        };
        assert_ne!(operator_predicate(&operator(false)), operator_predicate(&operator(true)));
        let storage = |deleted: bool| -> Guarded<crate::openshift::StorageCluster> {
            let mut sc = json!({"apiVersion": "ocs.openshift.io/v1", "kind": "StorageCluster",
                "metadata": {"name": "ocs-storagecluster", "namespace": "openshift-storage", "uid": "u2"},
                "spec": {}, "status": {"failureDomainKey": "topology.rook.io/rack"}});
            if deleted {
                sc["metadata"]["deletionTimestamp"] = json!("2026-11-26T07:08:09Z");
            }
            serde_json::from_value(sc).expect("a storage cluster")
        };
        assert_ne!(storage_predicate(&storage(false)), storage_predicate(&storage(true)));
    }

    #[test]
    fn a_budget_matters_when_it_goes() {
        let budget = |deleted: bool| -> Guarded<PodDisruptionBudget> {
            let mut pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "rook-ceph-osd-rack-rack1", "namespace": "openshift-storage", "uid": "u1"},
                "spec": {"maxUnavailable": 0}, "status": {"disruptionsAllowed": 0, "currentHealthy": 3,
                "desiredHealthy": 3, "expectedPods": 3}});
            if deleted {
                // As the watch marks a delete event (crate::watches).
                pdb["metadata"]["deletionTimestamp"] = json!("2026-11-26T07:08:09Z");
            }
            serde_json::from_value(pdb).expect("a budget")
        };
        assert_ne!(budget_predicate(&budget(false)), budget_predicate(&budget(true)));
    }

    #[test]
    fn a_pool_numo_cannot_decode_matters_at_every_change() {
        let broken = |version: &str| {
            pool(|p| {
                p["spec"]["paused"] = json!("yes");
                p["metadata"]["resourceVersion"] = json!(version);
            })
        };
        assert!(broken("10").0.is_err());
        assert_ne!(pool_predicate(&broken("10")), pool_predicate(&broken("11")));
    }

    #[test]
    fn a_machine_config_node_matters_when_a_drain_ends_not_at_each_phase() {
        let progress = |desired: &str, drained: Option<(&str, &str)>| -> Guarded<MachineConfigNode> {
            let conditions: Vec<Value> = drained
                .map(|(status, at)| {
                    json!({"type": "Drained", "status": status, "lastTransitionTime": at,
                                            "reason": "", "message": ""})
                })
                .into_iter()
                .collect();
            serde_json::from_value(json!({
                "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
                "metadata": {"name": "worker-0", "uid": "u"},
                "spec": {"node": {"name": "worker-0"}, "pool": {"name": "worker"},
                         "configVersion": {"desired": desired}},
                "status": {"conditions": conditions}
            }))
            .unwrap_or_else(|e| panic!("{e}"))
        };
        let before = drain_predicate(&progress("rendered-a", None));
        assert_eq!(drain_predicate(&progress("rendered-b", None)), before, "a new desired config alone");
        let draining = drain_predicate(&progress("rendered-b", Some(("Unknown", "2026-11-27T10:00:00Z"))));
        assert_eq!(draining, before, "a drain that starts");
        let drained = drain_predicate(&progress("rendered-b", Some(("True", "2026-11-27T10:01:00Z"))));
        assert_ne!(drained, before, "a drain that ends");
        let reset = drain_predicate(&progress("rendered-b", Some(("False", "2026-11-27T10:05:00Z"))));
        assert_eq!(reset, before, "the update's end resets it");
    }
}
