//! A controller's watches in one place. Each watched kind gets its own watcher, reflected into a cache; this module
//! tracks each watch's first full list and its health, tells `/readyz` (`crate::server::Readiness`), logs a failure
//! once at warn level, and hands the controller a stream of the watch's events that never carries an error.
//!
//! Errors stop in the watch that had them, on purpose. kube's `applied_objects`/`touched_objects` pass a watch error
//! on, and an error reaching `Controller::for_stream`/`watches_stream` makes the controller stop polling *all* its
//! watches for its trigger back-off (kube's default: 0.8 s doubling to 30 s, jittered up to twice that, reset only
//! by an event). After an API-server restart every watch fails (connection refused, then `410 Gone` for its old
//! resource version), so the back-off grew with each error of any watch; worse, a watch whose list or watch request
//! was under way when polling stopped sat unpolled for up to a minute, the apiserver closed that stalled connection,
//! and the next poll returned an error that paused every watch again. With eight watches there was always one: the
//! run-config controller never saw another event. Here a failed watch waits only for itself ([`RetryDelays`]: 0.5 s
//! doubling to 4 s) while the controller goes on polling the others.
//!
//! After an error the watch starts over with a fresh list, as client-go's reflector does for most errors: the cache
//! is replaced when that list is complete (and the list's objects trigger reconciles, so whatever changed while the
//! watch was down is seen), and the end of that list is the moment the watch counts as healthy again.

use std::collections::hash_map::RandomState;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{future, Stream, StreamExt, TryStreamExt};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::server::Readiness;

/// A kind numo can watch into a cache: what kube's watcher and reflector need of it.
pub trait Watchable:
    Resource<DynamicType: Default + Eq + Hash + Clone + Send + Sync>
    + Clone
    + Debug
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Watchable for K
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
}

/// The wait before a failed watch lists again; it doubles with every failure in a row, up to [`MAX_DELAY`].
pub const FIRST_DELAY: Duration = Duration::from_millis(500);
/// The longest wait between two attempts of a failing watch (before a jitter of up to a quarter more).
pub const MAX_DELAY: Duration = Duration::from_secs(4);
/// A failure this long after the previous one starts a new series of delays at [`FIRST_DELAY`].
pub const FRESH_AFTER: Duration = Duration::from_secs(60);
/// The first wait before an optional watch whose kind the API server does not serve (404) looks again: most
/// clusters never serve it (no ODF, no image mode), so it doubles up to [`ABSENT_MAX_DELAY`].
pub const ABSENT_FIRST_DELAY: Duration = Duration::from_secs(60);
/// The longest wait between two looks for a kind the API server does not serve: a kind installed later (an
/// operator's CRD) is seen within this long.
pub const ABSENT_MAX_DELAY: Duration = Duration::from_secs(600);

/// One controller's watches: create them with [`Watches::watch`] (all of them before the first `.await`), wait for
/// their caches with [`Watches::wait_listed`]. Cloning shares the state.
#[derive(Clone)]
pub struct Watches {
    shared: Arc<Shared>,
}

struct Shared {
    controller: &'static str,
    client: kube::Client,
    readiness: Readiness,
    health: Sources,
    /// Whether every watch has delivered its first full list.
    listed: watch::Sender<bool>,
    /// The API group and resource of every watch, in the order they were made.
    watched: std::sync::Mutex<Vec<(String, String)>>,
}

/// What is known of one watch.
#[derive(Debug, Default)]
struct Health {
    /// Optional: its cache is read only by checks that say when it cannot be read, so neither readiness nor
    /// [`Watches::wait_listed`] waits for it (a kind the cluster lacks, or RBAC an older install did not grant,
    /// never blinds the controller).
    optional: bool,
    /// Its cache has held a full list.
    listed: bool,
    /// The failure it has not recovered from yet.
    failure: Option<Failure>,
}

/// A watch failing since `since`, with `errors` errors so far, the last one `last_error`.
#[derive(Debug)]
struct Failure {
    since: Instant,
    errors: u32,
    last_error: String,
}

impl Watches {
    /// The watches of `controller` (through `client`), which registers with `readiness` as starting.
    pub fn new(controller: &'static str, client: kube::Client, readiness: Readiness) -> Self {
        readiness.register(controller);
        let (listed, _) = watch::channel(false);
        let shared =
            Shared { controller, client, readiness, health: Sources::default(), listed, watched: Default::default() };
        Self { shared: Arc::new(shared) }
    }

    /// Watches the objects of type `K` in every namespace (one `kind`, named so in logs and `/readyz`) with
    /// `config`, into the returned cache. The returned events feed the controller (`Controller::for_stream`,
    /// `watches_stream`, through `applied_objects`, `touched_objects`, `predicate_filter`); they are never an `Err`.
    /// Objects are cached without their `managedFields`, which numo never reads.
    pub fn watch<K>(
        &self,
        kind: &'static str,
        config: watcher::Config,
    ) -> (Store<K>, impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K>)
    where
        K: Watchable,
    {
        self.watch_trimmed(kind, config, |_: &mut K| {})
    }

    /// [`Watches::watch`] for a source that only some checks read: neither readiness nor
    /// [`Watches::wait_listed`] waits for it; readers ask [`Sources::readable`] before they trust its cache.
    pub fn watch_optional<K>(
        &self,
        kind: &'static str,
        config: watcher::Config,
    ) -> (Store<K>, impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K>)
    where
        K: Watchable,
    {
        self.watch_optional_trimmed(kind, config, |_: &mut K| {})
    }

    /// [`Watches::watch_optional`] with `trim` applied to every object before it is cached (see
    /// [`Watches::watch_trimmed`]).
    pub fn watch_optional_trimmed<K, F>(
        &self,
        kind: &'static str,
        config: watcher::Config,
        trim: F,
    ) -> (Store<K>, impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K, F>)
    where
        K: Watchable,
        F: Fn(&mut K) + Send + 'static,
    {
        self.shared.with(|health| health.entry(kind).or_default().optional = true);
        self.watch_trimmed(kind, config, trim)
    }

    /// The API group and resource of every watch made so far (to check numo's ClusterRole lets it make them).
    pub fn watched(&self) -> Vec<(String, String)> {
        self.shared.watched.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// What tells whether an optional watch's cache can be read (see [`Sources::readable`]).
    pub fn sources(&self) -> Sources {
        self.shared.health.clone()
    }

    /// [`Watches::watch`], with `trim` applied to every object before it is cached: what a controller never reads
    /// (a Job's pod template, a Node's image list) costs memory for as long as the object exists.
    pub fn watch_trimmed<K, F>(
        &self,
        kind: &'static str,
        config: watcher::Config,
        trim: F,
    ) -> (Store<K>, impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K, F>)
    where
        K: Watchable,
        F: Fn(&mut K) + Send + 'static,
    {
        self.watch_keeping_writers(kind, config, trim, &[])
    }

    /// [`Watches::watch_trimmed`], keeping of `managedFields` only who owns the fields in `keep` (see
    /// [`crate::field_managers::prune`]): a MachineConfigPool's `spec.paused`, to say who unpaused it.
    pub fn watch_keeping_writers<K, F>(
        &self,
        kind: &'static str,
        config: watcher::Config,
        trim: F,
        keep: &'static [crate::field_managers::FieldPath],
    ) -> (Store<K>, impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K, F>)
    where
        K: Watchable,
        F: Fn(&mut K) + Send + 'static,
    {
        let api = Api::<K>::all(self.shared.client.clone());
        let resource = (K::group(&Default::default()).into_owned(), K::plural(&Default::default()).into_owned());
        self.shared.watched.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(resource);
        let (store, writer) = reflector::store();
        let optional = self.shared.with(|health| health.get(kind).is_some_and(|h| h.optional));
        let absent = optional.then(|| RetryDelays::new(ABSENT_FIRST_DELAY, ABSENT_MAX_DELAY));
        let events = relisting(move || watcher(api.clone(), config.clone()), RetryDelays::default(), absent)
            .modify(move |object| {
                crate::field_managers::prune(&mut object.meta_mut().managed_fields, keep);
                trim(object);
            })
            .reflect(writer)
            .map_ok(marked_deleted);
        (store, self.track(kind, events))
    }

    /// Passes one watch's events through, noting its lists and errors; errors are logged and dropped.
    fn track<K, S>(
        &self,
        kind: &'static str,
        events: S,
    ) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + use<K, S>
    where
        S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
        K: Send,
    {
        self.shared.with(|health| {
            health.entry(kind).or_default();
        });
        let shared = self.shared.clone();
        events.filter_map(move |event| {
            future::ready(match event {
                Ok(event) => {
                    if matches!(event, Event::InitDone) {
                        shared.listed(kind);
                    }
                    Some(Ok(event))
                }
                Err(error) => {
                    shared.failed(kind, &error);
                    None
                }
            })
        })
    }

    /// Whether every watch has delivered its first full list (its cache is filled).
    pub fn is_listed(&self) -> bool {
        *self.shared.listed.borrow()
    }

    /// The required watches that have not delivered their first full list yet.
    pub fn pending(&self) -> Vec<&'static str> {
        self.shared
            .with(|health| health.iter().filter(|(_, h)| !h.listed && !h.optional).map(|(kind, _)| *kind).collect())
    }

    /// The watches failing now (until their next full list).
    pub fn failing(&self) -> Vec<&'static str> {
        self.shared.with(|health| health.iter().filter(|(_, h)| h.failure.is_some()).map(|(kind, _)| *kind).collect())
    }

    /// Waits until every watch has delivered its first full list, warning (with the kinds still missing, e.g. a
    /// watch the operator's RBAC does not allow) while that takes long. Before that, a half-filled cache would read
    /// as missing objects.
    pub async fn wait_listed(&self) {
        let mut listed = self.shared.listed.subscribe();
        let mut patience = Duration::from_secs(10);
        loop {
            match tokio::time::timeout(patience, listed.wait_for(|listed| *listed)).await {
                Ok(_) => return,
                Err(_) => {
                    let (controller, pending) = (self.shared.controller, self.pending());
                    tracing::warn!(controller, ?pending, "caches are not filled after {}s", patience.as_secs());
                    patience = (patience * 2).min(Duration::from_secs(300));
                }
            }
        }
    }
}

/// The health of a controller's watches, shared with the readers of their caches. `Sources::default()` knows no
/// watch: every kind reads as not watched.
#[derive(Clone, Debug, Default)]
pub struct Sources(Arc<Mutex<BTreeMap<&'static str, Health>>>);

impl Sources {
    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<&'static str, Health>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Records that the cache of `kind` holds a full list read once, without a watch (as `numo plan` reads the
    /// cluster).
    pub fn read_once(&self, kind: &'static str) {
        self.with(|health| health.entry(kind).or_default().listed = true);
    }

    /// Whether the cache of `kind` can be trusted now: Ok once it holds a full list and while its watch is not
    /// failing; else why not.
    pub fn readable(&self, kind: &str) -> Result<(), String> {
        self.with(|health| match health.get(kind) {
            None => Err(format!("{kind} are not watched")),
            Some(Health { failure: Some(failure), .. }) => Err(failure.last_error.clone()),
            Some(Health { listed: false, .. }) => Err(format!("{kind} are not listed yet")),
            Some(_) => Ok(()),
        })
    }
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<&'static str, Health>) -> T) -> T {
        self.health.with(f)
    }

    /// A full list arrived: the cache is filled, and a failing watch has recovered.
    fn listed(&self, kind: &'static str) {
        let controller = self.controller;
        self.with(|health| {
            let entry = health.entry(kind).or_default();
            entry.listed = true;
            if let Some(Failure { since, errors, .. }) = entry.failure.take() {
                let seconds = since.elapsed().as_secs();
                tracing::info!(controller, kind, errors, "watch listed again after failing for {seconds}s");
            }
            self.report(health);
        });
    }

    /// The watch failed; it lists again after a delay. Only the first error of a failure is logged as a warning; an
    /// optional kind the API server does not serve is one line of information.
    fn failed(&self, kind: &'static str, error: &watcher::Error) {
        let controller = self.controller;
        self.with(|health| {
            let entry = health.entry(kind).or_default();
            let absent = entry.optional && not_served(error);
            match &mut entry.failure {
                Some(failure) => {
                    failure.errors += 1;
                    failure.last_error = error.to_string();
                    let errors = failure.errors;
                    tracing::debug!(controller, kind, %error, errors, "watch still failing; listing again");
                }
                None if absent => {
                    let minutes = ABSENT_MAX_DELAY.as_secs() / 60;
                    tracing::info!(
                        controller,
                        kind,
                        "optional kind not served by this cluster; the checks that read it say so, and numo looks \
                         for it again at most every {minutes} minutes"
                    );
                    entry.failure = Some(Failure { since: Instant::now(), errors: 1, last_error: error.to_string() });
                }
                None => {
                    tracing::warn!(controller, kind, %error, "watch failed; listing again until it succeeds");
                    entry.failure = Some(Failure { since: Instant::now(), errors: 1, last_error: error.to_string() });
                }
            }
            self.report(health);
        });
    }

    /// Tells readiness and the waiters of the first lists what `health` now says.
    fn report(&self, health: &BTreeMap<&'static str, Health>) {
        let required = || health.iter().filter(|(_, h)| !h.optional);
        let failing: Vec<String> = required()
            .filter_map(|(kind, h)| h.failure.as_ref().map(|failure| format!("{kind} ({})", failure.last_error)))
            .collect();
        let pending: Vec<&str> = required().filter(|(_, h)| !h.listed).map(|(kind, _)| *kind).collect();
        if !failing.is_empty() {
            self.readiness.set_not_ready(self.controller, format!("watches failing: {}", failing.join("; ")));
        } else if !pending.is_empty() {
            self.readiness.set_not_ready(self.controller, format!("starting: listing {}", pending.join(", ")));
        } else {
            self.readiness.set_ready(self.controller);
        }
        if pending.is_empty() {
            self.listed.send_if_modified(|listed| !std::mem::replace(listed, true));
        }
    }
}

/// Whether a watch error says the API server does not serve the kind (its list or watch answered 404).
fn not_served(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status))
        | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code == 404,
        watcher::Error::WatchError(status) => status.code == 404,
        _ => false,
    }
}

/// A watch that starts over (from `start`, a fresh list) after every error, after waiting the next of `delays`;
/// with `absent`, after a 404 (the kind is not served) it waits the next of those instead.
fn relisting<K, S, F>(
    start: F,
    delays: RetryDelays,
    absent: Option<RetryDelays>,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
    F: FnMut() -> S + Send,
    K: Send,
{
    struct State<S, F> {
        start: F,
        current: Option<Pin<Box<S>>>,
        delays: RetryDelays,
        absent: Option<RetryDelays>,
        wait: Option<Duration>,
    }
    let state = State { start, current: None, delays, absent, wait: None };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(delay) = state.wait.take() {
                tokio::time::sleep(delay).await;
            }
            let current = state.current.get_or_insert_with(|| Box::pin((state.start)()));
            match current.next().await {
                Some(Ok(event)) => return Some((Ok(event), state)),
                Some(Err(error)) => {
                    state.current = None;
                    state.wait = Some(match state.absent.as_mut().filter(|_| not_served(&error)) {
                        Some(absent) => absent.next_delay(),
                        None => state.delays.next_delay(),
                    });
                    return Some((Err(error), state));
                }
                // kube's watcher never ends; should a source end, it starts over like after an error.
                None => {
                    state.current = None;
                    state.wait = Some(state.delays.next_delay());
                }
            }
        }
    })
}

/// The waits between the attempts of a failing watch: [`FIRST_DELAY`] doubling up to [`MAX_DELAY`], each with a
/// random extra of up to a quarter (so that many watches failing together do not retry in step); a failure long
/// after the previous one ([`FRESH_AFTER`]) starts again at the first delay.
#[derive(Debug)]
pub struct RetryDelays {
    first: Duration,
    max: Duration,
    next: Duration,
    last_failure: Option<Instant>,
    jitter: RandomState,
    attempts: u64,
}

impl Default for RetryDelays {
    fn default() -> Self {
        Self::new(FIRST_DELAY, MAX_DELAY)
    }
}

impl RetryDelays {
    /// Delays from `first`, doubling up to `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        Self { first, max, next: first, last_failure: None, jitter: RandomState::new(), attempts: 0 }
    }

    /// The wait after a failure now.
    pub fn next_delay(&mut self) -> Duration {
        self.next_delay_at(Instant::now())
    }

    /// The wait after a failure at `now`.
    fn next_delay_at(&mut self, now: Instant) -> Duration {
        if self.last_failure.is_some_and(|last| now.saturating_duration_since(last) > FRESH_AFTER) {
            self.next = self.first;
        }
        self.last_failure = Some(now);
        self.attempts += 1;
        let base = self.next;
        self.next = (self.next * 2).min(self.max);
        let fraction = self.jitter.hash_one(self.attempts) as f64 / u64::MAX as f64;
        base + base.mul_f64(fraction / 4.0)
    }
}

/// A delete event carries the object as it was last seen, which for an object deleted at once (a Node, most
/// objects) has no deletion timestamp: a `predicate_filter` downstream would find it unchanged and drop the event,
/// and the controllers would not hear that it went. It gets one here (the cache has already dropped the object).
fn marked_deleted<K: Resource>(event: Event<K>) -> Event<K> {
    match event {
        Event::Delete(mut object) => {
            let meta = object.meta_mut();
            if meta.deletion_timestamp.is_none() {
                let now = k8s_openapi::jiff::Timestamp::now();
                meta.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
            }
            Event::Delete(object)
        }
        other => other,
    }
}

#[cfg(test)]
#[path = "watches_tests.rs"]
mod tests;
