#![forbid(unsafe_code)]
//! `numo`: the Node Upgrade Mutex Operator. `numo run` runs the operator; `numo crds` prints its CRDs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use numo::leader::{self, LeaderConfig};
use numo::metrics::Metrics;
use numo::server::{self, Readiness};
use numo::telemetry::{self, LogFormat};
use numo::{Context, OperatorConfig};

/// Where the service-account namespace is mounted in a pod.
const IN_CLUSTER_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// numo gates OpenShift worker-node upgrades behind admin-defined Jobs.
#[derive(Debug, Parser)]
#[command(name = "numo", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator.
    Run(Box<RunArgs>),
    /// Print numo's CustomResourceDefinitions as multi-document YAML, or write one file per CRD.
    Crds {
        /// Write `<plural>.<group>.yaml` files into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
    },
    /// Print what a run config's rollout would do (the nodes in order, each one's estimated start and end, what
    /// holds the first node now, the total), from numo's own planner over the cluster as your kubeconfig reads it.
    /// Changes nothing.
    Plan(PlanArgs),
    /// Draw a run config's rollout as an SVG picture (one row per node, time across, each step in its colour,
    /// holds, windows and blackouts, the projection of the nodes still to go), from what numo stored. Changes
    /// nothing.
    Timeline(TimelineArgs),
    /// List the console plugin's files built into this numo, with their sizes; fails if it has none.
    ConsolePlugin,
}

#[derive(Debug, clap::Args)]
struct TimelineArgs {
    /// The run config, as `namespace/name`.
    run_config: String,
    /// Where to write the SVG (`-` for standard output).
    #[arg(short, long, value_name = "FILE", default_value = "rollout.svg")]
    output: PathBuf,
}

#[derive(Debug, clap::Args)]
struct PlanArgs {
    /// The run config, as `namespace/name`.
    run_config: String,
    /// Preview the rollout to this version (as if the cluster went to it), instead of the one pending.
    #[arg(long, value_name = "VERSION")]
    to: Option<String>,
    /// How to print it.
    #[arg(short, long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// Alertmanager to ask for the alert health check, without `/api/v2` (on OpenShift, `https://` and the host of
    /// the route `alertmanager-main` in `openshift-monitoring`). Without it, no alert is taken to fire.
    #[arg(long, env = "NUMO_ALERTMANAGER_URL", value_name = "URL")]
    alertmanager_url: Option<String>,
    /// PEM file of the CAs that sign Alertmanager's certificate (needed for `https://`).
    #[arg(long, env = "NUMO_ALERTMANAGER_CA_FILE", value_name = "FILE")]
    alertmanager_ca_file: Option<PathBuf>,
    /// File of the bearer token to send Alertmanager, instead of the token your kubeconfig authenticates with.
    #[arg(long, value_name = "FILE")]
    alertmanager_token_file: Option<PathBuf>,
}

/// The output formats of `numo plan`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Output {
    /// A table for people.
    Table,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Namespaces, besides a MutexRule's own, that its Jobs may run in (comma-separated), as a ServiceAccount there
    /// that opted in to the rule's namespace. Empty: only the rule's own.
    #[arg(long, env = "NUMO_ALLOWED_JOB_NAMESPACES", value_delimiter = ',', default_value = "")]
    allowed_job_namespaces: Vec<String>,

    /// Alertmanager the alert health check asks (`healthChecks.alerts` of a run config), without `/api/v2`. numo
    /// sends its ServiceAccount token to it, so only the operator's admin chooses it.
    #[arg(
        long,
        env = "NUMO_ALERTMANAGER_URL",
        default_value = "https://alertmanager-main.openshift-monitoring.svc:9094"
    )]
    alertmanager_url: String,

    /// PEM file of the CAs that sign Alertmanager's certificate (OpenShift's service CA by default).
    #[arg(
        long,
        env = "NUMO_ALERTMANAGER_CA_FILE",
        default_value = "/var/run/secrets/kubernetes.io/serviceaccount/service-ca.crt"
    )]
    alertmanager_ca_file: PathBuf,

    /// How often Alertmanager is asked again while alerts hold a rollout, e.g. `30s`.
    #[arg(long, env = "NUMO_ALERTMANAGER_POLL_INTERVAL", default_value = "30s", value_parser = duration)]
    alertmanager_poll_interval: std::time::Duration,

    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "NUMO_METRICS_ADDRESS", default_value = "0.0.0.0:8080")]
    metrics_address: SocketAddr,

    /// Address of the console plugin's HTTPS server.
    #[arg(long, env = "NUMO_CONSOLE_PLUGIN_ADDRESS", default_value = "0.0.0.0:9443")]
    console_plugin_address: SocketAddr,
    /// Folder of the console plugin's serving certificate (tls.crt, tls.key: the Secret OpenShift's service CA
    /// issues for the Service numo-console-plugin). Without it the plugin is not served.
    #[arg(long, env = "NUMO_CONSOLE_PLUGIN_CERT_DIR", value_name = "DIR")]
    console_plugin_cert_dir: Option<PathBuf>,
    /// Folder of built console plugin files (console-plugin/dist) to serve instead of those built into numo.
    #[arg(long, env = "NUMO_CONSOLE_PLUGIN_ASSETS", value_name = "DIR")]
    console_plugin_assets: Option<PathBuf>,

    /// Log format.
    #[arg(long, env = "NUMO_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,

    /// Elect a leader through a Lease so that only one replica runs the controllers (`--leader-election=false` to
    /// run unconditionally).
    #[arg(long, env = "NUMO_LEADER_ELECTION", default_value_t = true, action = clap::ArgAction::Set)]
    leader_election: bool,

    /// Name of the leader Lease.
    #[arg(long, env = "NUMO_LEASE_NAME", default_value = "numo-leader")]
    lease_name: String,

    /// Namespace of the leader Lease; defaults to the pod's namespace when running in a cluster.
    #[arg(long, env = "POD_NAMESPACE")]
    lease_namespace: Option<String>,

    /// numo's own user name, `system:serviceaccount:<namespace>:<name>`: the one user its ValidatingAdmissionPolicy
    /// lets unpause the pools and remove the node labels numo holds. Default: from POD_NAMESPACE and
    /// SERVICE_ACCOUNT_NAME, which the Deployment sets; without any, numo puts no policy in place.
    #[arg(long, env = "NUMO_SERVICE_ACCOUNT")]
    service_account: Option<String>,

    /// The pod's namespace (the downward API's `metadata.namespace`), for the default of --service-account.
    #[arg(long, env = "POD_NAMESPACE", hide = true)]
    pod_namespace: Option<String>,

    /// The pod's ServiceAccount (the downward API's `spec.serviceAccountName`), for the default of
    /// --service-account.
    #[arg(long, env = "SERVICE_ACCOUNT_NAME", hide = true)]
    service_account_name: Option<String>,
}

/// A duration such as `30s` or `2m`.
fn duration(text: &str) -> Result<std::time::Duration, String> {
    numo::api::parse_duration(text).ok_or_else(|| format!("{text:?} is not a duration such as 30s or 2m"))
}

impl RunArgs {
    fn operator_config(&self) -> OperatorConfig {
        let allowed = self.allowed_job_namespaces.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
        let alertmanager = numo::alerts::AlertmanagerConfig {
            url: self.alertmanager_url.clone(),
            ca_file: self.alertmanager_ca_file.clone(),
            poll_interval: self.alertmanager_poll_interval,
            ..Default::default()
        };
        OperatorConfig { allowed_job_namespaces: allowed.collect(), alertmanager }
    }

    /// numo's own user name: --service-account, else `system:serviceaccount:<POD_NAMESPACE>:<SERVICE_ACCOUNT_NAME>`.
    fn service_account(&self) -> Option<String> {
        let given =
            |value: &Option<String>| value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(String::from);
        given(&self.service_account).or_else(|| {
            let (namespace, name) = (given(&self.pod_namespace)?, given(&self.service_account_name)?);
            Some(format!("system:serviceaccount:{namespace}:{name}"))
        })
    }

    /// Where and how to serve the console plugin. The ConsolePlugin names the Service in the pod's namespace.
    fn console_plugin(&self) -> numo::console_plugin::Settings {
        let nonempty = |dir: &Option<PathBuf>| dir.clone().filter(|d| !d.as_os_str().is_empty());
        numo::console_plugin::Settings {
            address: self.console_plugin_address,
            cert_dir: nonempty(&self.console_plugin_cert_dir),
            assets_dir: nonempty(&self.console_plugin_assets),
            namespace: self.pod_namespace.clone().filter(|ns| !ns.trim().is_empty()),
        }
    }

    /// The Lease's namespace: the flag/env, else the in-cluster namespace file; `None` without leader election.
    fn lease_namespace(&self) -> anyhow::Result<Option<String>> {
        if !self.leader_election {
            return Ok(None);
        }
        if let Some(ns) = self.lease_namespace.as_ref().filter(|ns| !ns.is_empty()) {
            return Ok(Some(ns.clone()));
        }
        match std::fs::read_to_string(IN_CLUSTER_NAMESPACE_FILE) {
            Ok(ns) if !ns.trim().is_empty() => Ok(Some(ns.trim().to_string())),
            _ => anyhow::bail!(
                "leader election needs the Lease's namespace: set --lease-namespace or POD_NAMESPACE \
                 (or run with --leader-election=false)"
            ),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds { output_dir } => crds(output_dir),
        Command::Run(args) => run(*args).await,
        Command::Plan(args) => plan(args).await,
        Command::Timeline(args) => timeline(args).await,
        Command::ConsolePlugin => console_plugin_files(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "numo stopped");
            eprintln!("numo: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn crds(output_dir: Option<PathBuf>) -> anyhow::Result<()> {
    match output_dir {
        Some(dir) => {
            for path in numo::crdgen::write_dir(&dir)? {
                println!("wrote {}", path.display());
            }
        }
        None => print!("{}", numo::crdgen::all_yaml()?),
    }
    Ok(())
}

fn console_plugin_files() -> anyhow::Result<()> {
    let assets = numo::console_plugin::assets::Assets::embedded()
        .context("this numo was built without its console plugin (cargo build --features console-plugin)")?;
    for (path, bytes) in assets.files() {
        println!("{bytes:>9}  {path}");
    }
    println!("{:>9}  {} files", assets.total_bytes(), assets.len());
    Ok(())
}

/// `namespace/name` split.
fn run_config_name(text: &str) -> anyhow::Result<(&str, &str)> {
    text.split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
        .context("name the run config as namespace/name")
}

async fn timeline(args: TimelineArgs) -> anyhow::Result<()> {
    use numo::controllers::run_config::preview;
    let (namespace, name) = run_config_name(&args.run_config)?;
    let client = kube::Client::try_default().await.context("could not configure the Kubernetes client")?;
    let (run_config, stores) = preview::read::read(&client, namespace, name).await.map_err(anyhow::Error::msg)?;
    let record = preview::read::record(&client, namespace, name).await.map_err(anyhow::Error::msg)?;
    let now = k8s_openapi::jiff::Timestamp::now();
    let in_progress = run_config.status.as_ref().and_then(|s| s.phase).is_some_and(|phase| {
        use numo::api::RunPhase;
        matches!(phase, RunPhase::Pausing | RunPhase::Upgrading | RunPhase::Failed | RunPhase::Restoring)
    });
    // The nodes still to go, as numo plan projects them (without an Alertmanager to ask).
    let projected = match in_progress {
        true => Some(preview::from_cluster(&client, &run_config, &stores, None, None).await),
        false => None,
    };
    let domains = preview::timeline::node_domains(&run_config, &stores);
    let projected = projected.map(|p| p.nodes).unwrap_or_default();
    let picture =
        preview::timeline::timeline(&run_config, &record, &projected, Some(&domains), numo::windows::utc(&now));
    let svg = numo::timeline::render(&picture);
    if args.output.as_os_str() == "-" {
        print!("{svg}");
    } else {
        std::fs::write(&args.output, svg).with_context(|| format!("could not write {}", args.output.display()))?;
        eprintln!("wrote {} ({} nodes)", args.output.display(), picture.rows.len());
    }
    Ok(())
}

async fn plan(args: PlanArgs) -> anyhow::Result<()> {
    use numo::controllers::run_config::preview;
    let (namespace, name) = run_config_name(&args.run_config)?;
    let kubeconfig = kube::Config::infer().await.context("could not configure the Kubernetes client")?;
    let alertmanager = preview::caller::AlertmanagerArgs {
        url: args.alertmanager_url,
        ca_file: args.alertmanager_ca_file,
        token_file: args.alertmanager_token_file,
    };
    let preview = preview::numo_plan(kubeconfig, namespace, name, args.to.as_deref(), &alertmanager)
        .await
        .map_err(anyhow::Error::msg)?;
    print!(
        "{}",
        match args.output {
            Output::Table => preview::table(&preview),
            Output::Json => preview::json(&preview),
            Output::Yaml => preview::yaml(&preview),
        }
    );
    Ok(())
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    telemetry::init(args.log_format)?;
    let lease_namespace = args.lease_namespace()?;
    let metrics = Arc::new(Metrics::default());
    let config = kube::Config::infer().await.context("could not configure the Kubernetes client")?;
    // The console plugin's timelines are read from the same API server, as the console's user.
    let api_server = config.clone();
    let client = numo::api_client::counted(config, metrics.clone()).context("could not build the Kubernetes client")?;
    let readiness = Readiness::default();
    let mut ctx = Context::new(client.clone(), args.operator_config(), metrics.clone());
    ctx.readiness = readiness.clone();
    ctx.service_account = args.service_account();

    let listener = server::bind(args.metrics_address)
        .await
        .with_context(|| format!("could not listen on {}", args.metrics_address))?;
    tracing::info!(address = %args.metrics_address, "serving /metrics, /healthz and /readyz");
    let endpoints = tokio::spawn(server::serve(listener, metrics.clone(), readiness.clone()));
    let timeline = numo::console_plugin::timeline::Source { config: api_server, projections: ctx.projections.clone() };
    let console_plugin = numo::console_plugin::start(args.console_plugin(), client.clone(), timeline).await;

    let outcome = match lease_namespace {
        Some(namespace) => {
            let config = LeaderConfig::new(&args.lease_name, namespace, leader::default_identity());
            let lead = || numo::controllers::run(ctx);
            leader::run_as_leader(client, &config, &readiness, &metrics, lead, shutdown_signal())
                .await
                .map_err(anyhow::Error::from)
        }
        None => {
            metrics.set_leader(true);
            tokio::select! {
                () = numo::controllers::run(ctx) => Ok(()),
                () = shutdown_signal() => Ok(()),
            }
        }
    };
    endpoints.abort();
    if let Some(console_plugin) = console_plugin {
        console_plugin.abort();
    }
    outcome
}

/// Resolves on SIGTERM (how Kubernetes stops a pod) or Ctrl-C.
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("interrupted; shutting down"),
        () = terminate => tracing::info!("terminated; shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("numo").chain(args.iter().copied()))
    }

    #[test]
    fn run_has_safe_defaults() {
        let Ok(Cli { command: Command::Run(args) }) = parse(&["run"]) else { panic!("`numo run` must parse") };
        assert!(args.leader_election);
        assert_eq!(args.lease_name, "numo-leader");
        assert_eq!(args.metrics_address.to_string(), "0.0.0.0:8080");
        assert!(args.operator_config().allowed_job_namespaces.is_empty());
        let plugin = args.console_plugin();
        assert_eq!(plugin.address.to_string(), "0.0.0.0:9443");
        assert_eq!(plugin.cert_dir, None, "the plugin is served only where a certificate is given");
    }

    #[test]
    fn the_console_plugin_is_served_from_the_certificate_folder_given() {
        let parsed = parse(&[
            "run",
            "--console-plugin-cert-dir",
            "/var/run/secrets/numo-console-plugin",
            "--console-plugin-address",
            "127.0.0.1:19443",
            "--pod-namespace",
            "numo-system",
        ]);
        let Ok(Cli { command: Command::Run(args) }) = parsed else { panic!("flags must parse") };
        let plugin = args.console_plugin();
        assert_eq!(plugin.cert_dir, Some(PathBuf::from("/var/run/secrets/numo-console-plugin")));
        assert_eq!(plugin.address.to_string(), "127.0.0.1:19443");
        assert_eq!(plugin.namespace.as_deref(), Some("numo-system"));
        assert_eq!(plugin.assets_dir, None);
    }

    #[test]
    fn flags_parse_lists_and_switches() {
        let parsed = parse(&[
            "run",
            "--allowed-job-namespaces",
            "ops, batch",
            "--leader-election=false",
            "--log-format",
            "json",
        ]);
        let Ok(Cli { command: Command::Run(args) }) = parsed else { panic!("flags must parse") };
        assert_eq!(args.operator_config().allowed_job_namespaces, ["ops", "batch"]);
        assert!(!args.leader_election);
        assert_eq!(args.log_format, LogFormat::Json);
        assert_eq!(args.lease_namespace().ok(), Some(None), "no Lease without leader election");
    }

    #[test]
    fn the_service_account_is_given_or_made_of_the_pods_namespace_and_account() {
        let run = |args: &[&str]| match parse(args) {
            Ok(Cli { command: Command::Run(args) }) => args,
            other => panic!("{args:?} must parse: {other:?}"),
        };
        let derived = run(&["run", "--pod-namespace", "numo-system", "--service-account-name", "numo-operator"]);
        assert_eq!(derived.service_account().as_deref(), Some("system:serviceaccount:numo-system:numo-operator"));
        let given = run(&["run", "--service-account", "system:serviceaccount:a:b", "--pod-namespace", "numo-system"]);
        assert_eq!(given.service_account().as_deref(), Some("system:serviceaccount:a:b"));
        assert_eq!(run(&["run", "--pod-namespace", "numo-system"]).service_account(), None);
        assert_eq!(run(&["run", "--service-account", " ", "--service-account-name", "x"]).service_account(), None);
    }

    #[test]
    fn plan_asks_the_alertmanager_given() {
        let parsed = parse(&["plan", "ops/nightly", "--alertmanager-url", "https://am.apps.example"]);
        let Ok(Cli { command: Command::Plan(args) }) = parsed else {
            panic!("`numo plan --alertmanager-url` must parse")
        };
        assert_eq!(args.alertmanager_url.as_deref(), Some("https://am.apps.example"));
        let parsed =
            parse(&["plan", "ops/nightly", "--alertmanager-ca-file", "ca.crt", "--alertmanager-token-file", "t"]);
        let Ok(Cli { command: Command::Plan(args) }) = parsed else { panic!("the CA and token files must parse") };
        assert_eq!(args.alertmanager_ca_file, Some(PathBuf::from("ca.crt")));
        assert_eq!(args.alertmanager_token_file, Some(PathBuf::from("t")));
    }

    #[test]
    fn crds_takes_an_output_directory() {
        let Ok(Cli { command: Command::Crds { output_dir } }) = parse(&["crds", "--output-dir", "config/crd"]) else {
            panic!("`numo crds --output-dir` must parse")
        };
        assert_eq!(output_dir, Some(PathBuf::from("config/crd")));
    }
}
