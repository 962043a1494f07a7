//! The three controllers. Each reconcile is a pipeline: observe → plan (pure) → apply → status.

pub mod malformed;
pub mod mutex_rule;
pub mod mutex_target;
pub mod run_config;

use crate::Context;

/// Runs all controllers until the process shuts down.
pub async fn run(ctx: Context) {
    tokio::join!(mutex_rule::run(ctx.clone()), mutex_target::run(ctx.clone()), run_config::run(ctx));
}
