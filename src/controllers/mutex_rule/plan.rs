//! What a rule's status should say, decided purely from the rule, the operator's allow-list, the ServiceAccounts'
//! opt-ins and the apiserver's verdict on the dry-run Jobs. Checks run in this order and the first failure wins:
//! job namespace, `jobSpec`, `cleanUpJobSpec`, the ServiceAccounts' opt-in ([`super::access`]), then the dry runs
//! ([`super::renderings`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::access::{self, RunAs};
use super::renderings::{self, DryRun};
use super::schema;
use crate::api::MutexRule;
use crate::jobs::JobPhase;
use crate::{Error, OperatorConfig};

pub use super::verdict::{Reason, Verdict, CLEANUP_FIELD, JOB_SPEC_FIELD, VALID_CONFIG};

/// What remains to ask the apiserver once the local checks passed.
#[derive(Clone, Debug)]
pub struct Remote {
    /// The ServiceAccounts whose opt-in must be read (the own namespace's `default` needs none).
    pub accounts: Vec<RunAs>,
    /// The Jobs to send as dry runs, the default rendering first.
    pub runs: Vec<DryRun>,
}

/// The next step after the local checks.
#[derive(Clone, Debug)]
pub enum Step {
    /// A local check failed; nothing is sent to the apiserver.
    Invalid(Verdict),
    /// The local checks passed; the ServiceAccounts are read, then the Jobs go to the apiserver as dry runs.
    Remote(Remote),
}

/// Runs the local checks (job namespace, both templates) and renders the dry-run Jobs.
pub fn check(rule: &MutexRule, config: &OperatorConfig) -> Result<Step, Error> {
    let namespace = rule.metadata.namespace.as_deref().ok_or(Error::MissingField("metadata.namespace"))?;
    rule.metadata.name.as_deref().ok_or(Error::MissingField("metadata.name"))?;
    let job_namespace = rule.job_namespace().unwrap_or(namespace);
    if !config.job_namespace_allowed(namespace, job_namespace) {
        return Ok(Step::Invalid(Verdict::invalid(
            Reason::JobNamespaceNotAllowed,
            format!(
                "spec.jobNamespace: Jobs may run in the rule's own namespace {namespace:?}, not in \
                 {job_namespace:?}; to allow it, add {job_namespace:?} to the operator's --allowed-job-namespaces \
                 flag (env NUMO_ALLOWED_JOB_NAMESPACES)"
            ),
        )));
    }
    let templates = std::iter::once((JOB_SPEC_FIELD, &rule.spec.job_spec, Reason::InvalidJobSpec, JobPhase::Gate))
        .chain(
            rule.spec
                .clean_up_job_spec
                .as_ref()
                .map(|spec| (CLEANUP_FIELD, spec, Reason::InvalidCleanUpJobSpec, JobPhase::Cleanup)),
        );
    let mut runs = Vec::new();
    for (field, spec, reason, phase) in templates {
        if let Err(message) = schema::check(field, spec) {
            return Ok(Step::Invalid(Verdict::invalid(reason, message)));
        }
        match renderings::dry_runs(rule, job_namespace, field, spec, phase) {
            Ok(jobs) => runs.extend(jobs),
            Err(error) => return Ok(Step::Invalid(Verdict::invalid(reason, format!("{field}: {error}")))),
        }
    }
    let mut accounts: Vec<RunAs> = Vec::new();
    for account in access::run_as(rule) {
        let known = accounts.iter().any(|a| a.namespace == account.namespace && a.name == account.name);
        if account.needs_opt_in(namespace) && !known {
            accounts.push(account);
        }
    }
    Ok(Step::Remote(Remote { accounts, runs: renderings::in_sending_order(runs) }))
}

/// The Event to publish when the condition changes: `(warning, reason, note)`. Becoming valid, or valid for other
/// run configs (the reason), is a Normal Event; becoming invalid, or invalid for another reason, a Warning. No Event
/// when nothing a person reads changed.
pub fn event(previous: Option<&Condition>, verdict: &Verdict) -> Option<(bool, &'static str, String)> {
    let was_true = previous.is_some_and(|c| c.status == "True");
    if verdict.is_valid() {
        let same = was_true && previous.is_some_and(|c| c.reason == verdict.reason.as_str());
        return (!same).then(|| (false, verdict.reason.as_str(), verdict.message.clone()));
    }
    let same = previous.is_some_and(|c| c.status == "False" && c.message == verdict.message);
    (!same).then(|| (true, verdict.reason.as_str(), verdict.message.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{MutexRuleSpec, RuleType};
    use serde_json::json;

    fn rule(job_namespace: Option<&str>, job_spec: serde_json::Value, cleanup: Option<serde_json::Value>) -> MutexRule {
        let mut rule = MutexRule::new(
            "k8s-example",
            MutexRuleSpec {
                job_name: "example".into(),
                job_namespace: job_namespace.map(str::to_string),
                job_spec,
                clean_up_job_spec: cleanup,
                rule_type: RuleType::Kubernetes,
            },
        );
        rule.metadata.namespace = Some("team-a".into());
        rule
    }

    fn good_spec() -> serde_json::Value {
        json!({
            "selector": {},
            "template": { "spec": {
                "containers": [{ "name": "mutex", "image": "ubi9/toolbox", "command": ["sleep"], "args": ["30"] }],
                "restartPolicy": "Never"
            }}
        })
    }

    fn invalid(step: Step) -> Option<Verdict> {
        match step {
            Step::Invalid(verdict) => Some(verdict),
            Step::Remote(_) => None,
        }
    }

    #[test]
    fn a_foreign_job_namespace_needs_the_allow_list() {
        let config = OperatorConfig::default();
        let verdict = check(&rule(Some("kube-system"), good_spec(), None), &config).ok().and_then(invalid);
        let Some(verdict) = verdict else { panic!("kube-system must be refused") };
        assert_eq!(verdict.reason, Reason::JobNamespaceNotAllowed);
        assert!(verdict.message.contains("--allowed-job-namespaces"), "{}", verdict.message);
        assert!(verdict.message.contains("NUMO_ALLOWED_JOB_NAMESPACES"), "{}", verdict.message);

        let config = OperatorConfig { allowed_job_namespaces: vec!["kube-system".into()], ..Default::default() };
        assert!(check(&rule(Some("kube-system"), good_spec(), None), &config).ok().and_then(invalid).is_none());
        assert!(check(&rule(None, good_spec(), None), &OperatorConfig::default()).ok().and_then(invalid).is_none());
    }

    #[test]
    fn the_first_bad_template_decides_the_reason() {
        let config = OperatorConfig::default();
        let bad = json!({ "template": { "spec": { "containers": [{ "name": "x", "image": 1 }], "restartPolicy": "Never" } } });
        let verdict = check(&rule(None, bad.clone(), Some(bad.clone())), &config).ok().and_then(invalid);
        assert_eq!(verdict.map(|v| v.reason), Some(Reason::InvalidJobSpec));
        let verdict = check(&rule(None, good_spec(), Some(bad)), &config).ok().and_then(invalid);
        let Some(verdict) = verdict else { panic!("the cleanup spec is invalid") };
        assert_eq!(verdict.reason, Reason::InvalidCleanUpJobSpec);
        assert!(
            verdict.message.starts_with("spec.cleanUpJobSpec.template.spec.containers[0].image"),
            "{}",
            verdict.message
        );
    }

    #[test]
    fn dry_runs_are_the_jobs_a_run_config_would_create() {
        let config = OperatorConfig::default();
        let Ok(Step::Remote(remote)) = check(&rule(None, good_spec(), Some(good_spec())), &config) else {
            panic!("a valid rule goes to the dry run")
        };
        let order: Vec<_> = remote.runs.iter().map(|r| (r.field, r.avoid_target_node)).collect();
        assert_eq!(
            order,
            [(JOB_SPEC_FIELD, true), (CLEANUP_FIELD, true), (JOB_SPEC_FIELD, false), (CLEANUP_FIELD, false)],
            "both renderings of both templates, the default first"
        );
        let job = &remote.runs[0].job;
        assert_eq!(job.metadata.name.as_deref(), Some("example-dry-run"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("team-a"));
        let spec = job.spec.as_ref();
        assert!(spec.is_some_and(|s| s.selector.is_none()), "an empty selector is dropped");
        let env =
            spec.and_then(|s| s.template.spec.as_ref()).and_then(|p| p.containers[0].env.clone()).unwrap_or_default();
        assert!(env.iter().any(|e| e.name == "NODE_NAME"), "the env numo adds is part of the dry run");
        assert!(remote.accounts.is_empty(), "the own namespace's default ServiceAccount needs no opt-in");
    }

    #[test]
    fn service_accounts_that_need_an_opt_in_are_looked_up_once() {
        let config = OperatorConfig { allowed_job_namespaces: vec!["ops".into()], ..Default::default() };
        let mut spec = good_spec();
        spec["template"]["spec"]["serviceAccountName"] = json!("ops-admin");
        let Ok(Step::Remote(remote)) = check(&rule(Some("ops"), spec.clone(), Some(spec)), &config) else {
            panic!("the local checks pass")
        };
        let accounts: Vec<_> = remote.accounts.iter().map(|a| (a.namespace.as_str(), a.name.as_str())).collect();
        assert_eq!(accounts, [("ops", "ops-admin")]);
        let Ok(Step::Remote(remote)) = check(&rule(Some("ops"), good_spec(), None), &config) else {
            panic!("the local checks pass")
        };
        let accounts: Vec<_> = remote.accounts.iter().map(|a| (a.namespace.as_str(), a.name.as_str())).collect();
        assert_eq!(accounts, [("ops", "default")], "another namespace's default ServiceAccount needs one too");
    }

    fn condition(status: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: VALID_CONFIG.into(),
            status: status.into(),
            message: message.into(),
            reason: reason.into(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        }
    }

    #[test]
    fn events_mark_changes_a_person_would_notice() {
        let valid = Verdict::invalid(Reason::Valid, "ok".into());
        let bad = Verdict::invalid(Reason::InvalidJobSpec, "bad".into());
        let narrower = Verdict::invalid(Reason::AvoidTargetNodeRequired, "only with".into());
        assert_eq!(event(None, &valid).map(|e| e.0), Some(false));
        assert_eq!(event(Some(&condition("True", "Valid", "ok")), &valid), None);
        assert_eq!(event(Some(&condition("False", "InvalidJobSpec", "bad")), &valid).map(|e| e.0), Some(false));
        assert_eq!(event(Some(&condition("True", "Valid", "ok")), &bad).map(|e| e.0), Some(true));
        assert_eq!(event(Some(&condition("False", "InvalidJobSpec", "bad")), &bad), None);
        assert_eq!(event(Some(&condition("False", "x", "other")), &bad).map(|e| e.1), Some("InvalidJobSpec"));
        let to_narrower = event(Some(&condition("True", "Valid", "ok")), &narrower);
        assert_eq!(
            to_narrower.map(|e| (e.0, e.1)),
            Some((false, "AvoidTargetNodeRequired")),
            "usable by fewer run configs"
        );
        assert_eq!(event(Some(&condition("True", "AvoidTargetNodeRequired", "only with")), &narrower), None);
    }
}
