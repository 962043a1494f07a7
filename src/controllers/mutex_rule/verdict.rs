//! A rule's verdict: valid, or why not, as the `ValidConfig` condition says it. Shared by the checks (`access`,
//! `renderings`) and the planner that runs them (`plan`).

use crate::api::JobRendering;
use crate::conditions::Desired;

/// The condition type of a rule's status.
pub const VALID_CONFIG: &str = crate::api::mutex_rule::VALID_CONFIG;
/// Where the spec's gate Job template lives.
pub const JOB_SPEC_FIELD: &str = "spec.jobSpec";
/// Where the spec's cleanup Job template lives.
pub const CLEANUP_FIELD: &str = "spec.cleanUpJobSpec";

/// Why a rule is (in)valid: the `ValidConfig` reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Every check passed, for run configs with and without `avoidTargetNode`.
    Valid,
    /// Valid, but only with numo's anti-affinity: run configs with `avoidTargetNode: false` may not use the rule.
    AvoidTargetNodeRequired,
    /// Valid, but only without numo's anti-affinity: only run configs with `avoidTargetNode: false` may use it.
    AvoidTargetNodeUnsupported,
    /// `spec.jobSpec` is not a usable JobSpec.
    InvalidJobSpec,
    /// `spec.cleanUpJobSpec` is not a usable JobSpec.
    InvalidCleanUpJobSpec,
    /// `spec.jobNamespace` is neither the rule's namespace nor on the operator's allow-list.
    JobNamespaceNotAllowed,
    /// A ServiceAccount the Jobs would run as does not opt in to the rule's namespace.
    ServiceAccountNotOptedIn,
    /// The apiserver refused the dry-run create of a Job.
    DryRunRejected,
    /// The object does not parse into numo's types.
    Malformed,
}

impl Reason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Valid => "Valid",
            Reason::AvoidTargetNodeRequired => "AvoidTargetNodeRequired",
            Reason::AvoidTargetNodeUnsupported => "AvoidTargetNodeUnsupported",
            Reason::InvalidJobSpec => "InvalidJobSpec",
            Reason::InvalidCleanUpJobSpec => "InvalidCleanUpJobSpec",
            Reason::JobNamespaceNotAllowed => "JobNamespaceNotAllowed",
            Reason::ServiceAccountNotOptedIn => "ServiceAccountNotOptedIn",
            Reason::DryRunRejected => "DryRunRejected",
            Reason::Malformed => "Malformed",
        }
    }

    /// Whether a rule with this reason is valid (usable by some run configs).
    pub fn is_valid(self) -> bool {
        matches!(self, Reason::Valid | Reason::AvoidTargetNodeRequired | Reason::AvoidTargetNodeUnsupported)
    }
}

/// The outcome of validating a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Valid, or why not.
    pub reason: Reason,
    /// The sentence for the condition and the Event.
    pub message: String,
    /// The dry runs' verdict per setting of `avoidTargetNode`; empty when a check before them failed.
    pub renderings: Vec<JobRendering>,
}

impl Verdict {
    /// A verdict of a check before the dry runs.
    pub fn invalid(reason: Reason, message: String) -> Self {
        Self { reason, message, renderings: Vec::new() }
    }

    /// Whether the rule is valid.
    pub fn is_valid(&self) -> bool {
        self.reason.is_valid()
    }

    /// The `ValidConfig` condition saying this.
    pub fn condition(&self) -> Desired {
        if self.is_valid() {
            Desired::true_(VALID_CONFIG, self.reason.as_str(), self.message.clone())
        } else {
            Desired::false_(VALID_CONFIG, self.reason.as_str(), self.message.clone())
        }
    }
}
