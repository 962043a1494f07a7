//! Carries a plan's intents out. Writes that do not depend on one another (node labels, Jobs, Job finalizers: each
//! names its own object) go out together, up to [`PARALLEL_WRITES`] at once; pool and run-config writes go out one
//! at a time, in the plan's order, between them. Each is idempotent: a pool's first claim is conditional on the
//! resourceVersion the plan saw, later pool writes on the claim still being this run config's (a JSON Patch `test`,
//! so the MCO's status updates do not make them fail); label patches name only numo's keys; a Job is
//! created under the name the status recorded before (an existing Job of that name is numo's, from an earlier try:
//! nobody could know the name before the status named it), and only after that status is written. The first failure stops the rest and is returned with
//! the intent that failed, for the status to say; the next reconcile plans again.

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use super::plan::as_is;
use super::plan::{written_after, Intent, PoolPrecondition, PoolSpec};
use super::snapshot::{PoolView, Snapshot};
use crate::api::MutexRunConfig;
use crate::openshift::MachineConfigPool;
use crate::pool_claim::{PoolClaim, PoolOriginal};
use crate::{jobs, labels};
use crate::{Error, Result};

/// How many independent writes of one reconcile are in flight at once (at thousands of nodes, a rollout's start
/// labels every node, and each freed slot of a wide rollout creates Jobs and releases nodes in one reconcile).
pub const PARALLEL_WRITES: usize = 16;

/// Field manager of numo's writes to pools, nodes, Jobs and run-config metadata.
const MANAGER: &str = "numo";

/// A write that failed: which one, and why.
#[derive(Debug)]
pub struct Failed {
    /// The write, as a phrase ("pause and claim MachineConfigPool worker").
    pub what: String,
    /// The error.
    pub error: Error,
}

/// Applies every intent: the plan's order between dependent writes, independent neighbours together. Stops after
/// the first group with a failure and returns the failure that comes first in the plan.
pub async fn apply(
    client: &kube::Client,
    rc: &MutexRunConfig,
    snapshot: &Snapshot,
    intents: &[Intent],
) -> std::result::Result<(), Failed> {
    for group in groups(intents) {
        // Collected first: a closure inside the stream's type trips the compiler's Send check of the reconciler.
        let writes: Vec<_> = group
            .iter()
            .enumerate()
            .map(|(index, intent)| async move { (index, apply_one(client, rc, snapshot, intent).await) })
            .collect();
        let results: Vec<(usize, Result<()>)> =
            futures::stream::iter(writes).buffer_unordered(PARALLEL_WRITES).collect().await;
        let first_failure =
            results.into_iter().filter_map(|(index, r)| r.err().map(|e| (index, e))).min_by_key(|f| f.0);
        if let Some((index, error)) = first_failure {
            return Err(Failed { what: describe(&group[index]), error });
        }
    }
    Ok(())
}

/// The intents cut into groups applied one after another: each run of independent writes is one group, every other
/// intent a group of its own.
fn groups(intents: &[Intent]) -> Vec<&[Intent]> {
    let mut groups = Vec::new();
    let mut start = 0;
    for (index, intent) in intents.iter().enumerate() {
        let joins_previous = index > start && independent(intent) && independent(&intents[index - 1]);
        if index > start && !joins_previous {
            groups.push(&intents[start..index]);
            start = index;
        }
    }
    if start < intents.len() {
        groups.push(&intents[start..]);
    }
    groups
}

/// Whether an intent writes only its own object, so that it may go out beside others of its kind: a node's labels,
/// a Job, a Job's finalizer. Pool and run-config writes keep their place in the plan.
fn independent(intent: &Intent) -> bool {
    matches!(
        intent,
        Intent::LabelNode { .. }
            | Intent::UnlabelNode { .. }
            | Intent::ReleaseNode { .. }
            | Intent::CreateJob(_)
            | Intent::ReleaseJob { .. }
    )
}

/// What an intent does, as a phrase for a status message.
pub fn describe(intent: &Intent) -> String {
    match intent {
        Intent::AddFinalizer => "add the finalizer to the run config".into(),
        Intent::RemoveFinalizer => "remove the finalizer from the run config".into(),
        Intent::ClaimPool { pool, .. } => format!("claim MachineConfigPool {pool}"),
        Intent::SteerPool { pool, .. } => format!("steer MachineConfigPool {pool}"),
        Intent::PutBackPool { pool, .. } => format!("put back what another writer changed of MachineConfigPool {pool}"),
        Intent::RestorePool { pool, .. } => format!("restore MachineConfigPool {pool}"),
        Intent::LabelNode { node, .. } => format!("add the rule labels to node {node}"),
        Intent::UnlabelNode { node, .. } => format!("remove numo's labels from node {node}"),
        Intent::ReleaseNode { node, .. } => format!("release node {node} to the canary pool"),
        Intent::CreateJob(job) => {
            format!("create Job {}/{}", job.namespace().unwrap_or_default(), job.name_any())
        }
        Intent::ReleaseJob { namespace, name } => format!("remove numo's finalizer from Job {namespace}/{name}"),
        Intent::ClearRetry => "remove the retry annotation".into(),
        Intent::ClearGoAhead => "remove the go-ahead annotation".into(),
        Intent::TakeOverHold { pool, .. } => format!("take over the admin's hold of MachineConfigPool {pool}"),
        Intent::RecordRollout { .. } => "add to the rollout's timeline record".into(),
    }
}

async fn apply_one(client: &kube::Client, rc: &MutexRunConfig, snapshot: &Snapshot, intent: &Intent) -> Result<()> {
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..Default::default() };
    let namespace = rc.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let run_configs: Api<MutexRunConfig> = Api::namespaced(client.clone(), &namespace);
    let pools: Api<MachineConfigPool> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    match intent {
        Intent::AddFinalizer | Intent::RemoveFinalizer => {
            let mut finalizers: Vec<String> =
                rc.finalizers().iter().filter(|f| *f != labels::FINALIZER).cloned().collect();
            if matches!(intent, Intent::AddFinalizer) {
                finalizers.push(labels::FINALIZER.to_string());
            }
            let patch = json!({"metadata": {"resourceVersion": rc.resource_version(), "finalizers": finalizers}});
            conditional(run_configs.patch(&rc.name_any(), &params, &Patch::Merge(&patch)).await)?;
        }
        Intent::ClearRetry => {
            let patch = json!({"metadata": {"annotations": {labels::RETRY_ANNOTATION: null}}});
            run_configs.patch(&rc.name_any(), &params, &Patch::Merge(&patch)).await?;
        }
        Intent::ClearGoAhead => {
            let patch = json!({"metadata": {"annotations": {labels::GO_AHEAD_ANNOTATION: null}}});
            run_configs.patch(&rc.name_any(), &params, &Patch::Merge(&patch)).await?;
        }
        Intent::ClaimPool { pool, .. }
        | Intent::TakeOverHold { pool, .. }
        | Intent::SteerPool { pool, .. }
        | Intent::PutBackPool { pool, .. }
        | Intent::RestorePool { pool, .. } => {
            let view = snapshot.pools.get(pool).cloned().unwrap_or_default();
            json_patch(&pools, pool, pool_ops(intent, &view)?).await?;
        }
        Intent::LabelNode { node, labels: keys }
        | Intent::UnlabelNode { node, labels: keys }
        | Intent::ReleaseNode { node, labels: keys, .. } => {
            // Each key set to `value`; the release mark set (a release), removed (held: never marked released) or
            // left to the keys (the end of a rollout names it among them).
            let (value, mark) = match intent {
                Intent::LabelNode { .. } => (json!(""), Some(Value::Null)),
                Intent::ReleaseNode { mark, .. } => (Value::Null, Some(json!(mark))),
                _ => (Value::Null, None),
            };
            let mut map: serde_json::Map<String, Value> = keys.iter().map(|k| (k.clone(), value.clone())).collect();
            if let Some(mark) = mark {
                map.insert(labels::RELEASED.to_string(), mark);
            }
            let patch = json!({"metadata": {"labels": map}});
            nodes.patch(node, &params, &Patch::Merge(&patch)).await?;
        }
        Intent::CreateJob(job) => {
            let job_namespace = job.namespace().ok_or(Error::MissingField("job namespace"))?;
            let jobs: Api<Job> = Api::namespaced(client.clone(), &job_namespace);
            match jobs.create(&PostParams { field_manager: Some(MANAGER.into()), ..Default::default() }, job).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Intent::RecordRollout { rollout, entries, fresh } => {
            record_rollout(client, rc, &params, rollout, entries, *fresh).await?;
        }
        Intent::ReleaseJob { namespace, name } => {
            let jobs: Api<Job> = Api::namespaced(client.clone(), namespace);
            let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [jobs::RESULT_FINALIZER]}});
            match jobs.patch(name, &params, &Patch::Strategic(&patch)).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Adds `entries` to the run config's rollout record with a merge patch of those keys only, creating the record
/// (owned by the run config) when it does not exist or starts afresh.
async fn record_rollout(
    client: &kube::Client,
    rc: &MutexRunConfig,
    params: &PatchParams,
    rollout: &str,
    entries: &[(String, String)],
    fresh: bool,
) -> Result<()> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let namespace = rc.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let records: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let name = crate::rollout_record::config_map_name(&rc.name_any());
    let mut data: std::collections::BTreeMap<String, String> = entries.iter().cloned().collect();
    data.insert(crate::rollout_record::ROLLOUT_KEY.to_string(), rollout.to_string());
    if fresh {
        match records.delete(&name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    } else {
        let patch = json!({"data": data});
        match records.patch(&name, params, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    let owner = kube::Resource::controller_owner_ref(rc, &()).map(|mut owner| {
        owner.controller = Some(false);
        owner
    });
    let record = ConfigMap {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name),
            namespace: Some(namespace),
            labels: Some([(labels::JOB_MANAGED_BY.to_string(), labels::MANAGER.to_string())].into()),
            owner_references: owner.map(|o| vec![o]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    };
    match records.create(&PostParams { field_manager: Some(MANAGER.into()), ..Default::default() }, &record).await {
        Ok(_) => Ok(()),
        // Created meanwhile: add to it.
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let patch = json!({"data": record.data});
            records.patch(&record.metadata.name.unwrap_or_default(), params, &Patch::Merge(&patch)).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// The JSON Patch of a pool write (`pool` as the plan saw it): its precondition first (the first claim: the
/// resourceVersion the plan saw; every later write: the claim is still this run config's, so the MCO's status
/// updates never make it fail), then the changes. Claims and steers record what numo set in the `written`
/// annotation, in the same patch.
fn pool_ops(intent: &Intent, pool: &PoolView) -> Result<Vec<Value>> {
    let mut ops = Vec::new();
    match intent {
        Intent::ClaimPool { resource_version, owner, original, spec, .. } => {
            ops.push(json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}));
            if !pool.has_annotations {
                ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
            }
            let written = PoolOriginal { paused: spec.paused, ..as_is(pool) };
            for (key, value) in PoolClaim::annotations(owner, original, &written)? {
                ops.push(add(&annotation_path(key), json!(value)));
            }
            ops.extend(spec_ops(spec)?);
        }
        Intent::SteerPool { owner, spec, .. } => {
            ops.push(claim_test(owner));
            ops.extend(spec_ops(spec)?);
            let (key, value) = PoolClaim::written_annotation(&written_after(pool, spec))?;
            ops.push(add(&annotation_path(key), json!(value)));
        }
        Intent::TakeOverHold { owner, original, .. } => {
            ops.push(claim_test(owner));
            ops.push(add("/spec/paused", json!(true)));
            let (key, value) = PoolClaim::original_annotation(original)?;
            ops.push(add(&annotation_path(key), json!(value)));
            let written = PoolOriginal {
                paused: true,
                ..pool.claim.claim().and_then(|c| c.written.clone()).unwrap_or_else(|| as_is(pool))
            };
            let (key, value) = PoolClaim::written_annotation(&written)?;
            ops.push(add(&annotation_path(key), json!(value)));
        }
        Intent::PutBackPool { owner, put_back, .. } => {
            ops.push(claim_test(owner));
            if let Some(paused) = put_back.paused {
                ops.push(add("/spec/paused", json!(paused)));
            }
            if let Some(selector) = &put_back.machine_config_selector {
                ops.push(add("/spec/machineConfigSelector", serde_json::to_value(selector)?));
            }
            for (path, value) in [
                ("/spec/nodeSelector", put_back.node_selector.as_ref().map(|s| s.as_ref().map(serde_json::to_value))),
                (
                    "/spec/maxUnavailable",
                    put_back.max_unavailable.as_ref().map(|m| m.as_ref().map(serde_json::to_value)),
                ),
            ] {
                match value {
                    Some(Some(value)) => ops.push(add(path, value?)),
                    Some(None) => ops.push(json!({"op": "remove", "path": path})),
                    None => {}
                }
            }
        }
        Intent::RestorePool { precondition, spec, remove, annotations, .. } => {
            ops.push(match precondition {
                PoolPrecondition::ClaimedBy(owner) => claim_test(owner),
                PoolPrecondition::ResourceVersion(version) => {
                    json!({"op": "test", "path": "/metadata/resourceVersion", "value": version})
                }
            });
            ops.extend(spec_ops(spec)?);
            for path in remove {
                ops.push(json!({"op": "remove", "path": path}));
            }
            for key in annotations {
                ops.push(json!({"op": "remove", "path": annotation_path(key)}));
            }
        }
        _ => {}
    }
    Ok(ops)
}

/// The operations that set `paused` and, when given, `nodeSelector`, `maxUnavailable`, `machineConfigSelector` and
/// `osImageStream`.
fn spec_ops(spec: &PoolSpec) -> Result<Vec<Value>> {
    let mut ops = vec![add("/spec/paused", json!(spec.paused))];
    if let Some(selector) = &spec.node_selector {
        ops.push(add("/spec/nodeSelector", serde_json::to_value(selector)?));
    }
    if let Some(max_unavailable) = &spec.max_unavailable {
        ops.push(add("/spec/maxUnavailable", serde_json::to_value(max_unavailable)?));
    }
    if let Some(selector) = &spec.machine_config_selector {
        ops.push(add("/spec/machineConfigSelector", serde_json::to_value(selector)?));
    }
    match &spec.os_image_stream {
        Some(Some(name)) => ops.push(add("/spec/osImageStream", json!({"name": name}))),
        // Planned only where the pool names one.
        Some(None) => ops.push(json!({"op": "remove", "path": "/spec/osImageStream"})),
        None => {}
    }
    Ok(ops)
}

/// A JSON Patch test that the pool is still claimed by `owner`.
fn claim_test(owner: &str) -> Value {
    json!({"op": "test", "path": annotation_path(labels::POOL_CLAIMED_BY), "value": owner})
}

fn add(path: &str, value: Value) -> Value {
    json!({"op": "add", "path": path, "value": value})
}

/// The JSON Pointer of an annotation (`/` in the key escaped as `~1`).
fn annotation_path(key: &str) -> String {
    format!("/metadata/annotations/{}", key.replace('~', "~0").replace('/', "~1"))
}

async fn json_patch(pools: &Api<MachineConfigPool>, name: &str, ops: Vec<Value>) -> Result<()> {
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops))?;
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..Default::default() };
    conditional(pools.patch(name, &params, &Patch::<()>::Json(patch)).await).map(|_| ())
}

/// Maps a failed precondition (stale resourceVersion: 409, failed `test`: 422) to a quick retry.
fn conditional<T>(result: std::result::Result<T, kube::Error>) -> Result<T> {
    match result {
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 422 => {
            Err(Error::Conflict(status.message.clone()))
        }
        other => Ok(other?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_writes_are_grouped_and_the_others_keep_their_place() {
        let label = |node: &str| Intent::LabelNode { node: node.into(), labels: vec!["rule".into()] };
        let steer = Intent::SteerPool {
            pool: "worker".into(),
            owner: "ops/rc".into(),
            spec: PoolSpec { paused: true, ..Default::default() },
        };
        let release = Intent::ReleaseJob { namespace: "ops".into(), name: "check-1".into() };
        let intents = vec![
            Intent::AddFinalizer,
            label("a"),
            label("b"),
            label("c"),
            steer,
            release,
            label("d"),
            Intent::ClearRetry,
        ];
        let sizes: Vec<usize> = groups(&intents).iter().map(|g| g.len()).collect();
        assert_eq!(sizes, [1, 3, 1, 2, 1]);
        assert!(groups(&[]).is_empty());
    }

    #[test]
    fn annotation_keys_are_escaped_as_json_pointers() {
        assert_eq!(
            annotation_path("openshift-optional.skrzypek.io/claimed-by"),
            "/metadata/annotations/openshift-optional.skrzypek.io~1claimed-by"
        );
    }

    #[test]
    fn only_the_first_claim_depends_on_the_resource_version() {
        let spec = PoolSpec { paused: true, ..Default::default() };
        let claim = Intent::ClaimPool {
            pool: "worker".into(),
            resource_version: "7".into(),
            owner: "ops/rc".into(),
            original: Default::default(),
            spec: spec.clone(),
        };
        let view = PoolView { has_annotations: true, ..Default::default() };
        let ops = pool_ops(&claim, &view).unwrap_or_default();
        assert_eq!(ops[0], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "7"}));
        let steer = Intent::SteerPool { pool: "worker".into(), owner: "ops/rc".into(), spec };
        let ops = pool_ops(&steer, &view).unwrap_or_default();
        assert_eq!(ops[0], claim_test("ops/rc"));
        assert!(ops.iter().all(|op| op["path"] != "/metadata/resourceVersion"), "{ops:?}");
    }

    #[test]
    fn a_pool_spec_sets_only_what_it_names() {
        let spec = PoolSpec { paused: true, ..Default::default() };
        let ops = spec_ops(&spec).unwrap_or_default();
        assert_eq!(ops, vec![json!({"op": "add", "path": "/spec/paused", "value": true})]);
    }
}
