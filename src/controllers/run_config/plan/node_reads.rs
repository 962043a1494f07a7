//! Which facts of the nodes the next plan can depend on, so that the controller wakes a run config only for the node
//! changes that can change its plan: while the MCO moves 2,000 restored nodes back into their pools, their config
//! annotations change thousands of times and none of it changes what numo does.

/// What of the nodes the plan reads in the state a plan leaves the run config in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeReads {
    /// Every fact of every node: a rollout is under way, numo holds pools, or the state is out of the ordinary.
    #[default]
    Everything,
    /// Only which nodes exist, their labels (the pool each belongs to, the rule labels it carries) and their release
    /// version. Between rollouts and while the MCO moves restored nodes back into their own pools (trigger
    /// `Upgrade`, no pool held), a node's readiness, cordon and machine-config annotations change nothing numo
    /// decides: no node is released, gated or checked.
    MembershipAndVersion,
}
