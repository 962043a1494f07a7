//! Failure-domain waves on a simulated storage cluster: one gated rollout by numo's release build (its own process,
//! as its ServiceAccount) on the test world playing ODF's storage nodes and Rook's managed disruption budgets
//! (`numo_simulator::storage`), in one of the orders numo can take. Prints one line; asserts nothing about time.
//!
//! - **rollout**: from the cluster's upgrade until the run config reports `Completed`.
//! - **drains waited**: drains of an OSD node whose eviction the API server refused at least once (`on a blocking
//!   budget`: refused by a `maxUnavailable: 0` budget of another domain, not only by the default budget in the
//!   moment before Rook switches to blocking ones), and for how long in all.
//! - **longest domain down**: the longest stretch in which one failure domain had a node down (not Ready or
//!   cordoned); **most down in a domain**: the most nodes of one domain down at once (`Spread` keeps it at 1).
//!
//! The world runs `TIME_SCALE` (default 20) times faster than a real one, in the same proportions: Rook's requeues
//! (15 s and 30 s) and the MCO drain controller's delays (a refused eviction tried again after 5 s, an attempt of 90 s,
//! a minute before the next) are divided by it, and the defaults of `REBOOT` (15 s: a 5-minute reboot) and
//! `PGS_CLEAN` (10 s: Ceph's PGs clean about 3 minutes after the last OSD is back) are chosen so. Rook hears of a
//! drain only from its default budget's status and its own requeues, so a reboot much shorter than its 30 s requeue
//! would slip between its looks (as no real reboot does).
//!
//! Environment: `SHAPE` (`racks9`: 9 workers in 3 racks, `topology.rook.io/rack`; `zones60`: 60 workers in 3 zones,
//! `topology.kubernetes.io/zone`), `ORDER` (`name`: no `spec.topology`; `DomainAtATime`; `Spread`), `C` (concurrency),
//! `PGS_CLEAN`, `REBOOT` (seconds), `TIME_SCALE`.
//!
//!   hack/bench-topology.sh            (`make bench-topology`: every case, each on a fresh cluster)
//!   NUMO_TEST_KUBECONFIG=… SHAPE=racks9 ORDER=name C=3 cargo bench --bench topology

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Api;
use numo::api::RunPhase;
use numo_simulator::storage::{seed_storage, FailureDomain, StorageConfig, StorageShape, NAMESPACE};
use numo_simulator::SimConfig;
use serde_json::json;
use support::*;

/// A storage cluster shape.
struct Shape {
    workers: usize,
    domain: FailureDomain,
}

fn shape(name: &str) -> anyhow::Result<Shape> {
    match name {
        "racks9" => Ok(Shape { workers: 9, domain: FailureDomain::Rack }),
        "zones60" => Ok(Shape { workers: 60, domain: FailureDomain::Zone }),
        other => anyhow::bail!("unknown SHAPE {other:?} (racks9 or zones60)"),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let shape_name = std::env::var("SHAPE").unwrap_or_else(|_| "racks9".into());
    let order = std::env::var("ORDER").unwrap_or_else(|_| "name".into());
    let concurrency: u32 = env_number("C", 3);
    let pgs_clean = Duration::from_secs_f64(env_number("PGS_CLEAN", 10.0));
    let reboot = Duration::from_secs_f64(env_number("REBOOT", 15.0));
    let scale: f64 = env_number("TIME_SCALE", 20.0);
    let shape = shape(&shape_name)?;
    let case = format!("{shape_name} {order} C={concurrency}");

    let mut storage = StorageConfig::new(shape.domain);
    storage.pgs_clean = pgs_clean;
    let faster = |d: Duration| d.div_f64(scale.max(1.0));
    storage.rook.default_missing = faster(storage.rook.default_missing);
    storage.rook.default_at_zero = faster(storage.rook.default_at_zero);
    storage.drain.eviction_retry = faster(storage.drain.eviction_retry);
    storage.drain.attempt = faster(storage.drain.attempt);
    storage.drain.requeue = faster(storage.drain.requeue);
    let config = SimConfig { reboot, storage: Some(storage), ..SimConfig::default() };
    eprintln!("topology: {case}: seeding {} storage workers", shape.workers);
    let setup = Setup::with_config("topology", shape.workers, config).await?;
    seed_storage(&setup.client, &StorageShape { domain: shape.domain, domains: 3 }).await?;
    let workers = shape.workers as i32;
    let healthy = move |b: &PodDisruptionBudget| {
        b.status.as_ref().is_some_and(|s| s.current_healthy == workers && s.disruptions_allowed == 1)
    };
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(setup.client.clone(), NAMESPACE);
    numo_testkit::wait_until(&budgets, "rook-ceph-osd", Duration::from_secs(300), "every OSD up", healthy).await?;

    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let mut spec = json!({"concurrency": concurrency, "healthChecks": {}});
    if order != "name" {
        spec["topology"] = json!({"mode": order, "key": shape.domain.node_label()});
    }
    if !create_run_config(&setup, spec).await? {
        println!("{case}: skipped: this numo has no spec.topology (the API server pruned it)");
        return Ok(());
    }

    let mut numo = support_numo::Numo::start().await?;
    setup.wait_phase("bench", RunPhase::Idle, Duration::from_secs(300)).await?;
    let started = Instant::now();
    setup.upgrade_cluster(NEW).await?;
    let limit = Duration::from_secs(3600 + 120 * shape.workers as u64);
    setup.wait_phase("bench", RunPhase::Completed, limit).await?;
    let rollout = started.elapsed();
    numo.stop();

    let report = setup.world.simulator().and_then(|s| s.storage_report()).unwrap_or_default();
    let waited: Duration = report.drain_waits.iter().map(|w| w.waited).sum();
    println!(
        "{case}: rollout {:.1}s; {} drains of OSD nodes, {} waited ({} on a blocking budget; {:.1}s waiting in all); \
         longest domain down {:.1}s; most down in a domain {}",
        rollout.as_secs_f64(),
        report.drains,
        report.drain_waits.len(),
        report.drains_blocked(),
        waited.as_secs_f64(),
        report.longest_domain_down().as_secs_f64(),
        report.most_down_in_a_domain(),
    );
    Ok(())
}

/// Creates run config `bench` with the reference's fields plus `extra`, as raw JSON (so fields this numo does not
/// know reach the API server); false when the API server pruned `spec.topology` that `extra` asked for.
async fn create_run_config(setup: &Setup, extra: serde_json::Value) -> anyhow::Result<bool> {
    let gvk = GroupVersionKind::gvk("openshift-optional.skrzypek.io", "v1alpha1", "MutexRunConfig");
    let resource = ApiResource::from_gvk(&gvk);
    let mut spec = json!({
        "canary": {"name": "canary"},
        "mutexRules": [{"name": "check", "namespace": setup.ns}],
        "mutexTargets": [{"name": "workers"}],
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
        "metadata": {"name": "bench", "namespace": setup.ns}, "spec": spec,
    }))?;
    let api: Api<DynamicObject> = Api::namespaced_with(setup.client.clone(), &setup.ns, &resource);
    let created = api.create(&PostParams::default(), &object).await?;
    Ok(extra.get("topology").is_none() || created.data["spec"].get("topology").is_some())
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// numo's release build as its own process.
mod support_numo {
    /// numo's release build, run as its ServiceAccount.
    pub struct Numo {
        child: std::process::Child,
    }

    impl Numo {
        pub async fn start() -> anyhow::Result<Self> {
            let cluster = numo_testkit::cluster().await?;
            let dir = std::env::temp_dir().join(format!("numo-bench-topology-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let kubeconfig = numo_testkit::rbac::write_operator_kubeconfig(cluster, &dir.join("kubeconfig")).await?;
            let log = std::fs::File::create(dir.join("numo.log"))?;
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_numo"))
                .args(["run", "--leader-election=false", "--metrics-address", "127.0.0.1:0"])
                .env("KUBECONFIG", kubeconfig)
                .env("RUST_LOG", "warn")
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()?;
            eprintln!("topology: numo runs as pid {} (log: {})", child.id(), dir.join("numo.log").display());
            Ok(Self { child })
        }

        pub fn stop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    impl Drop for Numo {
        fn drop(&mut self) {
            self.stop();
        }
    }
}
