//! Objects numo cannot decode, against the real kube-apiserver: MutexRules whose `jobSpec` nests 150, 1,000 and
//! 9,993 levels deep (the last makes the stored object, with its `managedFields`, exactly 10,000 levels deep: the
//! most the apiserver's JSON decoder reads). A running numo judges each from its watch event; then numo is restarted,
//! so it lists every kind afresh with the hostile rules among them. What a user sees: the hostile rule is marked
//! malformed with a Warning Event, run configs that reference it call it invalid and change nothing, and every other
//! rule and run config is judged and driven as if the hostile rules were not there, up to a complete rollout.
//!
//! How the apiserver's limit was found (kube-apiserver v1.34, creating rules of growing depth): a body nesting more
//! than 10,000 levels is refused (400, "exceeded max depth"); a `jobSpec` of up to 9,993 levels is stored and served;
//! one of 9,994 to 9,997 levels is accepted, but its `managedFields` (which mirror the spec five levels deeper) take
//! the stored object past 10,000, after which the apiserver itself can no longer read it: every GET, LIST and DELETE
//! of that kind fails with a 500 for every client, and only etcd can remove it. No client can see past that, so this
//! test never creates one.

mod support;

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, GetParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Resource, ResourceExt};
use numo::api::{MutexRule, MutexRunConfig, RunPhase};
use numo::guard::{self, ConditionsOf};
use serde_json::json;
use support::*;

/// How deeply each hostile rule's `jobSpec` nests.
const DEPTHS: [usize; 3] = [150, 1_000, 9_993];
/// Generous for one verdict or reconcile on a busy machine; a test that hangs fails here instead.
const WAIT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_nested_too_deep_get_a_verdict_and_blind_numo_to_nothing() -> anyhow::Result<()> {
    let mut setup = Setup::new("hostile-rules", 2).await?;
    let outcome = AssertUnwindSafe(hostile_rules(&mut setup)).catch_unwind().await;
    // Whatever happened, the hostile rules go: left behind, they would blind an operator without the guard.
    setup.kill_operator();
    let removed = remove_hostile_rules(&setup).await;
    match outcome {
        Ok(result) => result.and(removed),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

async fn hostile_rules(setup: &mut Setup) -> anyhow::Result<()> {
    setup.check_workers("steady", job_spec("1s", false), Some(job_spec("1s", false)), json!({})).await?;

    // The apiserver's own limit: a body nesting deeper than 10,000 levels is refused.
    match create_deep_rule(setup, "beyond-the-apiserver", 9_999).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 400, "{status:?}");
            assert!(status.message.contains("exceeded max depth"), "{}", status.message);
        }
        other => panic!("the apiserver accepted a rule nesting 10,001 levels deep: {other:?}"),
    }

    for depth in DEPTHS {
        let evil = format!("evil-{depth}");
        create_deep_rule(setup, &evil, depth).await?;
        if setup.operator.is_some() {
            // A running numo judges it from its watch event.
            wait_malformed(setup, &evil).await?;
        }
        // A restart: numo lists every kind afresh, the hostile rules among them; a run config created now is
        // reconciled from those lists.
        setup.kill_operator();
        setup.start_operator().await?;
        let victim = format!("victim-{depth}");
        setup.run_config(&victim, &[&evil], &["workers"], json!({})).await?;

        // The hostile rule: ValidConfig=False, Malformed, saying where and what to do, and a Warning Event.
        let judged = wait_malformed(setup, &evil).await?;
        let condition = valid_config(&judged.status.conditions).expect("ValidConfig");
        assert_eq!(condition.status, "False");
        let levels = depth + 2; // the rule itself and its spec enclose the jobSpec
        for part in [
            "The object cannot be read: spec.jobSpec.a.a…".to_string(),
            format!("nests {levels} levels deep; numo reads objects at most {} levels deep", guard::MAX_DEPTH),
            "Remove or flatten".to_string(),
        ] {
            assert!(condition.message.contains(&part), "{part:?} not in {:?}", condition.message);
        }
        let (kind, note) = wait_event(setup, &evil, "Malformed").await?;
        assert_eq!(kind, "Warning");
        assert!(note.contains(&format!("nests {levels} levels deep")), "{note}");

        // Its run config calls it invalid, not missing, and changes nothing.
        let refused = setup.wait_phase(&victim, RunPhase::Invalid, WAIT).await?;
        let status = refused.status.clone().unwrap_or_default();
        let validated = status.conditions.iter().find(|c| c.type_ == "ConfigValidated").expect("ConfigValidated");
        assert_eq!(validated.status, "False");
        let expected = format!("MutexRule {}/{evil} is invalid: malformed: spec.jobSpec.a.a… nests {levels}", setup.ns);
        assert!(validated.message.contains(&expected), "{expected:?} not in {:?}", validated.message);
        assert!(!validated.message.contains("not found"), "{}", validated.message);
        assert!(status.message.as_deref().unwrap_or_default().contains("nothing was changed"), "{status:?}");

        // Everything else goes on: a rule created now is judged, the steady run config is validated and its
        // reconciles run (its finalizer, taken away, comes back).
        let fresh = format!("fresh-{depth}");
        setup.rule(&fresh, job_spec("1s", false), None).await?;
        let rules = Api::<MutexRule>::namespaced(setup.client.clone(), &setup.ns);
        for name in ["check", fresh.as_str()] {
            numo_testkit::wait_until(&rules, name, WAIT, "ValidConfig=True", |rule: &MutexRule| {
                let conditions = rule.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
                valid_config(conditions).is_some_and(|c| c.status == "True")
            })
            .await?;
        }
        let steady = setup.wait_phase("steady", RunPhase::Idle, WAIT).await?;
        let conditions = steady.status.unwrap_or_default().conditions;
        assert!(conditions.iter().any(|c| c.type_ == "ConfigValidated" && c.status == "True"), "{conditions:?}");
        let unfinalized = json!({"metadata": {"finalizers": null}});
        setup.run_configs().patch("steady", &PatchParams::default(), &Patch::Merge(&unfinalized)).await?;
        numo_testkit::wait_until(&setup.run_configs(), "steady", WAIT, "its finalizer back", |rc: &MutexRunConfig| {
            rc.finalizers().iter().any(|f| f == numo::labels::FINALIZER)
        })
        .await?;
    }

    // The deepest rule is as deep as the apiserver serves.
    let deepest = raw_rule(setup, &format!("evil-{}", DEPTHS[2])).await?;
    assert_eq!(guard::depth::measure(&deepest, guard::MAX_DEPTH).levels, 10_000);

    // With every hostile rule in the cluster, the steady run config gates a whole rollout.
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("steady", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(done.status.and_then(|s| s.progress).as_deref(), Some("2/2"));
    for depth in DEPTHS {
        let victim = setup.run_configs().get(&format!("victim-{depth}")).await?;
        assert_eq!(victim.status.and_then(|s| s.phase), Some(RunPhase::Invalid), "victim-{depth}");
    }

    // What numo reads of a real rollout nests far less than the depth it refuses.
    for (kind, path) in [
        ("Nodes", "/api/v1/nodes".to_string()),
        ("Jobs", format!("/apis/batch/v1/namespaces/{}/jobs", setup.ns)),
        ("MachineConfigPools", "/apis/machineconfiguration.openshift.io/v1/machineconfigpools".into()),
        ("ClusterVersions", "/apis/config.openshift.io/v1/clusterversions".into()),
    ] {
        let request = kube::core::Request::new(path).list(&ListParams::default())?;
        let list = setup.client.request_text(request).await?;
        // The list and its items array enclose every object.
        let levels = guard::depth::measure(&list, guard::MAX_DEPTH).levels.saturating_sub(2);
        assert!(levels > 0 && levels <= guard::MAX_DEPTH / 2, "{kind} nest {levels} levels deep");
    }
    Ok(())
}

/// Waits until the rule `name` is marked malformed; the rule as numo can read it (its metadata and conditions).
async fn wait_malformed(setup: &Setup, name: &str) -> anyhow::Result<ConditionsOf<MutexRule>> {
    let conditions = Api::<ConditionsOf<MutexRule>>::namespaced(setup.client.clone(), &setup.ns);
    numo_testkit::wait_until(&conditions, name, WAIT, "ValidConfig Malformed", |rule| {
        valid_config(&rule.status.conditions).is_some_and(|c| c.reason == "Malformed")
    })
    .await
}

/// A `ValidConfig` condition among `conditions`.
fn valid_config(conditions: &[Condition]) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == "ValidConfig")
}

/// Creates the rule `name` whose `jobSpec` nests `depth` levels deep. The body is sent as text: building (and
/// dropping) a JSON value that deep would recurse once per level.
async fn create_deep_rule(setup: &Setup, name: &str, depth: usize) -> Result<(), kube::Error> {
    let job_spec = format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth));
    let body = format!(
        r#"{{"apiVersion":"{}","kind":"MutexRule","metadata":{{"name":"{name}","namespace":"{}"}},
            "spec":{{"jobName":"{name}","jobSpec":{job_spec}}}}}"#,
        MutexRule::api_version(&()),
        setup.ns
    );
    let request = kube::core::Request::new(MutexRule::url_path(&(), Some(&setup.ns)))
        .create(&PostParams::default(), body.into_bytes())
        .map_err(kube::Error::BuildRequest)?;
    setup.client.request_text(request).await.map(drop)
}

/// The rule `name` as the apiserver serves it, as text.
async fn raw_rule(setup: &Setup, name: &str) -> anyhow::Result<String> {
    let request =
        kube::core::Request::new(MutexRule::url_path(&(), Some(&setup.ns))).get(name, &GetParams::default())?;
    Ok(setup.client.request_text(request).await?)
}

/// Deletes the hostile rules (their answers are read as text: decoding them would fail).
async fn remove_hostile_rules(setup: &Setup) -> anyhow::Result<()> {
    for depth in DEPTHS {
        let request = kube::core::Request::new(MutexRule::url_path(&(), Some(&setup.ns)))
            .delete(&format!("evil-{depth}"), &DeleteParams::default())?;
        match setup.client.request_text(request).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// Waits for an Event with `reason` about the object `name` in the test's namespace; its type and note.
async fn wait_event(setup: &Setup, name: &str, reason: &str) -> anyhow::Result<(String, String)> {
    let events = Api::<Event>::namespaced(setup.client.clone(), &setup.ns);
    let stream = watcher::watcher(events, watcher::Config::default()).default_backoff().applied_objects();
    let found = tokio::time::timeout(WAIT, async {
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let about = event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name);
            if about && event.reason.as_deref() == Some(reason) {
                return Some((event.type_.unwrap_or_default(), event.note.unwrap_or_default()));
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(found)) => Ok(found),
        _ => anyhow::bail!("no {reason} Event about {name} within {WAIT:?}"),
    }
}
