//! Asking the apiserver: a server-side dry-run create of each Job a rule would run, so that the apiserver's own
//! validation and admission speak. Nothing is stored.

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};

use super::plan::{DryRun, DryRunOutcome};
use crate::Result;

/// The field manager named in the dry-run requests.
const FIELD_MANAGER: &str = "numo-mutex-rule-dry-run";

/// Sends the dry runs in order and stops at the first rejection. Answers that say something about the Job
/// (invalid, forbidden, namespace missing) are outcomes; anything else (the apiserver unreachable, a timeout) is a
/// transient error for the caller to retry.
pub async fn dry_run(client: &kube::Client, runs: &[DryRun]) -> Result<Vec<(&'static str, DryRunOutcome)>> {
    let mut outcomes = Vec::with_capacity(runs.len());
    for run in runs {
        let outcome = dry_run_one(client, &run.job).await?;
        let rejected = matches!(outcome, DryRunOutcome::Rejected(_));
        outcomes.push((run.field, outcome));
        if rejected {
            break;
        }
    }
    Ok(outcomes)
}

async fn dry_run_one(client: &kube::Client, job: &Job) -> Result<DryRunOutcome> {
    let namespace = job.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<Job> = Api::namespaced(client.clone(), namespace);
    let params = PostParams { dry_run: true, field_manager: Some(FIELD_MANAGER.to_string()) };
    match api.create(&params, job).await {
        Ok(_) => Ok(DryRunOutcome::Accepted),
        Err(kube::Error::Api(status)) => match status.code {
            // A Job of that name exists: validation and admission already passed.
            409 if status.reason == "AlreadyExists" => Ok(DryRunOutcome::Accepted),
            400 | 403 | 404 | 409 | 422 => Ok(DryRunOutcome::Rejected(status.message.clone())),
            _ => Err(kube::Error::Api(status).into()),
        },
        Err(error) => Err(error.into()),
    }
}
