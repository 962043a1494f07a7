//! The NFD stand-in against the real API server: off by default (nodes carry only what the MCO writes), and when on,
//! a release label on every node that follows the node's config, never ahead of it.

mod support;

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::ResourceExt;
use numo_simulator::{ClusterShape, SimConfig};
use support::*;

fn shape() -> ClusterShape {
    ClusterShape { version: OLD.into(), workers: 2, masters: 1 }
}

/// A node as a watch saw it: `(node, currentConfig, release label)`.
type NodeState = (String, String, Option<String>);

/// Every state of every node seen by a watch.
fn record_nodes(world: &mut numo_testkit::World) -> Arc<Mutex<Vec<NodeState>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let events = watcher::watcher(nodes(world), watcher::Config::default()).default_backoff();
    world.spawn(async move {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            if let Ok(Event::Apply(node) | Event::InitApply(node)) = event {
                let state = (node.name_any(), current(&node), release_label(&node));
                record.lock().unwrap_or_else(|e| e.into_inner()).push(state);
            }
        }
    });
    seen
}

/// Seeds, upgrades to [`NEW`] and waits until the worker pool has rolled; returns the old and new worker configs.
async fn upgrade_workers(world: &numo_testkit::World) -> anyhow::Result<(String, String)> {
    let old = spec_config(&wait_rolled_out(world, "worker", 2).await?).unwrap_or_default();
    upgrade(world, NEW).await?;
    let moved = old.clone();
    let done = numo_testkit::wait_until(&pools(world), "worker", WAIT, "workers on the new config", move |p| {
        rolled_out(p, 2) && spec_config(p).as_ref() != Some(&moved)
    })
    .await?;
    Ok((old, spec_config(&done).unwrap_or_default()))
}

#[tokio::test]
async fn by_default_no_node_ever_carries_a_release_label() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-no-nfd").await?;
    let seen = record_nodes(&mut world);
    world.openshift(shape(), fast()).await?;
    upgrade_workers(&world).await?;
    numo_testkit::wait_until(&pools(&world), "master", WAIT, "the master pool updated", |p| rolled_out(p, 1)).await?;

    for (name, node) in all_nodes(&world).await? {
        assert_eq!(release_label(&node), None, "{name}");
        assert_eq!(release(&world, &node).await?, NEW, "{name}: the release is on its rendered config");
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(seen.len() > 6, "the watch saw the rollout: {seen:?}");
    let labelled: Vec<_> = seen.iter().filter(|(_, _, label)| label.is_some()).collect();
    assert!(labelled.is_empty(), "a release label appeared without the NFD stand-in: {labelled:?}");
    Ok(())
}

#[tokio::test]
async fn the_nfd_stand_in_labels_each_node_with_its_release_after_its_config_moved() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-nfd").await?;
    let seen = record_nodes(&mut world);
    world.openshift(shape(), SimConfig { nfd_labels: true, ..fast() }).await?;
    for name in ["master-0", "worker-0", "worker-1"] {
        numo_testkit::wait_until(&nodes(&world), name, WAIT, "labelled with the seeded release", |n| {
            release_label(n).as_deref() == Some(OLD)
        })
        .await?;
    }
    let (old_config, new_config) = upgrade_workers(&world).await?;
    for name in ["worker-0", "worker-1"] {
        let node = numo_testkit::wait_until(&nodes(&world), name, WAIT, "labelled with the new release", |n| {
            release_label(n).as_deref() == Some(NEW)
        })
        .await?;
        assert_eq!(current(&node), new_config);
    }

    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (name, config, label) in &seen {
        assert!(
            !(config == &old_config && label.as_deref() == Some(NEW)),
            "{name}: labelled {NEW} while still on {old_config}"
        );
    }
    for name in ["worker-0", "worker-1"] {
        let lagged =
            seen.iter().any(|(n, config, label)| n == name && config == &new_config && label.as_deref() == Some(OLD));
        assert!(lagged, "{name}: the label follows the config in a write of its own, so it lags it once");
    }
    Ok(())
}
