//! Logging: structured `tracing` output as text (for people) or JSON (for log pipelines). `RUST_LOG` overrides the
//! default filter (`info` for numo, `warn` for everything else).

use tracing_subscriber::{fmt, prelude::*, EnvFilter};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter used when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "warn,numo=info";

/// Installs the global subscriber. Fails if one is already installed.
pub fn init(format: LogFormat) -> anyhow::Result<()> {
    let filter = EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(DEFAULT_FILTER))?;
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => registry.with(fmt::layer()).try_init()?,
        LogFormat::Json => registry.with(fmt::layer().json().flatten_event(true).with_current_span(true)).try_init()?,
    }
    Ok(())
}
