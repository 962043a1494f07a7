//! Validating a rule's Job templates against the `batch/v1` JobSpec JSON Schema (generated once from k8s-openapi's
//! types) and against the shape Jobs require, naming the first bad field as a path a person recognises, e.g.
//! `spec.jobSpec.template.spec.containers[0].image`.
//!
//! The schema is made strict: an object with known properties accepts no others, so a misspelt field
//! (`contaners`) is reported instead of silently dropped as the apiserver would.

use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use k8s_openapi::api::batch::v1::JobSpec;
use serde_json::Value;

/// The compiled JobSpec validator, or why it could not be built.
static JOB_SPEC: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let mut schema = serde_json::to_value(schemars::schema_for!(JobSpec)).map_err(|e| e.to_string())?;
    forbid_unknown_fields(&mut schema);
    jsonschema::validator_for(&schema).map_err(|e| e.to_string())
});

/// Longest excerpt of a schema message (they quote the offending value, which may be large).
const MAX_MESSAGE: usize = 300;

/// Sets `additionalProperties: false` on every object schema that lists its properties and says nothing about
/// others (Kubernetes' own types never accept fields they do not define).
fn forbid_unknown_fields(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let lists_properties = map.get("properties").is_some_and(Value::is_object);
            let open = map.contains_key("additionalProperties")
                || map.contains_key("x-kubernetes-preserve-unknown-fields")
                || map.contains_key("patternProperties");
            if lists_properties && !open {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(forbid_unknown_fields);
        }
        Value::Array(items) => items.iter_mut().for_each(forbid_unknown_fields),
        _ => {}
    }
}

/// A copy of `value` without `null` members: Kubernetes reads `field: null` as an absent field.
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Checks `spec` (the rule's field at `field`, e.g. `spec.jobSpec`) against the JobSpec schema and the shape a Job
/// needs. `Err` holds the message for the status: `<path>: <problem>`, about the first bad field.
pub fn check(field: &str, spec: &Value) -> Result<(), String> {
    let spec = without_nulls(spec);
    check_schema(field, &spec)?;
    check_shape(field, &spec)
}

fn check_schema(field: &str, spec: &Value) -> Result<(), String> {
    let validator = JOB_SPEC.as_ref().map_err(|e| format!("{field}: the JobSpec schema is unavailable: {e}"))?;
    let mut errors = validator.iter_errors(spec);
    let Some(first) = errors.next() else { return Ok(()) };
    let more = errors.count();
    let path = readable_path(field, spec, first.instance_path().as_str());
    let (path, problem) = match first.kind() {
        ValidationErrorKind::Required { property } => {
            let property = property.as_str().map(str::to_string).unwrap_or_else(|| property.to_string());
            (format!("{path}.{property}"), "required value".to_string())
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let field = unexpected.first().cloned().unwrap_or_default();
            (format!("{path}.{field}"), "unknown field (not part of batch/v1 JobSpec)".to_string())
        }
        _ => (path, first.to_string()),
    };
    let problem = crate::events::truncate(problem, MAX_MESSAGE);
    let suffix = match more {
        0 => String::new(),
        1 => " (and 1 more problem)".to_string(),
        n => format!(" (and {n} more problems)"),
    };
    Err(format!("{path}: {problem}{suffix}"))
}

/// What a Job needs beyond the schema: a pod spec with at least one container, and a restart policy Jobs allow.
fn check_shape(field: &str, spec: &Value) -> Result<(), String> {
    let Some(pod) = spec.pointer("/template/spec") else {
        return Err(format!("{field}.template.spec: required value (the pod the Job runs)"));
    };
    let containers = pod.get("containers").and_then(Value::as_array).map_or(0, Vec::len);
    if containers == 0 {
        return Err(format!("{field}.template.spec.containers: at least one container is required"));
    }
    match pod.get("restartPolicy").and_then(Value::as_str) {
        Some("Never" | "OnFailure") => Ok(()),
        Some(other) => {
            Err(format!("{field}.template.spec.restartPolicy: must be Never or OnFailure for a Job, not {other:?}"))
        }
        None => Err(format!(
            "{field}.template.spec.restartPolicy: required value: Never or OnFailure (a Job's pods cannot use the \
             default Always)"
        )),
    }
}

/// Turns a JSON pointer into `instance` into `<field>.a.b[0].c`.
pub fn readable_path(field: &str, instance: &Value, pointer: &str) -> String {
    let mut path = field.to_string();
    let mut node = Some(instance);
    for raw in pointer.split('/').skip(1) {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match node {
            Some(Value::Array(items)) => {
                let index: Option<usize> = segment.parse().ok();
                path.push_str(&format!("[{segment}]"));
                node = index.and_then(|i| items.get(i));
            }
            Some(Value::Object(map)) => {
                node = map.get(&segment);
                push_property(&mut path, &segment);
            }
            _ => {
                node = None;
                push_property(&mut path, &segment);
            }
        }
    }
    path
}

/// Appends `.name`, or `["name"]` for keys that are not plain identifiers (label keys such as `app.kubernetes.io/x`).
fn push_property(path: &mut String, name: &str) {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        path.push('.');
        path.push_str(name);
    } else {
        path.push_str(&format!("[{name:?}]"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference_job_spec() -> Value {
        // The reference's example, `selector: {}` included.
        json!({
            "selector": {},
            "template": {
                "metadata": { "name": "mutex" },
                "spec": {
                    "containers": [{ "command": ["sleep"], "args": ["30"], "image": "ubi9/toolbox", "name": "mutex" }],
                    "restartPolicy": "Never"
                }
            }
        })
    }

    #[test]
    fn the_schema_compiles() {
        assert!(JOB_SPEC.is_ok(), "{:?}", JOB_SPEC.as_ref().err());
    }

    #[test]
    fn the_reference_example_is_valid() {
        assert_eq!(check("spec.jobSpec", &reference_job_spec()), Ok(()));
    }

    #[test]
    fn a_wrong_type_names_the_field_with_its_index() {
        let mut spec = reference_job_spec();
        spec["template"]["spec"]["containers"][0]["image"] = json!(42);
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(message.starts_with("spec.jobSpec.template.spec.containers[0].image: "), "{message}");
        assert!(message.contains("string"), "{message}");
    }

    #[test]
    fn a_missing_required_field_is_named() {
        let mut spec = reference_job_spec();
        spec["template"]["spec"]["containers"][0].as_object_mut().map(|c| c.remove("name"));
        let message = check("spec.cleanUpJobSpec", &spec).err().unwrap_or_default();
        assert!(
            message.starts_with("spec.cleanUpJobSpec.template.spec.containers[0].name: required value"),
            "{message}"
        );
    }

    #[test]
    fn a_misspelt_field_is_reported_not_dropped() {
        let mut spec = reference_job_spec();
        spec["template"]["spec"]["contaners"] = json!([]);
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(message.starts_with("spec.jobSpec.template.spec.contaners: unknown field"), "{message}");
    }

    #[test]
    fn free_form_maps_accept_any_key() {
        let mut spec = reference_job_spec();
        spec["template"]["metadata"]["labels"] = json!({ "app.kubernetes.io/name": "gate", "anything": "goes" });
        spec["template"]["spec"]["nodeSelector"] = json!({ "kubernetes.io/os": "linux" });
        spec["template"]["spec"]["containers"][0]["resources"] = json!({ "limits": { "cpu": 1, "memory": "64Mi" } });
        assert_eq!(check("spec.jobSpec", &spec), Ok(()));
    }

    #[test]
    fn nulls_count_as_absent() {
        let mut spec = reference_job_spec();
        spec["template"]["metadata"]["creationTimestamp"] = Value::Null;
        spec["backoffLimit"] = Value::Null;
        assert_eq!(check("spec.jobSpec", &spec), Ok(()));
    }

    #[test]
    fn jobs_need_containers_and_a_restart_policy_they_allow() {
        let mut spec = reference_job_spec();
        spec["template"]["spec"]["containers"] = json!([]);
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(message.starts_with("spec.jobSpec.template.spec.containers: at least one"), "{message}");

        let mut spec = reference_job_spec();
        spec["template"]["spec"]["restartPolicy"] = json!("Always");
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(
            message.starts_with("spec.jobSpec.template.spec.restartPolicy: must be Never or OnFailure"),
            "{message}"
        );

        let mut spec = reference_job_spec();
        spec["template"]["spec"].as_object_mut().map(|p| p.remove("restartPolicy"));
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(message.starts_with("spec.jobSpec.template.spec.restartPolicy: required value"), "{message}");

        let message = check("spec.jobSpec", &json!({ "template": {} })).err().unwrap_or_default();
        assert!(message.starts_with("spec.jobSpec.template.spec: required value"), "{message}");
    }

    #[test]
    fn paths_quote_keys_that_are_not_identifiers() {
        let instance = json!({ "a": { "app.kubernetes.io/name": [1, 2] } });
        assert_eq!(
            readable_path("spec.x", &instance, "/a/app.kubernetes.io~1name/1"),
            r#"spec.x.a["app.kubernetes.io/name"][1]"#
        );
    }

    #[test]
    fn several_problems_are_counted() {
        let mut spec = reference_job_spec();
        spec["template"]["spec"]["containers"][0]["image"] = json!(42);
        spec["template"]["spec"]["containers"][0]["name"] = json!(7);
        let message = check("spec.jobSpec", &spec).err().unwrap_or_default();
        assert!(message.ends_with("(and 1 more problem)"), "{message}");
    }
}
