//! MachineConfigPools as an admin adds them to the simulated OpenShift of a test world.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use numo::openshift::{MachineConfigPool, MachineConfigPoolSpec};

/// The label of a MachineConfig that names the pools rendering it.
const MC_ROLE: &str = "machineconfiguration.openshift.io/role";

/// A custom pool `name` as the OpenShift docs create one: it renders the worker configs plus its own
/// (`machineconfiguration.openshift.io/role` in `worker`, `name`) and takes the nodes labelled
/// `node-role.kubernetes.io/<node_role>`; not paused. Create it with `Api::<MachineConfigPool>::all(..).create(..)`.
pub fn custom(name: &str, node_role: &str) -> MachineConfigPool {
    let machine_configs = LabelSelectorRequirement {
        key: MC_ROLE.to_string(),
        operator: "In".to_string(),
        values: Some(vec!["worker".to_string(), name.to_string()]),
    };
    let spec = MachineConfigPoolSpec {
        machine_config_selector: Some(LabelSelector {
            match_expressions: Some(vec![machine_configs]),
            ..Default::default()
        }),
        node_selector: Some(LabelSelector {
            match_labels: Some([(format!("node-role.kubernetes.io/{node_role}"), String::new())].into()),
            ..Default::default()
        }),
        paused: false,
        ..Default::default()
    };
    MachineConfigPool::new(name, spec)
}
