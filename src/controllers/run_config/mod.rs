//! The MutexRunConfig controller: the whole gated rollout. `observe` reads the cluster into a [`snapshot::Snapshot`],
//! `plan` (pure) decides, `apply` carries the intents out idempotently, `status` writes what happened.

pub mod membership;
pub mod plan;
pub mod snapshot;
pub mod version;

use crate::Context;

/// Runs the controller until the process shuts down.
pub async fn run(_ctx: Context) {}
