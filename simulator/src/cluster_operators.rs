//! The release payload's cluster operators, as their ClusterOperators show them (`config.openshift.io/v1`, status
//! only: the spec is empty).
//!
//! [`crate::seed()`] creates the operators of [`PAYLOAD`] healthy (`Available=True`, `Progressing=False`,
//! `Degraded=False`, `Upgradeable=True`, with the reasons and messages the real operators write) at the cluster's
//! release (`status.versions: [{name: operator, version: ...}]`). Then each pass of [`ClusterOperators`]
//! (event-driven, like the CVO and MCO passes) writes what the operators would report:
//! - on every ClusterOperator, the faults of its annotations ([`crate::faults::DEGRADED`],
//!   [`crate::faults::UNAVAILABLE`]): `Degraded=True` / `Available=False` with reason
//!   [`crate::faults::SIMULATED_FAULT`] and the annotation's value as message while the annotation is present; once
//!   it is removed, the condition the fault set goes back to `Degraded=False` / `Available=True` (conditions the
//!   simulator did not set are left alone);
//! - on the payload's operators, the update the CVO drives ([`crate::cvo::operator_release`]): `Progressing=True`
//!   (`Working towards <version>`) while an operator updates, then its new `operator` version and
//!   `Progressing=False`.
//!
//! - on `machine-config`, the machine-config operator's own sync ([`report_sync`]: its MachineConfigNode, pool and
//!   required-pool steps) and its reaction to a degraded pool ([`report_upgradeable`]);
//! - on `kube-apiserver`, its kubelet version skew controller's `Upgradeable` ([`crate::kubelet_skew`]).
//!
//! Operators outside [`PAYLOAD`] (created by a test) are never updated, as the real CVO leaves operators that are not
//! in its payload alone. The CVO does not wait for the ClusterOperators, nor does it report a degraded one.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
pub use numo::openshift::{ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus, OperandVersion};
use numo::openshift::{
    ClusterVersion, ClusterVersionCondition, MachineConfig, MachineConfigPool, CLUSTER_VERSION_NAME,
};
use serde_json::json;

use crate::cvo::{self, OperatorRelease};
use crate::operator_sync::SyncReport;
use crate::platform::FIELD_MANAGER;
use crate::release::OpenShiftRelease;
use crate::required_pools::{DEGRADED_POOL, DEGRADED_POOL_MESSAGE};
use crate::{faults, kubelet_skew, render};

/// Condition: the operator is functional and available in the cluster.
pub const AVAILABLE: &str = "Available";
/// Condition: the operator is rolling out new code or configuration.
pub const PROGRESSING: &str = "Progressing";
/// Condition: the operator is not in the state it should be in.
pub const DEGRADED: &str = "Degraded";
/// Condition: the operator allows the cluster to be updated.
pub const UPGRADEABLE: &str = "Upgradeable";
/// Name of the `status.versions` entry of the operator itself.
pub const OPERATOR_VERSION: &str = "operator";
pub use crate::cvo::MACHINE_CONFIG;
/// The cluster operators of the simulated release payload: [`crate::seed()`] creates them and the CVO updates them.
pub const PAYLOAD: [&str; 6] = ["dns", "ingress", "kube-apiserver", MACHINE_CONFIG, "monitoring", "network"];

/// Prefix of the `Progressing` message of an operator that updates, completed by the release.
const WORKING_TOWARDS: &str = "Working towards ";

/// A condition of a ClusterOperator (the shape ClusterVersion shares with it).
pub type ClusterOperatorCondition = ClusterVersionCondition;

/// The reason and message operator `operator` writes on condition `type_` when all is well at `version` (those of
/// the real operators where the simulator plays them, `AsExpected` and no message otherwise).
pub fn healthy_reason(operator: &str, type_: &str, version: &str) -> (&'static str, String) {
    let (reason, message) = match (operator, type_) {
        ("kube-apiserver", AVAILABLE) => {
            ("AsExpected", "StaticPodsAvailable: all control-plane nodes are active and at the latest revision")
        }
        ("kube-apiserver", PROGRESSING) => {
            ("AsExpected", "NodeInstallerProgressing: all control-plane nodes are at the latest revision")
        }
        ("kube-apiserver", DEGRADED) => ("AsExpected", "NodeControllerDegraded: All master nodes are ready"),
        ("kube-apiserver", UPGRADEABLE) => {
            ("AsExpected", "KubeletMinorVersionUpgradeable: Kubelet and API server minor versions are synced.")
        }
        (MACHINE_CONFIG, PROGRESSING) => return ("AsExpected", format!("Cluster version is {version}")),
        ("dns", AVAILABLE) => ("AsExpected", "DNS \"default\" is available."),
        ("dns", PROGRESSING) => ("AsExpected", "Desired and current number of DNSes are equal"),
        ("dns", DEGRADED) => ("DNSNotDegraded", ""),
        ("dns", UPGRADEABLE) => ("DNSUpgradeable", "DNS Operator can be upgraded"),
        ("ingress", AVAILABLE) => ("IngressAvailable", "The \"default\" ingress controller reports Available=True."),
        ("ingress", PROGRESSING) => ("AsExpected", "desired and current number of IngressControllers are equal"),
        ("ingress", DEGRADED) => ("IngressNotDegraded", "The \"default\" ingress controller reports Degraded=False."),
        ("ingress", UPGRADEABLE) => ("IngressControllersUpgradeable", "All ingresscontrollers are upgradeable"),
        ("monitoring", AVAILABLE | PROGRESSING) => ("RollOutDone", "Successfully rolled out the stack."),
        _ => ("AsExpected", ""),
    };
    (reason, message.to_string())
}

/// The status of a healthy operator `operator` at `version`, every condition changed at `now`.
pub fn healthy_status(operator: &str, version: &str, now: &Time) -> ClusterOperatorStatus {
    let mut conditions = Vec::new();
    for (type_, holds) in [(AVAILABLE, true), (PROGRESSING, false), (DEGRADED, false), (UPGRADEABLE, true)] {
        let (reason, message) = healthy_reason(operator, type_, version);
        cvo::set_condition(&mut conditions, type_, holds, reason, &message, now);
    }
    ClusterOperatorStatus {
        conditions,
        versions: vec![OperandVersion { name: OPERATOR_VERSION.into(), version: version.into() }],
    }
}

/// The status `operator` reports at `now`: its current status with the faults of its annotations applied (see the
/// module docs) and, when it is in the payload, its `release` (from [`cvo::operator_release`]; `None` leaves its
/// version and `Progressing` as they are). Conditions keep their `lastTransitionTime` unless their status flips.
pub fn compute(operator: &ClusterOperator, release: Option<OperatorRelease<'_>>, now: &Time) -> ClusterOperatorStatus {
    let name = operator.name_any();
    let annotations = operator.annotations();
    let mut status = operator.status.clone().unwrap_or_default();
    let version = status.operator_version().unwrap_or_default().to_string();
    let faults =
        [(DEGRADED, faults::degraded(annotations), true), (AVAILABLE, faults::unavailable(annotations), false)];
    for (type_, fault, faulted) in faults {
        match fault {
            Some(message) => {
                cvo::set_condition(&mut status.conditions, type_, faulted, faults::SIMULATED_FAULT, message, now)
            }
            None if status.condition(type_).is_some_and(is_simulated_fault) => {
                let (reason, message) = healthy_reason(&name, type_, &version);
                cvo::set_condition(&mut status.conditions, type_, !faulted, reason, &message, now);
            }
            None => {}
        }
    }
    match release {
        Some(OperatorRelease::At(release)) => {
            let working = status.condition(PROGRESSING).is_some_and(|c| {
                c.status == "True" && c.message.as_deref().is_some_and(|m| m.starts_with(WORKING_TOWARDS))
            });
            if version != release || working || status.condition(PROGRESSING).is_none() {
                set_operator_version(&mut status.versions, release);
                let (reason, message) = healthy_reason(&name, PROGRESSING, release);
                cvo::set_condition(&mut status.conditions, PROGRESSING, false, reason, &message, now);
            }
        }
        Some(OperatorRelease::Towards(release)) if version != release => {
            let message = format!("{WORKING_TOWARDS}{release}");
            cvo::set_condition(&mut status.conditions, PROGRESSING, true, "", &message, now);
        }
        Some(OperatorRelease::Towards(_)) | None => {}
    }
    status
}

/// The machine-config operator's own report of its sync ([`crate::operator_sync`], `pkg/operator/status.go`
/// `syncDegradedStatus` and `clearDegradedStatus`, release-4.21): `Degraded=True` with reason `<step>Failed`
/// (`MachineConfigNodeFailed`, `MachineConfigPoolsFailed`, `RequiredPoolsFailed`) and `Failed to resync <version>
/// because: <error>` when a step failed; a step that passed clears a `Degraded` of its own reason (other reasons,
/// a fault's among them, are left alone).
pub fn report_sync(status: &mut ClusterOperatorStatus, sync: &SyncReport, now: &Time) {
    let version = status.operator_version().unwrap_or_default().to_string();
    let reason = status.condition(DEGRADED).and_then(|c| c.reason.clone()).unwrap_or_default();
    match &sync.failed {
        Some(failure) => {
            let message = format!("Failed to resync {version} because: {}", failure.error);
            cvo::set_condition(&mut status.conditions, DEGRADED, true, &failure.reason(), &message, now);
        }
        None if sync.passed.iter().any(|task| reason == format!("{task}Failed")) => {
            let (reason, message) = healthy_reason(MACHINE_CONFIG, DEGRADED, &version);
            cvo::set_condition(&mut status.conditions, DEGRADED, false, reason, &message, now);
        }
        None => {}
    }
}

/// The machine-config operator's `Upgradeable` ([`crate::required_pools`]): `False`, reason `DegradedPool`, while
/// `pool_degraded`; back to `True` once no pool is (only where it had set `DegradedPool`).
pub fn report_upgradeable(status: &mut ClusterOperatorStatus, pool_degraded: bool, now: &Time) {
    let version = status.operator_version().unwrap_or_default().to_string();
    let ours = status.condition(UPGRADEABLE).is_some_and(|c| c.reason.as_deref() == Some(DEGRADED_POOL));
    if pool_degraded {
        cvo::set_condition(&mut status.conditions, UPGRADEABLE, false, DEGRADED_POOL, DEGRADED_POOL_MESSAGE, now);
    } else if ours {
        let (reason, message) = healthy_reason(MACHINE_CONFIG, UPGRADEABLE, &version);
        cvo::set_condition(&mut status.conditions, UPGRADEABLE, true, reason, &message, now);
    }
}

/// Whether a condition was set by a fault.
fn is_simulated_fault(condition: &ClusterOperatorCondition) -> bool {
    condition.reason.as_deref() == Some(faults::SIMULATED_FAULT)
}

/// Sets the `operator` entry of `versions` to `release` (appended when missing).
fn set_operator_version(versions: &mut Vec<OperandVersion>, release: &str) {
    match versions.iter_mut().find(|v| v.name == OPERATOR_VERSION) {
        Some(entry) => entry.version = release.to_string(),
        None => versions.push(OperandVersion { name: OPERATOR_VERSION.into(), version: release.to_string() }),
    }
}

/// The merge patch (for the status subresource) writing `status`'s conditions and versions (when it has any; the
/// simulator never removes a version); with a `resource_version`, only onto that version of the object (the API
/// server answers 409 Conflict when the object changed since).
pub fn status_patch(status: &ClusterOperatorStatus, resource_version: Option<&str>) -> serde_json::Value {
    let mut patch = json!({"status": {"conditions": status.conditions}});
    if !status.versions.is_empty() {
        patch["status"]["versions"] = json!(status.versions);
    }
    if let Some(resource_version) = resource_version {
        patch["metadata"] = json!({"resourceVersion": resource_version});
    }
    patch
}

/// The simulated cluster operators' memory between passes.
pub struct ClusterOperators {
    client: kube::Client,
    /// The release played (the wording of the operators' messages).
    release: OpenShiftRelease,
    /// ClusterOperator → the resourceVersion its last status write was based on, until the cache moves past it.
    pending: HashMap<String, String>,
}

impl ClusterOperators {
    /// The operators of `release`, writing through `client`.
    pub fn new(client: kube::Client, release: OpenShiftRelease) -> Self {
        Self { client, release, pending: HashMap::new() }
    }

    /// One pass over the cached ClusterOperators, ClusterVersion, MachineConfigs and nodes: writes the status of
    /// every ClusterOperator whose faults, release or (for `kube-apiserver`) kubelets changed it. Errors are
    /// reported together at the end (the caller retries); a conflict means the cache is behind, and its next event
    /// brings the pass back.
    pub async fn reconcile(
        &mut self,
        operators: &[Arc<ClusterOperator>],
        versions: &[Arc<ClusterVersion>],
        configs: &[Arc<MachineConfig>],
        mco_sync: &SyncReport,
        pools: &[Arc<MachineConfigPool>],
        nodes: &[Arc<k8s_openapi::api::core::v1::Node>],
    ) -> anyhow::Result<()> {
        let pool_degraded = crate::required_pools::any_degraded(pools.iter().map(Arc::as_ref));
        let cv = versions.iter().find(|v| v.metadata.name.as_deref() == Some(CLUSTER_VERSION_NAME));
        let templates: Vec<&MachineConfig> =
            configs.iter().map(Arc::as_ref).filter(|c| render::is_template(c)).collect();
        self.pending.retain(|name, seen| {
            operators
                .iter()
                .any(|o| o.metadata.name.as_ref() == Some(name) && o.metadata.resource_version.as_ref() == Some(seen))
        });
        let api: Api<ClusterOperator> = Api::all(self.client.clone());
        let now = Time(Timestamp::now());
        let mut first_error = None;
        for operator in operators {
            let name = operator.name_any();
            if self.pending.contains_key(&name) {
                continue; // the cache does not show the last write yet
            }
            let release = cv
                .filter(|_| PAYLOAD.contains(&name.as_str()))
                .and_then(|cv| cvo::operator_release(cv, &templates, &name));
            let mut status = compute(operator, release, &now);
            if name == MACHINE_CONFIG {
                report_sync(&mut status, mco_sync, &now);
                report_upgradeable(&mut status, pool_degraded, &now);
            }
            if name == kubelet_skew::KUBE_APISERVER {
                let version = status.operator_version().unwrap_or_default().to_string();
                let releases = render::releases(configs);
                let kubelets = kubelet_skew::kubelets(nodes, &releases);
                if let Some(verdict) = kubelet_skew::verdict(&version, &kubelets, self.release) {
                    kubelet_skew::report(&mut status, &verdict, &now);
                }
            }
            if operator.status.clone().unwrap_or_default() == status {
                continue;
            }
            let based_on = operator.metadata.resource_version.clone();
            let patch = status_patch(&status, based_on.as_deref());
            match api.patch_status(&name, &params(), &Patch::Merge(&patch)).await {
                Ok(written) => {
                    log_change(&name, operator.status.as_ref(), &status);
                    if let Some(based_on) = based_on.filter(|rv| written.metadata.resource_version.as_ref() != Some(rv))
                    {
                        self.pending.insert(name, based_on);
                    }
                }
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(err) => {
                    let conflict = matches!(&err, kube::Error::Api(s) if s.code == 409);
                    let err = anyhow::Error::new(err).context(format!("writing the status of ClusterOperator {name}"));
                    if conflict {
                        tracing::debug!(operator = %name, "stale cache; retrying");
                    } else {
                        tracing::warn!(operator = %name, error = %format!("{err:#}"), "writing ClusterOperator status failed");
                    }
                    first_error.get_or_insert(err);
                }
            }
        }
        match first_error {
            None => Ok(()),
            Some(err) => Err(err),
        }
    }
}

/// Logs what changed in an operator's conditions and version.
fn log_change(name: &str, before: Option<&ClusterOperatorStatus>, after: &ClusterOperatorStatus) {
    for condition in &after.conditions {
        let was = before.and_then(|b| b.condition(&condition.type_)).map(|c| c.status.as_str());
        if was != Some(condition.status.as_str()) {
            tracing::info!(
                operator = %name,
                condition = %condition.type_,
                status = %condition.status,
                reason = condition.reason.as_deref().unwrap_or_default(),
                "ClusterOperator condition"
            );
        }
    }
    let was = before.and_then(ClusterOperatorStatus::operator_version);
    if let Some(version) = after.operator_version().filter(|v| was != Some(*v)) {
        tracing::info!(operator = %name, %version, "ClusterOperator version");
    }
}

fn params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{DEGRADED as DEGRADED_FAULT, SIMULATED_FAULT, UNAVAILABLE as UNAVAILABLE_FAULT};

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap_or_default())
    }

    fn operator(name: &str, status: Option<ClusterOperatorStatus>, annotations: &[(&str, &str)]) -> ClusterOperator {
        let mut o = ClusterOperator::new(name, ClusterOperatorSpec {});
        o.status = status;
        o.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        o
    }

    fn condition<'a>(s: &'a ClusterOperatorStatus, type_: &str) -> (&'a str, &'a str, &'a str, Option<&'a Time>) {
        let c = s.condition(type_).unwrap();
        (
            c.status.as_str(),
            c.reason.as_deref().unwrap_or_default(),
            c.message.as_deref().unwrap_or_default(),
            c.last_transition_time.as_ref(),
        )
    }

    #[test]
    fn a_seeded_operator_is_healthy_at_its_version() {
        let s = healthy_status("dns", "4.16.4", &at(10));
        let types: Vec<&str> = s.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [AVAILABLE, PROGRESSING, DEGRADED, UPGRADEABLE]);
        assert_eq!(condition(&s, AVAILABLE), ("True", "AsExpected", "DNS \"default\" is available.", Some(&at(10))));
        assert_eq!(condition(&s, PROGRESSING).0, "False");
        assert_eq!(condition(&s, DEGRADED), ("False", "DNSNotDegraded", "", Some(&at(10))));
        assert_eq!(condition(&s, UPGRADEABLE).0, "True");
        assert_eq!(s.operator_version(), Some("4.16.4"));
        let mco = healthy_status(MACHINE_CONFIG, "4.16.4", &at(10));
        assert_eq!(condition(&mco, PROGRESSING).2, "Cluster version is 4.16.4");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["versions"], json!([{"name": "operator", "version": "4.16.4"}]));
        assert!(json["conditions"][2].get("message").is_none(), "no empty message: {json}");
    }

    #[test]
    fn a_healthy_operator_without_faults_or_release_is_left_as_it_is() {
        let healthy = operator("dns", Some(healthy_status("dns", "4.16.4", &at(10))), &[]);
        assert_eq!(Some(compute(&healthy, None, &at(20))), healthy.status);
        let at_release = compute(&healthy, Some(OperatorRelease::At("4.16.4")), &at(20));
        assert_eq!(Some(at_release), healthy.status);
    }

    #[test]
    fn the_degraded_fault_degrades_until_it_is_removed() {
        let healthy = healthy_status("ingress", "4.16.4", &at(10));
        let faulted = operator("ingress", Some(healthy.clone()), &[(DEGRADED_FAULT, "router pods crash")]);
        let degraded = compute(&faulted, None, &at(20));
        assert_eq!(condition(&degraded, DEGRADED), ("True", SIMULATED_FAULT, "router pods crash", Some(&at(20))));
        assert_eq!(condition(&degraded, AVAILABLE), condition(&healthy, AVAILABLE), "only Degraded changes");

        let still = operator("ingress", Some(degraded.clone()), &[(DEGRADED_FAULT, "router pods crash")]);
        assert_eq!(compute(&still, None, &at(30)), degraded, "nothing to write while the fault holds");

        let removed = operator("ingress", Some(degraded), &[]);
        let recovered = compute(&removed, None, &at(40));
        assert_eq!(
            condition(&recovered, DEGRADED),
            (
                "False",
                "IngressNotDegraded",
                "The \"default\" ingress controller reports Degraded=False.",
                Some(&at(40))
            )
        );
    }

    #[test]
    fn the_unavailable_fault_makes_the_operator_unavailable_until_it_is_removed() {
        let faulted =
            operator("dns", Some(healthy_status("dns", "4.16.4", &at(10))), &[(UNAVAILABLE_FAULT, "no pods")]);
        let unavailable = compute(&faulted, None, &at(20));
        assert_eq!(condition(&unavailable, AVAILABLE), ("False", SIMULATED_FAULT, "no pods", Some(&at(20))));
        assert_eq!(condition(&unavailable, DEGRADED).0, "False");
        let recovered = compute(&operator("dns", Some(unavailable), &[]), None, &at(30));
        assert_eq!(
            condition(&recovered, AVAILABLE),
            ("True", "AsExpected", "DNS \"default\" is available.", Some(&at(30)))
        );
    }

    #[test]
    fn faults_apply_to_any_operator_and_removal_restores_only_what_a_fault_set() {
        let bare = operator("my-addon", None, &[(DEGRADED_FAULT, "broken"), (UNAVAILABLE_FAULT, "gone")]);
        let s = compute(&bare, None, &at(10));
        assert_eq!(condition(&s, DEGRADED), ("True", SIMULATED_FAULT, "broken", Some(&at(10))));
        assert_eq!(condition(&s, AVAILABLE), ("False", SIMULATED_FAULT, "gone", Some(&at(10))));
        assert!(s.versions.is_empty(), "not in the payload: no version");
        let recovered = compute(&operator("my-addon", Some(s), &[]), None, &at(20));
        assert_eq!(condition(&recovered, DEGRADED), ("False", "AsExpected", "", Some(&at(20))));
        assert_eq!(condition(&recovered, AVAILABLE), ("True", "AsExpected", "", Some(&at(20))));

        let mut own = healthy_status("my-addon", "1.0", &at(10));
        cvo::set_condition(&mut own.conditions, DEGRADED, true, "CrashLooping", "mine", &at(15));
        let untouched = operator("my-addon", Some(own.clone()), &[]);
        assert_eq!(compute(&untouched, None, &at(20)), own, "a Degraded the simulator did not set stays");
    }

    #[test]
    fn the_fault_message_follows_the_annotation() {
        let s = compute(&operator("dns", None, &[(DEGRADED_FAULT, "first")]), None, &at(10));
        let s = compute(&operator("dns", Some(s), &[(DEGRADED_FAULT, "second")]), None, &at(20));
        assert_eq!(condition(&s, DEGRADED), ("True", SIMULATED_FAULT, "second", Some(&at(10))));
    }

    #[test]
    fn an_updating_operator_progresses_then_reports_its_new_version() {
        let healthy = operator("network", Some(healthy_status("network", "4.16.4", &at(10))), &[]);
        let working = compute(&healthy, Some(OperatorRelease::Towards("4.16.5")), &at(20));
        assert_eq!(condition(&working, PROGRESSING), ("True", "", "Working towards 4.16.5", Some(&at(20))));
        assert_eq!(working.operator_version(), Some("4.16.4"), "the old version until it is done");

        let updated = compute(&operator("network", Some(working), &[]), Some(OperatorRelease::At("4.16.5")), &at(30));
        assert_eq!(condition(&updated, PROGRESSING), ("False", "AsExpected", "", Some(&at(30))));
        assert_eq!(updated.operator_version(), Some("4.16.5"));
        assert_eq!(condition(&updated, AVAILABLE).3, Some(&at(10)), "Available did not flip");

        let mco = operator(MACHINE_CONFIG, Some(healthy_status(MACHINE_CONFIG, "4.16.4", &at(10))), &[]);
        let moved = compute(&mco, Some(OperatorRelease::At("4.16.5")), &at(20));
        assert_eq!(condition(&moved, PROGRESSING), ("False", "AsExpected", "Cluster version is 4.16.5", Some(&at(10))));
        assert_eq!(moved.operator_version(), Some("4.16.5"));
    }

    #[test]
    fn an_update_keeps_faults_and_other_versions() {
        let mut status = healthy_status("kube-apiserver", "4.16.4", &at(10));
        status.versions.push(OperandVersion { name: "kube-apiserver".into(), version: "1.29.6".into() });
        let faulted = operator("kube-apiserver", Some(status), &[(DEGRADED_FAULT, "etcd slow")]);
        let s = compute(&faulted, Some(OperatorRelease::At("4.16.5")), &at(20));
        assert_eq!(condition(&s, DEGRADED).0, "True");
        assert_eq!(
            s.versions,
            [
                OperandVersion { name: "operator".into(), version: "4.16.5".into() },
                OperandVersion { name: "kube-apiserver".into(), version: "1.29.6".into() },
            ]
        );
    }

    #[test]
    fn a_failed_step_degrades_machine_config_until_that_step_passes() {
        use crate::operator_sync::{SyncFailure, MACHINE_CONFIG_NODE_TASK, POOLS_TASK};
        let mut s = healthy_status(MACHINE_CONFIG, "4.20.1", &at(10));
        let error = "node worker-1 belongs to 2 custom roles, cannot proceed with this Node";
        let failed = SyncReport {
            passed: vec![],
            failed: Some(SyncFailure { task: MACHINE_CONFIG_NODE_TASK, error: error.into() }),
        };
        report_sync(&mut s, &failed, &at(20));
        let message = format!("Failed to resync 4.20.1 because: {error}");
        assert_eq!(condition(&s, DEGRADED), ("True", "MachineConfigNodeFailed", message.as_str(), Some(&at(20))));
        report_sync(&mut s, &SyncReport { passed: vec![POOLS_TASK], failed: None }, &at(30));
        assert_eq!(condition(&s, DEGRADED).0, "True", "another step passing does not clear it");
        report_sync(&mut s, &SyncReport { passed: vec![MACHINE_CONFIG_NODE_TASK], failed: None }, &at(40));
        assert_eq!(condition(&s, DEGRADED), ("False", "AsExpected", "", Some(&at(40))));
    }

    #[test]
    fn a_degraded_pool_makes_machine_config_not_upgradeable_until_none_is() {
        let mut s = healthy_status(MACHINE_CONFIG, "4.16.4", &at(10));
        report_upgradeable(&mut s, true, &at(20));
        assert_eq!(condition(&s, UPGRADEABLE), ("False", DEGRADED_POOL, DEGRADED_POOL_MESSAGE, Some(&at(20))));
        report_upgradeable(&mut s, false, &at(30));
        assert_eq!(condition(&s, UPGRADEABLE), ("True", "AsExpected", "", Some(&at(30))));
        let mut other = s.clone();
        cvo::set_condition(&mut other.conditions, UPGRADEABLE, false, "ClusterOnCgroupV1", "v1", &at(40));
        let before = other.clone();
        report_upgradeable(&mut other, false, &at(50));
        assert_eq!(other, before, "another writer's reason is left alone");
    }

    #[test]
    fn the_status_patch_names_the_version_it_is_based_on() {
        let s = healthy_status("dns", "4.16.4", &at(10));
        let patch = status_patch(&s, Some("42"));
        assert_eq!(patch["metadata"]["resourceVersion"], "42");
        assert_eq!(patch["status"]["versions"][0]["version"], "4.16.4");
        assert_eq!(patch["status"]["conditions"].as_array().map(Vec::len), Some(4));
        assert!(status_patch(&s, None).get("metadata").is_none());
        let bare = ClusterOperatorStatus::default();
        assert_eq!(status_patch(&bare, None), json!({"status": {"conditions": []}}));
    }
}
