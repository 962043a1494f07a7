//! The changes a plan asks for; `apply` carries them out, in order, each idempotent.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::pool_claim::PoolOriginal;

/// What must still hold for a pool write to go ahead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolPrecondition {
    /// The pool is unchanged since the plan saw it (its first claim: nobody else may claim it in between).
    ResourceVersion(String),
    /// The pool is still claimed by this run config (every later write: status churn by the MCO does not matter).
    ClaimedBy(String),
}

/// A pool's new `spec.paused`, `spec.nodeSelector`, `spec.maxUnavailable` and (the canary's)
/// `spec.machineConfigSelector`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolSpec {
    /// `spec.paused`.
    pub paused: bool,
    /// `spec.nodeSelector`; None leaves it as it is.
    pub node_selector: Option<LabelSelector>,
    /// `spec.maxUnavailable`; None leaves it as it is.
    pub max_unavailable: Option<IntOrString>,
    /// `spec.machineConfigSelector`; None leaves it as it is.
    pub machine_config_selector: Option<LabelSelector>,
    /// `spec.osImageStream`: `Some(Some(name))` sets it, `Some(None)` removes it; None leaves it as it is.
    pub os_image_stream: Option<Option<String>>,
}

/// What a put-back writes: each field that is `Some`, set to the value numo last wrote (`Some(None)`: removed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PutBack {
    /// `spec.paused`.
    pub paused: Option<bool>,
    /// `spec.nodeSelector`.
    pub node_selector: Option<Option<LabelSelector>>,
    /// `spec.maxUnavailable`.
    pub max_unavailable: Option<Option<IntOrString>>,
    /// `spec.machineConfigSelector` (the canary's, as numo pointed it at the pool it serves).
    pub machine_config_selector: Option<LabelSelector>,
}

/// A change to make in the cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    /// Add numo's finalizer to the run config.
    AddFinalizer,
    /// Remove numo's finalizer (everything is restored).
    RemoveFinalizer,
    /// Claim a pool for this run config, recording how it was.
    ClaimPool {
        /// The pool.
        pool: String,
        /// The resourceVersion the plan saw.
        resource_version: String,
        /// The claim value, `namespace/name`.
        owner: String,
        /// The pool as it was (kept from a stale claim when taking one over).
        original: PoolOriginal,
        /// The spec to set with the claim.
        spec: PoolSpec,
    },
    /// Change a pool this run config claims.
    SteerPool {
        /// The pool.
        pool: String,
        /// The claim value, `namespace/name`.
        owner: String,
        /// The spec to set.
        spec: PoolSpec,
    },
    /// Put back what someone else changed of a pool this run config claims, as numo last wrote it.
    PutBackPool {
        /// The pool.
        pool: String,
        /// The claim value, `namespace/name`.
        owner: String,
        /// The fields to put back.
        put_back: PutBack,
    },
    /// An admin lets numo roll a target pool they had paused before numo held it: it stays paused while numo gates
    /// its nodes, and its recorded original becomes `original` (unpaused), which the restore puts back.
    TakeOverHold {
        /// The pool.
        pool: String,
        /// The claim value, `namespace/name`.
        owner: String,
        /// The pool as the admin wants it after the rollout.
        original: PoolOriginal,
    },
    /// Remove the go-ahead annotation from the run config (numo acted on it).
    ClearGoAhead,
    /// Put a pool back as recorded and drop numo's annotations.
    RestorePool {
        /// The pool.
        pool: String,
        /// What must still hold.
        precondition: PoolPrecondition,
        /// What to put back.
        spec: PoolSpec,
        /// Fields the pool has now that the original had not (`/spec/nodeSelector`, `/spec/maxUnavailable`).
        remove: Vec<&'static str>,
        /// The annotation keys of numo's claim present on the pool.
        annotations: Vec<&'static str>,
    },
    /// Add rule labels to a node and take away numo's release mark (holding it in its target pool).
    LabelNode {
        /// The node.
        node: String,
        /// The label keys.
        labels: Vec<String>,
    },
    /// Release a node to the canary pool: add numo's release mark, remove its rule labels.
    ReleaseNode {
        /// The node.
        node: String,
        /// The rule label keys it carries.
        labels: Vec<String>,
        /// The value of the release mark (the canary's name, label-safe).
        mark: String,
    },
    /// Remove labels from a node: rule labels of rules the spec no longer has, or, at the end, the rule labels and
    /// the release mark.
    UnlabelNode {
        /// The node.
        node: String,
        /// The label keys.
        labels: Vec<String>,
    },
    /// Create a Job (an existing Job of that name means it was created before).
    CreateJob(Box<Job>),
    /// Remove numo's result finalizer from a Job that is being deleted (its result is in the status).
    ReleaseJob {
        /// The Job's namespace.
        namespace: String,
        /// The Job's name.
        name: String,
    },
    /// Remove the retry annotation (it was acted on).
    ClearRetry,
    /// Adds to the run config's rollout record (its timeline ConfigMap, [`crate::rollout_record`]): `entries` are
    /// its new keys; `fresh` starts a new record for `rollout` (the previous rollout's goes).
    RecordRollout {
        /// The rollout.
        rollout: String,
        /// Keys and values to add.
        entries: Vec<(String, String)>,
        /// Whether the record starts afresh.
        fresh: bool,
    },
}
