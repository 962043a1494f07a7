//! Waiting for an object to reach a state, by watching it (no polling sleeps).

use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// How much of the last seen object a timeout error shows.
const MAX_SHOWN: usize = 4000;

/// Waits (watch-based) until `cond` holds for the object `name`, or fails after `timeout` with an error naming
/// `what` and the last state seen (serialized, truncated).
pub async fn wait_until<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    what: &str,
    cond: impl Fn(&K) -> bool + Send + 'static,
) -> anyhow::Result<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Serialize + Send + 'static,
{
    let mut seen = Seen::Never;
    let mut last_error = None;
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher::watcher(api.clone(), config).default_backoff();
    let watching = async {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Apply(object) | Event::InitApply(object)) => {
                    if cond(&object) {
                        return Some(object);
                    }
                    seen = Seen::Object(Box::new(object));
                }
                Ok(Event::Delete(_)) => seen = Seen::Deleted,
                Ok(Event::Init | Event::InitDone) => {}
                Err(err) => last_error = Some(err.to_string()),
            }
        }
        None
    };
    if let Ok(Some(object)) = tokio::time::timeout(timeout, watching).await {
        return Ok(object);
    }
    let kind = std::any::type_name::<K>().rsplit("::").next().unwrap_or_default();
    let mut message = format!("timed out after {timeout:?} waiting for {what} ({kind} {name}): {}", seen.describe());
    if let Some(err) = last_error {
        message.push_str(&format!("; last watch error: {err}"));
    }
    anyhow::bail!(message)
}

/// The last thing the watch showed about the object.
enum Seen<K> {
    Never,
    Deleted,
    Object(Box<K>),
}

impl<K: Serialize> Seen<K> {
    fn describe(&self) -> String {
        match self {
            Seen::Never => "the object was never seen".into(),
            Seen::Deleted => "the object was deleted".into(),
            Seen::Object(object) => {
                let json = serde_json::to_string(object).unwrap_or_else(|err| format!("<unserializable: {err}>"));
                format!("last seen {}", truncate(&json, MAX_SHOWN))
            }
        }
    }
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes more)", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_states_are_truncated_on_a_character_boundary() {
        let text = "é".repeat(10);
        let cut = truncate(&text, 5);
        assert!(cut.starts_with("éé..."), "{cut}");
        assert!(cut.ends_with("(16 bytes more)"), "{cut}");
        assert_eq!(truncate("short", 5), "short");
    }
}
