use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::core::{ObjectList, PartialObjectMeta, WatchEvent};
use kube::ResourceExt;
use serde_json::json;

use super::conditions::ConditionsStatus;
use super::*;
use crate::api::MutexRule;

fn nested(levels: usize) -> String {
    format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
}

/// A rule as the apiserver serves it: its `managedFields` mirror the spec's fields five levels deeper.
fn rule_with_job_spec(job_spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"openshift-optional.skrzypek.io/v1alpha1","kind":"MutexRule",
            "metadata":{{"name":"evil","namespace":"tenant","generation":3,"uid":"u-1","resourceVersion":"42",
                         "labels":{{"team":"x"}},
                         "managedFields":[{{"manager":"kubectl","fieldsV1":{{"f:spec":{{"f:jobSpec":{job_spec}}}}}}}]}},
            "spec":{{"jobName":"evil","jobSpec":{job_spec}}}}}"#
    )
}

#[test]
fn a_valid_object_decodes_into_its_type() {
    let json = rule_with_job_spec(r#"{"template":{"spec":{"containers":[]}}}"#);
    let guarded: Guarded<MutexRule> = serde_json::from_str(&json).expect("decoded");
    let rule = guarded.decoded().expect("valid");
    assert_eq!(rule.spec.job_name, "evil");
    assert_eq!(rule.metadata.managed_fields.as_ref().map(Vec::len), Some(1), "the whole object, as K reads it");
    assert_eq!(guarded.name_any(), "evil");
    assert_eq!(guarded.namespace().as_deref(), Some("tenant"));
}

#[test]
fn a_too_deep_object_is_undecodable_with_its_metadata_and_the_path() {
    let json = rule_with_job_spec(&nested(150));
    let guarded: Guarded<MutexRule> = serde_json::from_str(&json).expect("the guard itself never fails");
    let invalid = guarded.0.as_ref().expect_err("too deep");
    assert_eq!(invalid.problem, Problem::TooDeep);
    assert_eq!(invalid.error, "spec.jobSpec.a.a… nests 152 levels deep; numo reads objects at most 64 levels deep");
    let meta = &invalid.metadata;
    assert_eq!(meta.name.as_deref(), Some("evil"));
    assert_eq!(meta.namespace.as_deref(), Some("tenant"));
    assert_eq!(meta.generation, Some(3));
    assert_eq!(meta.uid.as_deref(), Some("u-1"));
    assert_eq!(meta.resource_version.as_deref(), Some("42"));
    assert_eq!(meta.labels.as_ref().and_then(|l| l.get("team")).map(String::as_str), Some("x"));
    assert_eq!(meta.managed_fields, None, "managedFields nest as deeply as the object; they are not read");
    assert_eq!(guarded.name_any(), "evil", "the guard is a Resource with the object's metadata");
}

#[test]
fn the_depth_limit_is_exact() {
    // Its managedFields nest five levels deeper than the jobSpec: metadata, managedFields, the entry, fieldsV1,
    // f:spec, f:jobSpec.
    let at_limit: Guarded<MutexRule> = serde_json::from_str(&rule_with_job_spec(&nested(MAX_DEPTH - 6))).unwrap();
    assert!(at_limit.decoded().is_some(), "{:?}", at_limit.0.err());
    let beyond: Guarded<MutexRule> = serde_json::from_str(&rule_with_job_spec(&nested(MAX_DEPTH - 5))).unwrap();
    let invalid = beyond.0.expect_err("one level too deep");
    assert_eq!(invalid.problem, Problem::TooDeep);
    assert!(invalid.error.starts_with("metadata.managedFields[0].fieldsV1… nests 65 levels deep"), "{}", invalid.error);
}

#[test]
fn an_object_of_the_wrong_shape_names_the_field() {
    let json = r#"{"apiVersion":"openshift-optional.skrzypek.io/v1alpha1","kind":"MutexRule",
        "metadata":{"name":"typo","namespace":"tenant"},"spec":{"jobName":["not","a","string"],"jobSpec":{}}}"#;
    let guarded: Guarded<MutexRule> = serde_json::from_str(json).expect("the guard itself never fails");
    let invalid = guarded.0.expect_err("wrong type");
    assert_eq!(invalid.problem, Problem::Mismatch);
    assert!(invalid.error.starts_with("spec.jobName: invalid type: sequence, expected a string"), "{}", invalid.error);
    assert_eq!(invalid.metadata.name.as_deref(), Some("typo"));

    let missing = r#"{"metadata":{"name":"bare","namespace":"tenant"}}"#;
    let invalid = serde_json::from_str::<Guarded<MutexRule>>(missing).unwrap().0.expect_err("no spec");
    assert_eq!(invalid.error, "missing field `spec`");
}

#[test]
fn one_undecodable_item_does_not_fail_a_list() {
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"List","metadata":{{"resourceVersion":"7"}},"items":[{},{},{}]}}"#,
        rule_with_job_spec("{}"),
        rule_with_job_spec(&nested(10_000)),
        rule_with_job_spec(r#"{"backoffLimit":0}"#),
    );
    assert!(serde_json::from_str::<ObjectList<MutexRule>>(&list).is_err(), "unguarded, the whole list fails");
    let decoded: ObjectList<Guarded<MutexRule>> = serde_json::from_str(&list).expect("the list decodes");
    let verdicts: Vec<bool> = decoded.items.iter().map(|item| item.decoded().is_some()).collect();
    assert_eq!(verdicts, [true, false, true]);
    assert_eq!(decoded.metadata.resource_version.as_deref(), Some("7"));
}

#[test]
fn a_watch_event_of_an_undecodable_object_still_arrives() {
    let event = format!(r#"{{"type":"MODIFIED","object":{}}}"#, rule_with_job_spec(&nested(1_000)));
    assert!(serde_json::from_str::<WatchEvent<MutexRule>>(&event).is_err(), "unguarded, the event is lost");
    match serde_json::from_str::<WatchEvent<Guarded<MutexRule>>>(&event).expect("the event decodes") {
        WatchEvent::Modified(guarded) => {
            let invalid = guarded.0.expect_err("too deep");
            assert!(invalid.error.contains("nests 1002 levels deep"), "{}", invalid.error);
            assert_eq!(invalid.metadata.name.as_deref(), Some("evil"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn decodes_from_a_json_value_too() {
    let value = json!({"metadata": {"name": "cm"}, "data": {"k": "v"}});
    let guarded: Guarded<ConfigMap> = serde_json::from_value(value).expect("decoded");
    assert_eq!(guarded.decoded().and_then(|cm| cm.data.as_ref()).map(|d| d["k"].as_str()), Some("v"));
}

#[test]
fn a_guarded_metadata_type_asks_for_metadata_only() {
    assert!(Guarded::<PartialObjectMeta<Node>>::metadata_api());
    assert!(!Guarded::<Node>::metadata_api());
    assert_eq!(Guarded::<MutexRule>::url_path(&(), Some("ns")), MutexRule::url_path(&(), Some("ns")));
    assert_eq!(Guarded::<Node>::kind(&()), "Node");
}

#[test]
fn conditions_of_any_object_can_be_read() {
    let status = r#"{"observedGeneration":3,"conditions":[{"type":"ValidConfig","status":"False","reason":"Malformed",
        "message":"m","lastTransitionTime":"2024-01-01T00:00:00Z","observedGeneration":3}]}"#;
    let json = rule_with_job_spec(&nested(5_000)).replacen(r#""spec":"#, &format!(r#""status":{status},"spec":"#), 1);
    let read: ConditionsOf<MutexRule> = serde_json::from_str(&json).expect("read");
    assert_eq!(read.metadata.generation, Some(3));
    assert_eq!(read.status.observed_generation, Some(3));
    assert_eq!(read.status.conditions.len(), 1);
    assert_eq!(read.status.conditions[0].reason, "Malformed");

    let no_status: ConditionsOf<MutexRule> = serde_json::from_str(&rule_with_job_spec("{}")).expect("read");
    assert_eq!(no_status.status, ConditionsStatus::default());
    let odd = r#"{"metadata":{"name":"x"},"status":{"conditions":"not a list"}}"#;
    let odd: ConditionsOf<MutexRule> = serde_json::from_str(odd).expect("read");
    assert!(odd.status.conditions.is_empty(), "unreadable conditions count as none");
}
