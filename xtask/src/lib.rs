#![forbid(unsafe_code)]
//! numo's project tasks, run as `cargo xtask <task>` (an alias in `.cargo/config.toml`).
//!
//! `cargo xtask bundle` generates the OLM bundle (`bundle/`, `bundle.Dockerfile`) from `config/`;
//! `cargo xtask bundle --check` fails when the committed bundle differs from what `config/` generates.
//! `cargo xtask plugin-names [--check]` writes (or checks) the console plugin's copy of numo's API names, and
//! `cargo xtask plugin-types [--check]` its TypeScript types of numo's kinds, from the CRD schemas, and
//! `cargo xtask plugin-timeline [--check]` those of the timeline numo serves it.
//! `cargo xtask rbac [--check]` writes (or checks) numo's ClusterRole from `numo::access::GRANTS`.
//! `cargo xtask docs [--check]` writes (or checks) the documentation's parts that describe numo's checks.

pub mod bundle;
pub mod circles;
pub mod docs;
pub mod generated;
pub mod manifests;
pub mod plugin_names;
pub mod plugin_timeline;
pub mod plugin_types;
pub mod rbac;
pub mod rust_names;
pub mod yaml;

use std::path::PathBuf;

/// The repository root (the parent of the xtask crate).
pub fn repo_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(PathBuf::from).unwrap_or(manifest_dir)
}

/// The version of the workspace, and so of the operator, its image and its bundle.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
