//! Publishing Kubernetes Events (events.k8s.io/v1) about numo's objects. Publishing never fails a reconcile: an Event
//! that cannot be written is logged and dropped.
//!
//! An Event that repeats one published a short while ago (same object, type, reason, action and note) becomes a
//! series: its count and last-observed time go up instead of a new Event being created. The note is part of that
//! identity, so every distinct sentence ("Node worker-3: Running gate Jobs.") stays visible in `kubectl get events`
//! (kube's own `Recorder` folds Events of one reason into the first one's note).
//!
//! The run-config controller publishes through a queue ([`publish_later`]): a background task writes up to
//! [`PUBLISHING_AT_ONCE`] Events at once, so a rollout never waits for an Event, and a slow or failing Events API
//! delays no node. The other controllers, whose Events are rare, publish before they write the status.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use futures::StreamExt;
use tokio::sync::mpsc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Resource};

/// Longest note the events.k8s.io API accepts.
pub const MAX_NOTE: usize = 1024;
/// How long a published Event can still become a series (the Kubernetes event recorder's interval).
const SERIES_WINDOW: SignedDuration = SignedDuration::from_secs(6 * 60);
/// How often Events whose series window closed are forgotten.
const PRUNE_EVERY: SignedDuration = SignedDuration::from_secs(60);

/// How many queued Events are written at once.
pub const PUBLISHING_AT_ONCE: usize = 8;
/// How many Events may wait in the queue; beyond that (the API server far behind) new ones are dropped and logged.
const QUEUE: usize = 1024;

/// What makes two Events the same occurrence.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Occurrence {
    regarding: (Option<String>, Option<String>, Option<String>, Option<String>),
    warning: bool,
    reason: String,
    action: String,
    note: String,
}

/// An Event already published: where it is and how often it was seen.
#[derive(Clone, Debug)]
struct Published {
    name: String,
    count: i32,
    last: Timestamp,
}

impl Published {
    /// Whether the Event can still become a series at `now`.
    fn open_at(&self, now: Timestamp) -> bool {
        now.duration_since(self.last) < SERIES_WINDOW
    }
}

/// Publishes Events as one reporting controller (and instance, the pod's name when known).
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
    /// The queue of [`publish_later`], with its publishing task started on first use (so that a recorder can be
    /// made outside a runtime). The task ends once every recorder is gone and the queue is empty.
    queue: Arc<OnceLock<mpsc::Sender<Queued>>>,
}

/// The part of a recorder the publishing task shares.
struct Inner {
    client: kube::Client,
    controller: String,
    instance: String,
    published: Mutex<Remembered>,
}

/// The Events published within the series window, forgotten a while after it closed (pruned once per
/// [`PRUNE_EVERY`], not on every Event: at thousands of nodes a rollout keeps thousands of them).
#[derive(Default)]
struct Remembered {
    events: HashMap<Occurrence, Published>,
    pruned: Option<Timestamp>,
}

/// An Event waiting in the queue, with the time it happened.
struct Queued {
    reference: ObjectReference,
    occurrence: Occurrence,
    at: Timestamp,
}

impl Recorder {
    /// A recorder reporting as `controller` (instance: `instance`, else the controller's name).
    pub fn new(client: kube::Client, controller: &str, instance: Option<String>) -> Self {
        let inner = Inner {
            client,
            controller: controller.to_string(),
            instance: instance.unwrap_or_else(|| controller.to_string()),
            published: Mutex::default(),
        };
        Self { inner: Arc::new(inner), queue: Arc::default() }
    }

    fn sender(&self) -> &mpsc::Sender<Queued> {
        self.queue.get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Queued>(QUEUE);
            let inner = self.inner.clone();
            tokio::spawn(receiving(receiver).for_each_concurrent(PUBLISHING_AT_ONCE, move |queued| {
                let inner = inner.clone();
                async move { inner.publish(queued).await }
            }));
            sender
        })
    }
}

/// The receiver as a stream.
fn receiving(mut receiver: mpsc::Receiver<Queued>) -> impl futures::Stream<Item = Queued> {
    futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))
}

impl Inner {
    /// Writes the Event (or the next count of its series); logs a failure.
    async fn publish(&self, queued: Queued) {
        let Queued { reference, occurrence, at } = queued;
        match self.write(&reference, &occurrence, at).await {
            Ok(published) => self.remember(occurrence, published),
            Err(error) => tracing::warn!(
                %error,
                kind = reference.kind.as_deref().unwrap_or_default(),
                name = reference.name.as_deref().unwrap_or_default(),
                namespace = reference.namespace.as_deref().unwrap_or_default(),
                reason = occurrence.reason,
                "could not publish an Event"
            ),
        }
    }

    /// The Event already published for `occurrence` within the series window, now seen once more.
    fn repeat_of(&self, occurrence: &Occurrence, now: Timestamp) -> Option<Published> {
        let mut remembered = self.published.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if remembered.pruned.is_none_or(|pruned| now.duration_since(pruned) >= PRUNE_EVERY) {
            remembered.events.retain(|_, p| p.open_at(now));
            remembered.pruned = Some(now);
        }
        let published = remembered.events.get(occurrence).filter(|p| p.open_at(now))?;
        Some(Published { count: published.count + 1, last: now, ..published.clone() })
    }

    fn remember(&self, occurrence: Occurrence, event: Published) {
        let mut remembered = self.published.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        remembered.events.insert(occurrence, event);
    }

    async fn write(
        &self,
        reference: &ObjectReference,
        occurrence: &Occurrence,
        now: Timestamp,
    ) -> Result<Published, kube::Error> {
        let namespace = reference.namespace.clone().unwrap_or_else(|| "default".into());
        let events: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        if let Some(repeat) = self.repeat_of(occurrence, now) {
            let series = EventSeries { count: repeat.count, last_observed_time: MicroTime(now) };
            let patch = serde_json::json!({ "series": series });
            match events.patch(&repeat.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                Ok(_) => return Ok(repeat),
                // Gone already (Events expire): publish it anew.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let name = event_name(reference.name.as_deref().unwrap_or(&self.controller), now);
        let event = Event {
            metadata: ObjectMeta { name: Some(name.clone()), namespace: Some(namespace.clone()), ..Default::default() },
            event_time: Some(MicroTime(now)),
            type_: Some(if occurrence.warning { "Warning" } else { "Normal" }.into()),
            reason: Some(occurrence.reason.clone()),
            action: Some(occurrence.action.clone()),
            note: Some(occurrence.note.clone()),
            regarding: Some(reference.clone()),
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        events.create(&PostParams::default(), &event).await?;
        Ok(Published { name, count: 1, last: now })
    }
}

/// What an Event says: `Warning` when `warning`, else `Normal`; `reason` a CamelCase word, `action` what numo did or
/// tried (e.g. `Validate`), `note` the sentence a person reads.
pub struct Said<'a> {
    /// Whether it is a Warning.
    pub warning: bool,
    /// A CamelCase word.
    pub reason: &'a str,
    /// What numo did or tried.
    pub action: &'a str,
    /// The sentence a person reads.
    pub note: String,
}

/// Publishes an Event about `obj` that says `said`. Returns once it is written; errors are logged, never returned.
pub async fn publish(recorder: &Recorder, obj: &impl Resource<DynamicType = ()>, said: Said<'_>) {
    recorder.inner.publish(queued(obj, said)).await;
}

/// Queues an Event about `obj` (see [`publish`]) and returns at once; the recorder's task publishes it. A full queue
/// drops the Event, with a log line: the status still says what happened.
pub fn publish_later(recorder: &Recorder, obj: &impl Resource<DynamicType = ()>, said: Said<'_>) {
    let reason = said.reason;
    if recorder.sender().try_send(queued(obj, said)).is_err() {
        tracing::warn!(reason, "the Event queue is full; an Event was dropped");
    }
}

fn queued(obj: &impl Resource<DynamicType = ()>, Said { warning, reason, action, note }: Said<'_>) -> Queued {
    let reference = obj.object_ref(&());
    let occurrence = Occurrence {
        regarding: (reference.kind.clone(), reference.namespace.clone(), reference.name.clone(), reference.uid.clone()),
        warning,
        reason: reason.to_string(),
        action: action.to_string(),
        note: truncate(note, MAX_NOTE),
    };
    Queued { reference, occurrence, at: Timestamp::now() }
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

/// An Event's name: `<object>.<time in hex>`, the object's part shortened (with a hash) so that the whole stays a
/// valid object name (at most 253 characters) whatever the object's name.
fn event_name(object: &str, now: Timestamp) -> String {
    format!("{}.{:x}", crate::labels::shorten(object, MAX_OBJECT_PART), now.as_nanosecond())
}

/// Longest object part of an Event name: 253 characters, less a dot and up to 32 hex digits of the time.
const MAX_OBJECT_PART: usize = 253 - 33;

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

    #[test]
    fn event_names_stay_valid_for_the_longest_object_names() {
        let long = "r".repeat(253);
        let name = event_name(&long, Timestamp::now());
        assert!(name.len() <= 253, "{}", name.len());
        assert_ne!(event_name(&long, Timestamp::UNIX_EPOCH), event_name(&"s".repeat(253), Timestamp::UNIX_EPOCH));
        assert!(event_name("short", Timestamp::UNIX_EPOCH).starts_with("short."));
    }
}
