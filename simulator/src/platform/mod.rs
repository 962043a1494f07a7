//! Who the simulator writes as. Its own writes carry [`FIELD_MANAGER`]; the platform components whose writes
//! admission and RBAC must judge as on a real cluster act through their own clients ([`Platform`]), as the users
//! named here: the machine-config operator's ([`OPERATOR_USER`], its sync of the pools), and the users the
//! machine-config daemon and controller act as, their ServiceAccounts in `openshift-machine-config-operator` as the
//! MCO's manifests create them (`manifests/machineconfigdaemon/`, `manifests/machineconfigcontroller/`), Rook's
//! operator and the SR-IOV network operator. Seeding creates those ServiceAccounts and binds their roles
//! (`platform/accounts.rs`).
//!
//! Only their writes through [`Platform`] act as these identities; the daemon's and controller's node, pool and
//! MachineConfig writes still use the simulator's own client.

pub(crate) mod accounts;

/// Field manager of every write the simulator makes.
pub const FIELD_MANAGER: &str = "numo-simulator";

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

/// The clients of the platform components that must act under their own identity, so that admission (numo's
/// ValidatingAdmissionPolicy) judges their writes as on a real cluster and RBAC holds them to their roles.
#[derive(Clone)]
pub struct Platform {
    /// Acts as the machine-config operator ([`OPERATOR_USER`]): its pool sync and its
    /// MachineConfigNode sync.
    pub machine_config_operator: kube::Client,
    /// Acts as the machine-config daemon ([`DAEMON_USER`]): its MachineConfigNode writes.
    pub machine_config_daemon: kube::Client,
    /// Acts as the machine-config controller ([`CONTROLLER_USER`]): the MachineConfigNode writes of its
    /// node and drain controllers.
    pub machine_config_controller: kube::Client,
    /// The drain controller's evictions ([`crate::storage::drain`]), as the machine-config controller but without kube's
    /// retry of 429 responses: client-go does not retry the 429 of a disruption budget (it carries no
    /// `Retry-After`), the drain itself tries again.
    pub drain_evictions: kube::Client,
    /// Acts as Rook's operator ([`ROOK_USER`]): the OSDs, budgets and state map of [`crate::storage`].
    pub rook_operator: kube::Client,
    /// Acts as the SR-IOV network operator ([`SRIOV_USER`]): its pauses and unpauses of pools
    /// ([`crate::sriov`]).
    pub sriov_operator: kube::Client,
}

impl Platform {
    /// Every component acting as the user of `client`.
    pub fn as_one(client: kube::Client) -> Self {
        Self {
            machine_config_operator: client.clone(),
            machine_config_daemon: client.clone(),
            machine_config_controller: client.clone(),
            drain_evictions: client.clone(),
            rook_operator: client.clone(),
            sriov_operator: client,
        }
    }

    /// Each component impersonating its own user, from the (admin) client configuration `config`; seeding creates
    /// their ServiceAccounts and binds their roles. (With [`Platform::as_one`] the drain's evictions go through the
    /// given client, whose retries may hide a budget's refusals.)
    pub fn impersonating(config: &kube::Config) -> Result<Self, kube::Error> {
        let acting_as_with = |user: &str, default_retry: bool| {
            let mut config = config.clone();
            config.auth_info.impersonate = Some(user.to_string());
            config.auth_info.impersonate_groups = None;
            config.default_retry = default_retry;
            kube::Client::try_from(config)
        };
        let acting_as = |user: &str| acting_as_with(user, config.default_retry);
        Ok(Self {
            machine_config_operator: acting_as(OPERATOR_USER)?,
            machine_config_daemon: acting_as(DAEMON_USER)?,
            machine_config_controller: acting_as(CONTROLLER_USER)?,
            drain_evictions: acting_as_with(CONTROLLER_USER, false)?,
            rook_operator: acting_as(ROOK_USER)?,
            sriov_operator: acting_as(SRIOV_USER)?,
        })
    }
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
