//! Asking the apiserver: the annotations of the ServiceAccounts a rule's Jobs would run as, and a server-side
//! dry-run create of each Job a rule would run, so that the apiserver's own validation and admission speak. Nothing
//! is stored.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};

use super::access::{Found, RunAs};
use super::renderings::{Answer, DryRun, DryRunOutcome};
use crate::Result;

/// The field manager named in the dry-run requests.
const FIELD_MANAGER: &str = "numo-mutex-rule-dry-run";

/// Reads the metadata of each ServiceAccount (`None` for one that does not exist).
pub async fn service_accounts(client: &kube::Client, accounts: &[RunAs]) -> Result<Vec<(RunAs, Found)>> {
    let mut found = Vec::with_capacity(accounts.len());
    for account in accounts {
        let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &account.namespace);
        let meta = api.get_metadata_opt(&account.name).await?;
        found.push((account.clone(), meta.map(|m| m.metadata.annotations.unwrap_or_default())));
    }
    Ok(found)
}

/// Sends the dry runs in order; after a rejection, the remaining Jobs of the same rendering are not sent (the
/// rendering is rejected already). Answers that say something about the Job (invalid, forbidden, namespace
/// missing) are outcomes; anything else (the apiserver unreachable, a timeout) is a transient error for the caller
/// to retry.
pub async fn dry_run(client: &kube::Client, runs: &[DryRun]) -> Result<Vec<Answer>> {
    let mut answers: Vec<Answer> = Vec::with_capacity(runs.len());
    for run in runs {
        let rejected = answers
            .iter()
            .any(|a| a.avoid_target_node == run.avoid_target_node && matches!(a.outcome, DryRunOutcome::Rejected(_)));
        if rejected {
            continue;
        }
        let outcome = dry_run_one(client, &run.job).await?;
        answers.push(Answer { field: run.field, avoid_target_node: run.avoid_target_node, outcome });
    }
    Ok(answers)
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
