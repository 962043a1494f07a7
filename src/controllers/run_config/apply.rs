//! Carries a plan's intents out, in order, each idempotent: pool writes are conditional on the resourceVersion the
//! plan saw (a JSON Patch `test`), label patches name only numo's keys, Jobs have deterministic names (an existing Job
//! means the step was created before). The first failure stops the rest; the next reconcile plans again.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use super::plan::Intent;
use super::snapshot::{PoolOriginal, Snapshot};
use crate::api::MutexRunConfig;
use crate::labels;
use crate::openshift::MachineConfigPool;
use crate::{Error, Result};

/// Field manager of numo's writes to pools, nodes and run-config metadata.
const MANAGER: &str = "numo";

/// Applies every intent in order.
pub async fn apply(client: &kube::Client, rc: &MutexRunConfig, snapshot: &Snapshot, intents: &[Intent]) -> Result<()> {
    for intent in intents {
        apply_one(client, rc, snapshot, intent).await?;
    }
    Ok(())
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
        Intent::WritePool { pool, resource_version, record, claim, paused, node_selector } => {
            let has_annotations = snapshot_pool_has_annotations(snapshot, pool);
            let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})];
            if let Some(original) = record {
                if !has_annotations {
                    ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": {}}));
                }
                ops.push(add(&annotation_path(labels::POOL_CLAIMED_BY), json!(claim)));
                ops.push(add(&annotation_path(labels::POOL_ORIGINAL), json!(serde_json::to_string(original)?)));
            }
            ops.push(add("/spec/paused", json!(paused)));
            if let Some(selector) = node_selector {
                ops.push(add("/spec/nodeSelector", serde_json::to_value(selector)?));
            }
            json_patch(&pools, pool, ops).await?;
        }
        Intent::RestorePool { pool, resource_version, original } => {
            let current = snapshot.pools.get(pool);
            let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version})];
            ops.extend(restore_ops(original, current.is_some_and(|p| p.node_selector.is_some())));
            if current.is_some_and(|p| p.claimed_by.is_some()) {
                ops.push(json!({"op": "remove", "path": annotation_path(labels::POOL_CLAIMED_BY)}));
            }
            if current.is_some_and(|p| p.original_recorded) {
                ops.push(json!({"op": "remove", "path": annotation_path(labels::POOL_ORIGINAL)}));
            }
            json_patch(&pools, pool, ops).await?;
        }
        Intent::LabelNode { node, labels } | Intent::UnlabelNode { node, labels } => {
            let value = if matches!(intent, Intent::LabelNode { .. }) { json!("") } else { Value::Null };
            let map: serde_json::Map<String, Value> = labels.iter().map(|k| (k.clone(), value.clone())).collect();
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
    }
    Ok(())
}

/// The JSON Patch operations that put a pool's `paused` and `nodeSelector` back as recorded.
fn restore_ops(original: &Option<PoolOriginal>, has_selector: bool) -> Vec<Value> {
    let Some(original) = original else { return Vec::new() };
    let mut ops = vec![add("/spec/paused", json!(original.paused))];
    match &original.node_selector {
        Some(selector) => ops.push(add("/spec/nodeSelector", serde_json::to_value(selector).unwrap_or_default())),
        None if has_selector => ops.push(json!({"op": "remove", "path": "/spec/nodeSelector"})),
        None => {}
    }
    ops
}

fn snapshot_pool_has_annotations(snapshot: &Snapshot, pool: &str) -> bool {
    snapshot.pools.get(pool).is_some_and(|p| p.has_annotations)
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
    fn annotation_keys_are_escaped_as_json_pointers() {
        assert_eq!(
            annotation_path("openshift-optional.skrzypek.io/claimed-by"),
            "/metadata/annotations/openshift-optional.skrzypek.io~1claimed-by"
        );
    }

    #[test]
    fn restore_removes_a_selector_the_pool_did_not_have() {
        let original = Some(PoolOriginal { paused: true, node_selector: None });
        let ops = restore_ops(&original, true);
        assert_eq!(ops[0], json!({"op": "add", "path": "/spec/paused", "value": true}));
        assert_eq!(ops[1], json!({"op": "remove", "path": "/spec/nodeSelector"}));
        assert!(restore_ops(&None, true).is_empty());
    }
}
