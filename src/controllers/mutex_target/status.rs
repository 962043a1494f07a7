//! Writing a target's status (`observedGeneration`, `nodes`, `nodeCount`, `ValidConfig`, `NodeListGathered`) by
//! server-side apply on the status subresource under this controller's own field manager; skipped when nothing
//! but timestamps would change. Events tell a person what changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};

use super::plan::{self, TargetPlan, NODE_LIST_GATHERED, VALID_CONFIG};
use crate::api::{MutexTarget, MutexTargetStatus};
use crate::conditions;
use crate::events::{self, Said};
use crate::{Context, Error, Result};

/// The field manager of the status write.
pub const FIELD_MANAGER: &str = "numo-mutex-target-status";

/// Writes `plan` into the target's status; returns whether anything was written.
pub async fn write(ctx: &Context, target: &MutexTarget, plan: &TargetPlan) -> Result<bool> {
    let namespace = target.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let existing = target.status.clone().unwrap_or_default();
    let generation = target.meta().generation;
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let node_count = u32::try_from(plan.nodes.len()).unwrap_or(u32::MAX);
    let desired = MutexTargetStatus {
        observed_generation: generation,
        nodes: plan.nodes.clone(),
        node_count,
        conditions: conditions::merge(&existing.conditions, &plan.conditions, generation, &now),
    };
    if desired == existing {
        return Ok(false);
    }
    let ours: Vec<_> = desired
        .conditions
        .iter()
        .filter(|c| c.type_ == VALID_CONFIG || c.type_ == NODE_LIST_GATHERED)
        .cloned()
        .collect();
    let body = serde_json::json!({
        "apiVersion": MutexTarget::api_version(&()),
        "kind": MutexTarget::kind(&()),
        "status": {
            "observedGeneration": generation,
            "nodes": desired.nodes,
            "nodeCount": node_count,
            "conditions": ours,
        },
    });
    // The Events first: a restart between the writes must not leave a status whose Events never come.
    let previous_nodes = target.status.as_ref().map(|s| s.nodes.as_slice());
    for (warning, reason, note) in plan::events(&existing.conditions, previous_nodes, plan) {
        events::publish(&ctx.recorder, target, Said { warning, reason, action: "GatherNodes", note }).await;
    }
    let api: Api<MutexTarget> = Api::namespaced(ctx.client.clone(), &namespace);
    api.patch_status(&target.name_any(), &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body)).await?;
    Ok(true)
}
