#![forbid(unsafe_code)]
//! `numo-sim`: the OpenShift simulator's command line. For now only `install-crds`; the simulator itself is being
//! written in the library.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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
    /// is Established. Uses $KUBECONFIG or the default kubeconfig.
    InstallCrds {
        /// Folder of CRD YAML files, e.g. ../shared/openshift-crds.
        #[arg(long)]
        from: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Commands::InstallCrds { from } => {
            let client = kube::Client::try_default().await?;
            for name in numo_simulator::crds::install_openshift_crds(&client, from.as_deref()).await? {
                println!("{name}");
            }
        }
    }
    Ok(())
}
