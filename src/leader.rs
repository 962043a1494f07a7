//! Leader election with a coordination.k8s.io Lease (kube-lease-manager): only the replica that holds the lease
//! runs the controllers. A replica that loses the lease stops at once and the process exits non-zero, so its
//! Deployment restarts it as a clean standby; nothing is kept in memory that a restart would lose.

use std::future::Future;
use std::sync::Arc;

use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::server::Readiness;

/// Where the lease lives and who this replica is.
#[derive(Clone, Debug)]
pub struct LeaderConfig {
    /// Name of the Lease.
    pub lease_name: String,
    /// Namespace of the Lease (the operator's own).
    pub lease_namespace: String,
    /// This replica's identity in the Lease (unique per replica).
    pub identity: String,
    /// How long (seconds) the lease stays valid after its holder's last renewal.
    pub lease_duration: u64,
    /// How long (seconds) before expiry the holder renews.
    pub renew_before: u64,
}

impl LeaderConfig {
    /// A config with numo's timings: a 15 s lease renewed 5 s before it expires.
    pub fn new(lease_name: impl Into<String>, lease_namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            identity: identity.into(),
            lease_duration: 15,
            renew_before: 5,
        }
    }
}

/// Why leading ended other than by a shutdown.
#[derive(Debug, thiserror::Error)]
pub enum LeadershipError {
    /// Another replica took the lease (or it could not be renewed in time).
    #[error("lost the leader lease {0}; exiting so a fresh process stands by")]
    Lost(String),
    /// The lease manager stopped.
    #[error("the leader election stopped: {0}")]
    Stopped(String),
    /// The lease could not be set up.
    #[error("could not set up the leader lease: {0}")]
    Setup(#[from] LeaseManagerError),
}

/// This replica's identity: `POD_NAME` when set, else `<hostname>-<pid>`.
pub fn default_identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME") {
        if !pod.is_empty() {
            return pod;
        }
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "numo".to_string());
    format!("{host}-{}", std::process::id())
}

/// Waits for the lease and then runs `lead` while holding it.
///
/// Returns `Ok(())` when `shutdown` resolves (the lease is released on the way out) or when `lead` returns, and
/// [`LeadershipError::Lost`] as soon as the lease is lost: the caller must exit non-zero. While waiting, `readiness`
/// reports a healthy standby; `metrics` exposes `numo_leader`.
pub async fn run_as_leader<F>(
    client: kube::Client,
    config: &LeaderConfig,
    readiness: &Readiness,
    metrics: &Arc<Metrics>,
    lead: impl FnOnce() -> F,
    shutdown: impl Future<Output = ()>,
) -> Result<(), LeadershipError>
where
    F: Future<Output = ()>,
{
    let manager = LeaseManagerBuilder::new(client, &config.lease_name)
        .with_namespace(&config.lease_namespace)
        .with_identity(&config.identity)
        .with_duration(config.lease_duration)
        .with_grace(config.renew_before)
        .with_field_manager(format!("numo-leader-{}", config.identity))
        .build()
        .await?;
    let (mut leading, task) = manager.watch().await;
    let lease = format!("{}/{}", config.lease_namespace, config.lease_name);
    tokio::pin!(shutdown);

    readiness.set_standby(true);
    tracing::info!(%lease, identity = %config.identity, "waiting for the leader lease");
    let acquired = tokio::select! {
        acquired = wait_for(&mut leading, true) => acquired,
        () = &mut shutdown => false,
    };
    if !acquired {
        readiness.set_standby(false);
        drop(leading);
        return finish(task, &lease).await;
    }

    readiness.set_standby(false);
    metrics.set_leader(true);
    tracing::info!(%lease, identity = %config.identity, "acquired the leader lease; starting the controllers");
    let outcome = tokio::select! {
        () = lead() => Ok(()),
        _ = wait_for(&mut leading, false) => Err(LeadershipError::Lost(lease.clone())),
        () = &mut shutdown => Ok(()),
    };
    metrics.set_leader(false);
    drop(leading);
    match outcome {
        Ok(()) => finish(task, &lease).await,
        Err(lost) => {
            task.abort();
            Err(lost)
        }
    }
}

/// Waits until the lock state equals `wanted`; `false` if the lease manager stopped first.
async fn wait_for(leading: &mut watch::Receiver<bool>, wanted: bool) -> bool {
    loop {
        if *leading.borrow_and_update() == wanted {
            return true;
        }
        if leading.changed().await.is_err() {
            return false;
        }
    }
}

/// Lets the lease manager release the lease (its channel is closed) and reports how it ended.
async fn finish(
    task: tokio::task::JoinHandle<Result<kube_lease_manager::LeaseManager, LeaseManagerError>>,
    lease: &str,
) -> Result<(), LeadershipError> {
    match task.await {
        Ok(Ok(_)) => {
            tracing::info!(%lease, "released the leader lease");
            Ok(())
        }
        Ok(Err(error)) => Err(LeadershipError::Stopped(error.to_string())),
        Err(error) => Err(LeadershipError::Stopped(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_never_empty() {
        assert!(!default_identity().is_empty());
    }
}
