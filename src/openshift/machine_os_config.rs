//! `machineconfiguration.openshift.io/v1` MachineOSConfig (on-cluster image mode, GA in OpenShift 4.19): one per
//! pool, it makes the machine-config operator build an OS image for that pool and boot the pool's nodes from it.
//! numo reads only which pool each one is for.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An on-cluster OS image build for one pool (`spec`).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineOSConfig",
    doc = "MachineOSConfig: an on-cluster OS image build for a pool (derived fallback of the OpenShift CRD)."
)]
#[serde(rename_all = "camelCase")]
pub struct MachineOSConfigSpec {
    /// The pool whose nodes boot the built image.
    #[serde(default)]
    pub machine_config_pool: MachineConfigPoolReference,
}

/// A reference to a MachineConfigPool by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MachineConfigPoolReference {
    /// The pool's name.
    #[serde(default)]
    pub name: String,
}
