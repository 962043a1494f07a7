//! Objects that cannot be decoded into numo's types (watched through [`Guarded`], so they never stall a controller)
//! still get a status condition and a Warning Event saying what is wrong and what to fix.
//!
//! The status is read and written as [`ConditionsOf`], which decodes any object (of any depth), so neither the read
//! nor the apiserver's answer to the write can fail on the very object being reported.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, Patch, PatchParams};
use kube::Resource;

use crate::conditions::{self, Desired};
use crate::events::{self, Said};
use crate::guard::{ConditionsOf, Guarded, Problem, Undecodable};
use crate::{Context, Error, Result};

/// Reason of the condition written for a malformed object.
pub const REASON: &str = "Malformed";

/// Marks `guard`'s object malformed: `condition_type` (e.g. `ValidConfig`) False with reason `Malformed` and
/// [`message`], written by server-side apply as `field_manager` on the status subresource, and a Warning Event
/// when the condition changes. Skips the write when nothing but timestamps would change.
pub async fn report<K>(
    ctx: &Context,
    guard: &Guarded<K>,
    invalid: &Undecodable,
    condition_type: &'static str,
    field_manager: &str,
) -> Result<()>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone + std::fmt::Debug,
{
    let name = invalid.metadata.name.as_deref().ok_or(Error::MissingField("metadata.name"))?;
    let namespace = invalid.metadata.namespace.as_deref().ok_or(Error::MissingField("metadata.namespace"))?;
    let api: Api<ConditionsOf<K>> = Api::namespaced(ctx.client.clone(), namespace);
    let Some(current) = api.get_opt(name).await? else { return Ok(()) };
    let existing = &current.status.conditions;
    let generation = current.metadata.generation;
    let message = message(invalid);
    let desired = [Desired::false_(condition_type, REASON, message.clone())];
    let merged = conditions::merge(existing, &desired, generation, &Time(k8s_openapi::jiff::Timestamp::now()));
    let before = conditions::find(existing, condition_type);
    let Some(after) = conditions::find(&merged, condition_type) else { return Ok(()) };
    if before.map(without_time) == Some(without_time(after)) {
        return Ok(());
    }
    // Only this condition: the list is a map keyed by type, so the other conditions keep their owners.
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": { "observedGeneration": generation, "conditions": [after] },
    });
    // The Event first: a restart between the two writes must not leave a condition whose Event never comes (the
    // next reconcile sees the condition unchanged and publishes nothing).
    events::publish(&ctx.recorder, guard, Said { warning: true, reason: REASON, action: "Validate", note: message })
        .await;
    api.patch_status(name, &PatchParams::apply(field_manager).force(), &Patch::Apply(&body)).await?;
    Ok(())
}

/// What a person reads about an object numo cannot decode: what is wrong, where, and what to do about it.
pub fn message(invalid: &Undecodable) -> String {
    match invalid.problem {
        Problem::TooDeep => {
            format!("The object cannot be read: {}. Remove or flatten that deeply nested value.", invalid.error)
        }
        Problem::Mismatch => {
            format!("The object does not match numo's API and cannot be used: {}. Correct that field.", invalid.error)
        }
    }
}

/// A condition with its transition time cleared, to compare what a person would see change.
fn without_time(condition: &Condition) -> Condition {
    Condition { last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH), ..condition.clone() }
}
