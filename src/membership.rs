//! Which MachineConfigPool a node belongs to, decided exactly as the Machine Config Operator decides it
//! (`GetPoolsForNode` in the MCO's helpers):
//!
//! 0. A Windows node (`kubernetes.io/os: windows`) belongs to no pool: the MCO does not manage it.
//! 1. A pool takes part only if its node selector is usable: a missing or empty selector, or one the apiserver's
//!    `LabelSelectorAsSelector` would reject (unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist`
//!    with values), matches nothing.
//! 2. If two or more custom pools (neither `master` nor `worker`) match, the node belongs to none: the MCO refuses
//!    to manage it ([`AmbiguousPools`] names them).
//! 3. If exactly one custom pool matches, the node belongs to `master` when the master pool matches too, else to
//!    that custom pool.
//! 4. Otherwise `master` if it matches, else `worker` if it matches, else none.
//!
//! While numo steers a pool (it carries numo's claim and original-selector annotations) the selector that counts is
//! the recorded original, so the membership an admin configured does not shift as numo releases nodes one by one.

use std::collections::BTreeMap;

use crate::openshift::MachineConfigPool;
use crate::pool_claim::{ClaimAnnotations, PoolClaim};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

/// Name of the MCO's master pool.
pub const MASTER: &str = "master";
/// Name of the MCO's worker pool.
pub const WORKER: &str = "worker";
/// Name of the MCO's arbiter pool (the `HighlyAvailableArbiter` control-plane topology); required for upgrade like
/// `master`.
pub const ARBITER: &str = "arbiter";

/// Whether `pool` is one of the pools the machine-config operator creates and keeps (`master`, `worker`, `arbiter`):
/// on OpenShift 4.16–4.21 it puts their `machineConfigSelector` and `nodeSelector` back to its manifests on every
/// sync (openshift/machine-config-operator release-4.21 `pkg/operator/sync.go` `syncMachineConfigPools` →
/// `lib/resourcemerge/machineconfig.go` `EnsureMachineConfigPool`), so numo never steers their selectors.
pub fn is_built_in(pool: &str) -> bool {
    matches!(pool, MASTER | WORKER | ARBITER)
}

/// The kubelet's node label naming the operating system; the MCO manages no node where it says `windows`.
pub const OS_LABEL: &str = "kubernetes.io/os";

/// A pool as membership sees it: its name and the node selector that decides membership.
#[derive(Clone, Copy, Debug)]
pub struct PoolSelector<'a> {
    /// The pool's name.
    pub name: &'a str,
    /// The node selector to match with (see [`effective_node_selector`]).
    pub node_selector: Option<&'a LabelSelector>,
}

/// A node matched by more than one custom pool; the MCO manages it in none of them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("matches {} custom MachineConfigPools ({}), so the Machine Config Operator manages it in none", pools.len(), pools.join(", "))]
pub struct AmbiguousPools {
    /// The matching custom pools, sorted.
    pub pools: Vec<String>,
}

/// The pool a node with `labels` belongs to, among `pools`; `Ok(None)` when no pool takes it (or it is a Windows
/// node).
pub fn pool_of<'a>(
    labels: &BTreeMap<String, String>,
    pools: &[PoolSelector<'a>],
) -> Result<Option<&'a str>, AmbiguousPools> {
    if labels.get(OS_LABEL).is_some_and(|os| os == "windows") {
        return Ok(None);
    }
    let matching = pools.iter().filter(|p| selects(p.node_selector, labels));
    let (mut master, mut worker, mut custom) = (None, None, Vec::new());
    for pool in matching {
        match pool.name {
            MASTER => master = Some(pool.name),
            WORKER => worker = Some(pool.name),
            name => custom.push(name),
        }
    }
    match custom.as_slice() {
        [] => Ok(master.or(worker)),
        [only] => Ok(master.or(Some(*only))),
        _ => {
            let mut pools: Vec<String> = custom.iter().map(|p| p.to_string()).collect();
            pools.sort();
            pools.dedup();
            Err(AmbiguousPools { pools })
        }
    }
}

/// Whether a pool's node selector takes a node with `labels`, with the MCO's rules: a missing, empty or invalid
/// selector takes no node.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else { return false };
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector.match_expressions.as_ref().is_none_or(|e| e.is_empty());
    let valid = selector.match_expressions.iter().flatten().all(requirement_is_valid);
    !empty && valid && crate::selector::matches(Some(selector), labels)
}

/// Whether `LabelSelectorAsSelector` accepts a requirement.
fn requirement_is_valid(r: &LabelSelectorRequirement) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    match r.operator.as_str() {
        "In" | "NotIn" => !values.is_empty(),
        "Exists" | "DoesNotExist" => values.is_empty(),
        _ => false,
    }
}

/// The node selector that decides a pool's membership: the original recorded by numo while numo claims the pool,
/// else the pool's current `spec.nodeSelector` (see [`crate::pool_claim`]).
pub fn effective_node_selector(pool: &MachineConfigPool) -> Option<LabelSelector> {
    let claim = pool.metadata.annotations.as_ref().map(PoolClaim::read).unwrap_or(ClaimAnnotations::None);
    claim.effective_selector(pool.spec.node_selector.as_ref()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{POOL_CLAIMED_BY, POOL_ORIGINAL};
    use crate::openshift::MachineConfigPoolSpec;
    use crate::selector::requirement;

    fn selector(keys: &[&str]) -> LabelSelector {
        LabelSelector {
            match_labels: Some(keys.iter().map(|k| (k.to_string(), String::new())).collect()),
            match_expressions: None,
        }
    }

    fn labels(keys: &[&str]) -> BTreeMap<String, String> {
        keys.iter().map(|k| (k.to_string(), String::new())).collect()
    }

    const M: &str = "node-role.kubernetes.io/master";
    const W: &str = "node-role.kubernetes.io/worker";
    const I: &str = "node-role.kubernetes.io/infra";
    const G: &str = "node-role.kubernetes.io/gpu";

    struct Pools(Vec<(&'static str, LabelSelector)>);

    impl Pools {
        fn standard() -> Self {
            Pools(vec![
                ("master", selector(&[M])),
                ("worker", selector(&[W])),
                ("infra", selector(&[I])),
                ("gpu", selector(&[G])),
            ])
        }

        fn of(&self, node: &[&str]) -> Result<Option<&str>, AmbiguousPools> {
            let pools: Vec<PoolSelector<'_>> =
                self.0.iter().map(|(name, s)| PoolSelector { name, node_selector: Some(s) }).collect();
            pool_of(&labels(node), &pools)
        }
    }

    #[test]
    fn a_plain_worker_belongs_to_worker() {
        assert_eq!(Pools::standard().of(&[W]), Ok(Some("worker")));
    }

    #[test]
    fn one_custom_pool_wins_over_worker() {
        assert_eq!(Pools::standard().of(&[W, I]), Ok(Some("infra")));
        assert_eq!(Pools::standard().of(&[I]), Ok(Some("infra")));
    }

    #[test]
    fn master_wins_over_worker_and_over_one_custom_pool() {
        assert_eq!(Pools::standard().of(&[M, W]), Ok(Some("master")));
        assert_eq!(Pools::standard().of(&[M, I]), Ok(Some("master")));
    }

    #[test]
    fn two_custom_pools_leave_the_node_in_none_and_name_both() {
        let err = Pools::standard().of(&[W, I, G]).err();
        assert_eq!(err, Some(AmbiguousPools { pools: vec!["gpu".into(), "infra".into()] }));
        // The MCO checks custom pools before master: even a master node is refused.
        assert!(Pools::standard().of(&[M, I, G]).is_err());
        let message = Pools::standard().of(&[I, G]).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("gpu, infra"), "{message}");
    }

    #[test]
    fn a_node_no_pool_selects_belongs_to_none() {
        assert_eq!(Pools::standard().of(&["other"]), Ok(None));
        assert_eq!(Pools(vec![("infra", selector(&[I]))]).of(&[W]), Ok(None));
    }

    #[test]
    fn a_windows_node_belongs_to_no_pool() {
        let mut windows = labels(&[W]);
        windows.insert(OS_LABEL.into(), "windows".into());
        let pools = Pools::standard();
        let selectors: Vec<PoolSelector<'_>> =
            pools.0.iter().map(|(name, s)| PoolSelector { name, node_selector: Some(s) }).collect();
        assert_eq!(pool_of(&windows, &selectors), Ok(None));
        windows.insert(OS_LABEL.into(), "linux".into());
        assert_eq!(pool_of(&windows, &selectors), Ok(Some("worker")));
    }

    #[test]
    fn missing_empty_and_invalid_selectors_take_no_node() {
        let node = labels(&[W]);
        assert!(!selects(None, &node));
        assert!(!selects(Some(&LabelSelector::default()), &node));
        let empty_parts = LabelSelector { match_labels: Some(BTreeMap::new()), match_expressions: Some(vec![]) };
        assert!(!selects(Some(&empty_parts), &node));
        let not_in_without_values =
            LabelSelector { match_labels: None, match_expressions: Some(vec![requirement("x", "NotIn")]) };
        assert!(!selects(Some(&not_in_without_values), &node));
        let exists_with_values = LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: W.into(),
                operator: "Exists".into(),
                values: Some(vec!["a".into()]),
            }]),
        };
        assert!(!selects(Some(&exists_with_values), &node));
        let bogus = LabelSelector { match_labels: None, match_expressions: Some(vec![requirement(W, "Near")]) };
        assert!(!selects(Some(&bogus), &node));
        let fine = LabelSelector { match_labels: None, match_expressions: Some(vec![requirement(W, "Exists")]) };
        assert!(selects(Some(&fine), &node));
    }

    #[test]
    fn expressions_decide_membership_like_the_canary_of_the_reference() {
        // The reference's canary: workers that carry `isCanary`.
        let canary = LabelSelector {
            match_labels: Some(BTreeMap::from([(W.to_string(), String::new())])),
            match_expressions: Some(vec![requirement("isCanary", "Exists")]),
        };
        let pools = Pools(vec![("worker", selector(&[W])), ("canary", canary)]);
        assert_eq!(pools.of(&[W]), Ok(Some("worker")));
        assert_eq!(pools.of(&[W, "isCanary"]), Ok(Some("canary")));
    }

    fn pool(annotations: &[(&str, &str)], current: LabelSelector) -> MachineConfigPool {
        let mut pool = MachineConfigPool::new(
            "worker",
            MachineConfigPoolSpec { node_selector: Some(current), ..Default::default() },
        );
        pool.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        pool
    }

    #[test]
    fn a_steered_pool_counts_with_its_recorded_original_selector() {
        let steered = LabelSelector {
            match_labels: Some(BTreeMap::from([(W.to_string(), String::new())])),
            match_expressions: Some(vec![requirement("mutexrule.openshift-optional.skrzypek.io/r.ns", "Exists")]),
        };
        let original = r#"{"paused":false,"nodeSelector":{"matchLabels":{"node-role.kubernetes.io/worker":""}}}"#;
        let claimed = pool(&[(POOL_CLAIMED_BY, "ns/rc"), (POOL_ORIGINAL, original)], steered.clone());
        assert_eq!(effective_node_selector(&claimed), Some(selector(&[W])));
        // Without the claim (or with an unreadable record) the current selector counts.
        let unclaimed = pool(&[(POOL_ORIGINAL, original)], steered.clone());
        assert_eq!(effective_node_selector(&unclaimed), Some(steered.clone()));
        let garbled = pool(&[(POOL_CLAIMED_BY, "ns/rc"), (POOL_ORIGINAL, "{not json")], steered.clone());
        assert_eq!(effective_node_selector(&garbled), Some(steered));
    }
}
