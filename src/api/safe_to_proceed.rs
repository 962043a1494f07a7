//! The parts of a `MutexRunConfig` that decide whether it is a good time to take the next node down: maintenance
//! and blackout windows, health checks and a soak time. None of them changes anything in the cluster; each only
//! holds the next node from starting (nodes in flight finish).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A recurring time in which nodes may start: from each start of `schedule`, for `duration`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// When the window opens: a standard 5-field cron expression (minute hour day-of-month month day-of-week),
    /// read in `timeZone`, e.g. `0 22 * * FRI` for Fridays at 22:00. A start that falls into a daylight-saving gap
    /// opens the window at the first minute after the gap; in a repeated hour it opens once, the first time.
    #[schemars(length(min = 1, max = 256))]
    pub schedule: String,

    /// How long the window stays open from each start, in elapsed time, e.g. `4h` or `90m`.
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub duration: String,

    /// The IANA time zone `schedule` is read in, e.g. `Europe/Warsaw`; default `UTC`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub time_zone: Option<String>,
}

/// A stretch of time in which no node starts, whatever the maintenance windows say.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlackoutWindow {
    /// The first instant of the blackout (RFC 3339, e.g. `2026-12-24T00:00:00Z`).
    pub start: Time,
    /// The instant the blackout ends; it must be after `start`.
    pub end: Time,
    /// Why, shown in the status while the blackout holds the rollout (e.g. `year-end freeze`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub reason: Option<String>,
}

/// Checks of the cluster's health, made before each node starts. Once `healthChecks` is present every built-in
/// check is on unless switched off here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthChecks {
    /// Hold while a ClusterOperator is `Degraded=True` or `Available=False`.
    #[serde(default)]
    pub cluster_operators: ClusterOperatorsCheck,

    /// Hold while a MachineConfigPool is `Degraded` or `NodeDegraded`.
    #[serde(default)]
    pub machine_config_pools: BuiltInCheck,

    /// Hold while a MachineConfigNode says its node is degraded (`NodeDegraded=True`), naming the node and the
    /// machine-config daemon's reason; a node an admin skipped is left out. MachineConfigNodes are served from
    /// OpenShift 4.20: where they cannot be read the check holds, saying why. Off unless present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_nodes: Option<BuiltInCheck>,

    /// Hold while a node that this rollout is not upgrading right now is not Ready, or is cordoned.
    #[serde(default)]
    pub nodes: BuiltInCheck,

    /// Hold while a PodDisruptionBudget that allows no disruption covers a pod on the node about to start (its
    /// drain would stall).
    #[serde(default)]
    pub pod_disruption_budgets: BuiltInCheck,

    /// Hold while an active, unsilenced, uninhibited alert matching `matchers` fires in Alertmanager (the one the
    /// operator is configured with: OpenShift's `alertmanager-main` by default). Off unless present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerts: Option<AlertsCheck>,

    /// Checks of your own: a CEL expression that must be true of each selected object of any kind (a storage
    /// cluster's health, a database's replication state). numo watches the kind; grant numo `get`, `list` and
    /// `watch` on it (see docs/api.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub custom: Vec<CustomCheck>,
}

/// A CEL expression that must hold for each selected object before a node starts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomCheck {
    /// API version of the objects, e.g. `ceph.rook.io/v1`.
    #[schemars(length(min = 1, max = 253))]
    pub api_version: String,

    /// Kind of the objects, e.g. `CephCluster`.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,

    /// Namespace of the objects; unset, every namespace (a cluster-scoped kind has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,

    /// Name of the one object to check; unset, every object the other fields select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,

    /// Labels the objects must carry (`matchLabels` and `matchExpressions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,

    /// A CEL expression over `object` (the whole object as the API serves it) that is true when a node may start,
    /// e.g. `object.status.ceph.health == 'HEALTH_OK'`.
    #[schemars(length(min = 1, max = 4096))]
    pub expression: String,

    /// What the status says while the expression is false, e.g. `Ceph is not healthy`.
    #[schemars(length(min = 1, max = 256))]
    pub message: String,
}

/// The alert check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AlertsCheck {
    /// Whether the check holds the rollout; default true.
    #[serde(default = "enabled")]
    pub enabled: bool,

    /// Alertmanager matchers an alert must all match to hold the rollout, e.g. `severity="critical"` (the default)
    /// or `namespace=~"openshift-.*"`.
    #[serde(default = "critical")]
    #[schemars(length(min = 1, max = 16))]
    pub matchers: Vec<String>,

    /// Names of alerts (`alertname`) that never hold the rollout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

impl Default for AlertsCheck {
    fn default() -> Self {
        Self { enabled: true, matchers: critical(), ignore: Vec::new() }
    }
}

fn critical() -> Vec<String> {
    vec![r#"severity="critical""#.to_string()]
}

/// A built-in check that can be switched off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BuiltInCheck {
    /// Whether the check holds the rollout; default true.
    #[serde(default = "enabled")]
    pub enabled: bool,
}

impl Default for BuiltInCheck {
    fn default() -> Self {
        Self { enabled: true }
    }
}

/// The ClusterOperator check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterOperatorsCheck {
    /// Whether the check holds the rollout; default true.
    #[serde(default = "enabled")]
    pub enabled: bool,

    /// Names of ClusterOperators whose state never holds the rollout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

impl Default for ClusterOperatorsCheck {
    fn default() -> Self {
        Self { enabled: true, ignore: Vec::new() }
    }
}

fn enabled() -> bool {
    true
}

/// The next (or current) maintenance window in which a node may start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WindowTimes {
    /// When it opens (or opened).
    pub start: Time,
    /// When it closes; unset when nothing closes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Time>,
}

/// One reason the next node does not start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Blocker {
    /// Which check holds it: `MaintenanceWindow`, `BlackoutWindow`, `ClusterOperators`, `MachineConfigPools`,
    /// `MachineConfigNodes`, `Nodes`, `PodDisruptionBudgets`, `Alerts`, `Custom`, `Soak`, `CanaryConfig`,
    /// `ForeignChange`, `DomainSoak`, `AdminHold` or `OtherOperator`.
    pub check: String,
    /// What holds it, naming the objects.
    pub message: String,
}

/// The checks, as `status.blockedBy[].check` and the `check` label of `numo_health_check_blocking` name them.
pub mod check {
    /// Outside every maintenance window.
    pub const MAINTENANCE_WINDOW: &str = "MaintenanceWindow";
    /// Inside a blackout window.
    pub const BLACKOUT_WINDOW: &str = "BlackoutWindow";
    /// A ClusterOperator is Degraded or not Available.
    pub const CLUSTER_OPERATORS: &str = "ClusterOperators";
    /// A MachineConfigPool is Degraded or NodeDegraded.
    pub const MACHINE_CONFIG_POOLS: &str = "MachineConfigPools";
    /// A MachineConfigNode says its node is degraded.
    pub const MACHINE_CONFIG_NODES: &str = "MachineConfigNodes";
    /// A node outside the rollout is not Ready or cordoned.
    pub const NODES: &str = "Nodes";
    /// A PodDisruptionBudget at zero covers a pod on the next node.
    pub const POD_DISRUPTION_BUDGETS: &str = "PodDisruptionBudgets";
    /// A matching alert fires.
    pub const ALERTS: &str = "Alerts";
    /// A custom check's CEL expression is false (or cannot be evaluated) for an object it selects.
    pub const CUSTOM: &str = "Custom";
    /// A node's soak holds its slot.
    pub const SOAK: &str = "Soak";
    /// The canary does not render the next node's own pool's config yet, or serves another pool's nodes.
    pub const CANARY_CONFIG: &str = "CanaryConfig";
    /// Someone else changed what numo holds and it is not put back yet, or keeps changing it back.
    pub const FOREIGN_CHANGE: &str = "ForeignChange";
    /// Under `spec.topology.domainSoakTime`: the last domain's soak holds the first node of the next domain.
    pub const DOMAIN_SOAK: &str = "DomainSoak";
    /// An admin paused a target pool before numo held it (their own hold, e.g. an EUS-to-EUS update): numo releases
    /// none of its nodes until the admin lets it (the go-ahead annotation, or unpausing it where numo's admission
    /// policy is not in force).
    pub const ADMIN_HOLD: &str = "AdminHold";
    /// Another operator (the SR-IOV network operator) paused the canary for a drain of its own; numo waits for it.
    pub const OTHER_OPERATOR: &str = "OtherOperator";

    /// Every check.
    pub const ALL: [&str; 15] = [
        MAINTENANCE_WINDOW,
        BLACKOUT_WINDOW,
        CLUSTER_OPERATORS,
        MACHINE_CONFIG_POOLS,
        MACHINE_CONFIG_NODES,
        NODES,
        POD_DISRUPTION_BUDGETS,
        ALERTS,
        CUSTOM,
        SOAK,
        CANARY_CONFIG,
        FOREIGN_CHANGE,
        DOMAIN_SOAK,
        ADMIN_HOLD,
        OTHER_OPERATOR,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_check_names_are_every_check_numo_has() {
        let schema = serde_json::to_value(schemars::schema_for!(Blocker)).unwrap_or_default();
        let described = schema["properties"]["check"]["description"].as_str().unwrap_or_default().to_string();
        let named: Vec<&str> = described.split('`').skip(1).step_by(2).collect();
        let mut all = check::ALL.to_vec();
        all.sort();
        let mut named_sorted = named.clone();
        named_sorted.sort();
        assert_eq!(named_sorted, all, "Blocker.check's doc names: {described}");
    }
}
