//! What a rule's status should say, decided purely from the rule, the operator's allow-list and the apiserver's
//! verdict on the dry-run Jobs. Checks run in this order and the first failure wins: job namespace, `jobSpec`,
//! `cleanUpJobSpec`, then the dry runs.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::schema;
use crate::api::MutexRule;
use crate::conditions::Desired;
use crate::jobs::{self, JobKey, JobPhase, JobTemplate};
use crate::{Error, OperatorConfig};

/// The condition type of a rule's status.
pub const VALID_CONFIG: &str = "ValidConfig";
/// Where the spec's gate Job template lives.
pub const JOB_SPEC_FIELD: &str = "spec.jobSpec";
/// Where the spec's cleanup Job template lives.
pub const CLEANUP_FIELD: &str = "spec.cleanUpJobSpec";
/// Longest apiserver message quoted in a status.
const MAX_APISERVER_MESSAGE: usize = 400;

/// Why a rule is (in)valid: the `ValidConfig` reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Every check passed.
    Valid,
    /// `spec.jobSpec` is not a usable JobSpec.
    InvalidJobSpec,
    /// `spec.cleanUpJobSpec` is not a usable JobSpec.
    InvalidCleanUpJobSpec,
    /// `spec.jobNamespace` is neither the rule's namespace nor on the operator's allow-list.
    JobNamespaceNotAllowed,
    /// The apiserver refused the dry-run create of a Job.
    DryRunRejected,
    /// The object does not parse into numo's types.
    Malformed,
}

impl Reason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Valid => "Valid",
            Reason::InvalidJobSpec => "InvalidJobSpec",
            Reason::InvalidCleanUpJobSpec => "InvalidCleanUpJobSpec",
            Reason::JobNamespaceNotAllowed => "JobNamespaceNotAllowed",
            Reason::DryRunRejected => "DryRunRejected",
            Reason::Malformed => "Malformed",
        }
    }
}

/// The outcome of validating a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Valid, or why not.
    pub reason: Reason,
    /// The sentence for the condition and the Event.
    pub message: String,
}

impl Verdict {
    fn invalid(reason: Reason, message: String) -> Self {
        Self { reason, message }
    }

    /// Whether the rule is valid.
    pub fn is_valid(&self) -> bool {
        self.reason == Reason::Valid
    }

    /// The `ValidConfig` condition saying this.
    pub fn condition(&self) -> Desired {
        if self.is_valid() {
            Desired::true_(VALID_CONFIG, self.reason.as_str(), self.message.clone())
        } else {
            Desired::false_(VALID_CONFIG, self.reason.as_str(), self.message.clone())
        }
    }
}

/// A Job to create with `dryRun=All`, and the spec field it comes from.
#[derive(Clone, Debug)]
pub struct DryRun {
    /// `spec.jobSpec` or `spec.cleanUpJobSpec`.
    pub field: &'static str,
    /// The Job, as a run config would create it, named `<jobName>-dry-run`.
    pub job: Job,
}

/// The next step after the local checks.
#[derive(Clone, Debug)]
pub enum Step {
    /// A local check failed; nothing is sent to the apiserver.
    Invalid(Verdict),
    /// The local checks passed; these Jobs go to the apiserver as dry runs.
    DryRun(Vec<DryRun>),
}

/// The apiserver's answer to one dry run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DryRunOutcome {
    /// The Job would be created.
    Accepted,
    /// The apiserver refused it, with its message.
    Rejected(String),
}

/// Runs the local checks (job namespace, both templates) and renders the dry-run Jobs.
pub fn check(rule: &MutexRule, config: &OperatorConfig) -> Result<Step, Error> {
    let namespace = rule.metadata.namespace.as_deref().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = rule.metadata.name.as_deref().ok_or(Error::MissingField("metadata.name"))?;
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
        match dry_run_job(rule, name, namespace, job_namespace, spec, phase) {
            Ok(job) => runs.push(DryRun { field, job }),
            Err(error) => return Ok(Step::Invalid(Verdict::invalid(reason, format!("{field}: {error}")))),
        }
    }
    Ok(Step::DryRun(runs))
}

/// The name of a rule's dry-run Job: `<jobName>-dry-run`, shortened to 63 characters if needed.
pub fn dry_run_name(job_name: &str) -> String {
    crate::labels::shorten(&format!("{job_name}-dry-run"), 63)
}

/// The Job a run config would create from `spec` (env, labels and anti-affinity included), named for the dry run.
fn dry_run_job(
    rule: &MutexRule,
    name: &str,
    namespace: &str,
    job_namespace: &str,
    spec: &serde_json::Value,
    phase: JobPhase,
) -> Result<Job, serde_json::Error> {
    let key = JobKey {
        run_config_namespace: namespace,
        run_config: "dry-run",
        node: "dry-run-node",
        target_version: "0.0.0",
        rule_namespace: namespace,
        rule: name,
        phase,
        attempt: 1,
    };
    let spec = schema::without_nulls(spec);
    let template = JobTemplate {
        prefix: &rule.spec.job_name,
        namespace: job_namespace,
        spec: &spec,
        owner: None,
        avoid_node: true,
    };
    let mut job = jobs::render(&key, &template)?;
    job.metadata.name = Some(dry_run_name(&rule.spec.job_name));
    Ok(job)
}

/// The verdict once the dry runs answered (in the order they were sent): the first rejection, else valid.
pub fn verdict(outcomes: &[(&'static str, DryRunOutcome)]) -> Verdict {
    for (field, outcome) in outcomes {
        if let DryRunOutcome::Rejected(message) = outcome {
            return Verdict::invalid(
                Reason::DryRunRejected,
                format!("the apiserver rejected the Job from {field} (dry run): {}", apiserver_message(field, message)),
            );
        }
    }
    let checked = outcomes.iter().map(|(field, _)| *field).collect::<Vec<_>>().join(" and ");
    Verdict { reason: Reason::Valid, message: format!("{checked} passed schema validation and a dry-run create") }
}

/// The apiserver's message in the rule's terms: the `Job.batch "x" is invalid:` preamble dropped, the Job's
/// `spec.` paths shown as the rule's field (`spec.template...` → `spec.jobSpec.template...`), trimmed.
pub fn apiserver_message(field: &str, message: &str) -> String {
    let body = match message.find(" is invalid: ") {
        Some(at) if message.starts_with("Job") => &message[at + " is invalid: ".len()..],
        _ => message,
    };
    let body = body.trim().trim_start_matches('[').trim_end_matches(']');
    let mut out = String::with_capacity(body.len() + 16);
    let mut previous: Option<char> = None;
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        let starts_path = previous.is_none_or(|p| matches!(p, ' ' | '[' | ',' | '(' | '"'));
        if starts_path && rest.starts_with("spec.") {
            out.push_str(field);
            out.push('.');
            rest = &rest["spec.".len()..];
            previous = Some('.');
            continue;
        }
        out.push(c);
        previous = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    crate::events::truncate(out, MAX_APISERVER_MESSAGE)
}

/// The Event to publish when the condition changes: `(warning, reason, note)`. Becoming valid is a Normal Event;
/// becoming invalid, or invalid for another reason, a Warning. No Event when nothing a person reads changed.
pub fn event(previous: Option<&Condition>, verdict: &Verdict) -> Option<(bool, &'static str, String)> {
    let was_true = previous.is_some_and(|c| c.status == "True");
    if verdict.is_valid() {
        return (!was_true).then(|| (false, verdict.reason.as_str(), verdict.message.clone()));
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
            Step::DryRun(_) => None,
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

        let config = OperatorConfig { allowed_job_namespaces: vec!["kube-system".into()] };
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
        let Ok(Step::DryRun(runs)) = check(&rule(None, good_spec(), Some(good_spec())), &config) else {
            panic!("a valid rule goes to the dry run")
        };
        assert_eq!(runs.iter().map(|r| r.field).collect::<Vec<_>>(), [JOB_SPEC_FIELD, CLEANUP_FIELD]);
        let job = &runs[0].job;
        assert_eq!(job.metadata.name.as_deref(), Some("example-dry-run"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("team-a"));
        let spec = job.spec.as_ref();
        assert!(spec.is_some_and(|s| s.selector.is_none()), "an empty selector is dropped");
        let env =
            spec.and_then(|s| s.template.spec.as_ref()).and_then(|p| p.containers[0].env.clone()).unwrap_or_default();
        assert!(env.iter().any(|e| e.name == "NODE_NAME"), "the env numo adds is part of the dry run");
    }

    #[test]
    fn long_job_names_still_make_a_valid_dry_run_name() {
        let name = dry_run_name(&"j".repeat(63));
        assert!(name.len() <= 63, "{name}");
        assert_eq!(dry_run_name("example"), "example-dry-run");
    }

    #[test]
    fn apiserver_messages_speak_of_the_rules_fields() {
        let message = r#"Job.batch "example-dry-run" is invalid: [spec.template.spec.containers[0].image: Required value, spec.template.spec.restartPolicy: Unsupported value: "Always"]"#;
        assert_eq!(
            apiserver_message(JOB_SPEC_FIELD, message),
            r#"spec.jobSpec.template.spec.containers[0].image: Required value, spec.jobSpec.template.spec.restartPolicy: Unsupported value: "Always""#
        );
        assert_eq!(
            apiserver_message(CLEANUP_FIELD, r#"namespaces "nope" not found"#),
            r#"namespaces "nope" not found"#
        );
        assert!(apiserver_message(JOB_SPEC_FIELD, &"x".repeat(5000)).len() <= MAX_APISERVER_MESSAGE);
    }

    #[test]
    fn the_first_rejection_wins_and_acceptance_names_what_was_checked() {
        let both = [(JOB_SPEC_FIELD, DryRunOutcome::Accepted), (CLEANUP_FIELD, DryRunOutcome::Accepted)];
        let verdict = verdict(&both);
        assert!(verdict.is_valid());
        assert!(verdict.message.contains("spec.jobSpec and spec.cleanUpJobSpec"), "{}", verdict.message);
        let rejected = [
            (JOB_SPEC_FIELD, DryRunOutcome::Accepted),
            (CLEANUP_FIELD, DryRunOutcome::Rejected("spec.template.spec.x: bad".into())),
        ];
        let verdict = super::verdict(&rejected);
        assert_eq!(verdict.reason, Reason::DryRunRejected);
        assert!(verdict.message.contains("spec.cleanUpJobSpec.template.spec.x: bad"), "{}", verdict.message);
    }

    fn condition(status: &str, message: &str) -> Condition {
        Condition {
            type_: VALID_CONFIG.into(),
            status: status.into(),
            message: message.into(),
            reason: "r".into(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
        }
    }

    #[test]
    fn events_mark_changes_a_person_would_notice() {
        let valid = Verdict { reason: Reason::Valid, message: "ok".into() };
        let bad = Verdict { reason: Reason::InvalidJobSpec, message: "bad".into() };
        assert_eq!(event(None, &valid).map(|e| e.0), Some(false));
        assert_eq!(event(Some(&condition("True", "ok")), &valid), None);
        assert_eq!(event(Some(&condition("False", "bad")), &valid).map(|e| e.0), Some(false));
        assert_eq!(event(Some(&condition("True", "ok")), &bad).map(|e| e.0), Some(true));
        assert_eq!(event(Some(&condition("False", "bad")), &bad), None);
        assert_eq!(event(Some(&condition("False", "other")), &bad).map(|e| e.1), Some("InvalidJobSpec"));
    }
}
