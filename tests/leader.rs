//! Leader election and the operator binary against a real apiserver: one replica leads, a replica that loses the
//! lease stops, a standby takes over a released lease, and `numo run` serves /readyz and /metrics while it holds
//! the lease.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::leader::{run_as_leader, LeaderConfig, LeadershipError};
use numo::metrics::Metrics;
use numo::server::Readiness;
use tokio::sync::oneshot;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A short lease so that the tests do not wait long for renewals and expiry.
fn config(namespace: &str, identity: &str) -> LeaderConfig {
    LeaderConfig { lease_duration: 3, renew_before: 1, ..LeaderConfig::new("numo-leader-test", namespace, identity) }
}

/// Sets the flag when dropped: tells whether the leader's work was stopped.
struct Stopped(Arc<AtomicBool>);

impl Drop for Stopped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A replica: its leading work announces itself on `leading` and runs until stopped (recorded in `stopped`).
struct Replica {
    leading: oneshot::Receiver<()>,
    stopped: Arc<AtomicBool>,
    shutdown: oneshot::Sender<()>,
    outcome: tokio::task::JoinHandle<Result<(), LeadershipError>>,
    readiness: Readiness,
}

fn replica(client: kube::Client, config: LeaderConfig) -> Replica {
    let (leading_tx, leading) = oneshot::channel();
    let (shutdown, shutdown_rx) = oneshot::channel::<()>();
    let stopped = Arc::new(AtomicBool::new(false));
    let readiness = Readiness::default();
    let flag = stopped.clone();
    let ready = readiness.clone();
    let outcome = tokio::spawn(async move {
        let metrics = Arc::new(Metrics::default());
        let lead = move || async move {
            let _guard = Stopped(flag);
            let _ = leading_tx.send(());
            std::future::pending::<()>().await;
        };
        let shutdown = async move {
            let _ = shutdown_rx.await;
        };
        run_as_leader(client, &config, &ready, &metrics, lead, shutdown).await
    });
    Replica { leading, stopped, shutdown, outcome, readiness }
}

#[tokio::test]
async fn a_leader_that_loses_its_lease_stops_and_says_so() -> anyhow::Result<()> {
    let world = numo_testkit::world("leader-lost").await?;
    let client = world.client.clone();
    let mut a = replica(client.clone(), config(&world.namespace, "replica-a"));
    tokio::time::timeout(TIMEOUT, &mut a.leading).await??;
    assert!(!a.readiness.report().contains("standby"), "a leader is no standby");

    // Someone else takes the lease (as a replica that believes the leader dead would).
    let leases: Api<Lease> = Api::namespaced(client.clone(), &world.namespace);
    let steal = serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "spec": {
            "holderIdentity": "intruder",
            "renewTime": MicroTime(k8s_openapi::jiff::Timestamp::now()),
            "leaseDurationSeconds": 3600,
        },
    });
    leases.patch("numo-leader-test", &PatchParams::apply("intruder").force(), &Patch::Apply(&steal)).await?;

    let outcome = tokio::time::timeout(TIMEOUT, a.outcome).await??;
    assert!(matches!(outcome, Err(LeadershipError::Lost(_))), "{outcome:?}");
    assert!(a.stopped.load(Ordering::SeqCst), "the controllers stop with the lease");
    drop(a.shutdown);
    Ok(())
}

#[tokio::test]
async fn a_standby_takes_over_when_the_leader_shuts_down() -> anyhow::Result<()> {
    let world = numo_testkit::world("leader-handover").await?;
    let client = world.client.clone();
    let mut a = replica(client.clone(), config(&world.namespace, "replica-a"));
    tokio::time::timeout(TIMEOUT, &mut a.leading).await??;
    let mut b = replica(client.clone(), config(&world.namespace, "replica-b"));

    let _ = a.shutdown.send(());
    let outcome = tokio::time::timeout(TIMEOUT, a.outcome).await??;
    assert!(outcome.is_ok(), "a shutdown is a clean exit: {outcome:?}");
    assert!(a.stopped.load(Ordering::SeqCst));
    tokio::time::timeout(TIMEOUT, &mut b.leading).await??;
    let leases: Api<Lease> = Api::namespaced(client, &world.namespace);
    let holder = leases.get("numo-leader-test").await?.spec.and_then(|s| s.holder_identity);
    assert_eq!(holder.as_deref(), Some("replica-b"));
    let _ = b.shutdown.send(());
    tokio::time::timeout(TIMEOUT, b.outcome).await???;
    Ok(())
}

/// A raw HTTP GET; the status line and body, or an empty string when nothing answers.
async fn get(address: SocketAddr, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: numo\r\nConnection: close\r\n\r\n");
    let exchange = move || {
        use std::io::{Read, Write};
        let mut response = String::new();
        if let Ok(mut stream) = std::net::TcpStream::connect(address) {
            if stream.write_all(request.as_bytes()).is_ok() {
                let _ = stream.read_to_string(&mut response);
            }
        }
        response
    };
    tokio::task::spawn_blocking(exchange).await.unwrap_or_default()
}

/// Kills the child process when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn numo_run_becomes_ready_holding_the_lease_and_serves_metrics() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let cluster = numo_testkit::cluster().await?;
    let world = cluster.world("numo-run").await?;
    let address = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0")?;
        probe.local_addr()?
    };
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_numo"))
        .args(["run", "--metrics-address", &address.to_string(), "--lease-namespace", &world.namespace])
        .env("KUBECONFIG", cluster.kubeconfig())
        .env("POD_NAME", "numo-run-test")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .spawn()?;
    let mut child = KillOnDrop(child);

    // Wait (bounded) for the process to report ready as the leader: it took the lease and its controllers' watches
    // started. Until it holds the lease it is a standby, which is ready too (`standby: waiting for the leader lease`).
    let leading = |readyz: &str| {
        readyz.starts_with("HTTP/1.1 200")
            && readyz.contains("mutex_rule: ready")
            && readyz.contains("mutex_target: ready")
    };
    let ready = tokio::time::timeout(TIMEOUT, async {
        loop {
            if leading(&get(address, "/readyz").await) {
                return;
            }
            if let Ok(Some(status)) = child.0.try_wait() {
                panic!("numo run exited early: {status}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(ready.is_ok(), "numo run did not become ready within {TIMEOUT:?}: {}", get(address, "/readyz").await);

    assert!(get(address, "/healthz").await.starts_with("HTTP/1.1 200"));
    let metrics = get(address, "/metrics").await;
    assert!(metrics.contains("numo_leader 1"), "{metrics}");
    let leases: Api<Lease> = Api::namespaced(world.client.clone(), &world.namespace);
    let holder = leases.get("numo-leader").await?.spec.and_then(|s| s.holder_identity);
    assert_eq!(holder.as_deref(), Some("numo-run-test"));
    Ok(())
}
