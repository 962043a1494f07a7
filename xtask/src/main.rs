#![forbid(unsafe_code)]
//! `cargo xtask`: numo's project tasks.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// numo's project tasks.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/.
    Bundle {
        /// Change nothing; fail when the committed bundle differs from what config/ generates.
        #[arg(long)]
        check: bool,
        /// Install this operator image instead of config/manager's (e.g. a release image by digest, which also
        /// marks the bundle as ready for disconnected clusters). Tagged images must carry the crate version.
        #[arg(long, value_name = "IMAGE")]
        image: Option<String>,
    },
    /// Fail when modules of src/ or simulator/src reach one another (an import circle).
    Circles,
    /// Write the console plugin's names of numo's API (console-plugin/src/api-names.ts) from src/api.
    PluginNames {
        /// Change nothing; fail when the committed file differs from what src/api generates.
        #[arg(long)]
        check: bool,
    },
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let root = xtask::repo_root();
    match cli.task {
        Task::Circles => {
            let mut found = false;
            for src in xtask::circles::CRATES {
                for circle in xtask::circles::circles(&xtask::circles::graph(&root.join(src))?) {
                    eprintln!("{src}: these modules reach one another: {}", circle.join(", "));
                    found = true;
                }
            }
            if found {
                return Ok(ExitCode::FAILURE);
            }
            println!("no import circle in {}", xtask::circles::CRATES.join(" or "));
            Ok(ExitCode::SUCCESS)
        }
        Task::Bundle { check, image } => {
            let bundle = xtask::bundle::generate_with(&root, &xtask::bundle::Options { image })?;
            if check {
                let drift = bundle.drift(&root)?;
                if drift.is_empty() {
                    println!("bundle is up to date ({} files)", bundle.files.len());
                    return Ok(ExitCode::SUCCESS);
                }
                for d in &drift {
                    eprintln!("{d}");
                }
                eprintln!("the bundle is out of date with config/: run `cargo xtask bundle` and commit the result");
                return Ok(ExitCode::FAILURE);
            }
            let changed = bundle.write(&root)?;
            for change in &changed {
                match change {
                    xtask::bundle::Drift::Stale(path) => println!("removed {}", path.display()),
                    xtask::bundle::Drift::Missing(path) | xtask::bundle::Drift::Changed(path) => {
                        println!("wrote {}", path.display())
                    }
                }
            }
            println!("bundle: {} files, {} changed", bundle.files.len(), changed.len());
            Ok(ExitCode::SUCCESS)
        }
        Task::PluginNames { check: true } => match xtask::plugin_names::drift(&root)? {
            None => {
                println!("{} is up to date", xtask::plugin_names::PATH);
                Ok(ExitCode::SUCCESS)
            }
            Some(drift) => {
                eprintln!("{drift}: run `cargo xtask plugin-names` and commit the result");
                Ok(ExitCode::FAILURE)
            }
        },
        Task::PluginNames { check: false } => {
            let changed = xtask::plugin_names::write(&root)?;
            println!("{} {}", if changed { "wrote" } else { "unchanged:" }, xtask::plugin_names::PATH);
            Ok(ExitCode::SUCCESS)
        }
    }
}
