//! The OpenShift kinds numo reads and patches, typed after the real CRDs (`config.openshift.io/v1` ClusterVersion
//! and ClusterOperator, `machineconfiguration.openshift.io/v1` MachineConfigPool and MachineConfig), plus the node
//! annotations and labels of the Machine Config Operator.
//!
//! Only the fields numo (and its simulator) use are modelled; unknown fields are ignored on read and never written,
//! because every write is a patch of named fields. The derived CRDs are a fallback for clusters without the real ones.

pub mod cluster_operator;
pub mod cluster_version;
pub mod machine_config;
pub mod machine_config_node;
pub mod machine_config_pool;
pub mod machine_os_config;
pub mod storage_cluster;

pub use cluster_operator::{
    ClusterOperator, ClusterOperatorSpec, ClusterOperatorStatus, OperandVersion, KUBE_APISERVER,
};
pub use cluster_version::{
    ClusterVersion, ClusterVersionCondition, ClusterVersionSpec, ClusterVersionStatus, Release, Update, UpdateHistory,
};
pub use machine_config::{MachineConfig, MachineConfigSpec};
pub use machine_config_node::{MachineConfigNode, MachineConfigNodeSpec};
pub use machine_config_pool::{
    config_content, effective_os_image_stream, ConfigSource, MachineConfigPool, MachineConfigPoolCondition,
    MachineConfigPoolSpec, MachineConfigPoolStatus, OsImageStreamReference, RenderedConfiguration,
};
pub use machine_os_config::{MachineOSConfig, MachineOSConfigSpec};
pub use storage_cluster::{StorageCluster, StorageClusterStatus};

/// Node label (and rendered MachineConfig annotation) carrying the OpenShift release version, e.g. `4.16.4`.
pub const RELEASE_VERSION: &str = "machineconfiguration.openshift.io/release-image-version";
/// Node annotation: the rendered MachineConfig the node runs now.
pub const CURRENT_CONFIG: &str = "machineconfiguration.openshift.io/currentConfig";
/// Node annotation: the rendered MachineConfig the node should run.
pub const DESIRED_CONFIG: &str = "machineconfiguration.openshift.io/desiredConfig";
/// Node annotation: the machine-config daemon's state (`Done`, `Working`, `Degraded`).
pub const MCD_STATE: &str = "machineconfiguration.openshift.io/state";
/// Node annotation: the machine-config daemon's reason for a Degraded state.
pub const MCD_REASON: &str = "machineconfiguration.openshift.io/reason";
/// Label on a MachineConfig naming the pool role it belongs to.
pub const MC_ROLE: &str = "machineconfiguration.openshift.io/role";
/// Annotation the MCO puts on rendered MachineConfigs naming the controller version that rendered them.
pub const GENERATED_BY: &str = "machineconfiguration.openshift.io/generated-by-controller-version";
/// Name of the one ClusterVersion object.
pub const CLUSTER_VERSION_NAME: &str = "version";

/// All derived CRDs of the OpenShift kinds, for clusters that do not have the real ones installed.
pub fn crds() -> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> {
    use kube::CustomResourceExt;
    vec![ClusterVersion::crd(), ClusterOperator::crd(), MachineConfigPool::crd(), MachineConfig::crd()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;

    #[test]
    fn foreign_kinds_address_the_real_api_paths() {
        assert_eq!(ClusterVersion::url_path(&(), None), "/apis/config.openshift.io/v1/clusterversions");
        assert_eq!(
            MachineConfigPool::url_path(&(), None),
            "/apis/machineconfiguration.openshift.io/v1/machineconfigpools"
        );
        assert_eq!(MachineConfig::url_path(&(), None), "/apis/machineconfiguration.openshift.io/v1/machineconfigs");
    }
}
