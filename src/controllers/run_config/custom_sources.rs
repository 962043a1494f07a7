//! The objects that custom health checks (`healthChecks.custom`) read, of any kind: one watch per (apiVersion, kind,
//! namespace), started the first time a run config names it. The kind is discovered at run time; a kind the API
//! server does not serve, or one numo may not watch (RBAC the admin grants), is not an error of the controller: the
//! source says why it cannot be read, and the check that reads it holds the rollout saying so.
//!
//! A watch lives until numo stops (a check removed from every run config leaves an idle watch behind).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
use kube::discovery::Scope;
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::Store;
use kube::runtime::watcher::{self, watcher, Event};
use kube::Api;
use tokio::sync::mpsc;

use crate::api::CustomCheck;
use crate::watches::RetryDelays;

/// What a custom check watches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceKey {
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// The namespace watched; None for every namespace.
    pub namespace: Option<String>,
}

impl SourceKey {
    /// The source of a check.
    pub fn of(check: &CustomCheck) -> Self {
        Self {
            api_version: check.api_version.clone(),
            kind: check.kind.clone(),
            namespace: check.namespace.clone().filter(|ns| !ns.is_empty()),
        }
    }
}

/// Where a source's watch is.
#[derive(Clone, Debug)]
enum State {
    /// Discovery or the first list is under way.
    Starting,
    /// The cache holds a full list.
    Listed,
    /// Why the objects cannot be read now.
    Failing(String),
}

struct Watched {
    store: Mutex<Option<Store<DynamicObject>>>,
    state: Mutex<State>,
}

/// The custom checks' sources; cloning shares them.
#[derive(Clone)]
pub struct CustomSources {
    client: kube::Client,
    watched: Arc<Mutex<HashMap<SourceKey, Arc<Watched>>>>,
    changed: mpsc::UnboundedSender<SourceKey>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CustomSources {
    /// The sources, and the stream of the sources whose objects (or whose readability) changed.
    pub fn new(client: kube::Client) -> (Self, impl Stream<Item = SourceKey> + Send + 'static) {
        let (changed, mut receiver) = mpsc::unbounded_channel();
        let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        (Self { client, watched: Default::default(), changed }, stream)
    }

    /// The objects of `key` as JSON, or why they cannot be read. The first call for a key starts its watch (and
    /// reads as not listed yet).
    pub fn objects(&self, key: &SourceKey) -> Result<Vec<serde_json::Value>, String> {
        let watched = {
            let mut all = lock(&self.watched);
            if let Some(watched) = all.get(key) {
                watched.clone()
            } else {
                let watched = Arc::new(Watched { store: Mutex::new(None), state: Mutex::new(State::Starting) });
                all.insert(key.clone(), watched.clone());
                tokio::spawn(watch(self.client.clone(), key.clone(), watched.clone(), self.changed.clone()));
                watched
            }
        };
        let state = lock(&watched.state).clone();
        match state {
            State::Starting => Err(format!("{} {} are not listed yet", key.kind, key.api_version)),
            State::Failing(why) => Err(why),
            State::Listed => Ok(lock(&watched.store)
                .as_ref()
                .map(|store| store.state().iter().filter_map(|o| serde_json::to_value(o.as_ref()).ok()).collect())
                .unwrap_or_default()),
        }
    }
}

/// How `key`'s objects are reached: the kind as the API server serves it, in `key`'s namespace or every namespace.
async fn discover(client: &kube::Client, key: &SourceKey) -> Result<(Api<DynamicObject>, ApiResource), String> {
    let type_meta = TypeMeta { api_version: key.api_version.clone(), kind: key.kind.clone() };
    let found = match GroupVersionKind::try_from(&type_meta) {
        Ok(gvk) => kube::discovery::pinned_kind(client, &gvk).await.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let (resource, capabilities) = found
        .map_err(|why| format!("the API server does not serve kind {} of {}: {why}", key.kind, key.api_version))?;
    let api = match (&key.namespace, capabilities.scope) {
        (Some(namespace), Scope::Namespaced) => Api::namespaced_with(client.clone(), namespace, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    Ok((api, resource))
}

/// `key`'s objects as JSON, listed once (for `numo plan`, which reads the cluster once), or why they cannot be read.
pub async fn list_once(client: &kube::Client, key: &SourceKey) -> Result<Vec<serde_json::Value>, String> {
    let (api, _) = discover(client, key).await?;
    let listed = api
        .list(&Default::default())
        .await
        .map_err(|e| format!("{} {} cannot be listed: {e}", key.kind, key.api_version))?;
    Ok(listed.items.iter().filter_map(|o| serde_json::to_value(o).ok()).collect())
}

/// Discovers the kind, then watches it into the source's cache, recording its state and telling the controller
/// about every change; retries (with growing delays up to a few seconds) forever.
async fn watch(client: kube::Client, key: SourceKey, watched: Arc<Watched>, changed: mpsc::UnboundedSender<SourceKey>) {
    let set = |state: State| {
        *lock(&watched.state) = state;
        let _ = changed.send(key.clone());
    };
    let mut delays = RetryDelays::default();
    let (api, resource) = loop {
        match discover(&client, &key).await {
            Ok(found) => break found,
            Err(why) => {
                set(State::Failing(why));
                tokio::time::sleep(delays.next_delay().max(Duration::from_secs(2))).await;
            }
        }
    };
    let mut writer = Writer::<DynamicObject>::new(resource);
    *lock(&watched.store) = Some(writer.as_reader());
    let mut events = watcher(api, watcher::Config::default().any_semantic()).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(mut event) => {
                if let Event::Apply(o) | Event::InitApply(o) | Event::Delete(o) = &mut event {
                    o.metadata.managed_fields = None;
                }
                writer.apply_watcher_event(&event);
                match event {
                    Event::Init | Event::InitApply(_) => {}
                    Event::InitDone => set(State::Listed),
                    Event::Apply(_) | Event::Delete(_) => {
                        let _ = changed.send(key.clone());
                    }
                }
            }
            Err(error) => {
                set(State::Failing(format!("{} {} cannot be watched: {error}", key.kind, key.api_version)));
                tokio::time::sleep(delays.next_delay()).await;
            }
        }
    }
}
