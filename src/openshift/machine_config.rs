//! `machineconfiguration.openshift.io/v1` MachineConfig: numo reads only the release-version annotation of the
//! rendered configs.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The content of a MachineConfig; numo never reads it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfig",
    doc = "MachineConfig defines the configuration for a machine (derived fallback of the OpenShift CRD)."
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigSpec {
    /// Ignition config (left unparsed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::api::free_form_object")]
    pub config: Option<serde_json::Value>,
    /// The OS image the machine boots.
    #[serde(default, rename = "osImageURL", skip_serializing_if = "Option::is_none")]
    pub os_image_url: Option<String>,
}

impl MachineConfig {
    /// The release version a rendered config was generated for.
    pub fn release_version(&self) -> Option<&str> {
        self.metadata.annotations.as_ref()?.get(super::RELEASE_VERSION).map(String::as_str)
    }
}
