//! The simulated cluster-version operator. When `spec.desiredUpdate.version` differs from `status.desired.version`
//! it accepts the update at once: a `Partial` history entry goes to the front (the previous entry gets a completion
//! time), `status.desired` moves, `Progressing` turns True. After the control-plane step ([`crate::SimConfig`]'s
//! `control_plane`, counted from the entry's `startedTime`, so a restart does not lose it) it updates the MCO: the
//! template MachineConfigs move to the new release, the MCO renders new configs for every pool, and the master
//! pool rolls. Once the master pool is updated to the new release the entry becomes `Completed`; worker pools are
//! not waited for, as on a real cluster.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use numo::openshift::{
    ClusterVersion, ClusterVersionCondition, ClusterVersionStatus, MachineConfig, MachineConfigPool, Release,
    UpdateHistory, CLUSTER_VERSION_NAME, RELEASE_VERSION,
};
use serde_json::{json, Value};

use crate::membership::MASTER;
use crate::platform::FIELD_MANAGER;
use crate::render;

/// The machine-config operator: it reports a new release only once the master pool runs it.
pub const MACHINE_CONFIG: &str = "machine-config";

/// History state of an update being applied.
pub const PARTIAL: &str = "Partial";
/// History state of an update fully applied.
pub const COMPLETED: &str = "Completed";
/// How many history entries the CVO keeps.
const MAX_HISTORY: usize = 100;

/// What the CVO sees.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The ClusterVersion `version`.
    pub cluster_version: &'a ClusterVersion,
    /// The MCO's template MachineConfigs (see [`render::is_template`]).
    pub templates: &'a [&'a MachineConfig],
    /// The master pool, if any.
    pub master: Option<&'a MachineConfigPool>,
    /// MachineConfigs by name (to read the release of the master pool's config).
    pub configs: &'a BTreeMap<String, &'a MachineConfig>,
    /// How long the control plane takes before the MCO is updated.
    pub control_plane: Duration,
    /// Whether the machine-config operator's last sync failed ([`crate::operator_sync`]): it stops before handing
    /// the new release's templates to its controllers, so no new rendered configs come and the master pool never
    /// reaches the release, and the update is not Completed until a sync succeeds.
    pub mco_sync_failed: bool,
}

/// What the CVO does next.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The status to write, when it changes.
    pub status: Option<ClusterVersionStatus>,
    /// Move these template MachineConfigs to this release (the MCO is updated).
    pub update_templates: Option<(String, Vec<String>)>,
    /// Look again at this time (the end of the control-plane step).
    pub wake_at: Option<Timestamp>,
}

/// Plans the CVO's next step at `now`.
pub fn plan(inputs: Inputs<'_>, now: Timestamp) -> Plan {
    let cv = inputs.cluster_version;
    let mut out = Plan::default();
    let Some(update) = cv.spec.desired_update.as_ref() else { return out };
    let Some(target) = update.version.as_deref().filter(|v| !v.is_empty()) else { return out };
    let existing = cv.status.clone().unwrap_or_default();
    let mut status = existing.clone();
    let now_time = Time(now);

    if status.desired.version != target {
        let image = update.image.clone().filter(|i| !i.is_empty()).unwrap_or_else(|| render::release_image(target));
        for entry in status.history.iter_mut().filter(|h| h.completion_time.is_none()) {
            entry.completion_time = Some(now_time.clone());
        }
        status.history.insert(
            0,
            UpdateHistory {
                state: PARTIAL.into(),
                started_time: now_time.clone(),
                completion_time: None,
                version: target.to_string(),
                image: image.clone(),
                verified: !update.force.unwrap_or(false),
            },
        );
        status.history.truncate(MAX_HISTORY);
        status.desired = Release { version: target.to_string(), image };
        set_condition(&mut status.conditions, "Progressing", true, "", &format!("Working towards {target}"), &now_time);
    }
    status.observed_generation = cv.metadata.generation.unwrap_or_default();
    status.available_updates.get_or_insert_with(Vec::new);

    if let Some(current) = status.history.first_mut().filter(|h| h.state == PARTIAL && h.version == target) {
        let stale: Vec<String> = inputs
            .templates
            .iter()
            .filter(|t| t.release_version() != Some(target))
            .filter_map(|t| t.metadata.name.clone())
            .collect();
        if !stale.is_empty() {
            let due = current.started_time.0.checked_add(signed(inputs.control_plane)).unwrap_or(now);
            if inputs.mco_sync_failed {
                // The operator's sync stops at its pools: the templates wait for the next sync that succeeds.
            } else if now >= due {
                out.update_templates = Some((target.to_string(), stale));
            } else {
                out.wake_at = Some(due);
            }
        } else if !inputs.mco_sync_failed && master_updated_to(inputs.master, inputs.configs, target) {
            current.state = COMPLETED.into();
            current.completion_time = Some(now_time.clone());
            status.version_hash = version_hash(target);
            completed_conditions(&mut status.conditions, target, &now_time);
        }
    }

    if status != existing {
        out.status = Some(status);
    }
    out
}

/// The status of a freshly installed cluster at `version`: one Completed history entry, Available.
pub fn installed_status(version: &str, image: &str, now: Timestamp) -> ClusterVersionStatus {
    let now = Time(now);
    let mut status = ClusterVersionStatus {
        desired: Release { version: version.into(), image: image.into() },
        history: vec![UpdateHistory {
            state: COMPLETED.into(),
            started_time: now.clone(),
            completion_time: Some(now.clone()),
            version: version.into(),
            image: image.into(),
            verified: false,
        }],
        observed_generation: 1,
        version_hash: version_hash(version),
        available_updates: Some(Vec::new()),
        conditions: Vec::new(),
    };
    completed_conditions(&mut status.conditions, version, &now);
    status
}

/// The JSON Patch that writes the fields of `status` the CVO owns (a merge patch would drop the `null`
/// `completionTime` of a Partial entry, which the CRD requires).
pub fn status_patch(status: &ClusterVersionStatus, has_status: bool) -> Value {
    let mut ops = Vec::new();
    if !has_status {
        ops.push(json!({"op": "add", "path": "/status", "value": {}}));
    }
    let mut field = |path: &str, value: Value| ops.push(json!({"op": "add", "path": path, "value": value}));
    field("/status/desired", json!(status.desired));
    field("/status/history", json!(status.history));
    field("/status/observedGeneration", json!(status.observed_generation));
    field("/status/versionHash", json!(status.version_hash));
    field("/status/availableUpdates", json!(status.available_updates.clone().unwrap_or_default()));
    field("/status/conditions", json!(status.conditions));
    Value::Array(ops)
}

/// Where one of the payload's cluster operators stands in the cluster's update, as its ClusterOperator reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperatorRelease<'a> {
    /// The operator runs this release: `status.versions` names it, `Progressing=False`.
    At(&'a str),
    /// The operator is working towards this release: `Progressing=True`, `status.versions` still the old one.
    Towards(&'a str),
}

/// The release the payload's cluster operator `operator` reports, following the newest history entry of the
/// ClusterVersion: once the entry is `Completed`, every operator is at its release. While it is `Partial`, the
/// control-plane operators work towards it during the control-plane step and are at it once the step has ended (the
/// `templates` carry the release); `machine-config` ([`MACHINE_CONFIG`]) starts working
/// towards it only then and is at it when the entry completes (the master pool has rolled), as the real MCO reports
/// its new version only after the master pool updated. `None` (report nothing new) without history, and for
/// `machine-config` during the control-plane step.
pub fn operator_release<'a>(
    cv: &'a ClusterVersion,
    templates: &[&MachineConfig],
    operator: &str,
) -> Option<OperatorRelease<'a>> {
    let newest = cv.status.as_ref()?.history.first()?;
    let target = newest.version.as_str();
    if newest.state == COMPLETED {
        return Some(OperatorRelease::At(target));
    }
    let control_plane_done = templates.iter().all(|t| t.release_version() == Some(target));
    match (operator == MACHINE_CONFIG, control_plane_done) {
        (false, false) => Some(OperatorRelease::Towards(target)),
        (false, true) => Some(OperatorRelease::At(target)),
        (true, false) => None,
        (true, true) => Some(OperatorRelease::Towards(target)),
    }
}

/// Whether the master pool runs `version` on every machine (no master pool: nothing to wait for).
fn master_updated_to(
    master: Option<&MachineConfigPool>,
    configs: &BTreeMap<String, &MachineConfig>,
    version: &str,
) -> bool {
    let Some(pool) = master else { return true };
    debug_assert_eq!(pool.metadata.name.as_deref(), Some(MASTER));
    let spec_config = pool.spec.configuration.as_ref().and_then(|c| c.name.as_deref());
    let status_config = pool.status.as_ref().and_then(|s| s.configuration.as_ref()).and_then(|c| c.name.as_deref());
    let release = status_config.and_then(|name| configs.get(name)).and_then(|c| c.release_version());
    pool.condition_true(crate::status::UPDATED) && spec_config == status_config && release == Some(version)
}

fn completed_conditions(conditions: &mut Vec<ClusterVersionCondition>, version: &str, now: &Time) {
    set_condition(conditions, "Available", true, "", &format!("Done applying {version}"), now);
    set_condition(conditions, "Failing", false, "", "", now);
    set_condition(conditions, "Progressing", false, "", &format!("Cluster version is {version}"), now);
}

/// Sets a condition in place (appended when new); `lastTransitionTime` moves only when the status flips. An empty
/// reason or message is left out.
pub(crate) fn set_condition(
    conditions: &mut Vec<ClusterVersionCondition>,
    type_: &str,
    holds: bool,
    reason: &str,
    message: &str,
    now: &Time,
) {
    set_condition_status(conditions, type_, if holds { "True" } else { "False" }, reason, message, now);
}

/// [`set_condition`] with the status as written (`True`, `False` or `Unknown`).
pub(crate) fn set_condition_status(
    conditions: &mut Vec<ClusterVersionCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    let wanted = |ltt| ClusterVersionCondition {
        type_: type_.into(),
        status: status.into(),
        last_transition_time: ltt,
        reason: Some(reason.into()).filter(|r: &String| !r.is_empty()),
        message: Some(message.into()).filter(|m: &String| !m.is_empty()),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) if c.status == status => *c = wanted(c.last_transition_time.clone()),
        Some(c) => *c = wanted(Some(now.clone())),
        None => conditions.push(wanted(Some(now.clone()))),
    }
}

/// A stable fingerprint of a release payload.
fn version_hash(version: &str) -> String {
    render::release_image(version).rsplit(':').next().unwrap_or_default()[..12].to_string()
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

/// The CVO's memory between passes: what it wrote and the cache does not show yet.
pub struct Cvo {
    client: kube::Client,
    control_plane: Duration,
    /// The status last written, until the cache shows it.
    written: Option<ClusterVersionStatus>,
    /// Template MachineConfig → the release last written, until the cache shows it.
    templates: BTreeMap<String, String>,
}

impl Cvo {
    /// A CVO writing through `client`, whose control-plane step takes `control_plane`.
    pub fn new(client: kube::Client, control_plane: Duration) -> Self {
        Self { client, control_plane, written: None, templates: BTreeMap::new() }
    }

    /// One pass over the cached ClusterVersion `version`, pools and configs; returns when to look again.
    pub async fn reconcile(
        &mut self,
        versions: &[Arc<ClusterVersion>],
        pools: &[Arc<MachineConfigPool>],
        configs: &[Arc<MachineConfig>],
        mco_sync_failed: bool,
    ) -> anyhow::Result<Option<Timestamp>> {
        let Some(cached) = versions.iter().find(|v| v.metadata.name.as_deref() == Some(CLUSTER_VERSION_NAME)) else {
            return Ok(None);
        };
        let mut cv = ClusterVersion::clone(cached);
        match &self.written {
            Some(written) if cv.status.as_ref() != Some(written) => cv.status = Some(written.clone()),
            _ => self.written = None,
        }
        let mut templates: Vec<MachineConfig> =
            configs.iter().filter(|c| render::is_template(c)).map(|c| MachineConfig::clone(c)).collect();
        for template in &mut templates {
            let name = template.metadata.name.clone().unwrap_or_default();
            match self.templates.get(&name) {
                Some(version) if template.release_version() != Some(version.as_str()) => {
                    template.annotations_mut().insert(RELEASE_VERSION.into(), version.clone());
                }
                _ => {
                    self.templates.remove(&name);
                }
            }
        }
        let template_refs: Vec<&MachineConfig> = templates.iter().collect();
        let by_name: BTreeMap<String, &MachineConfig> =
            configs.iter().map(|c| (c.metadata.name.clone().unwrap_or_default(), c.as_ref())).collect();
        let master = pools.iter().find(|p| p.metadata.name.as_deref() == Some(MASTER)).map(Arc::as_ref);
        let inputs = Inputs {
            cluster_version: &cv,
            templates: &template_refs,
            master,
            configs: &by_name,
            control_plane: self.control_plane,
            mco_sync_failed,
        };
        let plan = plan(inputs, Timestamp::now());

        if let Some((version, names)) = &plan.update_templates {
            let api: Api<MachineConfig> = Api::all(self.client.clone());
            let body = json!({"metadata": {"annotations": {RELEASE_VERSION: version}}});
            for name in names {
                api.patch(name, &params(), &Patch::Merge(&body))
                    .await
                    .with_context(|| format!("moving MachineConfig {name} to {version}"))?;
                self.templates.insert(name.clone(), version.clone());
            }
            tracing::info!(%version, "control plane updated; the MCO now renders {version}");
        }
        if let Some(status) = plan.status {
            let patch: json_patch::Patch = serde_json::from_value(status_patch(&status, cv.status.is_some()))
                .context("building the ClusterVersion status patch")?;
            let api: Api<ClusterVersion> = Api::all(self.client.clone());
            api.patch_status(CLUSTER_VERSION_NAME, &params(), &Patch::Json::<()>(patch))
                .await
                .context("writing the ClusterVersion status")?;
            if let Some(entry) = status.history.first() {
                tracing::info!(version = %entry.version, state = %entry.state, "ClusterVersion history");
            }
            self.written = Some(status);
        }
        Ok(plan.wake_at)
    }
}

fn params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numo::openshift::{
        ClusterVersionSpec, MachineConfigPoolCondition, MachineConfigPoolSpec, MachineConfigPoolStatus,
        RenderedConfiguration, Update,
    };

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap_or_default()
    }

    fn cluster_version(desired: &str, status: ClusterVersionStatus) -> ClusterVersion {
        let mut cv = ClusterVersion::new(
            "version",
            ClusterVersionSpec {
                cluster_id: "id".into(),
                channel: None,
                desired_update: Some(Update { version: Some(desired.into()), image: None, force: None }),
            },
        );
        cv.metadata.generation = Some(2);
        cv.status = Some(status);
        cv
    }

    fn master_pool(config: &str, updated: bool) -> MachineConfigPool {
        let mut pool = MachineConfigPool::new(
            "master",
            MachineConfigPoolSpec {
                configuration: Some(RenderedConfiguration { name: Some(config.into()), ..Default::default() }),
                ..MachineConfigPoolSpec::default()
            },
        );
        pool.status = Some(MachineConfigPoolStatus {
            configuration: Some(RenderedConfiguration { name: Some(config.into()), ..Default::default() }),
            conditions: vec![MachineConfigPoolCondition {
                type_: "Updated".into(),
                status: if updated { "True" } else { "False" }.into(),
                ..MachineConfigPoolCondition::default()
            }],
            ..MachineConfigPoolStatus::default()
        });
        pool
    }

    struct World {
        templates: Vec<MachineConfig>,
        rendered: Vec<MachineConfig>,
        master: MachineConfigPool,
    }

    impl World {
        fn at_version(version: &str) -> Self {
            let mut rendered = render::template_config("master", version);
            rendered.metadata.name = Some(format!("rendered-master-{version}"));
            World {
                templates: vec![render::template_config("master", version), render::template_config("worker", version)],
                master: master_pool(&format!("rendered-master-{version}"), true),
                rendered: vec![rendered],
            }
        }

        fn plan(&self, cv: &ClusterVersion, now: Timestamp) -> Plan {
            let templates: Vec<&MachineConfig> = self.templates.iter().collect();
            let configs: BTreeMap<String, &MachineConfig> =
                self.rendered.iter().map(|c| (c.metadata.name.clone().unwrap_or_default(), c)).collect();
            let inputs = Inputs {
                cluster_version: cv,
                templates: &templates,
                master: Some(&self.master),
                configs: &configs,
                control_plane: Duration::from_secs(30),
                mco_sync_failed: false,
            };
            plan(inputs, now)
        }
    }

    #[test]
    fn an_installed_cluster_has_nothing_to_do() {
        let cv = cluster_version("4.16.4", installed_status("4.16.4", "img", at(0)));
        let mut cv = cv;
        cv.metadata.generation = Some(1);
        assert_eq!(World::at_version("4.16.4").plan(&cv, at(100)), Plan::default());
    }

    #[test]
    fn a_new_desired_version_starts_a_partial_entry_and_waits_for_the_control_plane() {
        let world = World::at_version("4.16.4");
        let cv = cluster_version("4.16.5", installed_status("4.16.4", "img", at(0)));
        let p = world.plan(&cv, at(100));
        let status = p.status.expect("status changes");
        assert_eq!(status.desired.version, "4.16.5");
        assert_eq!(status.history.len(), 2);
        assert_eq!(status.history[0].state, PARTIAL);
        assert_eq!(status.history[0].version, "4.16.5");
        assert_eq!(status.history[0].completion_time, None);
        assert_eq!(status.history[1].state, COMPLETED);
        assert_eq!(status.observed_generation, 2);
        assert_eq!(p.update_templates, None);
        assert_eq!(p.wake_at, Some(at(130)));
        let progressing = status.conditions.iter().find(|c| c.type_ == "Progressing").unwrap();
        assert_eq!(
            (progressing.status.as_str(), progressing.message.as_deref()),
            ("True", Some("Working towards 4.16.5"))
        );
    }

    #[test]
    fn after_the_control_plane_step_the_templates_move_and_completion_waits_for_the_master_pool() {
        let mut world = World::at_version("4.16.4");
        let started = cluster_version("4.16.5", installed_status("4.16.4", "img", at(0)));
        let mut cv = started.clone();
        cv.status = world.plan(&started, at(100)).status;

        let p = world.plan(&cv, at(131));
        assert_eq!(p.update_templates, Some(("4.16.5".into(), vec!["00-master".into(), "00-worker".into()])));
        assert_eq!(p.status, None);

        world.templates =
            vec![render::template_config("master", "4.16.5"), render::template_config("worker", "4.16.5")];
        assert_eq!(world.plan(&cv, at(140)), Plan::default(), "master pool still on the old release");

        let mut new_rendered = render::template_config("master", "4.16.5");
        new_rendered.metadata.name = Some("rendered-master-4.16.5".into());
        world.rendered.push(new_rendered);
        world.master = master_pool("rendered-master-4.16.5", false);
        assert_eq!(world.plan(&cv, at(150)), Plan::default(), "master pool not Updated yet");

        world.master = master_pool("rendered-master-4.16.5", true);
        let done = world.plan(&cv, at(160)).status.expect("completes");
        assert_eq!(done.history[0].state, COMPLETED);
        assert_eq!(done.history[0].completion_time, Some(Time(at(160))));
        let progressing = done.conditions.iter().find(|c| c.type_ == "Progressing").unwrap();
        assert_eq!(progressing.status, "False");
        assert_eq!(progressing.last_transition_time, Some(Time(at(160))));
    }

    #[test]
    fn a_partial_entry_keeps_a_null_completion_time_in_the_patch() {
        let world = World::at_version("4.16.4");
        let cv = cluster_version("4.16.5", installed_status("4.16.4", "img", at(0)));
        let status = world.plan(&cv, at(100)).status.unwrap();
        let patch = status_patch(&status, false);
        assert_eq!(patch[0]["path"], "/status");
        let history = patch.as_array().unwrap().iter().find(|op| op["path"] == "/status/history").unwrap();
        assert!(history["value"][0].as_object().unwrap().contains_key("completionTime"));
        assert!(history["value"][0]["completionTime"].is_null());
    }

    #[test]
    fn operators_follow_the_update_control_plane_first_then_the_mco() {
        let mut world = World::at_version("4.16.4");
        let installed = cluster_version("4.16.4", installed_status("4.16.4", "img", at(0)));
        fn release<'a>(
            cv: &'a ClusterVersion,
            templates: &[MachineConfig],
            operator: &str,
        ) -> Option<OperatorRelease<'a>> {
            let templates: Vec<&MachineConfig> = templates.iter().collect();
            operator_release(cv, &templates, operator)
        }
        assert_eq!(release(&installed, &world.templates, "dns"), Some(OperatorRelease::At("4.16.4")));
        assert_eq!(release(&installed, &world.templates, "machine-config"), Some(OperatorRelease::At("4.16.4")));
        let mut no_history = installed.clone();
        no_history.status = None;
        assert_eq!(release(&no_history, &world.templates, "dns"), None);

        let mut cv = cluster_version("4.16.5", installed_status("4.16.4", "img", at(0)));
        cv.status = world.plan(&cv, at(100)).status;
        assert_eq!(release(&cv, &world.templates, "dns"), Some(OperatorRelease::Towards("4.16.5")));
        assert_eq!(release(&cv, &world.templates, "machine-config"), None, "the MCO is not updated yet");

        world.templates =
            vec![render::template_config("master", "4.16.5"), render::template_config("worker", "4.16.5")];
        assert_eq!(release(&cv, &world.templates, "dns"), Some(OperatorRelease::At("4.16.5")));
        assert_eq!(release(&cv, &world.templates, "machine-config"), Some(OperatorRelease::Towards("4.16.5")));

        let mut new_rendered = render::template_config("master", "4.16.5");
        new_rendered.metadata.name = Some("rendered-master-4.16.5".into());
        world.rendered.push(new_rendered);
        world.master = master_pool("rendered-master-4.16.5", true);
        cv.status = world.plan(&cv, at(160)).status;
        assert_eq!(release(&cv, &world.templates, "machine-config"), Some(OperatorRelease::At("4.16.5")));
    }
}
