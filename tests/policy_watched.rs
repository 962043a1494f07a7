//! numo keeps its admission policy `numo-holds` in place while it runs (docs/security.md, "What other hands may not
//! undo"), numo as installed (its own ServiceAccount and RBAC): an admin who deletes the binding or changes the
//! policy or the binding finds it put back within seconds; meanwhile every run config's `ForeignWritesRefused`
//! condition says it is not in force and what happened (False, then True again), with one Warning Event. Someone
//! who keeps deleting it is not fought: numo leaves it alone until it has been quiet, then puts it back.

mod support;

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::ResourceExt;
use numo::admission_policy::NAME;
use serde_json::json;
use support::*;
use tokio::sync::watch;

/// How long the tests wait for what numo does within seconds: a guard on a busy machine, not a measure.
const IN_TIME: Duration = Duration::from_secs(60);
/// The condition numo reports the policy in.
const REFUSED: &str = "ForeignWritesRefused";

/// The condition as a user watching the run config saw it change: `(status, reason, message)`, in order.
type Transitions = watch::Receiver<Vec<(String, String, String)>>;

/// Records every change of the run config `name`'s `ForeignWritesRefused` condition.
fn record_refused(setup: &mut Setup, name: &str) -> Transitions {
    let (sender, receiver) = watch::channel(Vec::new());
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let events = watcher(setup.run_configs(), config).default_backoff().applied_objects();
    setup.world.spawn(async move {
        let mut events = events.boxed();
        while let Some(event) = events.next().await {
            let Ok(rc) = event else { continue };
            let conditions = rc.status.map(|s| s.conditions).unwrap_or_default();
            let Some(c) = conditions.into_iter().find(|c| c.type_ == REFUSED) else { continue };
            let now = (c.status, c.reason, c.message);
            sender.send_if_modified(|seen| {
                let new = seen.last() != Some(&now);
                if new {
                    seen.push(now);
                }
                new
            });
        }
    });
    receiver
}

/// Waits until the transitions recorded after the first `from` satisfy `done`; returns those.
async fn transitions_after(
    transitions: &mut Transitions,
    from: usize,
    what: &str,
    done: impl Fn(&[(String, String, String)]) -> bool,
) -> anyhow::Result<Vec<(String, String, String)>> {
    let waited = tokio::time::timeout(IN_TIME, transitions.wait_for(|seen| done(seen.get(from..).unwrap_or_default())))
        .await
        .map(|seen| seen.map(|seen| seen.get(from..).unwrap_or_default().to_vec()));
    match waited {
        Ok(Ok(seen)) => Ok(seen),
        _ => anyhow::bail!("{what}: the condition went {:?}", transitions.borrow().get(from..).unwrap_or_default()),
    }
}

/// False (not in force) with a message that contains `said`, then True again.
fn false_then_true(said: &'static str) -> impl Fn(&[(String, String, String)]) -> bool {
    move |seen| {
        let shape: Vec<(&str, &str)> = seen.iter().map(|(s, r, _)| (s.as_str(), r.as_str())).collect();
        shape == [("False", "PolicyUnavailable"), ("True", "PolicyInForce")] && seen[0].2.contains(said)
    }
}

/// An idle run config, numo running as installed, its policy in force; and the run config's condition recorded.
async fn in_force(test: &str) -> anyhow::Result<(Setup, Transitions)> {
    let mut setup = Setup::new(test, 1).await?;
    setup.check_workers("gated", job_spec("1s", false), None, json!({})).await?;
    let mut transitions = record_refused(&mut setup, "gated");
    setup.start_operator().await?;
    let in_force = |seen: &[(String, String, String)]| seen.last().is_some_and(|(s, ..)| s == "True");
    transitions_after(&mut transitions, 0, "the policy in force at start", in_force).await?;
    Ok((setup, transitions))
}

/// The Warning Events `reason` about the run config `gated` whose note contains `said`, once there is one.
async fn warnings(setup: &Setup, reason: &str, said: &str) -> anyhow::Result<Vec<String>> {
    let matching = |events: &[(String, String, String)]| -> Vec<String> {
        events
            .iter()
            .filter(|(t, r, n)| t == "Warning" && r == reason && n.contains(said))
            .map(|e| e.2.clone())
            .collect()
    };
    Ok(matching(&setup.events_when("gated", |events| !matching(events).is_empty()).await?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_binding_is_put_back_and_the_run_config_says_so() -> anyhow::Result<()> {
    let (setup, mut transitions) = in_force("policy-deleted").await?;
    let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(setup.client.clone());
    let deleted = bindings.get(NAME).await?.uid();
    let from = transitions.borrow().len();

    // An admin deletes the binding: nothing would be refused a moment later.
    bindings.delete(NAME, &DeleteParams::default()).await?;
    let back =
        numo_testkit::wait_until(&bindings, NAME, IN_TIME, "the binding put back", move |b| b.uid() != deleted).await?;
    assert_eq!(back.spec.and_then(|s| s.validation_actions), Some(vec!["Deny".to_string()]));
    assert_eq!(back.metadata.owner_references.map(|o| o.len()), Some(1), "still owned by numo's CRD");

    let said = "the ValidatingAdmissionPolicyBinding numo-holds was deleted; numo puts it back at once";
    let seen = transitions_after(&mut transitions, from, "False, then True", false_then_true(said)).await?;
    assert!(seen[0].2.contains("numo cannot refuse other writers' changes up front"), "{seen:?}");
    // One Warning for the deletion, however often the run config was reconciled since.
    let notes = warnings(&setup, "AdmissionPolicyUnavailable", said).await?;
    assert_eq!(notes.len(), 1, "{notes:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_binding_or_policy_is_put_back_whole() -> anyhow::Result<()> {
    let (setup, mut transitions) = in_force("policy-changed").await?;
    let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(setup.client.clone());
    let policies = Api::<ValidatingAdmissionPolicy>::all(setup.client.clone());
    let by_hand = PatchParams { field_manager: Some("kubectl-patch".to_string()), ..Default::default() };

    // Audit instead of Deny, and an object selector that matches nothing: in place, but refusing nothing.
    let from = transitions.borrow().len();
    let weakened = json!({"spec": {"validationActions": ["Audit"],
                                   "matchResources": {"objectSelector": {"matchLabels": {"numo": "never"}}}}});
    bindings.patch(NAME, &by_hand, &Patch::Merge(&weakened)).await?;
    let back = numo_testkit::wait_until(&bindings, NAME, IN_TIME, "the binding put back", |b| {
        b.spec.as_ref().is_some_and(|s| s.match_resources.is_none())
    })
    .await?;
    assert_eq!(back.spec.and_then(|s| s.validation_actions), Some(vec!["Deny".to_string()]), "Audit is gone too");
    let said = "the ValidatingAdmissionPolicyBinding numo-holds was changed (spec.validationActions, \
                spec.matchResources) by kubectl-patch";
    transitions_after(&mut transitions, from, "False, then True", false_then_true(said)).await?;
    assert_eq!(warnings(&setup, "AdmissionPolicyUnavailable", said).await?.len(), 1);

    // The policy: failures let through.
    let from = transitions.borrow().len();
    policies.patch(NAME, &by_hand, &Patch::Merge(&json!({"spec": {"failurePolicy": "Ignore"}}))).await?;
    numo_testkit::wait_until(&policies, NAME, IN_TIME, "the policy put back", |p| {
        p.spec.as_ref().and_then(|s| s.failure_policy.as_deref()) == Some("Fail")
    })
    .await?;
    let said = "the ValidatingAdmissionPolicy numo-holds was changed (spec.failurePolicy) by kubectl-patch";
    transitions_after(&mut transitions, from, "False, then True", false_then_true(said)).await?;
    assert_eq!(warnings(&setup, "AdmissionPolicyUnavailable", said).await?.len(), 1);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whoever_keeps_deleting_it_is_not_fought_and_it_comes_back_when_quiet() -> anyhow::Result<()> {
    let (setup, mut transitions) = in_force("policy-contested").await?;
    let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(setup.client.clone());
    let from = transitions.borrow().len();
    // Deleted as soon as numo put it back, twice: both put back.
    for _ in 0..2 {
        let deleted = bindings.get(NAME).await?.uid();
        bindings.delete(NAME, &DeleteParams::default()).await?;
        numo_testkit::wait_until(&bindings, NAME, IN_TIME, "the binding put back", move |b| b.uid() != deleted).await?;
    }
    // A third time within a minute: numo leaves it deleted and says why.
    bindings.delete(NAME, &DeleteParams::default()).await?;
    let contested = |seen: &[(String, String, String)]| {
        seen.last().is_some_and(|(s, _, m)| {
            s == "False" && m.contains("changed 3 times by others, each within 60s of the last")
        })
    };
    let seen = transitions_after(&mut transitions, from, "contested", contested).await?;
    let message = seen.last().map(|t| t.2.clone()).unwrap_or_default();
    assert!(message.contains("numo stops putting it back until nobody changed it for 30s"), "{message}");
    assert!(bindings.get_opt(NAME).await?.is_none(), "not put back while contested");
    // Quiet for 30 s: put back, in force again.
    let from = transitions.borrow().len();
    numo_testkit::wait_until(&bindings, NAME, IN_TIME, "the binding put back once quiet", |_| true).await?;
    let in_force = |seen: &[(String, String, String)]| seen.last().is_some_and(|(s, ..)| s == "True");
    transitions_after(&mut transitions, from, "in force again", in_force).await?;
    Ok(())
}
