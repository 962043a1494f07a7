//! Publishing Kubernetes Events about numo's objects. Publishing never fails a reconcile: an Event that cannot be
//! written is logged and dropped.

use kube::runtime::events::{Event, EventType, Recorder};
use kube::Resource;

/// Longest note the events.k8s.io API accepts.
const MAX_NOTE: usize = 1024;

/// Publishes an Event about `obj`: `Warning` when `warning`, else `Normal`. `reason` is a CamelCase word, `action`
/// what numo did or tried (e.g. `Validate`), `note` the sentence a person reads. Errors are logged, never returned.
pub async fn publish(
    recorder: &Recorder,
    obj: &impl Resource<DynamicType = ()>,
    warning: bool,
    reason: &str,
    action: &str,
    note: String,
) {
    let event = Event {
        type_: if warning { EventType::Warning } else { EventType::Normal },
        reason: reason.to_string(),
        note: Some(truncate(note, MAX_NOTE)),
        action: action.to_string(),
        secondary: None,
    };
    let reference = obj.object_ref(&());
    if let Err(error) = recorder.publish(&event, &reference).await {
        tracing::warn!(
            %error,
            kind = reference.kind.as_deref().unwrap_or_default(),
            name = reference.name.as_deref().unwrap_or_default(),
            namespace = reference.namespace.as_deref().unwrap_or_default(),
            reason,
            "could not publish an Event"
        );
    }
}

/// `text` cut to at most `max` bytes on a character boundary, with an ellipsis when cut.
pub fn truncate(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        assert_eq!(truncate("short".into(), 10), "short");
        let cut = truncate("é".repeat(600), MAX_NOTE);
        assert!(cut.len() <= MAX_NOTE);
        assert!(cut.ends_with('…'));
    }
}
