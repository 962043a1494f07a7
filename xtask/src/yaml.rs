//! Deterministic YAML and JSON output: mapping keys sorted at every level, whatever order the input had.

use serde_json::Value;

/// `value` as a YAML document with every mapping's keys sorted.
pub fn to_yaml(value: &Value) -> anyhow::Result<String> {
    Ok(serde_yaml::to_string(&to_sorted_yaml(value))?)
}

/// `value` as pretty-printed JSON with every object's keys sorted.
pub fn to_json_pretty(value: &Value) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(&sorted(value))?)
}

/// A copy of `value` whose objects hold their keys in sorted order (also when serde_json preserves insertion order).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn to_sorted_yaml(value: &Value) -> serde_yaml::Value {
    match value {
        Value::Null => serde_yaml::Value::Null,
        Value::Bool(b) => serde_yaml::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => serde_yaml::Value::Number(i.into()),
            (None, Some(u), _) => serde_yaml::Value::Number(u.into()),
            (None, None, Some(f)) => serde_yaml::Value::Number(f.into()),
            (None, None, None) => serde_yaml::Value::Null,
        },
        Value::String(s) => serde_yaml::Value::String(s.clone()),
        Value::Array(items) => serde_yaml::Value::Sequence(items.iter().map(to_sorted_yaml).collect()),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut mapping = serde_yaml::Mapping::new();
            for key in keys {
                mapping.insert(serde_yaml::Value::String(key.clone()), to_sorted_yaml(&map[key]));
            }
            serde_yaml::Value::Mapping(mapping)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_come_out_sorted_at_every_level() {
        let value = json!({"spec": {"b": 1, "a": [{"z": true, "y": null}]}, "apiVersion": "v1", "kind": "X"});
        assert_eq!(
            to_yaml(&value).unwrap_or_default(),
            "apiVersion: v1\nkind: X\nspec:\n  a:\n  - y: null\n    z: true\n  b: 1\n"
        );
    }

    #[test]
    fn multi_line_strings_stay_readable_and_round_trip() {
        let value = json!({"description": "line one\nline two\n"});
        let text = to_yaml(&value).unwrap_or_default();
        assert!(text.contains("|\n"), "{text}");
        let back: Value = serde_yaml::from_str(&text).unwrap_or_default();
        assert_eq!(back, value);
    }
}
