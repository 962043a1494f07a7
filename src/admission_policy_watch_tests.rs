//! What numo sees of its policy and binding, and what it does about it: deleted or changed → put back; its own
//! writes → nothing; changed again and again → left alone until quiet.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};
use serde_json::json;

use super::*;
use crate::admission_policy::{binding, differences, policy};

const NUMO: &str = "system:serviceaccount:numo-system:numo-operator";

fn wanted() -> (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding) {
    (policy(NUMO, None), binding(None))
}

/// The policy as the watch shows it, at resourceVersion `version`.
fn live_policy(version: &str) -> ValidatingAdmissionPolicy {
    let mut live = policy(NUMO, None);
    live.metadata.resource_version = Some(version.to_string());
    live
}

fn live_binding(version: &str) -> ValidatingAdmissionPolicyBinding {
    let mut live = binding(None);
    live.metadata.resource_version = Some(version.to_string());
    live
}

/// The binding at `version` with `spec` merged in, last changed by `manager`.
fn changed_binding(version: &str, spec: serde_json::Value, manager: &str) -> ValidatingAdmissionPolicyBinding {
    let mut value = serde_json::to_value(live_binding(version)).unwrap_or_default();
    for (key, field) in spec.as_object().into_iter().flatten() {
        value["spec"][key] = field.clone();
    }
    let mut changed: ValidatingAdmissionPolicyBinding = serde_json::from_value(value).unwrap_or_default();
    let entry = |manager: &str, secs: i64| ManagedFieldsEntry {
        manager: Some(manager.to_string()),
        time: Some(Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap_or_default())),
        ..Default::default()
    };
    changed.metadata.managed_fields = Some(vec![entry(FIELD_MANAGER, 100), entry(manager, 200), entry("older", 50)]);
    changed
}

fn written(policy: &[&str], binding: &[&str]) -> Written {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    Written { policy: owned(policy), binding: owned(binding) }
}

/// A keeper that put both in place at start (policy "1", binding "2") and saw them listed.
fn started(now: Instant) -> Keeper {
    let mut keeper = Keeper::default();
    keeper.wrote(&written(&["1"], &["2"]));
    let verdict = keeper.judge((Some(&live_policy("1")), Some(&live_binding("2"))), &wanted(), now);
    assert_eq!(verdict, Verdict::InPlace);
    keeper
}

#[test]
fn what_numo_applies_compares_equal_and_what_matters_does_not() {
    let (policy, binding) = wanted();
    assert_eq!(differences(&policy, &policy), Vec::<&str>::new());
    assert_eq!(differences(&binding, &binding), Vec::<&str>::new());
    // Metadata, status and fields that decide nothing are not compared.
    let mut relabelled = live_policy("9");
    relabelled.metadata.labels = None;
    relabelled.status = Some(Default::default());
    assert_eq!(differences(&relabelled, &policy), Vec::<&str>::new());
    // The binding: its actions, where it applies, its parameters, which policy.
    for (spec, field) in [
        (json!({"validationActions": ["Audit"]}), "validationActions"),
        (json!({"validationActions": ["Audit", "Deny"]}), "validationActions"),
        (json!({"matchResources": {"objectSelector": {"matchLabels": {"never": "x"}}}}), "matchResources"),
        (json!({"paramRef": {"name": "x", "parameterNotFoundAction": "Allow"}}), "paramRef"),
        (json!({"policyName": "other"}), "policyName"),
    ] {
        assert_eq!(differences(&changed_binding("9", spec.clone(), "kubectl-patch"), &binding), [field], "{spec}");
    }
    // The policy: every field that decides what it refuses.
    let mut audit = policy.clone();
    if let Some(spec) = audit.spec.as_mut() {
        spec.failure_policy = Some("Ignore".to_string());
        spec.validations = Some(Vec::new());
    }
    assert_eq!(differences(&audit, &policy), ["failurePolicy", "validations"]);
    let mut narrowed = policy.clone();
    if let Some(constraints) = narrowed.spec.as_mut().and_then(|s| s.match_constraints.as_mut()) {
        constraints.object_selector =
            Some(serde_json::from_value(json!({"matchLabels": {"never": "x"}})).unwrap_or_default());
    }
    assert_eq!(differences(&narrowed, &policy), ["matchConstraints"]);
}

#[test]
fn a_deleted_binding_is_put_back_and_numos_own_write_is_not_a_change() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let policy = live_policy("1");
    let verdict = keeper.judge((Some(&policy), None), &wanted(), t0);
    assert_eq!(verdict, Verdict::PutBack("the ValidatingAdmissionPolicyBinding numo-holds was deleted".into()));
    keeper.wrote(&written(&["1"], &["5"]));
    // The watch has not shown numo's write yet: still missing, yet no second write.
    assert_eq!(keeper.judge((Some(&policy), None), &wanted(), t0), Verdict::InPlace);
    // Its echo, and the API server's status writes to the policy, are numo's or change nothing.
    assert_eq!(keeper.judge((Some(&policy), Some(&live_binding("5"))), &wanted(), t0), Verdict::InPlace);
    let mut checked = live_policy("6");
    checked.status = Some(Default::default());
    assert_eq!(keeper.judge((Some(&checked), Some(&live_binding("5"))), &wanted(), t0), Verdict::InPlace);
    // Deleted again once the watch showed it back: a new change.
    assert!(matches!(keeper.judge((Some(&checked), None), &wanted(), t0), Verdict::PutBack(_)));
}

#[test]
fn numos_own_writes_never_start_another_even_if_they_differ_on_the_way() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let audit = changed_binding("7", json!({"validationActions": ["Audit"]}), "kubectl-patch");
    let policy = live_policy("1");
    let Verdict::PutBack(what) = keeper.judge((Some(&policy), Some(&audit)), &wanted(), t0) else {
        panic!("a changed binding is put back")
    };
    assert_eq!(
        what,
        "the ValidatingAdmissionPolicyBinding numo-holds was changed (spec.validationActions) by kubectl-patch"
    );
    // numo's server-side apply leaves the other writer's value ("8"), its replace puts the spec back whole ("9").
    keeper.wrote(&written(&["1"], &["8", "9"]));
    let halfway = changed_binding("8", json!({"validationActions": ["Audit", "Deny"]}), "kubectl-patch");
    for shown in [&audit, &halfway] {
        assert_eq!(keeper.judge((Some(&policy), Some(shown)), &wanted(), t0), Verdict::InPlace);
    }
    assert_eq!(keeper.judge((Some(&policy), Some(&live_binding("9"))), &wanted(), t0), Verdict::InPlace);
}

#[test]
fn what_the_watch_shows_before_numos_write_arrives_is_no_new_change() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let binding = live_binding("2");
    // Another writer lets failures through (generation 2); the API server's type check writes the policy's status
    // (a new resourceVersion, the same generation) before numo's write arrives in the watch.
    let ignoring = |version: &str| {
        let mut live = live_policy(version);
        live.metadata.uid = Some("u1".to_string());
        live.metadata.generation = Some(2);
        if let Some(spec) = live.spec.as_mut() {
            spec.failure_policy = Some("Ignore".to_string());
        }
        live
    };
    let verdict = keeper.judge((Some(&ignoring("7")), Some(&binding)), &wanted(), t0);
    assert_eq!(
        verdict,
        Verdict::PutBack(
            "the ValidatingAdmissionPolicy numo-holds was changed (spec.failurePolicy) by someone other than numo"
                .into()
        )
    );
    keeper.wrote(&written(&["9"], &["2"]));
    let mut checked = ignoring("8");
    checked.status = Some(Default::default());
    assert_eq!(keeper.judge((Some(&checked), Some(&binding)), &wanted(), t0), Verdict::InPlace);
    assert_eq!(keeper.judge((Some(&live_policy("9")), Some(&binding)), &wanted(), t0), Verdict::InPlace);
    assert_eq!(keeper.policy.series.map(|s| s.changes), Some(1), "one change, counted once");

    // Not put back (numo could not, say): the API server's status writes are no further changes.
    let mut keeper = started(t0);
    assert!(matches!(keeper.judge((Some(&ignoring("7")), Some(&binding)), &wanted(), t0), Verdict::PutBack(_)));
    assert!(matches!(keeper.judge((Some(&checked), Some(&binding)), &wanted(), t0), Verdict::PutBack(_)));
    assert_eq!(keeper.policy.series.map(|s| s.changes), Some(1));
}

#[test]
fn changed_again_and_again_it_is_left_alone_until_quiet() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let policy = live_policy("1");
    let mut version = 10;
    let mut delete_and_put_back = |keeper: &mut Keeper, at: Instant| {
        let verdict = keeper.judge((Some(&policy), None), &wanted(), at);
        if matches!(verdict, Verdict::PutBack(_)) {
            version += 1;
            keeper.wrote(&written(&["1"], &[&version.to_string()]));
            let back = live_binding(&version.to_string());
            assert_eq!(keeper.judge((Some(&policy), Some(&back)), &wanted(), at), Verdict::InPlace);
        }
        verdict
    };
    let second = Duration::from_secs(1);
    assert!(matches!(delete_and_put_back(&mut keeper, t0), Verdict::PutBack(_)));
    assert!(matches!(delete_and_put_back(&mut keeper, t0 + 20 * second), Verdict::PutBack(_)));
    let third = t0 + 40 * second;
    let Verdict::Contested { what, until } = delete_and_put_back(&mut keeper, third) else {
        panic!("a third deletion within a minute is a fight")
    };
    assert_eq!(until, third + QUIET);
    assert!(
        what.starts_with(
            "the ValidatingAdmissionPolicyBinding numo-holds was deleted: changed 3 times by others, each within 60s \
             of the last, so numo stops putting it back"
        ),
        "{what}"
    );
    assert!(what.contains("until nobody changed it for 30s"), "{what}");
    // Still missing, the same change: not counted again, and left alone until quiet.
    let still = keeper.judge((Some(&policy), None), &wanted(), third + 10 * second);
    assert!(matches!(still, Verdict::Contested { until: u, .. } if u == until));
    assert!(matches!(keeper.judge((Some(&policy), None), &wanted(), until), Verdict::PutBack(_)));
}

#[test]
fn changes_far_apart_are_never_a_fight() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let policy = live_policy("1");
    for n in 0..5u32 {
        let at = t0 + (SERIES_GAP + Duration::from_secs(1)) * n;
        assert!(matches!(keeper.judge((Some(&policy), None), &wanted(), at), Verdict::PutBack(_)), "{n}");
        let version = format!("b{n}");
        keeper.wrote(&written(&["1"], &[&version]));
        assert_eq!(keeper.judge((Some(&policy), Some(&live_binding(&version))), &wanted(), at), Verdict::InPlace);
    }
}

#[test]
fn never_put_in_place_is_not_a_deletion_and_a_new_list_shows_what_is_there() {
    let t0 = Instant::now();
    let mut keeper = Keeper::default();
    let verdict = keeper.judge((None, None), &wanted(), t0);
    assert_eq!(
        verdict,
        Verdict::PutBack(
            "the ValidatingAdmissionPolicy numo-holds is not in place and the ValidatingAdmissionPolicyBinding \
             numo-holds is not in place"
                .into()
        )
    );
    // Failing again and again at start is no fight.
    for n in 1..10u64 {
        assert!(matches!(keeper.judge((None, None), &wanted(), t0 + Duration::from_secs(n)), Verdict::PutBack(_)));
    }
    // numo's write, then a new list of the watch without it (deleted while the watch was down): a deletion.
    keeper.wrote(&written(&["1"], &["2"]));
    assert_eq!(keeper.judge((None, None), &wanted(), t0), Verdict::InPlace, "numo's write on its way");
    keeper.relisted();
    assert!(matches!(keeper.judge((None, None), &wanted(), t0), Verdict::PutBack(w) if w.contains("was deleted")));
}

#[test]
fn the_sentences_name_what_happened_and_what_numo_does() {
    let what = "the ValidatingAdmissionPolicyBinding numo-holds was deleted";
    let back = putting_back(what);
    assert!(back.starts_with(what) && back.contains("numo puts it back at once"), "{back}");
    let failed = could_not(what, "numo is not allowed to create", Duration::from_secs(5));
    assert_eq!(
        failed,
        "the ValidatingAdmissionPolicyBinding numo-holds was deleted, and numo could not put it back: numo is not \
         allowed to create; numo tries again in 5s"
    );
}

#[test]
fn a_write_the_watch_never_shows_does_not_keep_numo_from_seeing_later_changes() {
    let t0 = Instant::now();
    let mut keeper = started(t0);
    let binding = live_binding("2");
    // numo's write returned version 9, which the watch never shows (a relist from a cache went past it, say).
    keeper.wrote(&written(&["9"], &["2"]));
    let mut ignoring = live_policy("11");
    ignoring.metadata.generation = Some(3);
    if let Some(spec) = ignoring.spec.as_mut() {
        spec.failure_policy = Some("Ignore".to_string());
    }
    // Meanwhile what the watch shows may be from before numo's write: no new change yet.
    assert_eq!(keeper.judge((Some(&ignoring), Some(&binding)), &wanted(), t0), Verdict::InPlace);
    let until = keeper.awaiting_until().expect("numo looks again by itself");
    assert_eq!(until, t0 + AWAIT_WRITE);
    let before = until - Duration::from_millis(1);
    assert_eq!(keeper.judge((Some(&ignoring), Some(&binding)), &wanted(), before), Verdict::InPlace);
    // Waited long enough: the change is seen, and put back.
    assert!(matches!(keeper.judge((Some(&ignoring), Some(&binding)), &wanted(), until), Verdict::PutBack(_)));
    assert_eq!(keeper.awaiting_until(), None, "nothing awaited any more");
}
