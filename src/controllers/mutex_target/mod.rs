//! The mutex_target controller.

use crate::Context;

/// Runs the controller until the process shuts down.
pub async fn run(_ctx: Context) {}
