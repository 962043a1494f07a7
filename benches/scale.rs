//! numo at scale: one gated rollout of `N` workers, `C` at a time, with numo's release build running as its own
//! process, as its ServiceAccount, against the test world (the simulated OpenShift; two rules with gate and cleanup
//! Jobs of 1 s each). Prints one line; asserts nothing about time.
//!
//! - **rollout**: from the cluster's upgrade until the run config reports `Completed`; printed with its two parts:
//!   until every node is done (the run config says `Restoring`, or `Completed` at once), and the wait for the MCO
//!   to move every node back into its restored pool (the test world's work: one node at a time, as the pool's
//!   `maxUnavailable` says).
//! - **ideal**: the work the test world itself does, spread over `C` slots: Σ over nodes of (each of its Jobs from
//!   creation until seen succeeded + its update from release until seen at the new version) / C.
//! - **overhead**: (gated − ideal) / gated, where gated is the first part of the rollout (until every node is
//!   done) — numo's own reaction times plus any slot it left idle; **nodes/s**: N / gated. The restore walk that
//!   follows is the MCO's work and is reported apart.
//! - **peak / idle RSS**: numo's `VmHWM`, and its `VmRSS` at the end of the idle window (before the upgrade) and
//!   once more after the rollout, with every Job in its caches; **CPU**: numo's user+system time
//!   during the rollout; **writes/node**: numo's create/update/patch/delete requests (its own
//!   `numo_api_requests_total`) during the rollout, per node, with its Job creates against the Jobs the watch saw
//!   made (a create answered 409 AlreadyExists is one more) and its Event creates per node; **status**: bytes of
//!   run-config status writes; **reconciles**: the run-config reconciles until every node was done, and numo's CPU
//!   in that time per reconcile (all of numo's CPU, its watches' included, over the reconciles).
//! - **idle**: the requests numo sent and the CPU it used in `IDLE` seconds while it was Idle before the upgrade,
//!   every cache filled and nothing moving (watch requests are the renewals of its watches and are counted apart).
//!   After a rollout the test world is not quiet: the simulated MCO moves each node back from the canary's rendered
//!   config to its pool's, one node at a time, and numo hears of those changes.
//! - **the restore walk**: numo's CPU and its run-config reconciles while the MCO moves the nodes back (a node
//!   event there wakes no reconcile: see `src/controllers/run_config/node_interest.rs`); **the run config at most**:
//!   the largest the whole object was, as JSON, in any version its watch delivered.
//!
//!   hack/bench-scale.sh N C          (`make bench-scale N=2000 C=100`: a fresh cluster, then this)
//!   NUMO_TEST_KUBECONFIG=… N=100 C=5 cargo bench --bench scale

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, ResourceExt};
use numo::api::RunPhase;
use serde_json::json;
use support::*;

/// What the watches saw: when each Job was created and seen done, when each node was released and seen upgraded.
#[derive(Default)]
struct Seen {
    job_created: HashMap<String, Instant>,
    job_done: HashMap<String, Instant>,
    released: HashMap<String, Instant>,
    upgraded: HashMap<String, Instant>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let workers: usize = env_number("N", 100);
    let concurrency: usize = env_number("C", 5);
    let idle_seconds: u64 = env_number("IDLE", 30);
    let load_before = loadavg();
    eprintln!("scale: seeding {workers} workers (load {load_before})");
    let mut setup = Setup::with("scale", workers, Nfd::Off).await?;
    setup.rule("check", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.rule("backup", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("bench", &["check", "backup"], &["workers"], json!({"concurrency": concurrency})).await?;

    let mut numo = Numo::start().await?;
    setup.wait_phase("bench", RunPhase::Idle, Duration::from_secs(300)).await?;
    // Idle: numo with every cache filled, in a world where nothing moves.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let quiet = numo.sample().await?;
    eprintln!("scale: numo is Idle; watching it for {idle_seconds}s");
    tokio::time::sleep(Duration::from_secs(idle_seconds)).await;
    let idle = numo.sample().await?;
    eprintln!("scale: upgrading the cluster");

    let seen: Arc<Mutex<Seen>> = Arc::default();
    record_jobs(&mut setup, seen.clone());
    record_nodes(&mut setup, seen.clone());
    let largest = record_run_config_size(&mut setup);
    let before = numo.sample().await?;
    let started = Instant::now();
    setup.upgrade_cluster(NEW).await?;
    let limit = Duration::from_secs(1800 + 60 * workers as u64 / concurrency.max(1) as u64);
    let done = |rc: &numo::api::MutexRunConfig| {
        matches!(rc.status.as_ref().and_then(|s| s.phase), Some(RunPhase::Restoring | RunPhase::Completed))
    };
    numo_testkit::wait_until(&setup.run_configs(), "bench", limit, "every node done", done).await?;
    let gating = started.elapsed();
    let walk_started = numo.sample().await?;
    // Restoring: the MCO moves the nodes back into their pool one at a time (the pool's maxUnavailable), which
    // at thousands of nodes takes the test world seconds per node.
    let restore_limit = Duration::from_secs(600 + 3 * workers as u64);
    setup.wait_phase("bench", RunPhase::Completed, restore_limit).await?;
    let rollout = started.elapsed();
    let after = numo.sample().await?;
    eprintln!("scale: Completed after {:.1}s; waiting for every pool to settle", rollout.as_secs_f64());
    settle(&setup).await?;
    // After the rollout every cache holds its Jobs too; the pools still move nodes back, which numo follows.
    tokio::time::sleep(Duration::from_secs(idle_seconds)).await;
    let end = numo.sample().await?;
    let status_bytes = serde_json::to_vec(&setup.run_configs().get("bench").await?.status)?.len();
    numo.stop();

    let seen = seen.lock().map_err(|_| anyhow::anyhow!("a recorder panicked"))?;
    let work = world_work(&seen, workers)?;
    let ideal = work.as_secs_f64() / concurrency as f64;
    let rollout_s = rollout.as_secs_f64();
    let gating_s = gating.as_secs_f64();
    let writes = after.writes - before.writes;
    let job_creates = after.job_creates - before.job_creates;
    let event_creates = after.event_creates - before.event_creates;
    let jobs_made = seen.job_created.len();
    let status_writes = after.status_writes - before.status_writes;
    let status_written = after.status_bytes - before.status_bytes;
    println!(
        "N={workers} C={concurrency}: rollout {rollout_s:.1}s (every node done after {gating_s:.1}s, then \
         {:.1}s restoring the pools), ideal {ideal:.1}s, overhead {:.1}%, {:.2} nodes/s, \
         peak RSS {:.0} MiB, idle RSS {:.0} MiB (after the rollout {:.0} MiB), numo CPU {:.1}s ({} run-config \
         reconciles until every node was done, {:.1} ms of CPU per reconcile), {:.1} writes/node \
         ({job_creates} Job creates for {jobs_made} Jobs, {:.1} Events/node), \
         status {} writes of {:.1} KB mean (stored {:.1} KB); idle {}s: {} requests besides {} watch renewals, \
         {:.2}s CPU; load {} → {}; \
         CPU during the rollout: numo {:.0}s, simulator {:.0}s, API server + etcd + kwok + others {:.0}s; \
         the restore walk: numo {:.1}s CPU, {} run-config reconciles; the run config at most {:.1} KB",
        rollout_s - gating_s,
        100.0 * (gating_s - ideal) / gating_s,
        workers as f64 / gating_s,
        end.peak_rss_kib as f64 / 1024.0,
        idle.rss_kib as f64 / 1024.0,
        end.rss_kib as f64 / 1024.0,
        after.cpu - before.cpu,
        walk_started.reconciles - before.reconciles,
        1000.0 * (walk_started.cpu - before.cpu) / (walk_started.reconciles - before.reconciles).max(1) as f64,
        writes as f64 / workers as f64,
        event_creates as f64 / workers as f64,
        status_writes,
        status_written as f64 / status_writes.max(1) as f64 / 1000.0,
        status_bytes as f64 / 1000.0,
        idle_seconds,
        idle.requests - quiet.requests,
        idle.watches - quiet.watches,
        idle.cpu - quiet.cpu,
        load_before,
        loadavg(),
        after.cpu - before.cpu,
        after.simulator_cpu - before.simulator_cpu,
        (after.machine_cpu - before.machine_cpu)
            - (after.cpu - before.cpu)
            - (after.simulator_cpu - before.simulator_cpu),
        after.cpu - walk_started.cpu,
        after.reconciles - walk_started.reconciles,
        largest.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1000.0,
    );
    Ok(())
}

/// Waits until every pool has all its machines updated, then 5 s more.
async fn settle(setup: &Setup) -> anyhow::Result<()> {
    let pools: Api<numo::openshift::MachineConfigPool> = Api::all(setup.client.clone());
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        let list = pools.list(&Default::default()).await?;
        let settled =
            list.items.iter().all(|p| p.status.as_ref().is_some_and(|s| s.updated_machine_count == s.machine_count));
        if settled {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    Ok(())
}

/// Σ over the gated nodes of the time the test world spent on them: each Job from creation until done, and the
/// update from release until the node was seen at the new version.
fn world_work(seen: &Seen, workers: usize) -> anyhow::Result<Duration> {
    let jobs: Duration =
        seen.job_done.iter().filter_map(|(name, done)| Some(done.duration_since(*seen.job_created.get(name)?))).sum();
    let updates: Duration = seen
        .upgraded
        .iter()
        .filter_map(|(node, upgraded)| Some(upgraded.duration_since(*seen.released.get(node)?)))
        .sum();
    let (jobs_seen, nodes_seen) = (seen.job_done.len(), seen.upgraded.len());
    anyhow::ensure!(
        jobs_seen >= workers * 4 && nodes_seen >= workers,
        "the watches saw {jobs_seen} Jobs done and {nodes_seen} nodes upgraded of {workers} nodes; nothing measured"
    );
    Ok(jobs + updates)
}

/// numo's release build, run as its ServiceAccount, with its metrics on a loopback port.
struct Numo {
    child: std::process::Child,
    metrics: String,
}

/// What numo's process and metrics say at one moment, with the CPU the rest of the machine used.
struct Sample {
    cpu: f64,
    /// CPU of this process: the simulated operators and the recorders.
    simulator_cpu: f64,
    /// CPU of the whole machine (busy time of every core).
    machine_cpu: f64,
    rss_kib: u64,
    peak_rss_kib: u64,
    requests: u64,
    watches: u64,
    writes: u64,
    /// Job creates sent (those answered 409 AlreadyExists included).
    job_creates: u64,
    /// Event creates sent.
    event_creates: u64,
    status_writes: u64,
    status_bytes: u64,
    /// The run-config controller's reconciles (that ran to the status write).
    reconciles: u64,
}

impl Numo {
    async fn start() -> anyhow::Result<Self> {
        let cluster = numo_testkit::cluster().await?;
        let dir = std::env::temp_dir().join(format!("numo-bench-scale-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let kubeconfig = numo_testkit::rbac::write_operator_kubeconfig(cluster, &dir.join("kubeconfig")).await?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = std::fs::File::create(dir.join("numo.log"))?;
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_numo"))
            .args(["run", "--leader-election=false", "--metrics-address", &format!("127.0.0.1:{port}")])
            .env("KUBECONFIG", kubeconfig)
            // NUMO_BENCH_LOG: numo's log filter (default warn), e.g. to see what woke each reconcile.
            .env("RUST_LOG", std::env::var("NUMO_BENCH_LOG").unwrap_or_else(|_| "warn".into()))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        eprintln!("scale: numo runs as pid {} (log: {})", child.id(), dir.join("numo.log").display());
        Ok(Self { child, metrics: format!("127.0.0.1:{port}") })
    }

    async fn sample(&mut self) -> anyhow::Result<Sample> {
        let text = scrape(&self.metrics).await?;
        let mut requests = BTreeMap::<String, u64>::new();
        let (mut job_creates, mut event_creates) = (0, 0);
        let (mut status_writes, mut status_bytes, mut reconciles) = (0, 0, 0);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else { continue };
            let value = value.parse::<f64>().unwrap_or(0.0) as u64;
            if let Some(labels) = series.strip_prefix("numo_api_requests_total{") {
                let label = |name: &str| {
                    labels.split(&format!("{name}=\"")).nth(1).and_then(|v| v.split('"').next()).unwrap_or("")
                };
                let verb = label("verb");
                *requests.entry(verb.to_string()).or_default() += value;
                match (verb, label("resource")) {
                    ("create", "jobs") => job_creates += value,
                    ("create", "events") => event_creates += value,
                    _ => {}
                }
            } else if series == "numo_status_writes_total" {
                status_writes = value;
            } else if series == "numo_status_write_bytes_total" {
                status_bytes = value;
            } else if series == "numo_reconcile_duration_seconds_count{controller=\"mutexrunconfig\"}" {
                reconciles = value;
            }
        }
        let writes = ["create", "update", "patch", "delete"].iter().filter_map(|v| requests.get(*v)).sum();
        let watches = requests.get("watch").copied().unwrap_or(0);
        let (rss_kib, peak_rss_kib) = memory(self.child.id())?;
        Ok(Sample {
            cpu: cpu_seconds(self.child.id())?,
            simulator_cpu: cpu_seconds(std::process::id())?,
            machine_cpu: machine_busy_seconds()?,
            rss_kib,
            peak_rss_kib,
            requests: requests.values().sum::<u64>() - watches,
            watches,
            writes,
            job_creates,
            event_creates,
            status_writes,
            status_bytes,
            reconciles,
        })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Numo {
    fn drop(&mut self) {
        self.stop();
    }
}

/// GET /metrics over plain HTTP/1.0.
async fn scrape(address: &str) -> anyhow::Result<String> {
    let address = address.to_string();
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&address)?;
        stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: numo\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (_, body) = response.split_once("\r\n\r\n").ok_or_else(|| anyhow::anyhow!("no /metrics body"))?;
        Ok(body.to_string())
    })
    .await?
}

/// User + system CPU seconds of process `pid`.
fn cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command (which may hold spaces) start at the state, field 3; utime and stime are 14 and 15.
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    Ok(ticks / 100.0)
}

/// `VmRSS` and `VmHWM` (peak) of process `pid`, in KiB.
fn memory(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Busy CPU seconds of the whole machine (every core; idle and iowait left out).
fn machine_busy_seconds() -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().unwrap_or_default();
    let ticks: Vec<f64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let total: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3).copied().unwrap_or(0.0) + ticks.get(4).copied().unwrap_or(0.0);
    Ok((total - idle) / 100.0)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn record_jobs(setup: &mut Setup, seen: Arc<Mutex<Seen>>) {
    let api: Api<Job> = Api::all(setup.client.clone());
    setup.world.spawn(async move {
        let config = watcher::Config::default().labels("app.kubernetes.io/managed-by=numo");
        let events = watcher::watcher(api, config).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(job) | Event::InitApply(job)) = event else { continue };
            let now = Instant::now();
            let Ok(mut seen) = seen.lock() else { return };
            seen.job_created.entry(job.name_any()).or_insert(now);
            if job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) > 0 {
                seen.job_done.entry(job.name_any()).or_insert(now);
            }
        }
    });
}

/// The largest the run config `bench` was, as JSON, in any version its watch delivered (status and metadata).
fn record_run_config_size(setup: &mut Setup) -> Arc<std::sync::atomic::AtomicUsize> {
    let largest = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let api = setup.run_configs();
    let recorded = largest.clone();
    setup.world.spawn(async move {
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(rc) | Event::InitApply(rc)) = event else { continue };
            let size = serde_json::to_vec(&rc).map(|json| json.len()).unwrap_or(0);
            recorded.fetch_max(size, std::sync::atomic::Ordering::Relaxed);
        }
    });
    largest
}

fn record_nodes(setup: &mut Setup, seen: Arc<Mutex<Seen>>) {
    let client = setup.client.clone();
    let api: Api<Node> = Api::all(client.clone());
    setup.world.spawn(async move {
        let mut rendered = BTreeMap::new();
        let mut held = BTreeSet::new();
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(node) | Event::InitApply(node)) = event else { continue };
            let name = node.name_any();
            let now = Instant::now();
            let is_held = node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX));
            let config = node.annotations().get(numo::openshift::CURRENT_CONFIG);
            if config.is_some_and(|c| !rendered.contains_key(c)) {
                // A config not seen yet (a new rendered config): read them again; this happens once per pool.
                rendered = rendered_versions(&client).await.unwrap_or(rendered);
            }
            let at_new = version_of(&node, &rendered).as_deref() == Some(NEW);
            let Ok(mut seen) = seen.lock() else { return };
            if is_held {
                held.insert(name.clone());
            } else if held.remove(&name) {
                seen.released.entry(name.clone()).or_insert(now);
            }
            if at_new && name.starts_with("worker") {
                seen.upgraded.entry(name).or_insert(now);
            }
        }
    });
}
