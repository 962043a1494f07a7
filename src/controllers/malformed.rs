//! Objects that cannot be parsed into numo's types (watched through `DeserializeGuard`, so they never stall a
//! controller) still get a status condition and a Warning Event saying what is wrong.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::error_boundary::InvalidObject;
use kube::core::DeserializeGuard;
use kube::Resource;

use crate::conditions::{self, Desired};
use crate::{Context, Error, Result};

/// Reason of the condition written for a malformed object.
pub const REASON: &str = "Malformed";

/// Marks `guard`'s object malformed: `condition_type` (e.g. `ValidConfig`) False with reason `Malformed` and the
/// parse error, written by server-side apply as `field_manager` on the status subresource, and a Warning Event
/// when the condition changes. Skips the write when nothing but timestamps would change.
pub async fn report<K>(
    ctx: &Context,
    guard: &DeserializeGuard<K>,
    invalid: &InvalidObject,
    condition_type: &'static str,
    field_manager: &str,
) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug,
{
    let name = invalid.metadata.name.as_deref().ok_or(Error::MissingField("metadata.name"))?;
    let resource = ApiResource::erase::<K>(&());
    let api: Api<DynamicObject> = match invalid.metadata.namespace.as_deref() {
        Some(namespace) => Api::namespaced_with(ctx.client.clone(), namespace, &resource),
        None => Api::all_with(ctx.client.clone(), &resource),
    };
    let Some(current) = api.get_opt(name).await? else { return Ok(()) };
    let existing: Vec<Condition> = current
        .data
        .pointer("/status/conditions")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    let generation = current.metadata.generation;
    let message = format!("the object does not match numo's API and cannot be used: {}", invalid.error);
    let desired = [Desired::false_(condition_type, REASON, message.clone())];
    let merged = conditions::merge(&existing, &desired, generation, &Time(k8s_openapi::jiff::Timestamp::now()));
    let before = conditions::find(&existing, condition_type);
    let after = conditions::find(&merged, condition_type);
    let Some(after) = after else { return Ok(()) };
    if before.map(without_time) == Some(without_time(after)) {
        return Ok(());
    }
    // Only this condition: the list is a map keyed by type, so the other conditions keep their owners.
    let body = serde_json::json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "status": { "observedGeneration": generation, "conditions": [after] },
    });
    api.patch_status(name, &PatchParams::apply(field_manager).force(), &Patch::Apply(&body)).await?;
    crate::events::publish(&ctx.recorder, guard, true, REASON, "Validate", message).await;
    Ok(())
}

/// A condition with its transition time cleared, to compare what a person would see change.
fn without_time(condition: &Condition) -> Condition {
    Condition { last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH), ..condition.clone() }
}
