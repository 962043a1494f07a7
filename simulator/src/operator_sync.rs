//! The machine-config operator's own sync of the pools it creates, as each OpenShift release does it, under the
//! operator's identity (`system:serviceaccount:openshift-machine-config-operator:machine-config-operator`, field
//! manager `machine-config-operator`), so that an admission policy judges its writes as on a real cluster.
//!
//! The real operator syncs on every event of its informers, pools among them
//! (openshift/machine-config-operator `pkg/operator/operator.go`, the `mcpInformer` in its event sources), and runs
//! its sync functions in order, stopping at the first that fails (`pkg/operator/sync.go` `syncAll`):
//! `MachineConfigPools` comes before `MachineConfigDaemon`, `MachineConfigController` (which hands the new release's
//! templates to the controllers), `MachineConfigServer` and `RequiredPools`. A failed step sets the
//! `machine-config` ClusterOperator `Degraded=True` with reason `<step>Failed` and the message `Failed to resync
//! <version> because: <error>` (`pkg/operator/status.go` `syncDegradedStatus`, `taskFailed`).
//!
//! - **4.16–4.21** (`release-4.21` `pkg/operator/sync.go` `syncMachineConfigPools` →
//!   `lib/resourceapply/machineconfig.go` `ApplyMachineConfigPool` → `lib/resourcemerge/machineconfig.go`
//!   `EnsureMachineConfigPool`): each of `master` and `worker` (and `arbiter` with that topology, not modelled) is
//!   read, created from its manifest when missing, and otherwise given back its manifest's labels and annotations
//!   (merged in, never removed), `spec.machineConfigSelector` and `spec.nodeSelector`, by an update (PUT) of the whole
//!   object. `paused`, `maxUnavailable` and the rest of the spec are left as they are.
//! - **4.22 and later** (`main` and `release-4.22`, commit f194385ed "MCO-2032"): a missing pool is created; an
//!   existing one gets only its manifest's labels and annotations back ("We don't care about the spec").

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context as _;
use kube::api::{Api, PostParams};
use kube::ResourceExt;
use numo::openshift::MachineConfigPool;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use numo::openshift::{MachineConfigPoolSpec, MC_ROLE};

use crate::membership::{MASTER, ROLE_LABEL_PREFIX, WORKER};
pub use crate::platform::{OPERATOR_FIELD_MANAGER, OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, OPERATOR_USER};
pub use crate::release::OpenShiftRelease;

/// The reason of `machine-config` `Degraded=True` when the pool sync fails (`taskFailed("MachineConfigPools")`).
pub const POOLS_FAILED: &str = "MachineConfigPoolsFailed";
/// The step of the operator's sync that writes MachineConfigNodes ([`crate::machine_config_nodes::operator`]).
pub const MACHINE_CONFIG_NODE_TASK: &str = "MachineConfigNode";
/// The step of the operator's sync that puts the built-in pools back to their manifests ([`OperatorSync`]).
pub const POOLS_TASK: &str = "MachineConfigPools";
/// The reason of `machine-config` `Degraded=True` when the MachineConfigNode sync fails.
pub const MACHINE_CONFIG_NODE_FAILED: &str = "MachineConfigNodeFailed";
/// The reason of `machine-config` `Degraded=True` when the wait for the required pools fails
/// ([`crate::required_pools`]).
pub const REQUIRED_POOLS_FAILED: &str = "RequiredPoolsFailed";

/// The steps of the operator's sync the simulator plays, in the order the operator runs them.
pub const TASKS: [&str; 4] =
    [MACHINE_CONFIG_NODE_TASK, POOLS_TASK, crate::admission_policies::CONTROLLER_TASK, crate::required_pools::TASK];

/// The step of the operator's sync that failed, and its error (`syncError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncFailure {
    /// The step, one of [`TASKS`].
    pub task: &'static str,
    /// Its error, as the operator prints it.
    pub error: String,
}

impl SyncFailure {
    /// The reason of `machine-config` `Degraded=True` (`taskFailed`: the step and `Failed`).
    pub fn reason(&self) -> String {
        format!("{}Failed", self.task)
    }
}

/// What one pass of the operator's sync did: the steps that passed (each clears a `Degraded` of its own reason,
/// `clearDegradedStatus`), and the one that failed, which stops the sync there (`syncAll`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// The steps that passed.
    pub passed: Vec<&'static str>,
    /// The step that failed.
    pub failed: Option<SyncFailure>,
}

impl SyncReport {
    /// Whether the sync stopped before it handed the release's templates to the controllers
    /// (`MachineConfigController` comes after the MachineConfigNode and pool steps, before `RequiredPools`).
    pub fn stopped_before_controllers(&self) -> bool {
        self.failed.as_ref().is_some_and(|f| f.task != crate::required_pools::TASK)
    }
}

/// The pool `role` as the machine-config operator's manifest has it (`manifests/<role>.machineconfigpool.yaml`).
pub fn manifest_pool(role: &str) -> MachineConfigPool {
    let selector = |key: String| LabelSelector {
        match_labels: Some(BTreeMap::from([(key, role.to_string())])),
        match_expressions: None,
    };
    let mut pool = MachineConfigPool::new(
        role,
        MachineConfigPoolSpec {
            machine_config_selector: Some(selector(MC_ROLE.to_string())),
            node_selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(format!("{ROLE_LABEL_PREFIX}{role}"), String::new())])),
                match_expressions: None,
            }),
            paused: false,
            max_unavailable: None,
            configuration: None,
            os_image_stream: None,
        },
    );
    pool.metadata.labels = Some(BTreeMap::from([
        ("machineconfiguration.openshift.io/mco-built-in".to_string(), String::new()),
        (format!("pools.operator.machineconfiguration.openshift.io/{role}"), String::new()),
    ]));
    // Only the master pool's manifest marks it required for upgrades (release-4.16 to release-4.23
    // `manifests/master.machineconfigpool.yaml`).
    if role == MASTER {
        let labels = pool.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(crate::required_pools::REQUIRED_FOR_UPGRADE.to_string(), String::new());
    }
    pool
}

/// What the operator would change of `existing` to make it its manifest `required` on `release`; None when
/// nothing.
pub fn ensure(
    existing: &MachineConfigPool,
    required: &MachineConfigPool,
    release: OpenShiftRelease,
) -> Option<MachineConfigPool> {
    let mut pool = existing.clone();
    let mut modified = false;
    for (have, want) in [
        (&mut pool.metadata.labels, &required.metadata.labels),
        (&mut pool.metadata.annotations, &required.metadata.annotations),
    ] {
        for (key, value) in want.iter().flatten() {
            let map = have.get_or_insert_with(BTreeMap::new);
            if map.get(key) != Some(value) {
                map.insert(key.clone(), value.clone());
                modified = true;
            }
        }
    }
    if release.enforces_pool_selectors() {
        if pool.spec.machine_config_selector != required.spec.machine_config_selector {
            pool.spec.machine_config_selector = required.spec.machine_config_selector.clone();
            modified = true;
        }
        if pool.spec.node_selector != required.spec.node_selector {
            pool.spec.node_selector = required.spec.node_selector.clone();
            modified = true;
        }
    }
    modified.then_some(pool)
}

/// The operator's pool sync: one pass per wake-up of the simulator.
pub struct OperatorSync {
    client: kube::Client,
    release: OpenShiftRelease,
}

impl OperatorSync {
    /// The sync of `release`, writing through `client` (which acts as the operator's ServiceAccount).
    pub fn new(client: kube::Client, release: OpenShiftRelease) -> Self {
        Self { client, release }
    }

    /// One sync over the cached pools: Ok when every built-in pool is as the release wants it (or was just made
    /// so), else the error of the first write that failed, as the operator reports it.
    pub async fn reconcile(&self, pools: &[Arc<MachineConfigPool>]) -> Result<(), String> {
        let api: Api<MachineConfigPool> = Api::all(self.client.clone());
        let params = PostParams { field_manager: Some(OPERATOR_FIELD_MANAGER.into()), ..Default::default() };
        for role in [MASTER, WORKER] {
            let required = manifest_pool(role);
            let cached = pools.iter().find(|p| p.name_any() == role);
            // The cache lags; the operator reads the pool before it writes (resourceapply's Get).
            let result = match cached {
                Some(cached) if ensure(cached, &required, self.release).is_none() => Ok(()),
                _ => self.apply(&api, &params, role, &required).await,
            };
            if let Err(error) = result {
                return Err(format!("{error:#}"));
            }
        }
        Ok(())
    }

    async fn apply(
        &self,
        api: &Api<MachineConfigPool>,
        params: &PostParams,
        role: &str,
        required: &MachineConfigPool,
    ) -> anyhow::Result<()> {
        let existing = match api.get_opt(role).await.with_context(|| format!("reading MachineConfigPool {role}"))? {
            Some(existing) => existing,
            None => {
                api.create(params, required).await.with_context(|| format!("creating MachineConfigPool {role}"))?;
                tracing::info!(pool = role, "machine-config operator: created the missing pool");
                return Ok(());
            }
        };
        if let Some(pool) = ensure(&existing, required, self.release) {
            api.replace(role, params, &pool).await.map_err(|e| anyhow::anyhow!("{}", error_text(e)))?;
            tracing::info!(pool = role, release = %self.release, "machine-config operator: put the pool back to its manifest");
        }
        Ok(())
    }
}

/// An API error as client-go prints it in the operator's message (`admission webhook ... denied the request: ...`
/// for a refused write).
fn error_text(error: kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    fn steered() -> MachineConfigPool {
        let mut pool = manifest_pool(WORKER);
        pool.spec.paused = true;
        pool.spec.node_selector = Some(LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "x".into(),
                operator: "Exists".into(),
                values: None,
            }]),
        });
        pool.metadata.labels = None;
        pool
    }

    #[test]
    fn up_to_4_21_the_selectors_go_back_and_nothing_else_changes() {
        let required = manifest_pool(WORKER);
        let release = OpenShiftRelease { minor: 21 };
        let fixed = ensure(&steered(), &required, release);
        let fixed = fixed.unwrap_or_else(|| panic!("4.21 puts the selector back"));
        assert_eq!(fixed.spec.node_selector, required.spec.node_selector);
        assert!(fixed.spec.paused, "paused is the admin's");
        assert_eq!(fixed.metadata.labels, required.metadata.labels);
        assert!(ensure(&fixed, &required, release).is_none(), "then nothing to do");
    }

    #[test]
    fn from_4_22_only_the_metadata_goes_back() {
        let required = manifest_pool(WORKER);
        let release = OpenShiftRelease { minor: 22 };
        let fixed = ensure(&steered(), &required, release).unwrap_or_else(|| panic!("the labels go back"));
        assert_eq!(fixed.spec.node_selector, steered().spec.node_selector, "the selector is left");
        assert_eq!(fixed.metadata.labels, required.metadata.labels);
        let mut extra = fixed.clone();
        extra.metadata.labels.get_or_insert_with(Default::default).insert("team".into(), "a".into());
        assert!(ensure(&extra, &required, release).is_none(), "labels are merged in, never removed");
    }
}
