//! Writes a run config's status (server-side apply on the status subresource, skipped when nothing changed) and
//! publishes the plan's Events.

use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::plan::Notice;
use crate::api::{MutexRunConfig, MutexRunConfigStatus};
use crate::{Error, Result};

/// Field manager of the run-config status.
const STATUS_MANAGER: &str = "numo-run-config-status";

/// Writes `status` unless the object already has exactly it.
pub async fn write(client: &kube::Client, rc: &MutexRunConfig, status: &MutexRunConfigStatus) -> Result<()> {
    if rc.status.as_ref() == Some(status) {
        return Ok(());
    }
    let namespace = rc.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let api: Api<MutexRunConfig> = Api::namespaced(client.clone(), &namespace);
    let body = json!({
        "apiVersion": MutexRunConfig::api_version(&()),
        "kind": MutexRunConfig::kind(&()),
        "status": status,
    });
    api.patch_status(&rc.name_any(), &PatchParams::apply(STATUS_MANAGER).force(), &Patch::Apply(&body)).await?;
    Ok(())
}

/// Publishes Events about `rc`; a failure to publish is logged, never fails the reconcile.
pub async fn publish(recorder: &Recorder, rc: &MutexRunConfig, notices: &[Notice]) {
    let reference = rc.object_ref(&());
    for notice in notices {
        let event = Event {
            type_: if notice.warning { EventType::Warning } else { EventType::Normal },
            reason: notice.reason.into(),
            note: Some(truncate(&notice.note, 1000)),
            action: notice.action.into(),
            secondary: None,
        };
        if let Err(error) = recorder.publish(&event, &reference).await {
            tracing::warn!(%error, reason = notice.reason, "could not publish an Event");
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
