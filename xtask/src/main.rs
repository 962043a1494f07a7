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
    /// Write the parts of docs/ and of the NumoRolloutHeld alert that describe numo's checks, from src/api and the
    /// health checks.
    Docs {
        /// Change nothing; fail when the committed parts differ from what the code generates.
        #[arg(long)]
        check: bool,
    },
    /// Write the console plugin's names of numo's API (console-plugin/src/api-names.ts) from src/api.
    PluginNames {
        /// Change nothing; fail when the committed file differs from what src/api generates.
        #[arg(long)]
        check: bool,
    },
    /// Write the console plugin's types of numo's kinds (console-plugin/src/api-types.ts) from their CRD schemas.
    PluginTypes {
        /// Change nothing; fail when the committed file differs from what src/api generates.
        #[arg(long)]
        check: bool,
    },
    /// Write the console plugin's types of the timeline numo serves it (console-plugin/src/timeline-types.ts).
    PluginTimeline {
        /// Change nothing; fail when the committed file differs from what src/timeline generates.
        #[arg(long)]
        check: bool,
    },
    /// Write numo's ClusterRole (config/rbac/role.yaml) from src/access.rs.
    Rbac {
        /// Change nothing; fail when the committed file differs from what src/access.rs generates.
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
        Task::PluginNames { check: true } => {
            Ok(report_drift(xtask::plugin_names::PATH, "plugin-names", xtask::plugin_names::drift(&root)?))
        }
        Task::PluginNames { check: false } => {
            report_write(xtask::plugin_names::PATH, xtask::plugin_names::write(&root)?);
            Ok(ExitCode::SUCCESS)
        }
        Task::PluginTypes { check: true } => {
            Ok(report_drift(xtask::plugin_types::PATH, "plugin-types", xtask::plugin_types::drift(&root)?))
        }
        Task::PluginTypes { check: false } => {
            report_write(xtask::plugin_types::PATH, xtask::plugin_types::write(&root)?);
            Ok(ExitCode::SUCCESS)
        }
        Task::Docs { check: true } => {
            let drift = xtask::docs::drift(&root)?;
            for d in &drift {
                eprintln!("{d}: run `cargo xtask docs` and commit the result");
            }
            if drift.is_empty() {
                println!("the checks' documentation is up to date");
                return Ok(ExitCode::SUCCESS);
            }
            Ok(ExitCode::FAILURE)
        }
        Task::Docs { check: false } => {
            for rel in xtask::docs::write(&root)? {
                println!("wrote {rel}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Task::PluginTimeline { check: true } => {
            Ok(report_drift(xtask::plugin_timeline::PATH, "plugin-timeline", xtask::plugin_timeline::drift(&root)?))
        }
        Task::PluginTimeline { check: false } => {
            report_write(xtask::plugin_timeline::PATH, xtask::plugin_timeline::write(&root)?);
            Ok(ExitCode::SUCCESS)
        }
        Task::Rbac { check: true } => Ok(report_drift(xtask::rbac::PATH, "rbac", xtask::rbac::drift(&root))),
        Task::Rbac { check: false } => {
            report_write(xtask::rbac::PATH, xtask::rbac::write(&root)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Says whether the generated file at `path` is up to date, and how to bring it up to date (`cargo xtask task`).
fn report_drift(path: &str, task: &str, drift: Option<String>) -> ExitCode {
    match drift {
        None => {
            println!("{path} is up to date");
            ExitCode::SUCCESS
        }
        Some(drift) => {
            eprintln!("{drift}: run `cargo xtask {task}` and commit the result");
            ExitCode::FAILURE
        }
    }
}

/// Says whether the generated file at `path` was written.
fn report_write(path: &str, changed: bool) {
    println!("{} {path}", if changed { "wrote" } else { "unchanged:" });
}
