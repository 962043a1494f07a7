//! Rook's decision, pure: from the OSDs, whether Ceph's PGs are clean and the state map of the last reconcile, the
//! next state map and the budgets Rook wants (rook/rook `pkg/operator/ceph/disruption/clusterdisruption/osd.go`:
//! `getOSDFailureDomains`, `reconcilePDBsForOSDs`, `setPDBConfig`, `resetPDBConfig`, `handleActiveDrains`,
//! `handleInactiveDrains`).

use std::collections::BTreeSet;

/// One OSD as Rook's reconcile reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Osd {
    /// Its failure domain (the Deployment's `topology-location-<type>` label).
    pub domain: String,
    /// Its Deployment has a ready replica (Rook: `ReadyReplicas >= 1`).
    pub up: bool,
    /// Its node is unschedulable or gone (`hasOSDNodeDrained`).
    pub node_drained: bool,
}

/// What Rook keeps in ConfigMap `rook-ceph-pdbstatemap` (`draining-failure-domain`, `set-no-out`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateMap {
    /// The failure domain whose OSDs may go down; empty when none.
    pub draining: String,
    /// Set when the draining domain was chosen for a drained node (Rook then sets `noout` on it).
    pub no_out: bool,
}

/// The budgets Rook wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// The default budget only.
    Default,
    /// A blocking budget for each of these domains (every domain but the draining one); no default budget.
    Blocking(BTreeSet<String>),
}

/// The failure domains of `osds`: all of them, those with a down OSD on a drained node, and those with a down OSD.
fn domains(osds: &[Osd]) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let all = osds.iter().map(|o| o.domain.clone()).collect();
    let down = osds.iter().filter(|o| !o.up);
    let drained = down.clone().filter(|o| o.node_drained).map(|o| o.domain.clone()).collect();
    (all, drained, down.map(|o| o.domain.clone()).collect())
}

/// The next state map. A down OSD with PGs clean cannot happen in the simulated world (see [`super::ceph`]); Rook
/// would then exclude the down OSDs from the default budget, which is not modelled: the state is left as it is.
pub fn next_state(state: &StateMap, osds: &[Osd], pgs_clean: bool) -> StateMap {
    let (_, drained, down) = domains(osds);
    let osd_down = !down.is_empty();
    match (osd_down, pgs_clean) {
        (false, true) => StateMap::default(),
        (true, false) => set_pdb_config(state, &down, &drained),
        (true, true) | (false, false) => state.clone(),
    }
}

/// `setPDBConfig`: drained nodes' domains take precedence over domains whose OSDs are merely down; a draining domain
/// that is still down (or drained) is kept.
fn set_pdb_config(state: &StateMap, down: &BTreeSet<String>, drained: &BTreeSet<String>) -> StateMap {
    let first = |set: &BTreeSet<String>| set.iter().next().cloned();
    if state.draining.is_empty() {
        if let Some(domain) = first(drained) {
            return StateMap { draining: domain, no_out: true };
        }
        return StateMap { draining: first(down).unwrap_or_default(), no_out: false };
    }
    if !drained.is_empty() && !drained.contains(&state.draining) {
        return StateMap { draining: first(drained).unwrap_or_default(), no_out: true };
    }
    if !down.is_empty() && !down.contains(&state.draining) {
        return StateMap { draining: first(down).unwrap_or_default(), no_out: false };
    }
    state.clone()
}

/// The budgets for `state` over the domains of `osds`.
pub fn wanted(state: &StateMap, osds: &[Osd]) -> Wanted {
    if state.draining.is_empty() {
        return Wanted::Default;
    }
    let (all, _, _) = domains(osds);
    Wanted::Blocking(all.into_iter().filter(|d| *d != state.draining).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn osd(domain: &str, up: bool, node_drained: bool) -> Osd {
        Osd { domain: domain.into(), up, node_drained }
    }

    fn healthy() -> Vec<Osd> {
        ["rack0", "rack1", "rack2", "rack0", "rack1", "rack2"].iter().map(|d| osd(d, true, false)).collect()
    }

    fn blocking(domains: &[&str]) -> Wanted {
        Wanted::Blocking(domains.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn a_clean_cluster_has_the_default_budget() {
        let state = next_state(&StateMap::default(), &healthy(), true);
        assert_eq!(state, StateMap::default());
        assert_eq!(wanted(&state, &healthy()), Wanted::Default);
    }

    #[test]
    fn a_drained_osd_blocks_every_other_domain() {
        let mut osds = healthy();
        osds[0] = osd("rack0", false, true);
        let state = next_state(&StateMap::default(), &osds, false);
        assert_eq!(state, StateMap { draining: "rack0".into(), no_out: true });
        assert_eq!(wanted(&state, &osds), blocking(&["rack1", "rack2"]));
        // A second OSD of the same rack goes down: nothing changes.
        osds[3] = osd("rack0", false, true);
        assert_eq!(next_state(&state, &osds, false), state);
    }

    #[test]
    fn the_blocking_budgets_stay_until_the_pgs_are_clean() {
        let state = StateMap { draining: "rack0".into(), no_out: true };
        let back = next_state(&state, &healthy(), false);
        assert_eq!(back, state, "OSDs up, PGs still recovering: no change");
        assert_eq!(wanted(&back, &healthy()), blocking(&["rack1", "rack2"]));
        let clean = next_state(&back, &healthy(), true);
        assert_eq!(wanted(&clean, &healthy()), Wanted::Default);
    }

    #[test]
    fn a_drained_node_elsewhere_moves_the_draining_domain() {
        let state = StateMap { draining: "rack0".into(), no_out: true };
        let mut osds = healthy();
        osds[1] = osd("rack1", false, true);
        let moved = next_state(&state, &osds, false);
        assert_eq!(moved, StateMap { draining: "rack1".into(), no_out: true });
        assert_eq!(wanted(&moved, &osds), blocking(&["rack0", "rack2"]));
    }

    #[test]
    fn drained_domains_take_precedence_over_merely_down_ones() {
        let mut osds = healthy();
        osds[0] = osd("rack0", false, false);
        osds[2] = osd("rack2", false, true);
        assert_eq!(next_state(&StateMap::default(), &osds, false), StateMap { draining: "rack2".into(), no_out: true });
        osds[2] = osd("rack2", true, false);
        assert_eq!(
            next_state(&StateMap::default(), &osds, false),
            StateMap { draining: "rack0".into(), no_out: false },
            "a down OSD without a drain also opens its domain"
        );
    }
}
