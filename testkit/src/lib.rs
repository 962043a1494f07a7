#![forbid(unsafe_code)]
//! Test support: one local cluster per test run, exclusive use of it per test, a namespace per test, a seeded
//! simulated OpenShift.
//!
//! ```no_run
//! # async fn example() -> anyhow::Result<()> {
//! let cluster = numo_testkit::cluster().await?;
//! let mut world = cluster.world("my_test").await?;
//! world.openshift(Default::default(), Default::default()).await?;
//! // ... create objects in world.namespace, spawn the operator with world.spawn(...), wait_until(...)
//! # Ok(()) }
//! ```
//!
//! How the fake kubelet treats nodes and pods, and the pod annotations that make a Job take 3s or fail, are in
//! [`kwok`].

pub mod acm;
pub mod alertmanager;
mod apiserver;
pub mod browser;
pub mod browser_script;
mod cleanup;
mod cluster;
pub mod crds;
pub mod kwok;
mod lock;
pub mod plugin_server;
pub mod pools;
pub mod promtool;
pub mod rbac;
pub mod repo;
pub mod tls;
pub mod users;
mod wait;
mod world;

pub use apiserver::ApiServerDown;
pub use cleanup::TEST_NAMESPACE_LABEL;
pub use cluster::{cluster, world, TestCluster, CLUSTER_NAME, KUBECONFIG_ENV};
pub use wait::wait_until;
pub use world::{TaskId, World};

/// Initialises tracing for tests once (`RUST_LOG` respected, default `info`; output captured per test).
pub fn init_tracing() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
        // Another subscriber set by the test itself wins; that is fine.
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    });
}
