//! The platform's identities the simulator acts as: the machine-config operator's ([`OPERATOR_USER`], its sync of
//! the pools), and the users the machine-config daemon and controller act as, their ServiceAccounts in
//! `openshift-machine-config-operator` as the MCO's manifests create them (`manifests/machineconfigdaemon/`,
//! `manifests/machineconfigcontroller/`).
//!
//! Only their MachineConfigNode writes ([`crate::machine_config_nodes`]) go through these identities; the daemon's
//! and controller's node, pool and MachineConfig writes still use the simulator's own client.

/// The user the real operator runs as.
pub const OPERATOR_USER: &str = "system:serviceaccount:openshift-machine-config-operator:machine-config-operator";
/// The namespace of the operator's ServiceAccount.
pub const OPERATOR_NAMESPACE: &str = "openshift-machine-config-operator";
/// The operator's ServiceAccount.
pub const OPERATOR_SERVICE_ACCOUNT: &str = "machine-config-operator";
/// The field manager of the operator's writes (the client-go default: the binary's name).
pub const OPERATOR_FIELD_MANAGER: &str = "machine-config-operator";

/// The machine-config daemon's ServiceAccount (in [`OPERATOR_NAMESPACE`]).
pub const DAEMON_SERVICE_ACCOUNT: &str = "machine-config-daemon";
/// The user the machine-config daemon runs as.
pub const DAEMON_USER: &str = "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon";
/// The machine-config controller's ServiceAccount (in [`OPERATOR_NAMESPACE`]); its node and drain controllers run as
/// it.
pub const CONTROLLER_SERVICE_ACCOUNT: &str = "machine-config-controller";
/// The user the machine-config controller runs as.
pub const CONTROLLER_USER: &str = "system:serviceaccount:openshift-machine-config-operator:machine-config-controller";

/// Rook's operator's ServiceAccount, in ODF's namespace [`crate::storage::NAMESPACE`] (rook/rook
/// `deploy/examples/common.yaml`; ODF runs Rook under the same name): the storage world's OSD and budget writes act
/// as it ([`crate::storage`]).
pub const ROOK_SERVICE_ACCOUNT: &str = "rook-ceph-system";
/// The user Rook's operator runs as.
pub const ROOK_USER: &str = "system:serviceaccount:openshift-storage:rook-ceph-system";

/// The SR-IOV network operator's namespace and ServiceAccount (openshift/sriov-network-operator
/// `config/manager/manager.yaml`, `deploy/operator.yaml`): its drain controller pauses and unpauses pools as it
/// ([`crate::sriov`]).
pub const SRIOV_NAMESPACE: &str = "openshift-sriov-network-operator";
/// See [`SRIOV_NAMESPACE`].
pub const SRIOV_SERVICE_ACCOUNT: &str = "sriov-network-operator";
/// The user the SR-IOV network operator runs as.
pub const SRIOV_USER: &str = "system:serviceaccount:openshift-sriov-network-operator:sriov-network-operator";

/// The user of ServiceAccount `account` in the MCO's namespace.
pub fn service_account_user(account: &str) -> String {
    format!("system:serviceaccount:{OPERATOR_NAMESPACE}:{account}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_name_their_service_accounts() {
        assert_eq!(DAEMON_USER, service_account_user(DAEMON_SERVICE_ACCOUNT));
        assert_eq!(CONTROLLER_USER, service_account_user(CONTROLLER_SERVICE_ACCOUNT));
        assert_eq!(OPERATOR_USER, service_account_user(OPERATOR_SERVICE_ACCOUNT));
        assert_eq!(SRIOV_USER, format!("system:serviceaccount:{SRIOV_NAMESPACE}:{SRIOV_SERVICE_ACCOUNT}"));
        assert_eq!(ROOK_USER, format!("system:serviceaccount:{}:{ROOK_SERVICE_ACCOUNT}", crate::storage::NAMESPACE));
    }
}
