//! Label-selector semantics as the Machine Config Operator applies them (`matchLabels` and `matchExpressions` with
//! In, NotIn, Exists, DoesNotExist), and the edits numo makes to pool selectors.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// Whether `selector` selects an object with `labels`. Like the MCO (`metav1.LabelSelectorAsSelector`), a missing
/// selector selects nothing and an empty one selects everything; an unknown operator selects nothing.
pub fn matches(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else { return false };
    let by_labels = selector.match_labels.iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    by_labels && selector.match_expressions.iter().flatten().all(|r| requirement_matches(r, labels))
}

fn requirement_matches(r: &LabelSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" => labels.get(&r.key).is_some_and(|v| values.contains(v)),
        "NotIn" => labels.get(&r.key).is_none_or(|v| !values.contains(v)),
        "Exists" => labels.contains_key(&r.key),
        "DoesNotExist" => !labels.contains_key(&r.key),
        _ => false,
    }
}

/// A requirement `key <operator>` without values.
pub fn requirement(key: &str, operator: &str) -> LabelSelectorRequirement {
    LabelSelectorRequirement { key: key.to_string(), operator: operator.to_string(), values: None }
}

/// A requirement `key In [value]`.
pub fn requirement_in(key: &str, value: &str) -> LabelSelectorRequirement {
    LabelSelectorRequirement { key: key.to_string(), operator: "In".to_string(), values: Some(vec![value.to_string()]) }
}

/// `base` with `extra` requirements appended (those already present are not repeated).
pub fn with_requirements(base: Option<&LabelSelector>, extra: &[LabelSelectorRequirement]) -> LabelSelector {
    let mut selector = base.cloned().unwrap_or_default();
    let expressions = selector.match_expressions.get_or_insert_with(Vec::new);
    for r in extra {
        if !expressions.contains(r) {
            expressions.push(r.clone());
        }
    }
    selector
}

/// `base`'s `matchLabels` with its `matchExpressions` replaced by `expressions` (how the canary is steered).
pub fn with_expressions_replaced(
    base: Option<&LabelSelector>,
    expressions: &[LabelSelectorRequirement],
) -> LabelSelector {
    LabelSelector {
        match_labels: base.and_then(|b| b.match_labels.clone()),
        match_expressions: Some(expressions.to_vec()),
    }
}

/// Whether `key` is one of numo's node rule labels.
pub fn is_rule_label(key: &str) -> bool {
    key.starts_with(crate::labels::RULE_LABEL_PREFIX)
}

/// numo's rule labels among a node's `labels`: they sort together, so one search of the ordered map finds them
/// without a look at every other key.
pub fn rule_labels_on(labels: &BTreeMap<String, String>) -> impl Iterator<Item = &str> {
    use std::ops::Bound;
    labels
        .range::<str, _>((Bound::Included(crate::labels::RULE_LABEL_PREFIX), Bound::Unbounded))
        .map(|(key, _)| key.as_str())
        .take_while(|key| is_rule_label(key))
}

/// The node rule labels a (steered) selector requires or excludes.
pub fn rule_labels(selector: Option<&LabelSelector>) -> impl Iterator<Item = &str> {
    selector
        .into_iter()
        .flat_map(|s| s.match_expressions.iter().flatten())
        .map(|r| r.key.as_str())
        .filter(|k| is_rule_label(k))
}

/// Whether a selector carries any requirement numo adds when it steers a pool (on a rule label or on the release
/// mark).
pub fn is_steered(selector: Option<&LabelSelector>) -> bool {
    selector
        .into_iter()
        .flat_map(|s| s.match_expressions.iter().flatten())
        .any(|r| is_rule_label(&r.key) || r.key == crate::labels::RELEASED)
}

/// `selector` without the requirements numo adds when it steers a pool (on its rule labels and on the release mark):
/// what is left of a steered pool's own selector.
pub fn without_rule_labels(selector: &LabelSelector) -> LabelSelector {
    let mut selector = selector.clone();
    if let Some(expressions) = selector.match_expressions.as_mut() {
        let before = expressions.len();
        expressions.retain(|r| !is_rule_label(&r.key) && r.key != crate::labels::RELEASED);
        if expressions.is_empty() && before > 0 {
            // All of them were numo's: the pool had none of its own.
            selector.match_expressions = None;
        }
    }
    selector
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_rule_labels_on_a_node_are_those_a_look_at_every_key_finds() {
        let prefix = crate::labels::RULE_LABEL_PREFIX;
        let (first, last, longer) = (format!("{prefix}/a"), format!("{prefix}/zz"), format!("{prefix}x/b"));
        let near = ["a", "mutexrule.a", "mutexrule.openshift-optional", "node-role.kubernetes.io/worker", "zone"];
        for keys in [vec![], near.to_vec(), vec![first.as_str(), last.as_str(), longer.as_str()], {
            let mut all = near.to_vec();
            all.extend([first.as_str(), last.as_str(), longer.as_str(), prefix]);
            all
        }] {
            let on_node = labels(&keys.iter().map(|k| (*k, "")).collect::<Vec<_>>());
            let every_key: Vec<&str> = on_node.keys().map(String::as_str).filter(|k| is_rule_label(k)).collect();
            assert_eq!(rule_labels_on(&on_node).collect::<Vec<_>>(), every_key, "{keys:?}");
        }
    }

    fn sel(match_labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_labels: (!match_labels.is_empty()).then(|| labels(match_labels)),
            match_expressions: (!exprs.is_empty()).then_some(exprs),
        }
    }

    #[test]
    fn missing_selector_selects_nothing_and_empty_selects_everything() {
        assert!(!matches(None, &labels(&[("a", "b")])));
        assert!(matches(Some(&LabelSelector::default()), &labels(&[("a", "b")])));
    }

    #[test]
    fn match_labels_require_equal_values() {
        let s = sel(&[("node-role.kubernetes.io/worker", "")], vec![]);
        assert!(matches(Some(&s), &labels(&[("node-role.kubernetes.io/worker", "")])));
        assert!(!matches(Some(&s), &labels(&[("node-role.kubernetes.io/worker", "x")])));
        assert!(!matches(Some(&s), &labels(&[])));
    }

    #[test]
    fn every_operator_behaves_like_kubernetes() {
        let in_ = LabelSelectorRequirement { key: "z".into(), operator: "In".into(), values: Some(vec!["a".into()]) };
        let not_in =
            LabelSelectorRequirement { key: "z".into(), operator: "NotIn".into(), values: Some(vec!["a".into()]) };
        let exists = requirement("e", "Exists");
        let absent = requirement("d", "DoesNotExist");
        let bogus = requirement("e", "Near");
        let l = labels(&[("z", "a"), ("e", "")]);
        assert!(matches(Some(&sel(&[], vec![in_.clone()])), &l));
        assert!(!matches(Some(&sel(&[], vec![in_])), &labels(&[("z", "b")])));
        assert!(!matches(Some(&sel(&[], vec![not_in.clone()])), &l));
        assert!(matches(Some(&sel(&[], vec![not_in])), &labels(&[])));
        assert!(matches(Some(&sel(&[], vec![exists.clone()])), &l));
        assert!(!matches(Some(&sel(&[], vec![exists])), &labels(&[])));
        assert!(matches(Some(&sel(&[], vec![absent.clone()])), &l));
        assert!(!matches(Some(&sel(&[], vec![absent])), &labels(&[("d", "")])));
        assert!(!matches(Some(&sel(&[], vec![bogus])), &l));
    }

    #[test]
    fn requirements_are_added_once_and_expressions_replaced_keep_match_labels() {
        let base = sel(&[("r", "")], vec![requirement("isCanary", "Exists")]);
        let added = with_requirements(Some(&base), &[requirement("x", "Exists"), requirement("x", "Exists")]);
        assert_eq!(added.match_expressions.as_ref().map(Vec::len), Some(2));
        let replaced = with_expressions_replaced(Some(&base), &[requirement("x", "DoesNotExist")]);
        assert_eq!(replaced.match_labels, base.match_labels);
        assert_eq!(replaced.match_expressions, Some(vec![requirement("x", "DoesNotExist")]));
    }
}

/// Whether `key` is a valid label key (Kubernetes' qualified name: an optional DNS-subdomain prefix and `/`, then
/// a name of at most 63 alphanumerics, `-`, `_` and `.`, starting and ending with an alphanumeric); Err says why not.
pub fn valid_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        let label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if prefix.is_empty() || prefix.len() > 253 || !prefix.split('.').all(label) {
            return Err(format!("its prefix {prefix:?} is not a DNS subdomain"));
        }
    }
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && alphanumeric(name.chars().next())
        && alphanumeric(name.chars().last());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "its name {name:?} must be 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or \
             digit"
        ))
    }
}

#[cfg(test)]
mod label_key_tests {
    use super::valid_label_key;

    #[test]
    fn label_keys_are_checked_as_kubernetes_does() {
        for good in ["topology.kubernetes.io/zone", "topology.rook.io/rack", "rack", "kubernetes.io/hostname"] {
            assert_eq!(valid_label_key(good), Ok(()), "{good}");
        }
        for bad in ["", "/zone", "Topology.io/zone", "zone/", "a/b/c", "-rack", "rack-", "example.com/has space"] {
            assert!(valid_label_key(bad).is_err(), "{bad}");
        }
    }
}
