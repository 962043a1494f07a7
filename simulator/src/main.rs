#![forbid(unsafe_code)]
//! `numo-sim`: the OpenShift simulator's command line. Every subcommand talks to the cluster of `$KUBECONFIG` (or
//! the default kubeconfig).
//!
//! ```text
//! numo-sim install-crds [--from DIR]
//! numo-sim seed --version 4.16.4 --workers 6 --masters 3 [--storage-domains rack --storage-domain-count 3]
//! numo-sim run [--reboot 2s] [--drain-seconds 0] [--control-plane 2s] [--nfd-labels] [--openshift-version 4.22]
//!              [--storage-domains rack --pgs-clean-seconds 60]
//! numo-sim upgrade --version 4.16.5
//! ```

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use kube::api::{Api, Patch, PatchParams};
use numo::openshift::{ClusterVersion, CLUSTER_VERSION_NAME};
use numo_simulator::storage::{FailureDomain, StorageConfig, StorageReport, StorageShape};
use numo_simulator::{ClusterShape, OpenShiftRelease, Platform, SimConfig, Simulator, FIELD_MANAGER};
use serde_json::json;

/// The OpenShift simulator of numo's test world.
#[derive(Parser)]
#[command(name = "numo-sim", version)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Subcommand)]
enum Commands {
    /// Install the OpenShift CRDs (from a folder of real CRDs, else derived from numo's types) and wait until each
    /// is Established.
    InstallCrds {
        /// Folder of CRD YAML files; default: $NUMO_OPENSHIFT_CRDS, else ../shared/openshift-crds beside the
        /// repository if it exists.
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// Create the ClusterVersion, healthy ClusterOperators, pools, rendered MachineConfigs and nodes of a cluster
    /// shape (what exists is kept).
    Seed {
        /// The release the cluster runs.
        #[arg(long, default_value = "4.16.4")]
        version: String,
        /// Number of worker nodes.
        #[arg(long, default_value_t = 3)]
        workers: usize,
        /// Number of control-plane nodes.
        #[arg(long, default_value_t = 1)]
        masters: usize,
        /// Also label every worker an ODF storage node (cluster.ocs.openshift.io/openshift-storage) in a failure
        /// domain of this type: rack (topology.rook.io/rack), zone (topology.kubernetes.io/zone) or host.
        #[arg(long, value_parser = FailureDomain::parse)]
        storage_domains: Option<FailureDomain>,
        /// How many failure domains the workers go round-robin over (rack0, rack1, ...).
        #[arg(long, default_value_t = 3)]
        storage_domain_count: usize,
    },
    /// Run the simulated CVO and MCO until Ctrl-C or SIGTERM.
    Run {
        /// How long a node reboots during an update (e.g. 2s, 500ms, 1m).
        #[arg(long, value_parser = parse_duration, default_value = "2s")]
        reboot: Duration,
        /// How long a node drains after its cordon, before it reboots, in seconds (fractions allowed); no pod is
        /// evicted. A node's sim.numo.openshift-optional.skrzypek.io/drain-seconds annotation overrides it.
        #[arg(long = "drain-seconds", value_parser = parse_seconds, default_value = "0")]
        drain: Duration,
        /// How long the control plane takes to upgrade before the MCO is updated.
        #[arg(long, value_parser = parse_duration, default_value = "2s")]
        control_plane: Duration,
        /// How long to wait before retrying after an API error.
        #[arg(long, value_parser = parse_duration, default_value = "1s")]
        retry: Duration,
        /// How long the machine-config operator waits for its required (master) pool, per machine in it, while a
        /// pool is degraded or the masters update, before it reports Degraded RequiredPoolsFailed.
        #[arg(long, value_parser = parse_duration, default_value = "10m")]
        required_pool_wait: Duration,
        /// Also play Node Feature Discovery: label every node with the release it runs
        /// (machineconfiguration.openshift.io/release-image-version). Off by default: the MCO writes no such label.
        #[arg(long)]
        nfd_labels: bool,
        /// The OpenShift release whose platform writers to play (4.16 to 4.23): up to 4.21 the machine-config
        /// operator puts the built-in pools' selectors back on every sync, from 4.22 only their metadata; from 4.20
        /// the operator, controller and daemon write MachineConfigNodes; from 4.23 a pool boots the OS image of its
        /// stream.
        #[arg(long, value_parser = OpenShiftRelease::parse, default_value_t = OpenShiftRelease::NEWEST, env = "NUMO_SIM_OPENSHIFT_VERSION")]
        openshift_version: OpenShiftRelease,
        /// Also play Rook's managed disruption budgets over the storage nodes, whose pools have failure domains of
        /// this type (rack, zone or host): OSD Deployments, the default and blocking PodDisruptionBudgets, and drains
        /// that evict OSD pods through the Eviction API. Off by default.
        #[arg(long, value_parser = FailureDomain::parse)]
        storage_domains: Option<FailureDomain>,
        /// How long Ceph's PGs take to be clean again after the last OSD is back up, in seconds (fractions allowed).
        #[arg(long = "pgs-clean-seconds", value_parser = parse_seconds, default_value = "60")]
        pgs_clean: Duration,
        /// How long the drain waits before evicting again a pod a budget protected, in seconds (the MCO's: 5).
        #[arg(long = "eviction-retry-seconds", value_parser = parse_seconds, default_value = "5")]
        eviction_retry: Duration,
        /// Also play the SR-IOV network operator: it pauses a node's pool around its drain of a node annotated
        /// sim.numo.openshift-optional.skrzypek.io/sriov-reconfigure=true.
        #[arg(long)]
        sriov: bool,
        /// How long SR-IOV's drain of a node takes (e.g. 2s).
        #[arg(long, value_parser = parse_duration, default_value = "2s")]
        sriov_drain: Duration,
    },
    /// Request an upgrade: set the ClusterVersion's spec.desiredUpdate.
    Upgrade {
        /// The release to upgrade to.
        #[arg(long)]
        version: String,
        /// The release image; default: derived from the version.
        #[arg(long)]
        image: Option<String>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();

    let command = Cli::parse().command;
    let client = kube::Client::try_default().await.context("connecting to the cluster of $KUBECONFIG")?;
    match command {
        Commands::InstallCrds { from } => {
            let from = match from {
                Some(dir) => Some(dir),
                None => numo_simulator::crds::openshift_crds_dir()?,
            };
            match &from {
                Some(dir) => tracing::info!(from = %dir.display(), "installing the OpenShift CRDs"),
                None => tracing::info!("installing the OpenShift CRDs derived from numo's Rust types"),
            }
            for name in numo_simulator::crds::install_openshift_crds(&client, from.as_deref()).await? {
                println!("{name}");
            }
        }
        Commands::Seed { version, workers, masters, storage_domains, storage_domain_count } => {
            numo_simulator::seed(&client, &ClusterShape { version, workers, masters }).await?;
            if let Some(domain) = storage_domains {
                let shape = StorageShape { domain, domains: storage_domain_count };
                numo_simulator::storage::seed_storage(&client, &shape).await?;
            }
        }
        Commands::Run {
            reboot,
            drain,
            control_plane,
            retry,
            required_pool_wait,
            nfd_labels,
            openshift_version,
            storage_domains,
            pgs_clean,
            eviction_retry,
            sriov,
            sriov_drain,
        } => {
            let config = kube::Config::infer().await.context("reading the kubeconfig")?;
            let platform = Platform::impersonating(&config).context("building the platform components' clients")?;
            let openshift = openshift_version;
            tracing::info!(%openshift, "playing the platform writers of OpenShift {openshift}");
            let storage = storage_domains.map(|domain| {
                let mut storage = StorageConfig::new(domain);
                storage.pgs_clean = pgs_clean;
                storage.drain.eviction_retry = eviction_retry;
                storage
            });
            let config = SimConfig {
                reboot,
                drain,
                control_plane,
                retry,
                nfd_labels,
                openshift,
                storage,
                required_pool_wait_per_machine: required_pool_wait,
                sriov,
                sriov_drain,
            };
            let simulator = Simulator::start_with(client, platform, config);
            shutdown_signal().await?;
            tracing::info!("stopping");
            if let Some(report) = simulator.storage_report() {
                print_storage_report(&report);
            }
            simulator.stop();
        }
        Commands::Upgrade { version, image } => {
            let image = image.unwrap_or_else(|| numo_simulator::render::release_image(&version));
            let body = json!({"spec": {"desiredUpdate": {"version": version, "image": image}}});
            let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
            Api::<ClusterVersion>::all(client)
                .patch(CLUSTER_VERSION_NAME, &params, &Patch::Merge(&body))
                .await
                .context("setting spec.desiredUpdate of ClusterVersion version")?;
            println!("clusterversion/{CLUSTER_VERSION_NAME} desiredUpdate set to {version}");
        }
    }
    Ok(())
}

/// The storage world's record, one line per domain and per drain that waited.
fn print_storage_report(report: &StorageReport) {
    for (domain, record) in &report.domains {
        println!(
            "domain {domain}: longest down {:.1}s, at most {} node(s) down at once",
            record.longest_down.as_secs_f64(),
            record.most_down_at_once
        );
    }
    println!(
        "drains of OSD nodes: {}, waited: {} (on a blocking budget: {})",
        report.drains,
        report.drain_waits.len(),
        report.drains_blocked()
    );
    for wait in &report.drain_waits {
        let budgets: Vec<&str> = wait.budgets.iter().map(String::as_str).collect();
        println!("drain of {} waited {:.1}s on {}", wait.node, wait.waited.as_secs_f64(), budgets.join(", "));
    }
}

/// Waits for Ctrl-C or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = term.recv() => {}
    }
    Ok(())
}

/// A non-negative number of seconds (`30`, `0.5`).
fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text.trim().parse().map_err(|_| format!("not a number of seconds: {text:?}"))?;
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

/// A duration like `2s`, `500ms`, `1m`, or a number of seconds (`1.5`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number.trim().parse().map_err(|_| format!("not a duration: {text:?} (try 2s, 500ms, 1m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("unknown unit {unit:?} in {text:?} (use ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_or_as_seconds() {
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn drain_seconds_are_a_plain_number() {
        assert_eq!(parse_seconds("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert!(parse_seconds("2s").is_err());
        assert!(parse_seconds("-1").is_err());
    }

    #[test]
    fn run_takes_the_drain_time() {
        let cli = Cli::try_parse_from(["numo-sim", "run", "--drain-seconds", "1.5"]).map_err(|e| e.to_string());
        let drain = match cli.map(|c| c.command) {
            Ok(Commands::Run { drain, .. }) => Some(drain),
            _ => None,
        };
        assert_eq!(drain, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn run_takes_the_storage_world() {
        let cli = Cli::try_parse_from(["numo-sim", "run", "--storage-domains", "rack", "--pgs-clean-seconds", "20"]);
        let parsed = match cli.map(|c| c.command) {
            Ok(Commands::Run { storage_domains, pgs_clean, .. }) => Some((storage_domains, pgs_clean)),
            _ => None,
        };
        assert_eq!(parsed, Some((Some(FailureDomain::Rack), Duration::from_secs(20))));
        assert!(Cli::try_parse_from(["numo-sim", "run", "--storage-domains", "row"]).is_err());
    }
}
