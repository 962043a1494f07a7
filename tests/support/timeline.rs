//! What a user would watch happen during a rollout, recorded from watches with the time each thing was seen.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use numo::api::{MutexRunConfig, NodePhase, RunPhase};
use numo::openshift::{ClusterVersion, MachineConfig, MachineConfigPool};

use super::Setup;

/// What a user watching the cluster sees, with the time they saw it.
#[derive(Clone, Debug)]
pub enum Seen {
    Pool {
        name: String,
        paused: bool,
    },
    ControlPlane {
        state: String,
        version: String,
    },
    NodeLabels {
        node: String,
        held: bool,
    },
    /// A node's `currentConfig` and NFD release label; see [`Timeline::reached`].
    NodeConfig {
        node: String,
        current_config: Option<String>,
        label: Option<String>,
    },
    /// A MachineConfig that names a release.
    Rendered {
        name: String,
        version: String,
    },
    Status {
        phase: Option<RunPhase>,
        in_flight: usize,
        nodes: Vec<(String, NodePhase)>,
    },
}

/// Records, from watches, everything a user would see during a rollout.
#[derive(Clone, Default)]
pub struct Timeline {
    pub seen: Arc<Mutex<Vec<(SystemTime, Seen)>>>,
}

impl Timeline {
    /// Starts watching pools, the ClusterVersion, nodes and the run config `name`; rule labels start with `label`.
    pub fn start(setup: &mut Setup, name: &str) -> Self {
        let timeline = Timeline::default();
        let client = setup.client.clone();
        let t = timeline.clone();
        setup.world.spawn(async move {
            let pools = watch(Api::<MachineConfigPool>::all(client.clone()), |p: &MachineConfigPool| {
                Some(Seen::Pool { name: p.name_any(), paused: p.spec.paused })
            });
            let cv = watch(Api::<ClusterVersion>::all(client.clone()), |cv: &ClusterVersion| {
                let entry = cv.status.as_ref()?.history.first()?;
                Some(Seen::ControlPlane { state: entry.state.clone(), version: entry.version.clone() })
            });
            let nodes_labels = watch(Api::<Node>::all(client.clone()), |n: &Node| {
                let held = n.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX));
                Some(Seen::NodeLabels { node: n.name_any(), held })
            });
            let nodes_configs = watch(Api::<Node>::all(client.clone()), |n: &Node| {
                Some(Seen::NodeConfig {
                    node: n.name_any(),
                    current_config: n.annotations().get(numo::openshift::CURRENT_CONFIG).cloned(),
                    label: n.labels().get(numo::openshift::RELEASE_VERSION).cloned(),
                })
            });
            let rendered = watch(Api::<MachineConfig>::all(client.clone()), |c: &MachineConfig| {
                Some(Seen::Rendered { name: c.name_any(), version: c.release_version()?.to_string() })
            });
            futures::pin_mut!(pools, cv, nodes_labels, nodes_configs, rendered);
            let mut all = futures::stream::select_all([
                pools.boxed(),
                cv.boxed(),
                nodes_labels.boxed(),
                nodes_configs.boxed(),
                rendered.boxed(),
            ]);
            while let Some(seen) = all.next().await {
                t.push(seen);
            }
        });
        let t = timeline.clone();
        let api = setup.run_configs();
        let name = name.to_string();
        setup.world.spawn(async move {
            let status = watch(api, move |rc: &MutexRunConfig| {
                if rc.name_any() != name {
                    return None;
                }
                let s = rc.status.as_ref()?;
                let nodes: Vec<(String, NodePhase)> = s.nodes.iter().map(|e| (e.name.clone(), e.phase)).collect();
                let in_flight = s.nodes.iter().filter(|e| e.phase.in_flight()).count();
                Some(Seen::Status { phase: s.phase, in_flight, nodes })
            });
            futures::pin_mut!(status);
            while let Some(seen) = status.next().await {
                t.push(seen);
            }
        });
        timeline
    }

    fn push(&self, seen: Seen) {
        if let Ok(mut v) = self.seen.lock() {
            v.push((SystemTime::now(), seen));
        }
    }

    pub fn events(&self) -> Vec<(SystemTime, Seen)> {
        self.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// When a condition on what was seen first held.
    pub fn first(&self, f: impl Fn(&Seen) -> bool) -> Option<SystemTime> {
        self.events().into_iter().find(|(_, s)| f(s)).map(|(t, _)| t)
    }

    /// When `node` was first seen running `version`, read as [`version_of`] reads it: its NFD label when it had one
    /// at that moment, else its current config's release.
    pub fn reached(&self, node: &str, version: &str) -> Option<SystemTime> {
        let events = self.events();
        // A rendered config's release never changes, so every one seen counts, whenever it was seen.
        let rendered: BTreeMap<&str, &str> = events
            .iter()
            .filter_map(|(_, s)| match s {
                Seen::Rendered { name, version } => Some((name.as_str(), version.as_str())),
                _ => None,
            })
            .collect();
        events.iter().find_map(|(at, s)| match s {
            Seen::NodeConfig { node: n, current_config, label } if n == node => {
                let from_config = current_config.as_deref().and_then(|c| rendered.get(c).copied());
                (label.as_deref().or(from_config) == Some(version)).then_some(*at)
            }
            _ => None,
        })
    }

    /// When a node's rule labels were removed after it had been held by them.
    pub fn released(&self, node: &str) -> Option<SystemTime> {
        let events = self.events();
        let held =
            events.iter().position(|(_, s)| matches!(s, Seen::NodeLabels { node: n, held: true } if n == node))?;
        events[held..]
            .iter()
            .find(|(_, s)| matches!(s, Seen::NodeLabels { node: n, held: false } if n == node))
            .map(|(t, _)| *t)
    }
}

fn watch<K, F>(api: Api<K>, f: F) -> impl futures::Stream<Item = Seen>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
    F: Fn(&K) -> Option<Seen> + Send + 'static,
{
    watcher::watcher(api, watcher::Config::default()).default_backoff().filter_map(move |e| {
        let seen = match e {
            Ok(Event::Apply(o) | Event::InitApply(o)) => f(&o),
            _ => None,
        };
        futures::future::ready(seen)
    })
}
