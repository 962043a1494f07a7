//! Stopping and starting the kube-apiserver of the test cluster, as a crash and a restart would: the process is
//! killed (`SIGKILL`, so every watch connection breaks at once) and started again later with the same command line,
//! working directory, environment and log file that kwokctl's binary runtime gave it.
//!
//! kwokctl keeps each cluster's state beside its kubeconfig (`<workdir>/clusters/<name>/kubeconfig.yaml`): the pid
//! of each component in `pids/<component>.pid`, its log in `logs/<component>.log`. The restart starts every
//! component that exited meanwhile again the same way, so the next test finds the whole cluster (with leader
//! election on, as in clusters made before `hack/kwok/kwokctl.yaml` turned it off, kube-controller-manager and
//! kube-scheduler exit after about 10 s without the apiserver; on a real control plane the kubelet restarts them).
//! kwok, which stands in for every kubelet, misses a node deleted before its watch is back, and never again manages
//! a node later made with that name; so the restart returns only once kwok has made a new node Ready.
//! kube-controller-manager and kube-scheduler are started afresh even if they outlived the outage: one that did may
//! keep watches that no longer see new objects.
//! While the apiserver is down the kwok work directory stays locked, as `hack/cluster-up.sh` locks it, so a test
//! binary starting meanwhile waits instead of "starting" the cluster a second time; restarted components' pids are
//! written where `kwokctl` and `hack/cluster-down.sh` look for them.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, PostParams};
use kube::Api;

use crate::cluster::TestCluster;
use crate::kwok::{fake_node, is_node_ready};
use crate::wait::wait_until;

/// The component restarted by [`TestCluster::stop_apiserver`] and [`ApiServerDown::start`].
const APISERVER: &str = "kube-apiserver";
/// Components the restart starts afresh whether they outlived the outage or not (with leader election on, they exit
/// when they cannot renew their Lease in `kube-system`).
const STARTED_AFRESH: [&str; 2] = ["kube-controller-manager", "kube-scheduler"];
/// Components that keep running without the apiserver (their data is not ours to restart).
const LEFT_ALONE: [&str; 1] = ["etcd"];
/// How long a killed process may take to be gone, a started apiserver to answer `/readyz`, and kwok to make a new
/// node Ready.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the restart looks again (nothing can be watched while the apiserver starts, or at a process).
const POLL: Duration = Duration::from_millis(100);

/// A killed kube-apiserver: [`start`](ApiServerDown::start) brings it back (and the components that exited without
/// it) and waits until the cluster is usable. Dropped without that (a test failing in between), it does the same at
/// once, so the next test finds a cluster.
pub struct ApiServerDown {
    restart: Restart,
    started: bool,
    // Declared last: released only once the apiserver runs again.
    _workdir_lock: File,
}

/// What a restart needs: where the cluster lives, how to reach it, and how its components were started.
struct Restart {
    cluster_dir: PathBuf,
    config: kube::Config,
    /// The components that ran when the apiserver was killed (the apiserver first).
    components: Vec<Component>,
}

/// A component of the cluster (`kube-apiserver`, `kube-scheduler`, ...) as it ran.
#[derive(Debug)]
struct Component {
    name: String,
    pid: u32,
    process: Process,
}

/// How a process was started.
#[derive(Debug)]
struct Process {
    args: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
}

impl std::fmt::Debug for ApiServerDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServerDown")
            .field("cluster_dir", &self.restart.cluster_dir)
            .field("started", &self.started)
            .finish()
    }
}

impl TestCluster {
    /// Kills the cluster's kube-apiserver (`SIGKILL`) and returns once it is gone. The cluster must run on kwokctl's
    /// binary runtime (what `hack/cluster-up.sh` starts).
    pub async fn stop_apiserver(&self) -> anyhow::Result<ApiServerDown> {
        let cluster_dir = self.kubeconfig().parent().context("the kubeconfig has no parent directory")?.to_path_buf();
        let config = self.config().clone();
        tokio::task::spawn_blocking(move || ApiServerDown::kill(cluster_dir, config))
            .await
            .context("the apiserver-stopping task panicked")?
    }

    /// Kills the cluster's kube-apiserver, leaves it down for `down`, then [starts](ApiServerDown::start) it again.
    pub async fn restart_apiserver(&self, down: Duration) -> anyhow::Result<()> {
        let stopped = self.stop_apiserver().await?;
        tokio::time::sleep(down).await;
        stopped.start().await
    }
}

impl ApiServerDown {
    fn kill(cluster_dir: PathBuf, config: kube::Config) -> anyhow::Result<Self> {
        let workdir_lock = lock_workdir(&cluster_dir)?;
        let components = running_components(&cluster_dir)?;
        let Some(apiserver) = components.iter().find(|c| c.name == APISERVER) else {
            bail!(
                "no running {APISERVER} in {}: the test cluster does not run on kwokctl's binary runtime \
                 (hack/cluster-up.sh)",
                cluster_dir.display()
            );
        };
        let pid = apiserver.pid;
        kill(APISERVER, pid)?;
        tracing::info!(pid, "{APISERVER} killed");
        Ok(Self { restart: Restart { cluster_dir, config, components }, started: false, _workdir_lock: workdir_lock })
    }

    /// Starts the apiserver again as it was started before, waits until it answers `/readyz`, then starts again
    /// every component that exited meanwhile and, afresh, kube-controller-manager and kube-scheduler, and waits
    /// until kwok makes a new node Ready.
    pub async fn start(mut self) -> anyhow::Result<()> {
        self.started = true;
        self.restart.run().await
    }
}

impl Drop for ApiServerDown {
    fn drop(&mut self) {
        if self.started {
            return;
        }
        // Before the lock goes to the next test; on a thread of its own, as this may run on a runtime thread.
        let restart = Restart {
            cluster_dir: self.restart.cluster_dir.clone(),
            config: self.restart.config.clone(),
            components: std::mem::take(&mut self.restart.components),
        };
        let outcome = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(restart.run())
        })
        .join();
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::error!(error = format!("{error:#}"), "could not restart the test cluster"),
            Err(_) => tracing::error!("restarting the test cluster panicked"),
        }
    }
}

impl Restart {
    async fn run(&self) -> anyhow::Result<()> {
        let apiserver = self.components.iter().find(|c| c.name == APISERVER).context("no apiserver")?;
        let pid = self.spawn(apiserver)?;
        let client = kube::Client::try_from(self.config.clone()).context("building a client")?;
        wait_ready(&client, pid, &self.cluster_dir).await?;
        for component in self.components.iter().filter(|c| c.name != APISERVER) {
            if STARTED_AFRESH.contains(&component.name.as_str()) && is_running(component.pid) {
                // One that outlived a short outage may keep watches that no longer see new objects (a Job's pod
                // never scheduled): started afresh, as after a long outage, it lists everything anew.
                let (name, pid) = (component.name.clone(), component.pid);
                tokio::task::spawn_blocking(move || kill(&name, pid)).await.context("the killing task panicked")??;
            }
            if !is_running(component.pid) {
                self.spawn(component)?;
            }
        }
        kwok_watches_nodes(&client).await
    }

    /// Starts `component` as it ran before (through `setsid`, in a session of its own as kwokctl starts it, so the
    /// test's signals do not reach it), logging where kwokctl logs it, and records its new pid.
    fn spawn(&self, component: &Component) -> anyhow::Result<u32> {
        let Process { args, cwd, env } = &component.process;
        let component = component.name.as_str();
        let log_path = self.cluster_dir.join(format!("logs/{component}.log"));
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("opening {}", log_path.display()))?;
        // `setsid` (util-linux) runs the command in place: the child's pid is the component's.
        let child = Command::new("setsid")
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {} with setsid (util-linux)", args[0]))?;
        let pid_file = self.cluster_dir.join(format!("pids/{component}.pid"));
        std::fs::write(&pid_file, child.id().to_string()).with_context(|| format!("writing {}", pid_file.display()))?;
        tracing::info!(component, pid = child.id(), "started again");
        Ok(child.id())
    }
}

/// Waits until the apiserver (process `pid`) answers `/readyz` with `ok`; fails at once if it exits.
async fn wait_ready(client: &kube::Client, pid: u32, cluster_dir: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + PROCESS_TIMEOUT;
    loop {
        let request = http::Request::get("/readyz").body(Vec::new())?;
        match client.request_text(request).await {
            Ok(text) if text.trim() == "ok" => break,
            _ if !is_running(pid) => {
                let log = cluster_dir.join(format!("logs/{APISERVER}.log"));
                bail!("the restarted {APISERVER} ({pid}) exited; see the end of {}", log.display())
            }
            answer if Instant::now() > deadline => {
                bail!("the restarted {APISERVER} is not ready after {PROCESS_TIMEOUT:?}: {answer:?}")
            }
            _ => tokio::time::sleep(POLL).await,
        }
    }
    tracing::info!("{APISERVER} ready again");
    Ok(())
}

/// Kills the process `pid` of `component` (`SIGKILL`) and returns once it is gone.
fn kill(component: &str, pid: u32) -> anyhow::Result<()> {
    let status = Command::new("kill").args(["-KILL", &pid.to_string()]).status().context("running kill")?;
    if !status.success() {
        bail!("kill -KILL {pid} ({component}) failed ({status})");
    }
    let deadline = Instant::now() + PROCESS_TIMEOUT;
    while is_running(pid) {
        if Instant::now() > deadline {
            bail!("the {component} {pid} still runs {PROCESS_TIMEOUT:?} after SIGKILL");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Makes a node of a name no test uses, waits until kwok reports it Ready (its node watch is back), and deletes it.
async fn kwok_watches_nodes(client: &kube::Client) -> anyhow::Result<()> {
    let nodes = Api::<Node>::all(client.clone());
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let name = format!("testkit-kwok-probe-{}-{nanos}", std::process::id());
    nodes.create(&PostParams::default(), &fake_node(&name)).await.with_context(|| format!("creating node {name}"))?;
    let outcome = wait_until(&nodes, &name, PROCESS_TIMEOUT, "kwok to make the probe node Ready", is_node_ready).await;
    nodes.delete(&name, &DeleteParams::default()).await.with_context(|| format!("deleting node {name}"))?;
    outcome.map(drop)
}

/// The components of the cluster in `cluster_dir` that run now (the apiserver first), except [`LEFT_ALONE`].
fn running_components(cluster_dir: &Path) -> anyhow::Result<Vec<Component>> {
    let pids = cluster_dir.join("pids");
    let mut components = Vec::new();
    for entry in std::fs::read_dir(&pids).with_context(|| format!("reading {}", pids.display()))? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".pid")) else {
            continue;
        };
        if LEFT_ALONE.contains(&name) {
            continue;
        }
        let Ok(pid) = std::fs::read_to_string(&path).unwrap_or_default().trim().parse::<u32>() else { continue };
        if !is_running(pid) {
            continue;
        }
        let process = Process::of(pid).with_context(|| format!("reading the {name} process {pid}"))?;
        if !process.cwd.starts_with(cluster_dir) {
            bail!("process {pid} (in {}) is not this cluster's {name}", process.cwd.display());
        }
        components.push(Component { name: name.to_string(), pid, process });
    }
    components.sort_by_key(|c| (c.name != APISERVER, c.name.clone()));
    Ok(components)
}

impl Process {
    /// The command line, working directory and environment of the running process `pid`.
    fn of(pid: u32) -> anyhow::Result<Self> {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let split = |bytes: Vec<u8>| -> Vec<String> {
            bytes
                .split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        };
        let args = split(std::fs::read(proc.join("cmdline"))?);
        if args.is_empty() {
            bail!("process {pid} has no command line (it is gone)");
        }
        let cwd = std::fs::read_link(proc.join("cwd"))?;
        let env = split(std::fs::read(proc.join("environ"))?)
            .into_iter()
            .filter_map(|entry| entry.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect();
        Ok(Self { args, cwd, env })
    }
}

/// Whether any thread of the process `pid` still runs. A killed multi-threaded process can show its main thread as
/// a zombie while other threads still exit and hold its sockets (the apiserver's port), so every thread counts.
fn is_running(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
    tasks.filter_map(Result::ok).any(|task| {
        match std::fs::read_to_string(task.path().join("stat")) {
            // The state follows the command name in parentheses: `tid (comm) S ...`.
            Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        }
    })
}

/// Locks kwokctl's work directory (`<workdir>/clusters/<name>` → `<workdir>`) as `hack/lib/cluster.sh` does.
fn lock_workdir(cluster_dir: &Path) -> anyhow::Result<File> {
    let workdir = cluster_dir
        .parent()
        .filter(|clusters| clusters.file_name().is_some_and(|name| name == "clusters"))
        .and_then(Path::parent)
        .with_context(|| format!("{} is not a kwokctl cluster directory", cluster_dir.display()))?;
    let file = File::open(workdir).with_context(|| format!("opening {}", workdir.display()))?;
    file.lock().with_context(|| format!("locking {}", workdir.display()))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_runs_and_a_pid_that_does_not_exist_does_not() {
        assert!(is_running(std::process::id()));
        assert!(!is_running(u32::MAX));
    }

    #[test]
    fn a_process_is_read_from_proc() {
        let me = Process::of(std::process::id()).unwrap();
        assert!(!me.args.is_empty());
        assert_eq!(me.cwd, std::env::current_dir().unwrap());
        assert!(me.env.iter().any(|(k, _)| k == "PATH"));
    }

    #[test]
    fn only_kwokctl_cluster_directories_are_locked() {
        let dir = std::env::temp_dir().join(format!("numo-testkit-workdir-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("clusters/x")).unwrap();
        assert!(lock_workdir(&dir.join("clusters/x")).is_ok());
        assert!(lock_workdir(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
