//! Prometheus's promtool, built from the Go module proxy by `hack/build-tools.sh prometheus`: `promtool check rules`
//! and `promtool test rules` of numo's alert rules.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

/// Environment variable naming the promtool binary (`hack/test.sh` sets it).
pub const BINARY_ENV: &str = "NUMO_PROMTOOL_BIN";

/// The binary: `$NUMO_PROMTOOL_BIN`, else the newest build in numo's cache (`prometheus-*/bin/promtool`).
pub fn binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os(BINARY_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let cache = crate::lock::cache_dir();
    let mut found: Vec<PathBuf> =
        std::fs::read_dir(&cache).map(|dir| dir.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    found.retain(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("prometheus-")));
    found.sort();
    match found.iter().rev().map(|dir| dir.join("bin/promtool")).find(|p| p.is_file()) {
        Some(binary) => Ok(binary),
        None => bail!("no promtool binary: set {BINARY_ENV}, or build it with `hack/build-tools.sh prometheus`"),
    }
}

/// What a promtool command printed, and whether it succeeded.
#[derive(Debug)]
pub struct Outcome {
    /// Whether promtool exited 0.
    pub success: bool,
    /// Its standard output and standard error, one after the other.
    pub output: String,
}

/// Runs `promtool <args>` in `dir`.
pub fn run(dir: &Path, args: &[&str]) -> anyhow::Result<Outcome> {
    let binary = binary()?;
    let out = Command::new(&binary)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    let output = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Ok(Outcome { success: out.status.success(), output })
}
