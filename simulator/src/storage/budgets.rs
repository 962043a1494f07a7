//! The budgets Rook writes (rook/rook `pkg/operator/ceph/disruption/clusterdisruption/osd.go`): the default one,
//! `rook-ceph-osd` with `maxUnavailable: 1` over every OSD pod (`createDefaultPDBforOSD`), and blocking ones,
//! `rook-ceph-osd-<type>-<domain>` with `maxUnavailable: 0` over the OSD pods of one failure domain
//! (`createBlockingPDBForOSD`, `getPDBName`); and the writes that make the namespace hold what [`super::rook`] wants.

use std::collections::BTreeSet;

use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use serde_json::json;

use super::rook::Wanted;
use super::{location_label, APP_LABEL, NAMESPACE, OSD_APP};

/// The default budget's name (`osdPDBAppName`).
pub const DEFAULT_BUDGET: &str = OSD_APP;

/// The blocking budget of `domain` of CRUSH type `crush_type`. Rook truncates names longer than a node name may be;
/// the simulated domains are short.
pub fn blocking_name(crush_type: &str, domain: &str) -> String {
    format!("{OSD_APP}-{crush_type}-{domain}")
}

/// The default budget.
pub fn default_budget() -> PodDisruptionBudget {
    budget(DEFAULT_BUDGET, 1, json!({"matchExpressions": [{"key": APP_LABEL, "operator": "In", "values": [OSD_APP]}]}))
}

/// The blocking budget of `domain`.
pub fn blocking_budget(crush_type: &str, domain: &str) -> PodDisruptionBudget {
    budget(&blocking_name(crush_type, domain), 0, json!({"matchLabels": {location_label(crush_type): domain}}))
}

fn budget(name: &str, max_unavailable: i32, selector: serde_json::Value) -> PodDisruptionBudget {
    let object = json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"maxUnavailable": max_unavailable, "selector": selector},
    });
    // Built from known-good parts; a failure here is a bug in this function.
    serde_json::from_value(object).unwrap_or_default()
}

/// Whether a budget is one of Rook's blocking ones (`maxUnavailable: 0`).
pub fn is_blocking(budget: &PodDisruptionBudget) -> bool {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    matches!(budget.spec.as_ref().and_then(|s| s.max_unavailable.as_ref()), Some(IntOrString::Int(0)))
}

/// What to write so that the namespace holds `wanted`, given the budgets there now (by name).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes {
    /// Budgets to create (in this order: blocking ones before the default is deleted, as Rook does).
    pub create: Vec<PodDisruptionBudget>,
    /// Budgets to delete, by name.
    pub delete: Vec<String>,
}

/// The changes from `existing` (budget names in the namespace) to `wanted`, for CRUSH type `crush_type` and the
/// domains `all`: Rook's `handleActiveDrains` (blocking budgets for the other domains, the draining domain's and the
/// default one deleted) or `handleInactiveDrains` (the default budget, every blocking one deleted).
pub fn changes(existing: &BTreeSet<String>, wanted: &Wanted, crush_type: &str, all: &BTreeSet<String>) -> Changes {
    let mut out = Changes::default();
    let mut want_names = BTreeSet::new();
    match wanted {
        Wanted::Default => {
            want_names.insert(DEFAULT_BUDGET.to_string());
            if !existing.contains(DEFAULT_BUDGET) {
                out.create.push(default_budget());
            }
        }
        Wanted::Blocking(domains) => {
            for domain in domains {
                let name = blocking_name(crush_type, domain);
                if !existing.contains(&name) {
                    out.create.push(blocking_budget(crush_type, domain));
                }
                want_names.insert(name);
            }
        }
    }
    let ours: BTreeSet<String> =
        all.iter().map(|d| blocking_name(crush_type, d)).chain([DEFAULT_BUDGET.to_string()]).collect();
    out.delete = existing.iter().filter(|n| ours.contains(*n) && !want_names.contains(*n)).cloned().collect();
    out
}

/// The names of `budgets`.
pub fn names(budgets: &[std::sync::Arc<PodDisruptionBudget>]) -> BTreeSet<String> {
    budgets.iter().map(|b| b.name_any()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_budgets_are_named_and_select_like_rooks() {
        let blocking = blocking_budget("rack", "rack1");
        assert_eq!(blocking.name_any(), "rook-ceph-osd-rack-rack1");
        assert!(is_blocking(&blocking));
        let selector = blocking.spec.as_ref().and_then(|s| s.selector.clone()).unwrap_or_default();
        assert_eq!(
            selector.match_labels.unwrap_or_default().get("topology-location-rack").map(String::as_str),
            Some("rack1")
        );
        let default = default_budget();
        assert_eq!(default.name_any(), "rook-ceph-osd");
        assert!(!is_blocking(&default));
    }

    #[test]
    fn a_drain_replaces_the_default_budget_by_blocking_ones() {
        let all = set(&["rack0", "rack1", "rack2"]);
        let wanted = Wanted::Blocking(set(&["rack1", "rack2"]));
        let out = changes(&set(&["rook-ceph-osd"]), &wanted, "rack", &all);
        let created: Vec<String> = out.create.iter().map(|b| b.name_any()).collect();
        assert_eq!(created, ["rook-ceph-osd-rack-rack1", "rook-ceph-osd-rack-rack2"]);
        assert_eq!(out.delete, ["rook-ceph-osd"]);
    }

    #[test]
    fn clean_again_the_default_budget_returns_and_the_blocking_ones_go() {
        let all = set(&["rack0", "rack1", "rack2"]);
        let existing = set(&["rook-ceph-osd-rack-rack1", "rook-ceph-osd-rack-rack2", "someone-elses"]);
        let out = changes(&existing, &Wanted::Default, "rack", &all);
        assert_eq!(out.create.iter().map(|b| b.name_any()).collect::<Vec<_>>(), ["rook-ceph-osd"]);
        assert_eq!(out.delete, ["rook-ceph-osd-rack-rack1", "rook-ceph-osd-rack-rack2"], "another's budget stays");
        assert_eq!(changes(&set(&["rook-ceph-osd"]), &Wanted::Default, "rack", &all), Changes::default());
    }
}
