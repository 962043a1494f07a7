//! Prometheus's promtool, built from the Go module proxy by `hack/build-tools.sh prometheus`: `promtool check rules`
//! and `promtool test rules` of numo's alert rules.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};

/// Environment variable naming the promtool binary (`hack/test.sh` sets it).
pub const BINARY_ENV: &str = "NUMO_PROMTOOL_BIN";

/// The binary: `$NUMO_PROMTOOL_BIN`, else the newest build in numo's cache (`prometheus-*/bin/promtool`).
pub fn binary() -> anyhow::Result<PathBuf> {
    match crate::lock::tool(BINARY_ENV, "prometheus-", &["bin/promtool"]) {
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
