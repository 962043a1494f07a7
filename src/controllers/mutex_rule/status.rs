//! Writing a rule's status: `observedGeneration`, the `ValidConfig` condition and `jobRenderings`, by server-side
//! apply on the status subresource under this controller's own field manager. The write is skipped when nothing but
//! timestamps would change; an Event is published when what a person reads changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};

use super::plan::{self, Verdict, VALID_CONFIG};
use crate::api::{MutexRule, MutexRuleStatus};
use crate::conditions;
use crate::events::{self, Said};
use crate::{Context, Error, Result};

/// The field manager of the status write.
pub const FIELD_MANAGER: &str = "numo-mutex-rule-status";

/// Writes `verdict` into the rule's status; returns whether anything was written.
pub async fn write(ctx: &Context, rule: &MutexRule, verdict: &Verdict) -> Result<bool> {
    let namespace = rule.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let existing = rule.status.clone().unwrap_or_default();
    let generation = rule.meta().generation;
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let desired = MutexRuleStatus {
        observed_generation: generation,
        conditions: conditions::merge(&existing.conditions, &[verdict.condition()], generation, &now),
        job_renderings: verdict.renderings.clone(),
    };
    if desired == existing {
        return Ok(false);
    }
    let ours: Vec<_> = desired.conditions.iter().filter(|c| c.type_ == VALID_CONFIG).cloned().collect();
    let body = serde_json::json!({
        "apiVersion": MutexRule::api_version(&()),
        "kind": MutexRule::kind(&()),
        "status": { "observedGeneration": generation, "conditions": ours, "jobRenderings": verdict.renderings },
    });
    // The Event first: a restart between the two writes must not leave a verdict whose Event never comes.
    if let Some((warning, reason, note)) = plan::event(conditions::find(&existing.conditions, VALID_CONFIG), verdict) {
        events::publish(&ctx.recorder, rule, Said { warning, reason, action: "Validate", note }).await;
    }
    let api: Api<MutexRule> = Api::namespaced(ctx.client.clone(), &namespace);
    api.patch_status(&rule.name_any(), &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body)).await?;
    Ok(true)
}
