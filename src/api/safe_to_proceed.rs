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
    /// `ForeignChange`, `DomainSoak`, `AdminHold`, `OtherOperator` or `EarlierTurn`.
    pub check: String,
    /// What holds it, naming the objects.
    pub message: String,
}

/// The checks, as `status.blockedBy[].check` and the `check` label of `numo_health_check_blocking` name them. [`ALL`]
/// describes each; `cargo xtask docs` writes docs/status.md's table of what to do, the NumoRolloutHeld runbook and
/// alert from it.
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
    /// The next node's turn of an earlier rollout (the cluster's target changed during its cleanup) still runs a
    /// Job: its turn for the new target starts once that Job ended.
    pub const EARLIER_TURN: &str = "EarlierTurn";

    /// A check, as the documentation describes it.
    #[derive(Clone, Copy, Debug)]
    pub struct About {
        /// Its name.
        pub name: &'static str,
        /// What holds the next node, as a clause ("a ClusterOperator is Degraded or not Available").
        pub holds: &'static str,
        /// What an admin does about it (Markdown).
        pub to_do: &'static str,
        /// Whether it holds by design (a window, a soak), or has an alert of its own: the NumoRolloutHeld alert
        /// leaves it out.
        pub by_design: bool,
    }

    /// Every check, described, in the order the documentation lists them.
    pub const ABOUT: [About; 16] = [
        About {
            name: MAINTENANCE_WINDOW,
            holds: "no maintenance window is open",
            to_do: "nothing: numo starts the next node when the window opens (`status.nextWindow.start`). To start \
                    now, change or remove `spec.maintenanceWindows`.",
            by_design: true,
        },
        About {
            name: BLACKOUT_WINDOW,
            holds: "a blackout window is open",
            to_do: "nothing, or shorten the blackout in `spec.blackoutWindows`.",
            by_design: true,
        },
        About {
            name: CLUSTER_OPERATORS,
            holds: "a ClusterOperator is Degraded or not Available",
            to_do: "fix the named operator (`oc get co`, `oc describe co <name>`), or list it under \
                    `healthChecks.clusterOperators.ignore` if it is known to be harmless. A message saying \
                    ClusterOperators cannot be read means numo's RBAC lacks `clusteroperators` (an older install): \
                    apply the current `config/rbac` or upgrade through OLM.",
            by_design: false,
        },
        About {
            name: MACHINE_CONFIG_POOLS,
            holds: "a MachineConfigPool is Degraded or NodeDegraded",
            to_do: "`oc get mcp`, and `oc describe mcp <pool>` for the degraded node; the MCO's own degradation must \
                    be fixed first.",
            by_design: false,
        },
        About {
            name: MACHINE_CONFIG_NODES,
            holds: "a MachineConfigNode says its node is NodeDegraded",
            to_do: "`oc describe machineconfignode <node>` for the machine-config daemon's reason (its \
                    `NodeDegraded` condition), and `oc logs -n openshift-machine-config-operator` of the node's \
                    machine-config daemon; fix the node (the daemon retries), or skip it if it is in the rollout.",
            by_design: false,
        },
        About {
            name: NODES,
            holds: "a node outside the rollout is not Ready or is cordoned",
            to_do: "bring the named node back (Ready) or uncordon it (`oc adm uncordon`); a node the MCO is \
                    updating in another pool is uncordoned by the MCO when it is done.",
            by_design: false,
        },
        About {
            name: POD_DISRUPTION_BUDGETS,
            holds: "a PodDisruptionBudget that allows no disruption covers a pod on the next node",
            to_do: "`oc get poddisruptionbudgets -A` (ALLOWED DISRUPTIONS 0): the named pod cannot be evicted. Scale \
                    its workload up, move it, or relax the budget; numo sees the change as soon as the budget's \
                    status does.",
            by_design: false,
        },
        About {
            name: ALERTS,
            holds: "an alert matching the run config's alert check fires, or Alertmanager cannot be asked",
            to_do: "resolve the alert (the console's Observe → Alerting shows those \
                    `healthChecks.alerts.matchers` select), or silence it in Alertmanager if it is known and \
                    harmless for the upgrade; numo asks again every 30 s while alerts hold the rollout. `cannot be \
                    queried: HTTP 403` means numo may not read alerts: see [docs/api.md](api.md#alerts).",
            by_design: false,
        },
        About {
            name: CUSTOM,
            holds: "a custom check's expression is false for an object it selects",
            to_do: "the check's own message names the object (its `expression` is in the run config's spec); \
                    `cannot read … forbidden` means numo was not granted `get`, `list`, `watch` on the kind (see \
                    [docs/api.md](api.md#custom-checks)); `selects no … object` means a name, namespace or selector \
                    that matches nothing.",
            by_design: false,
        },
        About {
            name: SOAK,
            holds: "a node that finished soaks, and its slot with it",
            to_do: "nothing: the named node soaks until the time shown; if its soak restarts, the node's entry in \
                    `status.nodes` says why.",
            by_design: true,
        },
        About {
            name: CANARY_CONFIG,
            holds: "the canary pool cannot bring the next node its pool's config",
            to_do: "under `trigger: AnyConfigChange`: the canary renders other content than the node's pool (`oc \
                    get mcp` shows both rendered configs), so a released node would never get its pool's config. \
                    Make the canary's `machineConfigSelector` select exactly the MachineConfigs the target pool \
                    selects; a render under way clears by itself within seconds. If a pool cannot render \
                    (`RenderDegraded`), fix the MachineConfig the message names.",
            by_design: false,
        },
        About {
            name: FOREIGN_CHANGE,
            holds: "someone else changed what numo holds, and it is not put back yet",
            to_do: "nothing while numo puts it back; if the same field keeps being changed back, the \
                    NumoForeignChangeContested alert and the `Contested` condition name who writes it: see \
                    [Other hands](#other-hands).",
            by_design: true,
        },
        About {
            name: DOMAIN_SOAK,
            holds: "the last failure domain soaks (`spec.topology.domainSoakTime`) before the next one starts",
            to_do: "nothing: the next domain starts when the soak ends; shorten `spec.topology.domainSoakTime` to \
                    start it sooner.",
            by_design: true,
        },
        About {
            name: ADMIN_HOLD,
            holds: "an admin paused a target pool before numo held it",
            to_do: "the admin's own hold (for example an EUS-to-EUS update): numo releases none of the pool's nodes \
                    until the admin lets it, with the go-ahead annotation (see \
                    [EUS-to-EUS](install.md#eus-to-eus-updates)).",
            by_design: true,
        },
        About {
            name: OTHER_OPERATOR,
            holds: "another operator, such as the SR-IOV network operator, has paused the canary pool for a drain \
                    of its own",
            to_do: "nothing: numo waits for the other operator to unpause the canary (see \
                    [install.md](install.md#other-operators-that-pause-pools-next-to-numo)); `oc get \
                    sriovnetworknodestates -A` shows its drain.",
            by_design: false,
        },
        About {
            name: EARLIER_TURN,
            holds: "the next node still runs a cleanup Job of its turn for the release the cluster asked for before",
            to_do: "nothing: its gated turn for the new release starts when that Job ends (`oc get jobs` shows it);                     if the Job hangs, fix or delete it.",
            by_design: true,
        },
    ];

    /// Every check's name, as [`ABOUT`] lists them.
    pub const ALL: [&str; 16] = {
        let mut names = [""; 16];
        let mut i = 0;
        while i < ABOUT.len() {
            names[i] = ABOUT[i].name;
            i += 1;
        }
        names
    };

    /// What the documentation says of check `name`.
    pub fn about(name: &str) -> Option<&'static About> {
        ABOUT.iter().find(|a| a.name == name)
    }
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
