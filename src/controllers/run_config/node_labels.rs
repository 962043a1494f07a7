//! A node's labels as numo's views keep them, with numo's own among them (its rule labels and its release mark)
//! kept apart. Every plan asks, for every gated node, which rule labels it carries and whether numo released it;
//! found among a node's dozen labels each answer compared the bytes of several keys that share numo's long prefix,
//! and at 2,000 nodes those comparisons were a third of the plan. They are worked out once, when the labels are made
//! or changed: the labels are read through [`std::ops::Deref`] and changed only through the methods below, so the
//! two never disagree.

use std::collections::BTreeMap;
use std::ops::Deref;

use crate::labels::RELEASED;

/// A node's labels, and numo's among them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeLabels {
    /// Every label.
    all: BTreeMap<String, String>,
    /// numo's rule labels among them ([`crate::labels::RULE_LABEL_PREFIX`]), in key order.
    rules: Vec<String>,
    /// The value of numo's release mark ([`crate::labels::RELEASED`]), if the node carries it.
    released: Option<String>,
}

impl NodeLabels {
    /// numo's rule labels on the node, in key order.
    pub fn rule_labels(&self) -> &[String] {
        &self.rules
    }

    /// Whether the node carries the rule label `key`.
    pub fn has_rule_label(&self, key: &str) -> bool {
        self.rules.iter().any(|k| k == key)
    }

    /// The value of numo's release mark on the node, if it carries one.
    pub fn release_mark(&self) -> Option<&str> {
        self.released.as_deref()
    }

    /// Sets label `key` to `value`; returns the value it had.
    pub fn insert(&mut self, key: String, value: String) -> Option<String> {
        let before = self.all.insert(key, value);
        self.summarise();
        before
    }

    /// Removes label `key`; returns the value it had.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let before = self.all.remove(key);
        self.summarise();
        before
    }

    /// Sets every label of `labels`.
    pub fn extend(&mut self, labels: impl IntoIterator<Item = (String, String)>) {
        self.all.extend(labels);
        self.summarise();
    }

    /// Works numo's labels out again from every label.
    fn summarise(&mut self) {
        self.rules = crate::selector::rule_labels_on(&self.all).map(String::from).collect();
        self.released = self.all.get(RELEASED).cloned();
    }
}

impl Deref for NodeLabels {
    type Target = BTreeMap<String, String>;

    fn deref(&self) -> &Self::Target {
        &self.all
    }
}

impl From<BTreeMap<String, String>> for NodeLabels {
    fn from(all: BTreeMap<String, String>) -> Self {
        let mut labels = Self { all, rules: Vec::new(), released: None };
        labels.summarise();
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str) -> String {
        crate::labels::rule_label(name, "ops")
    }

    /// numo's labels as a look at every key finds them.
    fn by_every_key(labels: &NodeLabels) -> (Vec<String>, Option<&str>) {
        let rules = labels.keys().filter(|k| crate::selector::is_rule_label(k)).cloned().collect();
        (rules, labels.get(RELEASED).map(String::as_str))
    }

    #[test]
    fn numos_labels_are_those_every_key_shows_after_each_change() {
        // Keys that sort right before and after numo's prefix, and numo's other label, sit among the rule labels.
        let mut labels = NodeLabels::from(BTreeMap::from([
            ("mutexrule.openshift-optional.skrzypek.i".to_string(), String::new()),
            ("mutexrule.openshift-optional.skrzypek.iz/x".to_string(), String::new()),
            (rule("backup"), String::new()),
            ("node-role.kubernetes.io/worker".to_string(), String::new()),
        ]));
        let check = |labels: &NodeLabels| {
            let (rules, released) = by_every_key(labels);
            assert_eq!(labels.rule_labels(), rules.as_slice());
            assert_eq!(labels.release_mark(), released);
        };
        check(&labels);
        assert_eq!(labels.rule_labels(), [rule("backup")]);
        assert!(labels.has_rule_label(&rule("backup")) && !labels.has_rule_label(&rule("check")));
        labels.insert(rule("check"), String::new());
        check(&labels);
        assert!(labels.has_rule_label(&rule("check")));
        labels.insert(RELEASED.to_string(), "canary".to_string());
        check(&labels);
        assert_eq!(labels.release_mark(), Some("canary"));
        labels.remove(&rule("backup"));
        labels.remove(RELEASED);
        check(&labels);
        assert_eq!((labels.rule_labels(), labels.release_mark()), ([rule("check")].as_slice(), None));
        labels.extend([(rule("a"), String::new()), (RELEASED.to_string(), "other".to_string())]);
        check(&labels);
        assert_eq!(labels.rule_labels(), [rule("a"), rule("check")]);
    }
}
