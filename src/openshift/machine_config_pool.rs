//! `machineconfiguration.openshift.io/v1` MachineConfigPool: numo pauses pools and steers their node selectors.

use k8s_openapi::apimachinery::pkg::{apis::meta::v1::LabelSelector, util::intstr::IntOrString};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A pool of machines sharing a rendered configuration (`spec`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfigPool",
    status = "MachineConfigPoolStatus",
    shortname = "mcp",
    doc = "MachineConfigPool describes a pool of MachineConfigs (derived fallback of the OpenShift CRD)."
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolSpec {
    /// Selects the MachineConfigs rendered into this pool's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_selector: Option<LabelSelector>,
    /// Selects the nodes of this pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// While true the MCO updates no node of this pool.
    #[serde(default)]
    pub paused: bool,
    /// How many nodes may update at once (a number or a percentage; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// The rendered configuration the pool's nodes should run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<RenderedConfiguration>,
    /// The OS image stream the pool's nodes boot (OpenShift 4.21+ behind the `OSStreams` feature gate, on by default
    /// from 4.23); absent: the cluster's default stream, or for a custom pool the `worker` pool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_image_stream: Option<OsImageStreamReference>,
}

/// A reference to an OS image stream by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OsImageStreamReference {
    /// The stream's name, as the cluster's OSImageStream `cluster` lists it (e.g. `rhel-10`).
    pub name: String,
}

impl MachineConfigPool {
    /// The OS image stream the pool's nodes boot, as the machine-config operator's render controller resolves it
    /// (openshift/machine-config-operator release-4.23 `pkg/controller/common/helpers.go`
    /// `GetEffectiveOSImageStreamName`): the pool's own `spec.osImageStream`, else for a custom pool the `worker`
    /// pool's (`worker`), else None (the cluster's default).
    pub fn effective_os_image_stream<'a>(&'a self, worker: Option<&'a MachineConfigPool>) -> Option<&'a str> {
        let own = |pool: &'a MachineConfigPool| pool.spec.os_image_stream.as_ref().map(|s| s.name.as_str());
        effective_os_image_stream(self.metadata.name.as_deref().unwrap_or_default(), own(self), worker.and_then(own))
    }
}

/// The OS image stream pool `pool` boots when it names `own` and the `worker` pool names `worker` (see
/// [`MachineConfigPool::effective_os_image_stream`]): its own, else for a custom pool `worker`'s.
pub fn effective_os_image_stream<'a>(pool: &str, own: Option<&'a str>, worker: Option<&'a str>) -> Option<&'a str> {
    own.or_else(|| worker.filter(|_| !crate::membership::is_built_in(pool)))
}

/// A reference to a rendered MachineConfig.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RenderedConfiguration {
    /// Name of the rendered MachineConfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The MachineConfigs rendered into it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source: Vec<ConfigSource>,
}

/// One MachineConfig a rendered configuration was merged from (an object reference).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigSource {
    /// `machineconfiguration.openshift.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `MachineConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name of the MachineConfig.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ConfigSource {
    /// A reference to the MachineConfig `name`.
    pub fn machine_config(name: &str) -> Self {
        Self {
            api_version: Some("machineconfiguration.openshift.io/v1".into()),
            kind: Some("MachineConfig".into()),
            name: Some(name.into()),
        }
    }
}

/// What the MCO reports about a pool (`status`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigPoolStatus {
    /// The generation the MCO last acted on.
    #[serde(default)]
    pub observed_generation: i64,
    /// The rendered configuration the pool's nodes are moving to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<RenderedConfiguration>,
    /// Nodes in the pool.
    #[serde(default)]
    pub machine_count: i32,
    /// Nodes running the pool's current configuration.
    #[serde(default)]
    pub updated_machine_count: i32,
    /// Nodes running the current configuration and ready.
    #[serde(default)]
    pub ready_machine_count: i32,
    /// Nodes updating or not ready.
    #[serde(default)]
    pub unavailable_machine_count: i32,
    /// Nodes that failed to update.
    #[serde(default)]
    pub degraded_machine_count: i32,
    /// Updated, Updating, Degraded, NodeDegraded, RenderDegraded.
    #[serde(default)]
    pub conditions: Vec<MachineConfigPoolCondition>,
}

/// A pool condition (the MCO's own type, without observedGeneration: the shape ClusterVersion's conditions have).
pub type MachineConfigPoolCondition = super::ClusterVersionCondition;

impl MachineConfigPool {
    /// Whether the pool's condition `type_` is True.
    pub fn condition_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some()
    }

    /// The pool's condition `type_` when it is True.
    pub fn condition(&self, type_: &str) -> Option<&MachineConfigPoolCondition> {
        self.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_ && c.status == "True")
    }
}

impl RenderedConfiguration {
    /// The names of its sources.
    pub fn source_names(&self) -> Vec<String> {
        self.source.iter().filter_map(|s| s.name.clone()).collect()
    }
}

/// What identifies a rendered config's content: the hash the MCO names it by (`rendered-<pool>-<hash>`, the hash
/// taken over the spec only, not the pool), so two pools' configs with equal content share it. A name of another
/// shape is its own identity.
pub fn config_content(rendered: &str) -> &str {
    match rendered.strip_prefix("rendered-").and_then(|rest| rest.rsplit_once('-')) {
        Some((pool, hash)) if !pool.is_empty() && !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            hash
        }
        _ => rendered,
    }
}

#[cfg(test)]
mod tests {
    use super::config_content;

    #[test]
    fn rendered_configs_of_equal_content_share_their_hash_whatever_the_pool() {
        let worker = "rendered-worker-5c1a2b3d4e5f60718293a4b5c6d7e8f9";
        let canary = "rendered-my-canary-5c1a2b3d4e5f60718293a4b5c6d7e8f9";
        assert_eq!(config_content(worker), config_content(canary));
        assert_eq!(config_content(worker), "5c1a2b3d4e5f60718293a4b5c6d7e8f9");
        assert_ne!(config_content(worker), config_content("rendered-worker-00000000000000000000000000000000"));
        // Names of another shape compare whole.
        assert_eq!(config_content("rendered-worker-x"), "rendered-worker-x");
        assert_eq!(config_content("rendered--abc"), "rendered--abc");
        assert_eq!(config_content("custom"), "custom");
    }
}
