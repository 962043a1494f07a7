//! A run config that does not parse into numo's types. It still gets a verdict in its status (written by its own
//! field manager, so the rest of the status stays as it was), and when it is deleted numo still restores what it
//! holds: the pools its claim names, the rule labels those pools' selectors name, its Jobs — then lets it go.

use kube::core::ObjectMeta;
use kube::runtime::controller::Action;
use kube::ResourceExt;

use super::{apply, observe, plan, Guarded};
use crate::api::{MutexRunConfig, MutexRunConfigSpec};
use crate::guard::Undecodable;
use crate::{Context, Result};

/// Field manager of a malformed run config's condition (not the status manager: that would wipe the rest).
const FIELD_MANAGER: &str = "numo-run-config-malformed";

/// Reports a malformed run config, or restores what it holds when it is being deleted.
pub async fn reconcile(
    ctx: &Context,
    stores: &observe::Stores,
    guard: &Guarded,
    invalid: &Undecodable,
) -> Result<Action> {
    if invalid.metadata.deletion_timestamp.is_none() {
        crate::controllers::malformed::report(ctx, guard, invalid, plan::condition::CONFIG_VALIDATED, FIELD_MANAGER)
            .await?;
        return Ok(Action::await_change());
    }
    let rc = placeholder((*invalid.metadata).clone());
    let snapshot = observe::snapshot(stores, &rc, k8s_openapi::jiff::Timestamp::now());
    let plan = plan::plan(&snapshot);
    apply::apply(&ctx.client, &rc, &snapshot, &plan.intents).await.map_err(|failed| failed.error)?;
    tracing::info!(run_config = %rc.name_any(), "malformed run config deleted: restored what it held");
    Ok(Action::await_change())
}

/// A run config with the malformed one's metadata and a spec that names nothing: deleting it restores only what
/// the cluster records as held by it.
fn placeholder(metadata: ObjectMeta) -> MutexRunConfig {
    let spec = MutexRunConfigSpec::default();
    MutexRunConfig { metadata, spec, status: None }
}
