//! A status's list of node names, shared between its copies: a status copied (into a snapshot, into the next plan's
//! draft) or carried unchanged into the next status shares the one list, so a rollout's thousand finished nodes are
//! not copied, compared or freed name by name on every event. Written to, it is copied first if shared.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A list of node names, serialized as a plain list; copies share it until one is written to.
#[derive(Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct NodeNames(Arc<Vec<String>>);

impl NodeNames {
    /// Whether `self` and `other` are copies of one list (not merely equal lists).
    pub fn shares(&self, other: &NodeNames) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for NodeNames {
    type Target = Vec<String>;

    fn deref(&self) -> &Vec<String> {
        &self.0
    }
}

impl DerefMut for NodeNames {
    /// The list to write to, copied first if another copy shares it.
    fn deref_mut(&mut self) -> &mut Vec<String> {
        Arc::make_mut(&mut self.0)
    }
}

impl std::fmt::Debug for NodeNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for NodeNames {
    fn eq(&self, other: &Self) -> bool {
        self.shares(other) || self.0 == other.0
    }
}

impl Eq for NodeNames {}

impl<T> PartialEq<T> for NodeNames
where
    Vec<String>: PartialEq<T>,
{
    fn eq(&self, other: &T) -> bool {
        *self.0 == *other
    }
}

impl From<Vec<String>> for NodeNames {
    fn from(names: Vec<String>) -> Self {
        Self(Arc::new(names))
    }
}

impl FromIterator<String> for NodeNames {
    fn from_iter<I: IntoIterator<Item = String>>(names: I) -> Self {
        Self(Arc::new(names.into_iter().collect()))
    }
}

impl<'n> IntoIterator for &'n NodeNames {
    type Item = &'n String;
    type IntoIter = std::slice::Iter<'n, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_the_list_until_one_is_written_to() {
        let names: NodeNames = vec!["worker-0".to_string(), "worker-1".to_string()].into();
        let mut copy = names.clone();
        assert!(copy.shares(&names));
        copy.push("worker-2".into());
        assert!(!copy.shares(&names), "written to, the copy has a list of its own");
        assert_eq!(names, ["worker-0", "worker-1"]);
        assert_eq!(copy, ["worker-0", "worker-1", "worker-2"]);
        let equal: NodeNames = names.iter().cloned().collect();
        assert!(equal == names && !equal.shares(&names), "equal lists are equal, not shared");
    }

    #[test]
    fn it_is_written_and_read_as_a_plain_list() {
        let names: NodeNames = vec!["worker-0".to_string()].into();
        assert_eq!(serde_json::to_string(&names).unwrap(), r#"["worker-0"]"#);
        let read: NodeNames = serde_json::from_str(r#"["a","b"]"#).unwrap();
        assert_eq!(read, ["a", "b"]);
        let schema = serde_json::to_value(schemars::schema_for!(NodeNames)).unwrap();
        let plain = serde_json::to_value(schemars::schema_for!(Vec<String>)).unwrap();
        assert_eq!(schema["type"], plain["type"]);
        assert_eq!(schema["items"], plain["items"]);
    }
}
