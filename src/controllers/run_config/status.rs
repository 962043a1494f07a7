//! Writes a run config's status and publishes the plan's Events.
//!
//! A status write sends what changed, not the whole status: a JSON Patch that sets each top-level field that
//! changed, writes the nodes in flight and the conditions entry by entry, and appends the names of newly finished
//! nodes (the finished-node lists only grow during a rollout, see `History::in_finishing_order`), guarded by a
//! `test` of the resourceVersion it was computed from. At thousands of
//! nodes the whole status is tens of kilobytes, and writing it whole on every node transition made status traffic
//! grow with the square of the pool. A write whose base is stale (the `test` fails) is sent again whole.
//!
//! [`Written`] remembers each write until the watch delivers it, so the next reconcile plans from the status numo
//! just wrote, even when its cache still shows the one before.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{json, Value};

use super::plan::{Notice, Plan};
use crate::api::{JobResult, MutexRunConfig, MutexRunConfigStatus, NodePhase, Trigger};
use crate::events::{self, Recorder, Said};
use crate::metrics::{AwaitingAdmin, Metrics};
use crate::{Error, Result};

/// Field manager of the run-config status.
pub const STATUS_MANAGER: &str = "numo-run-config-status";

/// The status fields that only grow during a rollout, written by appending.
const APPENDED: [&str; 2] = ["completedNodes", "skippedNodes"];
/// The status lists of objects with a key, written entry by entry: the nodes in flight (by name) and the conditions
/// (by type).
const KEYED: [(&str, &str); 2] = [("nodes", "name"), ("conditions", "type")];

/// The status numo last wrote to each run config (by UID), until its cache shows that write.
#[derive(Debug, Default)]
pub struct Written(Mutex<HashMap<String, Write>>);

/// numo's latest status write to a run config: the resourceVersions its writes since the cache last caught up
/// replaced, the one the latest made, and the status it left.
#[derive(Debug)]
struct Write {
    superseded: Vec<String>,
    made: String,
    status: MutexRunConfigStatus,
}

/// The most resourceVersions remembered as superseded (the cache catches up long before).
const MAX_SUPERSEDED: usize = 64;

impl Written {
    /// `rc` with the status numo last wrote, when the cache still shows the object as it was before one of numo's
    /// writes since the cache last caught up; `None` when the cache shows numo's latest write or a later change by
    /// anyone, so `rc` is what to plan from.
    pub fn latest(&self, rc: &MutexRunConfig) -> Option<MutexRunConfig> {
        let uid = rc.uid()?;
        let version = rc.resource_version()?;
        let mut written = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let write = written.get(&uid)?;
        if !write.superseded.contains(&version) {
            written.remove(&uid);
            return None;
        }
        let mut latest = rc.clone();
        latest.metadata.resource_version = Some(write.made.clone());
        latest.status = Some(write.status.clone());
        Some(latest)
    }

    /// Remembers a write that replaced resourceVersion `replaced` with `made`.
    fn remember(&self, uid: String, replaced: String, made: String, status: MutexRunConfigStatus) {
        let mut written = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Built on numo's own previous write: whatever that one superseded is older still.
        let mut superseded = match written.remove(&uid) {
            Some(previous) if previous.made == replaced => previous.superseded,
            _ => Vec::new(),
        };
        superseded.push(replaced);
        if superseded.len() > MAX_SUPERSEDED {
            superseded.remove(0);
        }
        written.insert(uid, Write { superseded, made, status });
    }

    /// Forgets a run config that is gone.
    pub fn forget(&self, rc: &MutexRunConfig) {
        if let Some(uid) = rc.uid() {
            self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&uid);
        }
    }
}

/// Writes `status` unless the object already has exactly it: the changes since `rc`'s status when there is one,
/// else (or when `rc` turns out stale) the whole status.
pub async fn write(
    client: &kube::Client,
    metrics: &Metrics,
    written: &Written,
    rc: &MutexRunConfig,
    status: &MutexRunConfigStatus,
) -> Result<()> {
    if rc.status.as_ref() == Some(status) {
        return Ok(());
    }
    let namespace = rc.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let api: Api<MutexRunConfig> = Api::namespaced(client.clone(), &namespace);
    let changes = match (&rc.status, rc.resource_version()) {
        (Some(previous), Some(version)) => Some(changes(previous, status, &version)?),
        _ => None,
    };
    let written_object = match changes {
        Some(ops) => match send(&api, metrics, &rc.name_any(), ops).await {
            // The base was stale (someone else wrote the object since): send the whole status.
            Err(kube::Error::Api(response)) if response.code == 422 || response.code == 409 => None,
            other => Some(other?),
        },
        None => None,
    };
    let written_object = match written_object {
        Some(object) => object,
        None => send(&api, metrics, &rc.name_any(), whole(status)?).await?,
    };
    if let (Some(uid), Some(replaced), Some(made)) =
        (rc.uid(), rc.resource_version(), written_object.resource_version())
    {
        written.remember(uid, replaced, made, written_object.status.unwrap_or_default());
    }
    Ok(())
}

async fn send(
    api: &Api<MutexRunConfig>,
    metrics: &Metrics,
    name: &str,
    ops: Vec<Value>,
) -> std::result::Result<MutexRunConfig, kube::Error> {
    let body = Value::Array(ops);
    metrics.status_written(body.to_string().len());
    let patch: json_patch::Patch = serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
    let params = PatchParams { field_manager: Some(STATUS_MANAGER.into()), ..Default::default() };
    api.patch_status(name, &params, &Patch::<()>::Json(patch)).await
}

/// The JSON Patch that replaces the whole status.
fn whole(status: &MutexRunConfigStatus) -> Result<Vec<Value>> {
    Ok(vec![json!({"op": "add", "path": "/status", "value": status})])
}

/// The JSON Patch from `previous` (the status of resourceVersion `version`) to `next`: a test of the
/// resourceVersion, then each top-level field that changed — set, removed, written entry by entry (the nodes in
/// flight, the conditions) or, for the finished-node lists, with the new names appended.
fn changes(previous: &MutexRunConfigStatus, next: &MutexRunConfigStatus, version: &str) -> Result<Vec<Value>> {
    let (Value::Object(before), Value::Object(after)) = (serde_json::to_value(previous)?, serde_json::to_value(next)?)
    else {
        return whole(next);
    };
    let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": version})];
    for (field, value) in &after {
        let path = format!("/status/{field}");
        match (before.get(field), value) {
            (Some(old), new) if old == new => {}
            (Some(Value::Array(old)), Value::Array(new))
                if APPENDED.contains(&field.as_str()) && new.starts_with(old) =>
            {
                for name in &new[old.len()..] {
                    ops.push(json!({"op": "add", "path": format!("{path}/-"), "value": name}));
                }
            }
            (Some(Value::Array(old)), Value::Array(new)) => {
                let key = KEYED.iter().find(|(f, _)| f == field).map(|(_, key)| *key);
                match key.and_then(|key| keyed_changes(&path, key, old, new)) {
                    Some(entry_ops) => ops.extend(entry_ops),
                    None => ops.push(json!({"op": "add", "path": path, "value": value})),
                }
            }
            _ => ops.push(json!({"op": "add", "path": path, "value": value})),
        }
    }
    for field in before.keys().filter(|f| !after.contains_key(*f)) {
        ops.push(json!({"op": "remove", "path": format!("/status/{field}")}));
    }
    Ok(ops)
}

/// Logs what a person would want to follow at INFO level: each phase change, and each Event's sentence.
pub fn log_transitions(rc: &MutexRunConfig, plan: &Plan) {
    let before = rc.status.as_ref().and_then(|s| s.phase);
    if before != plan.status.phase {
        tracing::info!(from = ?before, to = ?plan.status.phase, message = plan.status.message.as_deref().unwrap_or_default(), "phase changed");
    }
    for notice in &plan.notices {
        if notice.warning {
            tracing::warn!(reason = notice.reason, "{}", notice.note);
        } else {
            tracing::info!(reason = notice.reason, "{}", notice.note);
        }
    }
}

/// Queues the plan's Events about `rc`, those of one kind together ([`super::plan::aggregated`]); the recorder's
/// task publishes them: a rollout never waits for an Event.
pub fn publish(recorder: &Recorder, rc: &MutexRunConfig, notices: &[Notice]) {
    for notice in &super::plan::aggregated(notices) {
        let said =
            Said { warning: notice.warning, reason: notice.reason, action: notice.action, note: notice.note.clone() };
        events::publish_later(recorder, rc, said);
    }
}

/// Updates the metrics from the status just planned: nodes by phase, what holds the rollout and the pools and since
/// when, what waits for an admin, whether others contest numo's hold, and — each counted once per rollout, however
/// often a lagging cache shows the same transition — Jobs that finished, nodes that finished and how long they took.
pub fn record_metrics(
    metrics: &Metrics,
    rc: &MutexRunConfig,
    status: &MutexRunConfigStatus,
    finished_jobs: &[crate::api::JobRecord],
    now: Timestamp,
) {
    let key = format!("{}/{}", rc.namespace().unwrap_or_default(), rc.name_any());
    let previous = rc.status.clone().unwrap_or_default();
    let mut counts: BTreeMap<NodePhase, u32> = BTreeMap::new();
    for entry in &status.nodes {
        *counts.entry(entry.phase).or_default() += 1;
    }
    counts.insert(NodePhase::Pending, status.pending_nodes);
    counts.insert(NodePhase::Done, status.completed_nodes.len() as u32);
    counts.insert(NodePhase::Skipped, status.skipped_nodes.len() as u32);
    for phase in NodePhase::ALL {
        metrics.set_nodes_by_phase(&key, phase, counts.get(&phase).copied().unwrap_or(0));
    }
    for check in crate::api::check::ALL {
        metrics.set_check_blocking(&key, check, status.blocked_by.iter().any(|b| b.check == check));
    }
    let overdue = crate::conditions::is_true(&status.conditions, super::plan::condition::CONFIG_CHANGE_OVERDUE);
    metrics.set_config_change_overdue(&key, rc.spec.trigger, overdue);
    let next_minor = crate::conditions::is_true(&status.conditions, super::plan::condition::NEXT_MINOR_UPDATE_HELD);
    metrics.set_next_minor_held(&key, next_minor);
    metrics.set_estimated_end(&key, status.estimate.as_ref().map(|e| e.end.0.as_second()));
    metrics.set_held_since(&key, status.held_since.as_ref().map(|t| t.0.as_second()));
    metrics.set_pools_paused_since(&key, pools_paused_since(rc.spec.trigger, status));
    metrics.set_held_pools(&key, status.held_pools.len());
    let awaiting =
        |phase: NodePhase| status.nodes.iter().filter(|e| e.phase == phase && e.accepted_at.is_none()).count() as u32;
    let skipped_behind = crate::conditions::find(&status.conditions, super::plan::condition::NODE_UPGRADE)
        .is_some_and(|c| c.status == "False" && c.reason == super::plan::condition::SKIPPED_NODE_NOT_UPDATED);
    let awaiting = AwaitingAdmin {
        failed: awaiting(NodePhase::Failed),
        ungated: awaiting(NodePhase::Ungated),
        skipped: if skipped_behind { status.skipped_nodes.len() as u32 } else { 0 },
    };
    metrics.set_nodes_awaiting_admin(&key, awaiting);
    let contested = crate::conditions::find(&status.conditions, super::plan::condition::CONTESTED)
        .filter(|c| c.status == "True")
        .map(|c| c.reason.as_str());
    metrics.set_contested(&key, contested);
    let rollout = status.rollout_key();
    for job in finished_jobs {
        let what = format!("job {} {:?}", job.name, job.result);
        if job.result != JobResult::Running && metrics.first_count(&key, rollout, &what) {
            metrics.job_finished(if job.phase == "gate" { "gate" } else { "cleanup" }, job.result);
        }
    }
    if previous.rollout_key() != status.rollout_key() {
        return;
    }
    let seconds = |name: &str| {
        previous
            .nodes
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.started_at.as_ref())
            .and_then(|t| std::time::Duration::try_from(now.duration_since(t.0)).ok())
            .map_or(0.0, |d| d.as_secs_f64())
    };
    let completed: std::collections::HashSet<&str> = status.completed_nodes.iter().map(String::as_str).collect();
    let skipped: std::collections::HashSet<&str> = status.skipped_nodes.iter().map(String::as_str).collect();
    for entry in &previous.nodes {
        let outcome = if completed.contains(entry.name.as_str()) {
            "done"
        } else if skipped.contains(entry.name.as_str()) {
            "skipped"
        } else {
            continue;
        };
        if metrics.first_count(&key, rollout, &format!("node {} {outcome}", entry.name)) {
            metrics.node_finished(outcome, seconds(&entry.name));
        }
    }
    for entry in status.nodes.iter().filter(|e| e.phase == NodePhase::Failed) {
        let failure = format!("node {} failed {:?}", entry.name, entry.finished_at);
        if metrics.first_count(&key, rollout, &failure) {
            metrics.node_finished("failed", seconds(&entry.name));
        }
    }
}

/// Since when the paused target pools hold back an update (Unix seconds): while `TargetPoolsPaused` is True, under
/// `Upgrade` since it turned True (numo pauses them for a rollout only), under `AnyConfigChange` (where they stay
/// paused while the run config exists) since a target node fell behind its pool's rendered config, if one is.
fn pools_paused_since(trigger: Trigger, status: &MutexRunConfigStatus) -> Option<i64> {
    let paused = crate::conditions::find(&status.conditions, super::plan::condition::TARGET_POOLS_PAUSED)
        .filter(|c| c.status == "True")?;
    let paused_at = paused.last_transition_time.0.as_second();
    match trigger {
        Trigger::Upgrade => Some(paused_at),
        Trigger::AnyConfigChange => {
            let behind = status.target_config.as_ref()?.behind_since.as_ref()?;
            Some(behind.0.as_second().max(paused_at))
        }
    }
}

/// The operations that turn the list `old` into `new` entry by entry, when `new` is what is left of `old` (in its
/// order) followed by new entries: removals, then each kept entry that changed, then the new ones appended. Every
/// touched entry's key is tested first, so an entry never lands on another's place. `None` when the entries were
/// reordered (or a key is missing): the caller sets the whole list.
fn keyed_changes(path: &str, key: &str, old: &[Value], new: &[Value]) -> Option<Vec<Value>> {
    let key_of = |entry: &Value| entry.get(key).and_then(Value::as_str).map(str::to_string);
    let old_keys: Vec<String> = old.iter().map(key_of).collect::<Option<_>>()?;
    let new_keys: Vec<String> = new.iter().map(key_of).collect::<Option<_>>()?;
    let kept: Vec<usize> = (0..old.len()).filter(|&i| new_keys.contains(&old_keys[i])).collect();
    if kept.len() > new.len() || kept.iter().zip(&new_keys).any(|(&i, k)| &old_keys[i] != k) {
        return None;
    }
    let mut ops = Vec::new();
    for index in (0..old.len()).rev().filter(|i| !kept.contains(i)) {
        ops.push(json!({"op": "test", "path": format!("{path}/{index}/{key}"), "value": old_keys[index]}));
        ops.push(json!({"op": "remove", "path": format!("{path}/{index}")}));
    }
    for (index, &was) in kept.iter().enumerate() {
        if old[was] != new[index] {
            ops.push(json!({"op": "test", "path": format!("{path}/{index}/{key}"), "value": new_keys[index]}));
            ops.push(json!({"op": "replace", "path": format!("{path}/{index}"), "value": new[index]}));
        }
    }
    for entry in &new[kept.len()..] {
        ops.push(json!({"op": "add", "path": format!("{path}/-"), "value": entry}));
    }
    Some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(completed: usize, phase: RunPhase) -> MutexRunConfigStatus {
        MutexRunConfigStatus {
            phase: Some(phase),
            progress: Some(format!("{completed}/2000")),
            total_nodes: 2000,
            completed_nodes: (0..completed).map(|i| format!("worker-{i}")).collect(),
            ..Default::default()
        }
    }

    /// `ops` applied to an object with status `previous` at resourceVersion `version`.
    fn applied(previous: &MutexRunConfigStatus, version: &str, ops: Vec<Value>) -> Option<MutexRunConfigStatus> {
        let mut object = json!({"metadata": {"resourceVersion": version}, "status": previous});
        let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops)).ok()?;
        json_patch::patch(&mut object, &patch).ok()?;
        serde_json::from_value(object["status"].take()).ok()
    }

    use crate::api::RunPhase;

    #[test]
    fn a_write_sends_the_changed_fields_and_appends_finished_nodes() {
        let (before, after) = (status(1500, RunPhase::Upgrading), status(1502, RunPhase::Upgrading));
        let ops = changes(&before, &after, "41").unwrap_or_default();
        assert_eq!(applied(&before, "41", ops.clone()), Some(after.clone()));
        assert_eq!(ops[0], json!({"op": "test", "path": "/metadata/resourceVersion", "value": "41"}));
        let appended: Vec<&Value> = ops.iter().filter(|op| op["path"] == "/status/completedNodes/-").collect();
        assert_eq!(appended.len(), 2, "{ops:?}");
        let size = Value::Array(ops).to_string().len();
        assert!(size < 400, "{size} bytes for two finished nodes of 1,502");
    }

    #[test]
    fn a_stale_base_fails_the_test_and_removed_fields_are_removed() {
        let mut before = status(3, RunPhase::Completed);
        before.finished_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH));
        let after = status(0, RunPhase::Idle);
        let ops = changes(&before, &after, "7").unwrap_or_default();
        assert_eq!(applied(&before, "7", ops.clone()), Some(after));
        assert_eq!(applied(&before, "8", ops), None, "the object changed since: the patch must not apply");
    }

    fn in_flight(names: &[&str], phase: NodePhase) -> Vec<crate::api::NodeProgress> {
        names.iter().map(|n| crate::api::NodeProgress { name: n.to_string(), phase, ..Default::default() }).collect()
    }

    #[test]
    fn nodes_in_flight_are_written_entry_by_entry() {
        let mut before = status(10, RunPhase::Upgrading);
        before.nodes = in_flight(&["a", "b", "c", "d"], NodePhase::Gating);
        let mut after = before.clone();
        // b finished, c moved on, e and f started.
        after.nodes = in_flight(&["a", "c", "d", "e", "f"], NodePhase::Gating);
        after.nodes[1].phase = NodePhase::Released;
        let ops = changes(&before, &after, "3").unwrap_or_default();
        assert_eq!(applied(&before, "3", ops.clone()), Some(after.clone()));
        let untouched = ["/status/nodes/0", "/status/nodes/2"];
        assert!(ops.iter().all(|op| !untouched.contains(&op["path"].as_str().unwrap_or_default())), "{ops:?}");
        assert!(!ops.iter().any(|op| op["path"] == "/status/nodes"), "{ops:?}");
        // Reordered entries are set as a whole list.
        let mut reordered = before.clone();
        reordered.nodes.swap(0, 1);
        let ops = changes(&before, &reordered, "3").unwrap_or_default();
        assert_eq!(applied(&before, "3", ops.clone()), Some(reordered));
        assert!(ops.iter().any(|op| op["path"] == "/status/nodes"), "{ops:?}");
    }

    fn object(version: &str, completed: usize) -> MutexRunConfig {
        let spec = json!({"canary": {"name": "canary"}, "mutexRules": [], "mutexTargets": []});
        let mut rc = MutexRunConfig::new("rc", serde_json::from_value(spec).unwrap_or_else(|e| panic!("{e}")));
        rc.metadata.uid = Some("u".into());
        rc.metadata.resource_version = Some(version.into());
        rc.status = Some(status(completed, RunPhase::Upgrading));
        rc
    }

    #[test]
    fn plans_start_from_numos_latest_write_until_the_cache_shows_it() {
        let written = Written::default();
        written.remember("u".into(), "1".into(), "2".into(), status(1, RunPhase::Upgrading));
        written.remember("u".into(), "2".into(), "3".into(), status(2, RunPhase::Upgrading));
        for behind in ["1", "2"] {
            let latest =
                written.latest(&object(behind, 0)).unwrap_or_else(|| panic!("the cache at {behind} is behind"));
            assert_eq!(latest.metadata.resource_version.as_deref(), Some("3"));
            assert_eq!(latest.status.map(|s| s.completed_nodes.len()), Some(2));
        }
        assert!(written.latest(&object("3", 2)).is_none(), "the cache caught up");
        assert!(written.latest(&object("1", 0)).is_none(), "forgotten once caught up");
        written.remember("u".into(), "4".into(), "5".into(), status(3, RunPhase::Upgrading));
        assert!(written.latest(&object("6", 3)).is_none(), "someone wrote after numo: the cache is newer");
    }

    #[test]
    fn every_check_that_holds_the_next_node_sets_its_metric() {
        use crate::api::check;
        let metrics = Metrics::default();
        let mut rc = object("1", 0);
        rc.metadata.namespace = Some("ops".into());
        let held = MutexRunConfigStatus {
            blocked_by: [check::ALERTS, check::CUSTOM, check::CANARY_CONFIG, check::SOAK]
                .iter()
                .map(|c| crate::api::Blocker { check: c.to_string(), message: "x".into() })
                .collect(),
            ..Default::default()
        };
        record_metrics(&metrics, &rc, &held, &[], Timestamp::UNIX_EPOCH);
        let text = metrics.encode().unwrap_or_default();
        for check in [check::ALERTS, check::CUSTOM, check::CANARY_CONFIG, check::SOAK] {
            let line = format!(r#"numo_health_check_blocking{{run_config="ops/rc",check="{check}"}} 1"#);
            assert!(text.contains(&line), "{check} is not reported:\n{text}");
        }
        let quiet = format!(r#"numo_health_check_blocking{{run_config="ops/rc",check="{}"}} 0"#, check::NODES);
        assert!(text.contains(&quiet), "{text}");
    }

    fn condition(type_: &str, status: &str, at: i64) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: type_.into(),
            status: status.into(),
            reason: "Paused".into(),
            message: String::new(),
            observed_generation: None,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::from_second(at).unwrap_or_default(),
            ),
        }
    }

    #[test]
    fn the_pools_hold_back_an_update_since_they_were_paused_or_since_a_node_fell_behind() {
        use crate::controllers::run_config::plan::condition::TARGET_POOLS_PAUSED;
        let mut status = MutexRunConfigStatus {
            conditions: vec![condition(TARGET_POOLS_PAUSED, "True", 1_000)],
            ..Default::default()
        };
        assert_eq!(pools_paused_since(Trigger::Upgrade, &status), Some(1_000));
        // Under AnyConfigChange the pools stay paused: only a node behind its rendered config makes it a hold.
        assert_eq!(pools_paused_since(Trigger::AnyConfigChange, &status), None);
        let behind =
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::from_second(5_000).unwrap_or_default());
        status.target_config = Some(crate::api::TargetConfig { behind_since: Some(behind), ..Default::default() });
        assert_eq!(pools_paused_since(Trigger::AnyConfigChange, &status), Some(5_000));
        status.conditions = vec![condition(TARGET_POOLS_PAUSED, "False", 6_000)];
        assert_eq!(pools_paused_since(Trigger::Upgrade, &status), None);
        assert_eq!(pools_paused_since(Trigger::AnyConfigChange, &status), None);
    }

    #[test]
    fn nodes_wait_for_an_admin_until_retried_skipped_or_accepted() {
        let metrics = Metrics::default();
        let mut rc = object("1", 0);
        rc.metadata.namespace = Some("ops".into());
        let mut status = MutexRunConfigStatus {
            nodes: [in_flight(&["a"], NodePhase::Failed), in_flight(&["b", "c"], NodePhase::Ungated)].concat(),
            held_pools: vec![crate::api::HeldPool { name: "worker".into(), ..Default::default() }],
            ..Default::default()
        };
        status.nodes[2].accepted_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH));
        record_metrics(&metrics, &rc, &status, &[], Timestamp::UNIX_EPOCH);
        let text = metrics.encode().unwrap_or_default();
        for line in [
            r#"numo_nodes_awaiting_admin{run_config="ops/rc",phase="Failed"} 1"#,
            r#"numo_nodes_awaiting_admin{run_config="ops/rc",phase="Ungated"} 1"#,
            r#"numo_nodes_awaiting_admin{run_config="ops/rc",phase="Skipped"} 0"#,
            r#"numo_nodes{run_config="ops/rc",phase="Ungated"} 2"#,
            r#"numo_held_pools{run_config="ops/rc"} 1"#,
        ] {
            assert!(text.contains(line), "{line} is missing:\n{text}");
        }
    }

    #[test]
    fn skipped_nodes_wait_for_an_admin_while_one_keeps_its_restored_pool_from_updated() {
        use crate::controllers::run_config::plan::condition::NODE_UPGRADE;
        let metrics = Metrics::default();
        let mut rc = object("1", 0);
        rc.metadata.namespace = Some("ops".into());
        let node_upgrade = |status: &str, reason: &str| {
            let mut c = condition(NODE_UPGRADE, status, 0);
            c.reason = reason.into();
            c
        };
        let awaiting = |metrics: &Metrics| {
            let text = metrics.encode().unwrap_or_default();
            let line = r#"numo_nodes_awaiting_admin{run_config="ops/rc",phase="Skipped"} "#;
            text.lines().find_map(|l| l.strip_prefix(line)).map(str::to_string).unwrap_or_default()
        };
        // Restoring: a skipped node has not reached the target and keeps its pool from Updated.
        let mut status = MutexRunConfigStatus {
            phase: Some(RunPhase::Restoring),
            skipped_nodes: ["worker-1", "worker-4"].map(String::from).into_iter().collect(),
            conditions: vec![node_upgrade("False", "SkippedNodeNotUpdated")],
            ..Default::default()
        };
        record_metrics(&metrics, &rc, &status, &[], Timestamp::UNIX_EPOCH);
        assert_eq!(awaiting(&metrics), "2");
        // Still Restoring, but only for the pools to finish moving the gated nodes: nobody has to act.
        status.conditions = vec![node_upgrade("True", "NodesUpgraded")];
        record_metrics(&metrics, &rc, &status, &[], Timestamp::UNIX_EPOCH);
        assert_eq!(awaiting(&metrics), "0");
        // The node was fixed or taken out of its pool: Completed. The nodes stay skipped but wait for no one.
        status.phase = Some(RunPhase::Completed);
        record_metrics(&metrics, &rc, &status, &[], Timestamp::UNIX_EPOCH);
        assert_eq!(awaiting(&metrics), "0");
        let text = metrics.encode().unwrap_or_default();
        assert!(text.contains(r#"numo_nodes{run_config="ops/rc",phase="Skipped"} 2"#), "{text}");
        // NodeUpgrade=False for a failed node: the skipped nodes wait for no one.
        status.phase = Some(RunPhase::Failed);
        status.conditions = vec![node_upgrade("False", "NodeFailed")];
        record_metrics(&metrics, &rc, &status, &[], Timestamp::UNIX_EPOCH);
        assert_eq!(awaiting(&metrics), "0");
    }

    #[test]
    fn the_whole_status_replaces_whatever_was_there() {
        let before = status(3, RunPhase::Completed);
        let after = status(0, RunPhase::Idle);
        assert_eq!(applied(&before, "1", whole(&after).unwrap_or_default()), Some(after));
    }
}
