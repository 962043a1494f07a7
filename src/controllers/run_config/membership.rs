//! Which MachineConfigPool a node belongs to, as the Machine Config Operator decides it: `master` if its selector
//! matches; otherwise the one custom pool whose selector matches (two or more: none, the MCO degrades them);
//! otherwise `worker` if its selector matches.

use std::collections::BTreeMap;

use super::snapshot::PoolView;
use crate::selector;

/// The pool a node with `labels` belongs to, computed with each pool's effective selector (the recorded original
/// while numo steers it, so a node numo moved into the canary still counts as a member of its target pool).
pub fn pool_of<'a>(labels: &BTreeMap<String, String>, pools: &'a BTreeMap<String, PoolView>) -> Option<&'a str> {
    let matches = |pool: &PoolView| selector::matches(pool.effective_selector(), labels);
    if pools.get("master").is_some_and(matches) {
        return Some("master");
    }
    let mut custom = pools.values().filter(|p| p.name != "master" && p.name != "worker").filter(|p| matches(p));
    match (custom.next(), custom.next()) {
        (Some(only), None) => return Some(only.name.as_str()),
        (Some(_), Some(_)) => return None,
        _ => {}
    }
    pools.get("worker").filter(|p| matches(p)).map(|p| p.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    fn pool(name: &str, label: &str) -> (String, PoolView) {
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([(label.to_string(), String::new())])),
            match_expressions: None,
        };
        (name.to_string(), PoolView { name: name.into(), node_selector: Some(selector), ..Default::default() })
    }

    fn labels(keys: &[&str]) -> BTreeMap<String, String> {
        keys.iter().map(|k| (k.to_string(), String::new())).collect()
    }

    #[test]
    fn master_then_one_custom_pool_then_worker() {
        let pools = BTreeMap::from([pool("master", "m"), pool("worker", "w"), pool("infra", "i"), pool("gpu", "g")]);
        assert_eq!(pool_of(&labels(&["m", "w"]), &pools), Some("master"));
        assert_eq!(pool_of(&labels(&["w", "i"]), &pools), Some("infra"));
        assert_eq!(pool_of(&labels(&["w"]), &pools), Some("worker"));
        assert_eq!(pool_of(&labels(&["w", "i", "g"]), &pools), None);
        assert_eq!(pool_of(&labels(&["x"]), &pools), None);
    }

    #[test]
    fn a_steered_pool_is_judged_by_its_recorded_selector() {
        let (_, mut worker) = pool("worker", "w");
        worker.claimed_by = Some("ns/rc".into());
        worker.original =
            Some(super::super::snapshot::PoolOriginal { paused: false, node_selector: worker.node_selector.clone() });
        worker.node_selector = Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("w".to_string(), String::new()), ("held".into(), String::new())])),
            match_expressions: None,
        });
        let pools = BTreeMap::from([("worker".to_string(), worker)]);
        assert_eq!(pool_of(&labels(&["w"]), &pools), Some("worker"));
    }
}
