//! Steps 4–6 once the target pools are claimed and paused: hold every unreleased node with the rule labels, steer
//! the pools, then move each node on within the concurrency limit (gate Jobs, release, cleanup Jobs), acting on a
//! retry annotation.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::admin_hold;
use super::canary;
use super::earlier_turn;
use super::foreign::{self, Ledger};
use super::intent::Intent;
use super::node_state::{self, GatedNode, Inputs, NextJob, NodeState, Retry};
use super::notice::Notice;
use super::pools;
use super::readiness::{self, Readiness};
use super::resolve::{Resolved, Rule};
use super::target::Target;
use super::topology;
use crate::api::check;
use crate::api::{Blocker, FailurePolicy};
use crate::controllers::run_config::snapshot::{NodeView, Snapshot};
use crate::jobs::{self, JobKey, JobPhase, JobTemplate};

/// What gating decided.
pub struct Gate<'a> {
    /// Changes to make, in order.
    pub intents: Vec<Intent>,
    /// Events about retries.
    pub notices: Vec<Notice>,
    /// Every gated node, in release order.
    pub nodes: Vec<GatedNode<'a>>,
    /// Whether every held node carries the rule labels.
    pub labels_applied: bool,
    /// Whether every pool is steered.
    pub steered: bool,
    /// What holds the next node (windows, health checks, soak); None when no node waits to start.
    pub readiness: Option<Readiness>,
    /// Under `spec.topology`: the failure domains as the status shows them.
    pub topology: Option<crate::api::TopologyStatus>,
    /// When to look again by itself (a domain soak's end).
    pub requeue_after: Option<std::time::Duration>,
}

/// Plans the gating of every node. `ledger` holds the foreign changes of this reconcile: held nodes whose rule
/// labels someone removed are noted in it, and what it holds back (a fight over a pool) holds the next node.
pub fn plan<'a>(
    snapshot: &'a Snapshot,
    inputs: &Inputs<'a, '_>,
    control_plane_done: bool,
    ledger: &mut Ledger,
) -> Gate<'a> {
    let resolved = inputs.resolved;
    let mut intents = Vec::new();
    let mut notices = Vec::new();
    let mut nodes: Vec<GatedNode<'a>> = resolved.gated.iter().map(|node| node_state::gated(inputs, node)).collect();
    // Jobs with numo's labels that numo did not create (or that replaced the one it did) are told, never counted.
    for not_numos in nodes.iter().flat_map(|g| &g.not_numos) {
        ledger.saw_not_numos(&format!("Job/{}", not_numos.job), &not_numos.creator, not_numos.replaced);
    }

    // Step 4: hold every node not released with the rule labels. A skipped node is held too (or held again, if it
    // failed after its release): it stays in its paused pool, out of the canary, where a broken node would use up
    // the canary's maxUnavailable; its pool upgrades it, ungated, once restored. A config change also holds again
    // every node that reached its config: left in the canary, it would get the next MachineConfig change ungated.
    let labels = resolved.labels();
    let held_again = |g: &GatedNode<'_>| {
        inputs.target.is_config_change()
            && matches!(g.state, NodeState::CleaningUp { .. } | NodeState::Soaking { .. } | NodeState::Done { .. })
    };
    if control_plane_done {
        // An ungated node is the MCO's already: holding it now would not make it gated.
        let held = nodes
            .iter()
            .filter(|g| {
                matches!(g.state, NodeState::Skipped) || (!g.released && !matches!(g.state, NodeState::Ungated { .. }))
            })
            .map(|g| g.node);
        let relabel = label(held, &labels);
        // Labels numo had applied to every held node (or was putting back), now missing: someone removed them.
        let applied_before = ledger.relabelling()
            || crate::conditions::is_true(
                &snapshot.run_config.status.conditions,
                super::stage::condition::MUTEX_RULES_APPLIED,
            );
        if applied_before {
            // numo took the labels off itself of the nodes it released (the previous status records the release, or
            // the node done): a done node whose Jobs are gone, a node skipped after its release, a node done at the
            // target the cluster changed since. Holding those again is numo's own write, not a put-back.
            let previous = &snapshot.run_config.status;
            let released_by_numo = |node: &str| {
                previous.nodes.iter().any(|e| e.name == node && e.released_at.is_some())
                    || previous.completed_nodes.iter().any(|n| n == node)
            };
            for intent in &relabel {
                match intent {
                    Intent::LabelNode { node, .. } if !released_by_numo(node) => {
                        let who = "an unknown writer (Kubernetes keeps no record of who removes a label)";
                        ledger.saw(&format!("Node/{node}"), foreign::RULE_LABELS, who, false);
                    }
                    _ => {}
                }
            }
        }
        intents.extend(relabel);
    }
    let labels_applied = control_plane_done && intents.is_empty();
    if labels_applied {
        let again = nodes.iter().filter(|g| held_again(g)).map(|g| g.node);
        intents.extend(label(again, &labels));
    }

    // Labels of rules the spec no longer has go before the selectors stop naming them.
    for node in resolved.gated.iter().chain(&resolved.outsiders) {
        let stale: Vec<String> =
            resolved.stale_labels.iter().filter(|k| node.labels.has_rule_label(k)).cloned().collect();
        if !stale.is_empty() {
            intents.push(Intent::UnlabelNode { node: node.name.clone(), labels: stale });
        }
    }

    // Released nodes get numo's mark before the pools are steered: a node numo 0.2 released by removing its labels
    // then stays in the canary when the canary starts to select by mark.
    intents.extend(nodes.iter().filter(|g| matches!(g.state, NodeState::Releasing)).map(|g| release(resolved, g.node)));
    // A node that reached its target goes home before its cleanup starts, and a finished node at once (a config
    // change holds it again instead, above): its paused pool renders the content it runs, under the pool's own name,
    // so the move is a rename that reboots nothing; no later render of the canary (a new release, a MachineConfig)
    // reaches it after its turn's one reboot; and the canary is free to serve the next pool's config.
    if !inputs.target.is_config_change() {
        intents.extend(nodes.iter().filter(|g| home_now(resolved, inputs.target, g)).map(|g| Intent::UnlabelNode {
            node: g.node.name.clone(),
            labels: vec![crate::labels::RELEASED.to_string()],
        }));
    }

    // Step 6 first asks: a retry, and which nodes may start within the concurrency limit.
    let spec = &snapshot.run_config.spec;
    let retried = snapshot.run_config.retry.as_deref().map(|name| retry(inputs, &mut nodes, name, &mut notices));
    let hold = spec.on_failure == FailurePolicy::Hold;
    let any_failed = nodes.iter().any(|g| g.state.holds());
    let pending = nodes.iter().filter(|g| matches!(g.state, NodeState::Pending)).count();
    let taken = nodes.iter().filter(|g| g.state.takes_slot()).count();
    let free = (spec.concurrency as usize).saturating_sub(taken);
    // Under spec.topology, only the nodes the failure domains let go may start.
    let domains = resolved.domains.as_ref();
    let previous = snapshot.run_config.status.topology.as_ref();
    let waves = domains.map(|d| topology::waves(d, &nodes, previous, snapshot.now)).unwrap_or_default();
    let mut startable = topology::startable(domains, &nodes, &waves, free, snapshot.now);
    // Nodes of a pool an admin paused before numo held it wait for the admin's go-ahead.
    let admin_holds = admin_hold::keep_released(resolved, &nodes, &mut startable.nodes);
    // A node whose turn of an earlier rollout still cleans up starts its new turn once that ends.
    let finishing = earlier_turn::keep_finishing(snapshot, inputs.target, &nodes, &mut startable.nodes);
    // The canary serves one pool's config at a time: nodes of a pool with other content wait until it is empty.
    let serving = canary::serving(resolved, &nodes, &startable.nodes);
    let other_pools_wait = canary::keep_compatible(resolved, &nodes, serving, &mut startable.nodes);

    // Step 5: steer the pools once every held node is labelled, the canary to the config of the pool it serves.
    let steering = if labels_applied { pools::steer(resolved, spec.concurrency, ledger, serving) } else { Vec::new() };
    let steered = labels_applied && steering.is_empty();
    intents.extend(steering);

    // Step 6: new starts, then each node's next step.
    // The windows and health checks, whenever a node waits to start (with no free slot, the checks of the next
    // node itself are left until one frees); under DomainAtATime they are made again before each domain starts.
    let readiness = (pending > 0).then(|| {
        let next: Vec<&NodeView> = startable.nodes.iter().map(|i| nodes[*i].node).collect();
        let verdict = readiness::windows_now(snapshot, &resolved.schedule);
        let mut readiness = readiness::assess(snapshot, &verdict, &nodes, &next);
        readiness.blockers.extend(readiness::canary_blocker(resolved, inputs.target, &startable.nodes));
        readiness.blockers.extend(ledger.holding());
        readiness.blockers.extend(super::foreign::sriov_blocker(resolved.canary));
        if free == 0 {
            readiness.blockers.extend(soaking(&nodes, spec.concurrency as usize, inputs));
        }
        readiness.blockers.extend(startable.blocker.clone());
        // Only when no node of the canary's pool may start: those that may, start.
        readiness.blockers.extend(other_pools_wait.clone().filter(|_| startable.nodes.is_empty()));
        readiness.blockers.extend(admin_holds.clone().filter(|_| startable.nodes.is_empty()));
        readiness.blockers.extend(finishing.clone());
        if !readiness.blockers.is_empty() {
            // Held anyway: no need to list pods or ask Alertmanager (a window may hold for days).
            readiness.asks.clear();
        }
        readiness
    });
    let clear = readiness.as_ref().is_none_or(|r| r.blockers.is_empty() && r.asks.is_empty());
    if steered && !spec.paused && !(hold && any_failed) && clear {
        for i in &startable.nodes {
            nodes[*i].state = NodeState::Gating { next: Some(NextJob { rule: 0, attempt: 1 }) };
        }
    }
    if steered {
        for gated in nodes.iter_mut() {
            intents.extend(act(snapshot, resolved, gated, inputs.target, &mut notices));
        }
    }
    if retried.is_some() {
        // Only after the retry's Job: a failed create keeps the annotation, so the retry is not lost.
        intents.push(Intent::ClearRetry);
    }
    // The waves as this plan leaves them (a node that starts now starts its domain).
    let topology = domains.map(|d| topology::status(d, topology::waves(d, &nodes, previous, snapshot.now), &nodes));
    notices.extend(topology.as_ref().map(|now| topology::news(previous, now)).unwrap_or_default());
    let requeue_after = startable.requeue_after;
    Gate { intents, notices, nodes, labels_applied, steered, readiness, topology, requeue_after }
}

/// Whether numo takes its mark off `gated` now (trigger `Upgrade`): it carries the mark and is done, or released
/// and at its target (about to clean up, cleaning up, soaking, or failed there).
fn home_now(resolved: &Resolved<'_>, target: &Target, gated: &GatedNode<'_>) -> bool {
    let marked = gated.node.labels.release_mark() == Some(resolved.release_mark.as_str());
    let past_its_reboot = gated.released && target.reached(gated.node);
    marked && (matches!(gated.state, NodeState::Done { .. }) || past_its_reboot)
}

/// Holds each of `nodes`: the rule labels it lacks, and no release mark (a node that carries one, numo's from
/// before or anyone's, is taken back out of the canary).
fn label<'n>(nodes: impl Iterator<Item = &'n NodeView>, labels: &[String]) -> Vec<Intent> {
    nodes
        .filter_map(|node| {
            let missing: Vec<String> = labels.iter().filter(|k| !node.labels.has_rule_label(k)).cloned().collect();
            let marked = node.labels.release_mark().is_some();
            (!missing.is_empty() || marked).then(|| Intent::LabelNode { node: node.name.clone(), labels: missing })
        })
        .collect()
}

/// Releases `node` to the canary: numo's mark on, its rule labels off.
fn release(resolved: &Resolved<'_>, node: &NodeView) -> Intent {
    let labels: Vec<String> = resolved.labels().into_iter().filter(|k| node.labels.has_rule_label(k)).collect();
    Intent::ReleaseNode { node: node.name.clone(), labels, mark: resolved.release_mark.clone() }
}

/// The soak blocker, when soaking nodes take the slots a new node needs (not when nodes in flight do).
fn soaking(nodes: &[GatedNode<'_>], concurrency: usize, inputs: &Inputs<'_, '_>) -> Option<Blocker> {
    let in_flight = nodes.iter().filter(|g| g.state.in_flight()).count();
    if in_flight >= concurrency {
        return None;
    }
    let soak = inputs.soak.unwrap_or_default();
    let sentences: Vec<String> = nodes
        .iter()
        .filter_map(|g| match &g.state {
            NodeState::Soaking { since: Some(since), .. } => {
                let until = crate::windows::utc(since) + chrono::Duration::from_std(soak).unwrap_or_default();
                let until = crate::windows::shown(&until);
                Some(format!("node {} soaks until {until}", g.node.name))
            }
            NodeState::Soaking { problem: Some(problem), .. } => {
                Some(format!("the soak of node {} starts again once it is healthy: {problem}", g.node.name))
            }
            _ => None,
        })
        .collect();
    (!sentences.is_empty()).then(|| Blocker { check: check::SOAK.to_string(), message: sentences.join("; ") })
}

/// Acts on the retry annotation naming `name`; returns whether a node was retried.
fn retry(inputs: &Inputs<'_, '_>, nodes: &mut [GatedNode<'_>], name: &str, notices: &mut Vec<Notice>) -> bool {
    let Some(gated) = nodes.iter_mut().find(|g| g.node.name == name && g.state.holds()) else {
        notices.push(Notice::warning(
            "NothingToRetry",
            "Retry",
            format!("The retry annotation names {name}, which has not failed; ignored."),
        ));
        return false;
    };
    if let NodeState::Ungated { .. } = gated.state {
        gated.state = NodeState::Ungated { accepted: true };
        notices.push(Notice::warning(
            "UngatedNodeAccepted",
            "Retry",
            format!(
                "The rollout goes on past node {name} as the retry annotation asks; it was upgraded without its gate \
                 Jobs, which are not run after the fact."
            ),
        ));
        return true;
    }
    if let NodeState::Failed { retry, .. } = &gated.state {
        gated.state = match retry {
            Retry::Job(JobPhase::Gate, next) => NodeState::Gating { next: Some(*next) },
            Retry::Job(JobPhase::Cleanup, next) => NodeState::CleaningUp { next: Some(*next) },
            Retry::ResetTimer => {
                // The clock restarts now.
                gated.timer_reset = true;
                node_state::without_timeout(inputs, gated.node, &gated.records, gated.released)
            }
        };
    }
    notices.push(Notice::normal("NodeRetried", "Retry", format!("Retrying node {name} as the retry annotation asks.")));
    true
}

/// The intents that move one node on. A Job numo asks for is recorded in the node's records first (`requested`,
/// under a name drawn with the snapshot's nonce), so the status names it before it is created.
fn act(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    gated: &mut GatedNode<'_>,
    target: &Target,
    notices: &mut Vec<Notice>,
) -> Vec<Intent> {
    let (phase, next) = match &gated.state {
        NodeState::Gating { next: Some(next) } => (JobPhase::Gate, *next),
        // A cleanup Job starts only once the node is seen out of the canary (see `home_now`).
        NodeState::CleaningUp { .. } if !target.is_config_change() && home_now(resolved, target, gated) => {
            return Vec::new()
        }
        NodeState::CleaningUp { next: Some(next) } => (JobPhase::Cleanup, *next),
        _ => return Vec::new(),
    };
    let Some(rule) = resolved.rules.get(next.rule) else { return Vec::new() };
    let asked = node_state::requested(&gated.records, phase, next.rule, next.attempt).map(|r| r.name.clone());
    match render(snapshot, rule, &gated.node.name, phase, next.attempt, target, asked.as_deref()) {
        Some(Ok(job)) => {
            let name = job.metadata.name.clone().unwrap_or_default();
            let namespace = job.metadata.namespace.as_deref().unwrap_or_default();
            gated.records.insert(
                (phase, next.rule, next.attempt),
                crate::api::JobRecord {
                    namespace: crate::api::JobRecord::kept_namespace(&rule.key, namespace).to_string(),
                    name,
                    rule: rule.key.clone(),
                    phase: phase.as_str().to_string(),
                    result: crate::api::JobResult::Running,
                    attempt: next.attempt,
                    message: None,
                    uid: None,
                    requested: true,
                },
            );
            vec![Intent::CreateJob(Box::new(job))]
        }
        Some(Err(e)) => {
            notices.push(Notice::warning(
                "JobRenderFailed",
                "CreateJob",
                format!("The {} spec of MutexRule {} is not a valid JobSpec: {e}", phase.as_str(), rule.key),
            ));
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// The Job of one step, exactly as it is created, named `name` (the one numo recorded when it first asked for it),
/// else a new name drawn with the snapshot's nonce; None when the rule has no cleanup Job.
fn render(
    snapshot: &Snapshot,
    rule: &Rule<'_>,
    node: &str,
    phase: JobPhase,
    attempt: u32,
    target: &Target,
    name: Option<&str>,
) -> Option<Result<Job, serde_json::Error>> {
    let spec = match phase {
        JobPhase::Gate => &rule.found.job_spec,
        JobPhase::Cleanup => rule.found.cleanup.as_ref()?,
    };
    let rc = &snapshot.run_config;
    let key = JobKey {
        run_config_namespace: &rc.namespace,
        run_config: &rc.name,
        node,
        rollout: &target.key,
        target_version: &target.version,
        target_config: target.config_of(node),
        rule_namespace: &rule.view.namespace,
        rule: &rule.view.name,
        phase,
        attempt,
    };
    let owner = (rule.found.job_namespace == rc.namespace).then(|| OwnerReference {
        api_version: format!("{}/{}", crate::api::GROUP, crate::api::VERSION),
        kind: "MutexRunConfig".into(),
        name: rc.name.clone(),
        uid: rc.uid.clone(),
        controller: Some(true),
        block_owner_deletion: None,
    });
    let drawn;
    let name = match name {
        Some(name) => name,
        None => {
            drawn = key.job_name(&rule.found.job_name, snapshot.nonce);
            &drawn
        }
    };
    let template = JobTemplate {
        prefix: &rule.found.job_name,
        namespace: &rule.found.job_namespace,
        spec,
        owner,
        avoid_node: rc.spec.avoid_target_node,
        name,
    };
    Some(jobs::render(&key, &template))
}
