//! The three controllers. Each reconcile is a pipeline: observe → plan (pure) → apply → status.

pub mod malformed;
pub mod mutex_rule;
pub mod mutex_target;
pub mod run_config;

use crate::admission_policy::{self, PolicyStatus};
use crate::Context;

/// Runs all controllers until the process shuts down, and meanwhile puts numo's ValidatingAdmissionPolicy in place
/// and keeps it there (without holding up the controllers), recording whether it is in force in `ctx.policy`.
pub async fn run(ctx: Context) {
    tokio::join!(
        keep_policy_in_place(ctx.clone()),
        mutex_rule::run(ctx.clone()),
        mutex_target::run(ctx.clone()),
        run_config::run(ctx)
    );
}

/// Applies the policy as numo's own user and puts it back whenever someone deletes or changes it
/// ([`admission_policy::watch`]); without a known user, records that there is no policy.
async fn keep_policy_in_place(ctx: Context) {
    match ctx.service_account.clone() {
        Some(username) => {
            admission_policy::watch::keep_in_place(ctx.client.clone(), username, ctx.policy.clone()).await
        }
        None => {
            let status = admission_policy::unknown_service_account();
            if let PolicyStatus::Unavailable(why) = &status {
                let policy = admission_policy::NAME;
                tracing::warn!(policy, reason = %why, "ValidatingAdmissionPolicy not in force");
            }
            ctx.policy.set(status);
        }
    }
}
