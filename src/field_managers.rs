//! Who last set a field of an object, read from its `metadata.managedFields`: the field manager the API server
//! records for every write (`kubectl-patch`, `Mozilla` for the web console, `argocd-controller`...). Kubernetes does
//! not record the user there; the API server's audit log has it. This module is the only place that reads
//! `managedFields`; caches keep only the entries and fields it is asked to keep ([`prune`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, Time};
use serde_json::{Map, Value};

/// A field, as a path of `managedFields` keys.
pub type FieldPath = &'static [&'static str];

/// `spec.paused`.
pub const SPEC_PAUSED: FieldPath = &["f:spec", "f:paused"];
/// `spec.nodeSelector`.
pub const SPEC_NODE_SELECTOR: FieldPath = &["f:spec", "f:nodeSelector"];
/// `spec.maxUnavailable`.
pub const SPEC_MAX_UNAVAILABLE: FieldPath = &["f:spec", "f:maxUnavailable"];
/// `spec.machineConfigSelector` (the canary's, which numo points at the pool it serves).
pub const SPEC_MACHINE_CONFIG_SELECTOR: FieldPath = &["f:spec", "f:machineConfigSelector"];
/// `spec.osImageStream` (the canary's, which numo points at the stream of the pool it serves).
pub const SPEC_OS_IMAGE_STREAM: FieldPath = &["f:spec", "f:osImageStream"];
/// The pool fields numo holds during a rollout.
pub const POOL_FIELDS: &[FieldPath] =
    &[SPEC_PAUSED, SPEC_NODE_SELECTOR, SPEC_MAX_UNAVAILABLE, SPEC_MACHINE_CONFIG_SELECTOR, SPEC_OS_IMAGE_STREAM];

/// The last writer of a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// The field manager.
    pub manager: String,
    /// `Update` or `Apply`.
    pub operation: String,
    /// When that manager last changed the object's fields it owns.
    pub time: Option<Time>,
}

impl Writer {
    /// `manager (operation at time)`, for messages.
    pub fn describe(&self) -> String {
        match &self.time {
            Some(time) => format!("field manager {:?} ({} at {})", self.manager, self.operation, time.0),
            None => format!("field manager {:?} ({})", self.manager, self.operation),
        }
    }
}

/// Keeps of `entries` only those that own one of `keep`, each with only those fields: what [`writer_of`] needs,
/// at a few hundred bytes per object. No `keep`: nothing is kept.
pub fn prune(entries: &mut Option<Vec<ManagedFieldsEntry>>, keep: &[FieldPath]) {
    let Some(list) = entries.take() else { return };
    let kept: Vec<ManagedFieldsEntry> = list
        .into_iter()
        .filter_map(|mut entry| {
            let fields = entry.fields_v1.take()?.0;
            let mut pruned = Value::Object(Map::new());
            for path in keep {
                if let Some(value) = lookup(&fields, path) {
                    insert(&mut pruned, path, value.clone());
                }
            }
            let owns = pruned.as_object().is_some_and(|m| !m.is_empty());
            owns.then_some(ManagedFieldsEntry { fields_v1: Some(FieldsV1(pruned)), ..entry })
        })
        .collect();
    *entries = (!kept.is_empty()).then_some(kept);
}

/// The manager that owns `path` (the latest, where several share it), if any.
pub fn writer_of(entries: Option<&[ManagedFieldsEntry]>, path: FieldPath) -> Option<Writer> {
    entries
        .unwrap_or_default()
        .iter()
        .filter(|e| e.fields_v1.as_ref().is_some_and(|f| lookup(&f.0, path).is_some()))
        .max_by_key(|e| e.time.as_ref().map(|t| t.0))
        .map(|e| Writer {
            manager: e.manager.clone().unwrap_or_else(|| "(unnamed)".to_string()),
            operation: e.operation.clone().unwrap_or_default(),
            time: e.time.clone(),
        })
}

fn lookup<'v>(fields: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(fields, |value, key| value.get(*key))
}

fn insert(target: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut cursor = target;
    for key in parents {
        let Some(map) = cursor.as_object_mut() else { return };
        cursor = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    if let Some(map) = cursor.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, second: i64, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            time: Some(Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap_or_default())),
            ..Default::default()
        }
    }

    #[test]
    fn the_writer_of_a_field_is_the_manager_that_owns_it_last() {
        let entries = vec![
            entry("machine-config-operator", 10, json!({"f:spec": {"f:configuration": {}, "f:paused": {}}})),
            entry("kubectl-patch", 20, json!({"f:spec": {"f:paused": {}}})),
            entry("numo", 15, json!({"f:spec": {"f:nodeSelector": {"f:matchLabels": {}}}})),
        ];
        let paused = writer_of(Some(&entries), SPEC_PAUSED).map(|w| w.manager);
        assert_eq!(paused.as_deref(), Some("kubectl-patch"));
        let selector = writer_of(Some(&entries), SPEC_NODE_SELECTOR).map(|w| w.manager);
        assert_eq!(selector.as_deref(), Some("numo"));
        assert_eq!(writer_of(Some(&entries), SPEC_MAX_UNAVAILABLE), None);
        assert_eq!(writer_of(None, SPEC_PAUSED), None);
    }

    #[test]
    fn pruning_keeps_only_the_fields_asked_for() {
        let mut entries = Some(vec![
            entry("machine-config-operator", 10, json!({"f:spec": {"f:configuration": {"f:name": {}}}})),
            entry("console", 20, json!({"f:spec": {"f:paused": {}, "f:configuration": {}}, "f:metadata": {}})),
        ]);
        prune(&mut entries, POOL_FIELDS);
        let kept = entries.unwrap_or_default();
        assert_eq!(kept.len(), 1, "the MCO's entry owns none of the fields");
        assert_eq!(kept[0].fields_v1.as_ref().map(|f| f.0.clone()), Some(json!({"f:spec": {"f:paused": {}}})));
        let mut none = Some(vec![entry("x", 1, json!({"f:spec": {"f:paused": {}}}))]);
        prune(&mut none, &[]);
        assert_eq!(none, None);
    }
}
