//! `config.openshift.io/v1` ClusterVersion: the cluster's current and desired release, written by the CVO.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The desired release of the cluster (`spec`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterVersion",
    status = "ClusterVersionStatus",
    doc = "ClusterVersion is the configuration for the cluster-version operator (derived fallback of the OpenShift CRD)."
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionSpec {
    /// Unique identifier of the cluster.
    #[serde(rename = "clusterID")]
    pub cluster_id: String,
    /// The update channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The release the cluster should run; unset, the cluster stays where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_update: Option<Update>,
}

/// A requested release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Update {
    /// Semantic version of the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Release image pull spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Skip signature and precondition checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
}

/// What the CVO reports (`status`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionStatus {
    /// The release the CVO is reconciling to.
    pub desired: Release,
    /// Most recent first: the releases the cluster applied or is applying.
    #[serde(default)]
    pub history: Vec<UpdateHistory>,
    /// The generation the CVO last acted on.
    #[serde(default)]
    pub observed_generation: i64,
    /// Fingerprint of the current payload.
    #[serde(default)]
    pub version_hash: String,
    /// Releases the cluster may update to.
    #[serde(default)]
    pub available_updates: Option<Vec<Release>>,
    /// The CVO's conditions (`Available`, `Progressing`, `Failing`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ClusterVersionCondition>,
}

/// A condition as OpenShift's own types write it (the ClusterOperatorStatusCondition shape, no observedGeneration):
/// the CVO's, the ClusterOperators' and the MachineConfigPools'.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVersionCondition {
    /// Condition type, e.g. `Progressing`.
    #[serde(rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    pub status: String,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Release {
    /// Semantic version of the release.
    #[serde(default)]
    pub version: String,
    /// Release image pull spec.
    #[serde(default)]
    pub image: String,
}

/// One entry of the update history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateHistory {
    /// `Partial` while the release is being applied, `Completed` once every control-plane operator rolled out.
    pub state: String,
    /// When the update started.
    pub started_time: Time,
    /// When the update completed; null while Partial.
    pub completion_time: Option<Time>,
    /// Semantic version of the release.
    #[serde(default)]
    pub version: String,
    /// Release image pull spec.
    #[serde(default)]
    pub image: String,
    /// Whether the release signature was verified.
    #[serde(default)]
    pub verified: bool,
}

impl ClusterVersion {
    /// The version the cluster is going to: `spec.desiredUpdate.version`, else `status.desired.version`.
    pub fn target_version(&self) -> Option<&str> {
        let desired = self.spec.desired_update.as_ref().and_then(|u| u.version.as_deref());
        let reported = self.status.as_ref().map(|s| s.desired.version.as_str());
        desired.or(reported).filter(|v| !v.is_empty())
    }

    /// Whether the newest history entry is `Completed` for `version` (the control plane finished upgrading to it).
    pub fn control_plane_completed(&self, version: &str) -> bool {
        self.status
            .as_ref()
            .and_then(|s| s.history.first())
            .is_some_and(|h| h.state == "Completed" && (h.version.is_empty() || h.version == version))
    }
}
