//! Knowing when a controller's watch-fed caches hold their first full list.
//!
//! kube's `Store::wait_until_ready` wakes only the last task that waited on it, so two tasks waiting on one store
//! (a reconcile and the readiness probe, or the controller's own runner) can wait forever. [`InitialLists`] is fed
//! by the watch streams themselves: a reflected stream yields `InitDone` after its store holds the full list, and
//! any number of tasks may wait for every watch to have done so.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, TryStreamExt};
use kube::runtime::watcher;
use tokio::sync::watch;

/// The watches of one controller that have not yet delivered their first full list.
#[derive(Clone)]
pub struct InitialLists {
    pending: Arc<Mutex<BTreeSet<&'static str>>>,
    done: Arc<watch::Sender<bool>>,
}

impl InitialLists {
    /// Tracks the watches named `kinds`; each must be passed through [`InitialLists::track`] once.
    pub fn new(kinds: &[&'static str]) -> Self {
        let (done, _) = watch::channel(kinds.is_empty());
        Self { pending: Arc::new(Mutex::new(kinds.iter().copied().collect())), done: Arc::new(done) }
    }

    /// Passes a reflected watch stream through, noting when it has delivered its first full list.
    pub fn track<S, K>(&self, kind: &'static str, stream: S) -> impl Stream<Item = S::Item> + Send + use<S, K>
    where
        S: Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send,
    {
        let lists = self.clone();
        stream.inspect_ok(move |event| {
            if matches!(event, watcher::Event::InitDone) {
                lists.listed(kind);
            }
        })
    }

    fn listed(&self, kind: &'static str) {
        let all_listed = match self.pending.lock() {
            Ok(mut pending) => {
                pending.remove(kind);
                pending.is_empty()
            }
            Err(_) => false,
        };
        if all_listed {
            self.done.send_replace(true);
        }
    }

    /// Whether every watch has delivered its first full list.
    pub fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    /// The watches still waiting for their first full list.
    pub fn pending(&self) -> Vec<&'static str> {
        self.pending.lock().map(|p| p.iter().copied().collect()).unwrap_or_default()
    }

    /// Waits until every watch has delivered its first full list, warning (with the kinds still missing, e.g. a
    /// watch the operator's RBAC does not allow) while that takes long.
    pub async fn wait(&self) {
        let mut done = self.done.subscribe();
        let mut patience = Duration::from_secs(10);
        loop {
            match tokio::time::timeout(patience, done.wait_for(|listed| *listed)).await {
                Ok(_) => return,
                Err(_) => {
                    let pending = self.pending();
                    tracing::warn!(?pending, "caches are not filled after {}s", patience.as_secs());
                    patience = (patience * 2).min(Duration::from_secs(300));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::Node;

    #[tokio::test]
    async fn every_waiter_wakes_once_every_watch_listed() {
        let lists = InitialLists::new(&["Nodes", "Pools"]);
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                tokio::spawn({
                    let lists = lists.clone();
                    async move { lists.wait().await }
                })
            })
            .collect();
        let nodes = futures::stream::iter([
            Ok::<_, watcher::Error>(watcher::Event::<Node>::Init),
            Ok(watcher::Event::InitDone),
        ]);
        let _: Vec<_> = lists.track("Nodes", nodes).collect().await;
        assert!(!lists.is_done());
        assert_eq!(lists.pending(), vec!["Pools"]);
        let pools = futures::stream::iter([Ok::<_, watcher::Error>(watcher::Event::<Node>::InitDone)]);
        let _: Vec<_> = lists.track("Pools", pools).collect().await;
        assert!(lists.is_done());
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("joined");
        }
    }
}
