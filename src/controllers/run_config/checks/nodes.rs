//! `healthChecks.nodes`: hold while a node this rollout is not taking down right now (not in flight, soaking,
//! failed or skipped) is not Ready or is cordoned: another node is down already.

use super::{blocker, listed, Check, Input, Readiness, Switch};
use crate::api::{check, HealthChecks};

/// See the module.
pub struct Nodes;

impl Check for Nodes {
    fn name(&self) -> &'static str {
        check::NODES
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.nodes.enabled
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "nodes",
            shape: "`{enabled}`",
            default: "`{enabled: true}`",
            more: "A node is outside the rollout unless this rollout takes it down right now (in flight, soaking, \
                failed or skipped); cordoned means by an admin, or by the MCO updating another pool: another node is \
                down already.",
        }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let problems: Vec<String> = input
            .snapshot
            .nodes
            .values()
            .filter(|n| !input.ours.contains(n.name.as_str()))
            .filter_map(|n| match (n.ready, n.cordoned) {
                (true, false) => None,
                (false, false) => Some(format!("node {} is not Ready", n.name)),
                (true, true) => Some(format!("node {} is cordoned", n.name)),
                (false, true) => Some(format!("node {} is not Ready and cordoned", n.name)),
            })
            .collect();
        if !problems.is_empty() {
            out.blockers.push(blocker(check::NODES, listed(&problems)));
        }
    }
}
