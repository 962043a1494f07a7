//! Objects the run-config controller cannot decode: they reach the run config's status instead of being ignored.

use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::Resource;
use serde_json::{json, Value};

use super::*;
use crate::api::{JobResult, RunPhase};
use crate::controllers::run_config::plan;

const NS: &str = "team";

/// A cache holding `objects`, each decoded (or not) as numo's watch would.
fn store<K>(objects: &[Value]) -> Store<Guarded<K>>
where
    K: Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone + 'static,
{
    let (reader, mut writer) = reflector::store::<Guarded<K>>();
    for object in objects {
        let guarded: Guarded<K> = serde_json::from_value(object.clone()).expect("a guard decodes any object");
        writer.apply_watcher_event(&watcher::Event::Apply(guarded));
    }
    reader
}

fn valid_status() -> Value {
    json!({"conditions": [{"type": "ValidConfig", "status": "True", "reason": "Valid", "message": "",
        "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]})
}

fn pool(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": name}, "spec": spec})
}

fn worker_pool() -> Value {
    pool("worker", json!({"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}}}))
}

fn node(name: &str, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}}, "status": status})
}

fn run_config() -> MutexRunConfig {
    serde_json::from_value(json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
        "metadata": {"name": "rc", "namespace": NS, "generation": 1, "uid": "rc-uid",
                     "finalizers": [labels::FINALIZER]},
        "spec": {"canary": {"name": "canary"}, "mutexRules": [{"name": "check"}],
                 "mutexTargets": [{"name": "workers"}]}
    }))
    .expect("a run config")
}

fn stores(pools: &[Value], nodes: &[Value], jobs: &[Value]) -> Stores {
    let meta = |name: &str| json!({"name": name, "namespace": NS, "generation": 1});
    let mut all_pools = vec![pool("canary", json!({"nodeSelector": {"matchLabels": {"canary": ""}}}))];
    all_pools.extend_from_slice(pools);
    Stores {
        run_configs: store::<MutexRunConfig>(&[serde_json::to_value(run_config()).expect("json")]),
        rules: store::<MutexRule>(&[json!({"metadata": meta("check"), "status": valid_status(),
            "spec": {"jobName": "check", "jobSpec": {"template": {"spec": {"containers": []}}}}})]),
        targets: store::<MutexTarget>(&[json!({"metadata": meta("workers"), "status": valid_status(),
            "spec": {"machineConfigPools": ["worker"]}})]),
        pools: store::<MachineConfigPool>(&all_pools),
        nodes: store::<Node>(nodes),
        jobs: store::<CachedJob>(jobs),
        ..Stores::default()
    }
}

fn invalid_because(stores: &Stores) -> String {
    let snapshot = snapshot(stores, &run_config(), Timestamp::UNIX_EPOCH);
    let status = plan::plan(&snapshot).status;
    assert_eq!(status.phase, Some(RunPhase::Invalid), "{status:?}");
    status.message.unwrap_or_default()
}

#[test]
fn a_target_pool_that_cannot_be_read_makes_the_target_invalid() {
    let unreadable = pool("worker", json!({"paused": "yes"}));
    let message = invalid_because(&stores(&[unreadable], &[node("worker-0", json!({}))], &[]));
    assert!(
        message.contains(&format!(
            "MutexTarget {NS}/workers is invalid: its MachineConfigPool worker cannot be read: spec.paused: invalid type"
        )),
        "{message}"
    );
}

#[test]
fn a_node_of_a_target_pool_that_cannot_be_read_makes_the_target_invalid() {
    let nodes = [node("worker-0", json!({})), node("worker-1", json!({"conditions": "not a list"}))];
    let message = invalid_because(&stores(&[worker_pool()], &nodes, &[]));
    assert!(
        message.contains(&format!(
            "MutexTarget {NS}/workers is invalid: Node worker-1 of its MachineConfigPool worker cannot be read: \
             status.conditions: invalid type"
        )),
        "{message}"
    );
}

#[test]
fn a_node_outside_the_target_pools_that_cannot_be_read_changes_nothing() {
    let mut master = node("master-0", json!({"conditions": "not a list"}));
    master["metadata"]["labels"] = json!({"node-role.kubernetes.io/master": ""});
    let snapshot = snapshot(&stores(&[worker_pool()], &[master], &[]), &run_config(), Timestamp::UNIX_EPOCH);
    assert_ne!(plan::plan(&snapshot).status.phase, Some(RunPhase::Invalid));
    assert!(snapshot.nodes.is_empty(), "only decoded nodes reach the planner");
}

#[test]
fn a_numo_job_that_cannot_be_read_counts_as_failed_not_missing() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "check-worker-0", "namespace": NS,
            "labels": {labels::JOB_RUN_CONFIG: "rc", labels::JOB_RUN_CONFIG_NAMESPACE: NS,
                       labels::JOB_PHASE: "gate", labels::JOB_ATTEMPT: "1"},
            "annotations": {jobs::NODE_ANNOTATION: "worker-0", jobs::RULE_ANNOTATION: format!("{NS}/check"),
                            jobs::VERSION_ANNOTATION: "4.16.5"}},
        "status": {"succeeded": "many"}});
    let snapshot = snapshot(&stores(&[worker_pool()], &[], &[job]), &run_config(), Timestamp::UNIX_EPOCH);
    let [view] = snapshot.jobs.as_slice() else { panic!("one Job: {:?}", snapshot.jobs) };
    assert_eq!((view.node.as_str(), view.result), ("worker-0", JobResult::Failed));
    let message = view.message.as_deref().unwrap_or_default();
    assert!(message.starts_with("the Job cannot be read: status.succeeded: invalid type"), "{message}");
}

#[test]
fn a_rule_accepted_only_with_numos_anti_affinity_is_invalid_for_a_run_config_that_turns_it_off() {
    let mut stores = stores(&[worker_pool()], &[node("worker-0", json!({}))], &[]);
    let mut status = valid_status();
    status["jobRenderings"] = json!([
        {"avoidTargetNode": true, "accepted": true},
        {"avoidTargetNode": false, "accepted": false,
         "message": "spec.jobSpec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value"}
    ]);
    stores.rules = store::<MutexRule>(&[json!({"metadata": {"name": "check", "namespace": NS, "generation": 1},
        "status": status, "spec": {"jobName": "check", "jobSpec": {"template": {"spec": {"containers": []}}}}})]);
    let mut rc = run_config();
    let with_avoidance = plan::plan(&snapshot(&stores, &rc, Timestamp::UNIX_EPOCH)).status;
    assert_ne!(with_avoidance.phase, Some(RunPhase::Invalid), "{:?}", with_avoidance.message);
    rc.spec.avoid_target_node = false;
    let snapshot = snapshot(&stores, &rc, Timestamp::UNIX_EPOCH);
    let plan = plan::plan(&snapshot);
    assert_eq!(plan.status.phase, Some(RunPhase::Invalid), "{:?}", plan.status.message);
    let message = plan.status.message.unwrap_or_default();
    assert!(message.contains("avoidTargetNode") && message.contains("nodeSelectorTerms"), "{message}");
    assert!(plan.intents.is_empty(), "nothing is changed: {:?}", plan.intents);
}

#[test]
fn a_pool_whose_selected_machine_configs_differ_from_its_rendered_sources_has_a_render_pending() {
    let mc = |name: &str, role: &str| {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
            "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": role}}})
    };
    let worker = pool(
        "worker",
        json!({"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}},
               "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
               "configuration": {"name": "rendered-worker-aa", "source": [
                   {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "name": "00-worker"}]}}),
    );
    let mut stores = stores(&[worker], &[], &[]);
    let pending =
        |stores: &Stores| snapshot(stores, &run_config(), Timestamp::UNIX_EPOCH).pools["worker"].render_pending;
    stores.machine_configs = store::<PartialObjectMeta<MachineConfig>>(&[
        mc("00-worker", "worker"),
        mc("00-master", "master"),
        mc("rendered-worker-aa", "worker"),
    ]);
    assert!(!pending(&stores), "rendered from exactly what it selects (rendered configs are no sources)");
    stores.machine_configs =
        store::<PartialObjectMeta<MachineConfig>>(&[mc("00-worker", "worker"), mc("99-worker-chrony", "worker")]);
    assert!(pending(&stores), "a new MachineConfig is not rendered yet");
    stores.machine_configs = store::<PartialObjectMeta<MachineConfig>>(&[mc("00-master", "master")]);
    assert!(pending(&stores), "a source that is gone is not rendered away yet");
}

#[test]
fn the_conditions_a_check_reads_are_gathered_and_an_object_numo_cannot_decode_says_so() {
    let mut stores = stores(&[worker_pool()], &[], &[]);
    let mcn = |name: &str, conditions: Value| {
        json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": name}, "spec": {"configVersion": {"desired": "rendered-worker-1"}},
            "status": {"conditions": conditions}})
    };
    let degraded = json!([{"type": "NodeDegraded", "status": "True", "reason": "UpdateFailed",
        "message": "Node worker-0 upgrade failure. disk full", "lastTransitionTime": "2026-11-27T10:00:00Z"}]);
    stores.machine_config_nodes = store::<crate::openshift::MachineConfigNode>(&[
        mcn("worker-0", degraded),
        mcn("worker-1", json!("not a list")),
        mcn("worker-2", json!([])),
    ]);
    let mut rc = run_config();
    rc.spec.health_checks =
        Some(crate::api::HealthChecks { machine_config_nodes: Some(Default::default()), ..Default::default() });
    let read = (Watched::MachineConfigNode, "NodeDegraded");

    // Before the watch listed them, they cannot be read.
    let facts = snapshot(&stores, &rc, Timestamp::UNIX_EPOCH).health.conditions;
    assert!(matches!(facts.as_slice(), [(r, Err(_))] if *r == read), "{facts:?}");

    stores.sources.read_once(MACHINE_CONFIG_NODES);
    let facts = snapshot(&stores, &rc, Timestamp::UNIX_EPOCH).health.conditions;
    let [(r, Ok(said))] = facts.as_slice() else { panic!("{facts:?}") };
    assert_eq!(*r, read);
    let said: Vec<(&str, &str, &str)> =
        said.iter().map(|s| (s.object.as_str(), s.status.as_str(), s.reason.as_str())).collect();
    assert_eq!(said, [("worker-0", "True", "UpdateFailed"), ("worker-1", "Unknown", CANNOT_BE_READ)]);

    // A run config without the check reads none.
    assert!(snapshot(&stores, &run_config(), Timestamp::UNIX_EPOCH).health.conditions.is_empty());
}
