//! The three controllers. Each reconcile is a pipeline: observe → plan (pure) → apply → status.

pub mod malformed;
pub mod mutex_rule;
pub mod mutex_target;
pub mod run_config;

use crate::admission_policy::{self, PolicyStatus};
use crate::Context;

/// Runs all controllers until the process shuts down, and meanwhile puts numo's ValidatingAdmissionPolicy in place
/// once (without holding up the controllers), recording the outcome in `ctx.policy`.
pub async fn run(ctx: Context) {
    tokio::join!(
        put_policy_in_place(ctx.clone()),
        mutex_rule::run(ctx.clone()),
        mutex_target::run(ctx.clone()),
        run_config::run(ctx)
    );
}

/// Applies the policy as numo's own user, records whether it is in force and logs it once.
async fn put_policy_in_place(ctx: Context) {
    let status = match ctx.service_account.as_deref() {
        Some(username) => admission_policy::ensure(&ctx.client, username).await,
        None => admission_policy::unknown_service_account(),
    };
    match &status {
        PolicyStatus::InForce => tracing::info!(
            policy = admission_policy::NAME,
            "ValidatingAdmissionPolicy in force: the API server refuses other hands' writes to what numo holds"
        ),
        PolicyStatus::Unavailable(why) => tracing::warn!(
            policy = admission_policy::NAME,
            reason = %why,
            "ValidatingAdmissionPolicy not in force"
        ),
    }
    ctx.policy.set(status);
}
