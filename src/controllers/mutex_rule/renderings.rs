//! The Jobs a rule's dry runs send, exactly as run configs create them: each template rendered with numo's
//! anti-affinity (run configs with `avoidTargetNode: true`, the default) and without it (`avoidTargetNode: false`),
//! since the API server may accept one and reject the other (an empty `nodeSelectorTerms` is valid only once numo
//! adds its term). The verdict records which renderings are usable.

use k8s_openapi::api::batch::v1::Job;

use super::schema;
use super::verdict::{Reason, Verdict};
use crate::api::{JobRendering, MutexRule};
use crate::jobs::{self, JobKey, JobPhase, JobTemplate};

/// Longest apiserver message quoted in a status.
const MAX_APISERVER_MESSAGE: usize = 400;
/// Both settings of a run config's `avoidTargetNode`, the default first.
pub const SETTINGS: [bool; 2] = [true, false];

/// A Job to create with `dryRun=All`, and where it comes from.
#[derive(Clone, Debug)]
pub struct DryRun {
    /// `spec.jobSpec` or `spec.cleanUpJobSpec`.
    pub field: &'static str,
    /// The run config setting this Job is rendered for: with numo's anti-affinity or without.
    pub avoid_target_node: bool,
    /// The Job, as a run config would create it, named `<jobName>-dry-run`.
    pub job: Job,
}

/// The apiserver's answer to one dry run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DryRunOutcome {
    /// The Job would be created.
    Accepted,
    /// The apiserver refused it, with its message.
    Rejected(String),
}

/// One dry run and its answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The template the Job came from.
    pub field: &'static str,
    /// The setting it was rendered for.
    pub avoid_target_node: bool,
    /// What the apiserver said.
    pub outcome: DryRunOutcome,
}

/// The name of a rule's dry-run Job: `<jobName>-dry-run`, shortened to 63 characters if needed.
pub fn dry_run_name(job_name: &str) -> String {
    crate::labels::shorten(&format!("{job_name}-dry-run"), 63)
}

/// The Jobs a run config would create from the template `spec` at `field` (env, labels and, for one of the two,
/// numo's anti-affinity included), in [`SETTINGS`] order, named for the dry run.
pub fn dry_runs(
    rule: &MutexRule,
    job_namespace: &str,
    field: &'static str,
    spec: &serde_json::Value,
    phase: JobPhase,
) -> Result<Vec<DryRun>, serde_json::Error> {
    let namespace = rule.metadata.namespace.as_deref().unwrap_or_default();
    let name = rule.metadata.name.as_deref().unwrap_or_default();
    let key = JobKey {
        run_config_namespace: namespace,
        run_config: "dry-run",
        node: "dry-run-node",
        rollout: "0.0.0",
        target_version: "0.0.0",
        target_config: None,
        rule_namespace: namespace,
        rule: name,
        phase,
        attempt: 1,
    };
    let spec = schema::without_nulls(spec);
    let name = dry_run_name(&rule.spec.job_name);
    SETTINGS
        .iter()
        .map(|&avoid_target_node| {
            let template = JobTemplate {
                prefix: &rule.spec.job_name,
                namespace: job_namespace,
                spec: &spec,
                owner: None,
                avoid_node: avoid_target_node,
                name: &name,
            };
            let job = jobs::render(&key, &template)?;
            Ok(DryRun { field, avoid_target_node, job })
        })
        .collect()
}

/// Puts the dry runs of the default setting first, keeping the template order within each.
pub fn in_sending_order(mut runs: Vec<DryRun>) -> Vec<DryRun> {
    runs.sort_by_key(|run| SETTINGS.iter().position(|&s| s == run.avoid_target_node));
    runs
}

/// What a rendering of the rule's Jobs got: accepted, or the first rejection (the field and the apiserver's words).
fn rendering(answers: &[Answer], avoid_target_node: bool) -> JobRendering {
    let rejection =
        answers.iter().filter(|a| a.avoid_target_node == avoid_target_node).find_map(|a| match &a.outcome {
            DryRunOutcome::Rejected(message) => Some(rejected(a.field, message)),
            DryRunOutcome::Accepted => None,
        });
    JobRendering { avoid_target_node, accepted: rejection.is_none(), message: rejection }
}

fn rejected(field: &str, message: &str) -> String {
    format!("the apiserver rejected the Job from {field} (dry run): {}", apiserver_message(field, message))
}

/// The verdict once the dry runs answered: valid when the Jobs of at least one rendering were all accepted (the
/// reason says which renderings are usable), else the first rejection of the default rendering.
pub fn verdict(answers: &[Answer]) -> Verdict {
    let [with, without] = SETTINGS.map(|setting| rendering(answers, setting));
    let mut checked: Vec<&str> = Vec::new();
    for answer in answers {
        if !checked.contains(&answer.field) {
            checked.push(answer.field);
        }
    }
    let checked = checked.join(" and ");
    let (reason, message) = match (&with.message, &without.message) {
        (None, None) => (
            Reason::Valid,
            format!(
                "{checked} passed schema validation and a dry-run create, with and without numo's anti-affinity \
                 (any avoidTargetNode)"
            ),
        ),
        (None, Some(why)) => (
            Reason::AvoidTargetNodeRequired,
            format!(
                "{checked} passed schema validation and a dry-run create with numo's anti-affinity, so only run \
                 configs with avoidTargetNode: true (the default) may use this rule; without it {why}"
            ),
        ),
        (Some(why), None) => (
            Reason::AvoidTargetNodeUnsupported,
            format!(
                "{checked} passed schema validation and a dry-run create without numo's anti-affinity, so only run \
                 configs with avoidTargetNode: false may use this rule; with it {why}"
            ),
        ),
        (Some(why), Some(_)) => (Reason::DryRunRejected, why.clone()),
    };
    Verdict { reason, message, renderings: vec![with, without] }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{MutexRuleSpec, RuleType};
    use crate::controllers::mutex_rule::verdict::{CLEANUP_FIELD, JOB_SPEC_FIELD};
    use serde_json::json;

    fn rule(job_spec: serde_json::Value) -> MutexRule {
        let mut rule = MutexRule::new(
            "k8s-example",
            MutexRuleSpec {
                job_name: "example".into(),
                job_namespace: None,
                job_spec,
                clean_up_job_spec: None,
                rule_type: RuleType::Kubernetes,
            },
        );
        rule.metadata.namespace = Some("team-a".into());
        rule
    }

    fn spec_with_affinity(affinity: serde_json::Value) -> serde_json::Value {
        json!({ "template": { "spec": {
            "containers": [{ "name": "mutex", "image": "ubi9/toolbox" }],
            "restartPolicy": "Never",
            "affinity": affinity
        }}})
    }

    fn required_terms(job: &Job) -> Option<serde_json::Value> {
        let pod = job.spec.as_ref()?.template.spec.as_ref()?;
        let required = pod
            .affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?;
        serde_json::to_value(&required.node_selector_terms).ok()
    }

    #[test]
    fn each_template_is_rendered_with_and_without_numos_anti_affinity() {
        let empty_terms = spec_with_affinity(json!({
            "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [] } }
        }));
        let rule = rule(empty_terms.clone());
        let runs = dry_runs(&rule, "team-a", JOB_SPEC_FIELD, &empty_terms, JobPhase::Gate).unwrap_or_default();
        assert_eq!(runs.iter().map(|r| r.avoid_target_node).collect::<Vec<_>>(), [true, false]);
        let with = required_terms(&runs[0].job);
        assert_eq!(
            with,
            Some(
                json!([{ "matchFields": [{ "key": "metadata.name", "operator": "NotIn", "values": ["dry-run-node"] }] }])
            ),
            "with numo's term the required affinity has one term"
        );
        assert_eq!(required_terms(&runs[1].job), Some(json!([])), "without it the template's empty list stays");
        assert!(runs.iter().all(|r| r.job.metadata.name.as_deref() == Some("example-dry-run")));
    }

    #[test]
    fn a_template_without_affinity_gets_none_without_numos_term() {
        let plain = json!({ "template": { "spec": { "containers": [{ "name": "c", "image": "i" }], "restartPolicy": "Never" } } });
        let runs = dry_runs(&rule(plain.clone()), "ops", CLEANUP_FIELD, &plain, JobPhase::Cleanup).unwrap_or_default();
        assert!(required_terms(&runs[0].job).is_some());
        let pod = runs[1].job.spec.as_ref().and_then(|s| s.template.spec.clone()).unwrap_or_default();
        assert_eq!(pod.affinity, None);
        assert!(runs.iter().all(|r| r.field == CLEANUP_FIELD && r.job.metadata.namespace.as_deref() == Some("ops")));
    }

    #[test]
    fn the_default_rendering_is_sent_first() {
        let plain = json!({ "template": { "spec": { "containers": [{ "name": "c", "image": "i" }] } } });
        let r = rule(plain.clone());
        let mut runs = dry_runs(&r, "team-a", JOB_SPEC_FIELD, &plain, JobPhase::Gate).unwrap_or_default();
        runs.extend(dry_runs(&r, "team-a", CLEANUP_FIELD, &plain, JobPhase::Cleanup).unwrap_or_default());
        let order: Vec<_> = in_sending_order(runs).iter().map(|r| (r.field, r.avoid_target_node)).collect();
        assert_eq!(
            order,
            [(JOB_SPEC_FIELD, true), (CLEANUP_FIELD, true), (JOB_SPEC_FIELD, false), (CLEANUP_FIELD, false)]
        );
    }

    fn answer(field: &'static str, avoid_target_node: bool, rejected: Option<&str>) -> Answer {
        let outcome = rejected.map_or(DryRunOutcome::Accepted, |m| DryRunOutcome::Rejected(m.into()));
        Answer { field, avoid_target_node, outcome }
    }

    #[test]
    fn the_verdict_says_which_renderings_are_usable() {
        let all = [
            answer(JOB_SPEC_FIELD, true, None),
            answer(CLEANUP_FIELD, true, None),
            answer(JOB_SPEC_FIELD, false, None),
            answer(CLEANUP_FIELD, false, None),
        ];
        let v = verdict(&all);
        assert_eq!(v.reason, Reason::Valid);
        assert!(v.message.contains("spec.jobSpec and spec.cleanUpJobSpec"), "{}", v.message);
        assert!(v.renderings.iter().all(|r| r.accepted) && v.renderings.len() == 2);

        let terms = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value";
        let only_with = [answer(JOB_SPEC_FIELD, true, None), answer(JOB_SPEC_FIELD, false, Some(terms))];
        let v = verdict(&only_with);
        assert_eq!(v.reason, Reason::AvoidTargetNodeRequired);
        assert!(v.is_valid());
        assert!(v.message.contains("avoidTargetNode: true"), "{}", v.message);
        assert!(v.message.contains("spec.jobSpec.template.spec.affinity"), "{}", v.message);
        assert_eq!(v.renderings[0], JobRendering { avoid_target_node: true, accepted: true, message: None });
        assert!(!v.renderings[1].accepted && !v.renderings[1].avoid_target_node);
        assert!(v.renderings[1].message.as_deref().is_some_and(|m| m.contains("nodeSelectorTerms")));

        let only_without =
            [answer(JOB_SPEC_FIELD, true, Some("denied by policy")), answer(JOB_SPEC_FIELD, false, None)];
        let v = verdict(&only_without);
        assert_eq!(v.reason, Reason::AvoidTargetNodeUnsupported);
        assert!(v.is_valid() && v.message.contains("avoidTargetNode: false"), "{}", v.message);

        let neither = [
            answer(JOB_SPEC_FIELD, true, None),
            answer(CLEANUP_FIELD, true, Some("spec.template.spec.x: bad")),
            answer(JOB_SPEC_FIELD, false, Some("spec.template.spec.y: bad")),
        ];
        let v = verdict(&neither);
        assert_eq!(v.reason, Reason::DryRunRejected);
        assert!(!v.is_valid());
        assert!(
            v.message.contains("spec.cleanUpJobSpec.template.spec.x: bad"),
            "the default's rejection: {}",
            v.message
        );
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
}
