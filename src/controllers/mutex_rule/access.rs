//! Whom a rule's Jobs run as, and whether the owners of the Job namespace allowed it: the ServiceAccount opt-in
//! (docs/security.md). Pure: the ServiceAccounts' annotations are read by `observe`.
//!
//! A rule's Jobs run as the ServiceAccount its template names (`serviceAccountName`, else the deprecated
//! `serviceAccount`, else `default`) in the job namespace. Only the rule's own namespace's `default` ServiceAccount
//! needs no opt-in; any other must carry [`OPT_IN_ANNOTATION`] naming the rule's namespace.

use std::collections::BTreeMap;

use super::verdict::{Reason, Verdict, CLEANUP_FIELD, JOB_SPEC_FIELD};
use crate::api::MutexRule;

/// Annotation on a ServiceAccount: the comma-separated namespaces whose MutexRules may run Jobs as it. Set by an
/// admin of the ServiceAccount's namespace.
pub const OPT_IN_ANNOTATION: &str = "openshift-optional.skrzypek.io/allow-mutex-rules-from";
/// The ServiceAccount pods run as when their spec names none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The ServiceAccount the Jobs of one template run as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    /// `spec.jobSpec` or `spec.cleanUpJobSpec`.
    pub field: &'static str,
    /// The job namespace.
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// Whether the template names it (else it is the namespace's `default`).
    pub named: bool,
}

impl RunAs {
    /// Whether a rule in `rule_namespace` needs the ServiceAccount's opt-in: always, except for the `default`
    /// ServiceAccount of the rule's own namespace (what the rule's editors' own Jobs would run as).
    pub fn needs_opt_in(&self, rule_namespace: &str) -> bool {
        !(self.namespace == rule_namespace && self.name == DEFAULT_SERVICE_ACCOUNT)
    }

    /// Where the ServiceAccount is named in the rule.
    fn path(&self) -> String {
        format!("{}.template.spec.serviceAccountName", self.field)
    }
}

/// The ServiceAccounts a rule's templates run as, in template order (a template that does not parse is left out:
/// the template checks report it).
pub fn run_as(rule: &MutexRule) -> Vec<RunAs> {
    let Some(namespace) = rule.job_namespace() else { return Vec::new() };
    let templates = std::iter::once((JOB_SPEC_FIELD, &rule.spec.job_spec))
        .chain(rule.spec.clean_up_job_spec.as_ref().map(|spec| (CLEANUP_FIELD, spec)));
    templates
        .map(|(field, spec)| {
            let pod = &spec["template"]["spec"];
            let named = ["serviceAccountName", "serviceAccount"]
                .iter()
                .find_map(|key| pod[*key].as_str().filter(|name| !name.is_empty()));
            RunAs {
                field,
                namespace: namespace.to_string(),
                name: named.unwrap_or(DEFAULT_SERVICE_ACCOUNT).to_string(),
                named: named.is_some(),
            }
        })
        .collect()
}

/// Whether the rule's Jobs would run as the ServiceAccount `namespace/name` under an opt-in (the ServiceAccount
/// watch re-validates those rules when it changes).
pub fn depends_on(rule: &MutexRule, namespace: &str, name: &str) -> bool {
    let Some(rule_namespace) = rule.metadata.namespace.as_deref() else { return false };
    run_as(rule).iter().any(|r| r.namespace == namespace && r.name == name && r.needs_opt_in(rule_namespace))
}

/// The namespaces an opt-in annotation value names.
pub fn opted_in_namespaces(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|ns| !ns.is_empty())
}

/// A ServiceAccount as `observe` found it: `None` when it does not exist, else its annotations.
pub type Found = Option<BTreeMap<String, String>>;

/// The verdict when a ServiceAccount the rule needs is not opted in for the rule's namespace; `None` when every one
/// is. `accounts` pairs each [`RunAs`] that needs an opt-in with what `observe` found.
pub fn verdict(rule_namespace: &str, accounts: &[(RunAs, Found)]) -> Option<Verdict> {
    accounts.iter().find_map(|(run_as, found)| {
        let annotation = match found {
            None => return Some(missing(rule_namespace, run_as)),
            Some(annotations) => annotations.get(OPT_IN_ANNOTATION).map(String::as_str),
        };
        let allowed = annotation.is_some_and(|value| opted_in_namespaces(value).any(|ns| ns == rule_namespace));
        (!allowed).then(|| not_opted_in(rule_namespace, run_as, annotation))
    })
}

/// `as ServiceAccount "x"` or `as ServiceAccount "default" (the template names none)`.
fn who(run_as: &RunAs) -> String {
    let unnamed = if run_as.named { "" } else { " (the template names none)" };
    format!("in namespace {:?} as ServiceAccount {:?}{unnamed}", run_as.namespace, run_as.name)
}

fn missing(rule_namespace: &str, run_as: &RunAs) -> Verdict {
    Verdict::invalid(
        Reason::ServiceAccountNotOptedIn,
        format!(
            "{}: the Jobs would run {}, which does not exist; an admin of {:?} creates it with the annotation \
             {OPT_IN_ANNOTATION}={rule_namespace} to let MutexRules of {rule_namespace:?} run Jobs as it",
            run_as.path(),
            who(run_as),
            run_as.namespace,
        ),
    )
}

fn not_opted_in(rule_namespace: &str, run_as: &RunAs, annotation: Option<&str>) -> Verdict {
    let (has, value) = match annotation.map(str::trim).filter(|v| !v.is_empty()) {
        Some(value) => (
            format!("whose annotation {OPT_IN_ANNOTATION} ({value:?}) does not name it"),
            format!("{value},{rule_namespace}"),
        ),
        None => (format!("which has no annotation {OPT_IN_ANNOTATION}"), rule_namespace.to_string()),
    };
    Verdict::invalid(
        Reason::ServiceAccountNotOptedIn,
        format!(
            "{}: the Jobs would run {}, which is not opted in for MutexRules of namespace {rule_namespace:?} ({has}); \
             if it should run them, an admin of {:?} runs: kubectl annotate serviceaccount {} -n {} --overwrite \
             {OPT_IN_ANNOTATION}={value}",
            run_as.path(),
            who(run_as),
            run_as.namespace,
            run_as.name,
            run_as.namespace,
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{MutexRuleSpec, RuleType};
    use serde_json::json;

    fn rule(job_namespace: Option<&str>, pod: serde_json::Value, cleanup_pod: Option<serde_json::Value>) -> MutexRule {
        let spec = |pod: serde_json::Value| json!({ "template": { "spec": pod } });
        let mut rule = MutexRule::new(
            "r",
            MutexRuleSpec {
                job_name: "r".into(),
                job_namespace: job_namespace.map(str::to_string),
                job_spec: spec(pod),
                clean_up_job_spec: cleanup_pod.map(spec),
                rule_type: RuleType::Kubernetes,
            },
        );
        rule.metadata.namespace = Some("tenant".into());
        rule
    }

    fn annotated(value: &str) -> Found {
        Some(BTreeMap::from([(OPT_IN_ANNOTATION.to_string(), value.to_string())]))
    }

    #[test]
    fn the_service_account_is_the_one_kubernetes_would_use() {
        let accounts = run_as(&rule(
            Some("ops"),
            json!({ "serviceAccountName": "builder", "serviceAccount": "other" }),
            Some(json!({ "serviceAccount": "legacy" })),
        ));
        let names: Vec<_> = accounts.iter().map(|a| (a.field, a.namespace.as_str(), a.name.as_str())).collect();
        assert_eq!(names, [(JOB_SPEC_FIELD, "ops", "builder"), (CLEANUP_FIELD, "ops", "legacy")]);
        let unnamed = run_as(&rule(None, json!({ "serviceAccountName": "" }), None));
        assert_eq!((unnamed[0].name.as_str(), unnamed[0].named), ("default", false));
        assert_eq!(unnamed[0].namespace, "tenant");
    }

    #[test]
    fn only_the_own_namespaces_default_account_needs_no_opt_in() {
        let own_default = run_as(&rule(None, json!({}), None));
        assert!(!own_default[0].needs_opt_in("tenant"));
        let own_named_default = run_as(&rule(None, json!({ "serviceAccountName": "default" }), None));
        assert!(!own_named_default[0].needs_opt_in("tenant"));
        let own_other = run_as(&rule(None, json!({ "serviceAccountName": "backup" }), None));
        assert!(own_other[0].needs_opt_in("tenant"));
        let foreign_default = run_as(&rule(Some("ops"), json!({}), None));
        assert!(foreign_default[0].needs_opt_in("tenant"));
    }

    #[test]
    fn rules_depend_on_the_accounts_that_need_an_opt_in() {
        let foreign = rule(Some("ops"), json!({ "serviceAccountName": "admin" }), None);
        assert!(depends_on(&foreign, "ops", "admin"));
        assert!(!depends_on(&foreign, "ops", "default"));
        assert!(!depends_on(&foreign, "tenant", "admin"));
        assert!(!depends_on(&rule(None, json!({}), None), "tenant", "default"));
    }

    #[test]
    fn an_opt_in_names_the_rules_namespace() {
        let account = run_as(&rule(Some("ops"), json!({ "serviceAccountName": "admin" }), None)).remove(0);
        for value in ["tenant", "team-b, tenant", " tenant ,"] {
            assert_eq!(verdict("tenant", &[(account.clone(), annotated(value))]), None, "{value:?}");
        }
        for value in ["team-b", "tenants", "", "*"] {
            let refused = verdict("tenant", &[(account.clone(), annotated(value))]);
            assert_eq!(refused.map(|v| v.reason), Some(Reason::ServiceAccountNotOptedIn), "{value:?}");
        }
        assert!(verdict("tenant", &[(account.clone(), Some(BTreeMap::new()))]).is_some());
        assert!(verdict("tenant", &[(account, None)]).is_some());
    }

    #[test]
    fn the_message_says_what_to_annotate_and_where() {
        let account = run_as(&rule(Some("ops"), json!({ "serviceAccountName": "admin" }), None)).remove(0);
        let none = verdict("tenant", &[(account.clone(), Some(BTreeMap::new()))]).map(|v| v.message);
        let Some(none) = none else { panic!("not opted in") };
        assert!(none.starts_with("spec.jobSpec.template.spec.serviceAccountName: "), "{none}");
        assert!(
            none.contains(&format!(
                "kubectl annotate serviceaccount admin -n ops --overwrite {OPT_IN_ANNOTATION}=tenant"
            )),
            "{none}"
        );
        let other = verdict("tenant", &[(account.clone(), annotated("team-b"))]).map(|v| v.message).unwrap_or_default();
        assert!(other.contains(&format!("{OPT_IN_ANNOTATION}=team-b,tenant")), "{other}");
        let gone = verdict("tenant", &[(account, None)]).map(|v| v.message).unwrap_or_default();
        assert!(gone.contains("does not exist") && gone.contains(&format!("{OPT_IN_ANNOTATION}=tenant")), "{gone}");
        let unnamed = run_as(&rule(Some("ops"), json!({}), None)).remove(0);
        let unnamed = verdict("tenant", &[(unnamed, Some(BTreeMap::new()))]).map(|v| v.message).unwrap_or_default();
        assert!(unnamed.contains("\"default\" (the template names none)"), "{unnamed}");
    }
}
