//! The machine-config operator's own ValidatingAdmissionPolicies on MachineConfigPools, per release, installed and
//! kept in place by its sync under its own identity ([`crate::operator_sync::OPERATOR_USER`], a `cluster-admin`
//! binding seeded by [`crate::seed`]).
//!
//! The operator applies its controller's policies and bindings in its `MachineConfigController` step
//! (openshift/machine-config-operator `pkg/operator/sync.go` `syncMachineConfigController` → `applyManifests`, with
//! library-go's `ApplyValidatingAdmissionPolicyV1` and `ApplyValidatingAdmissionPolicyBindingV1`): each is read,
//! created when missing and given back its spec when it differs, on every sync. So a deleted or edited policy comes
//! back at the next sync, and a failed write fails the step (`failed to apply machine config controller manifests:
//! ...`, reason `MachineConfigControllerFailed`).
//!
//! - **`custom-machine-config-pool-selector`** (from release-4.18,
//!   `manifests/machineconfigcontroller/custom-machine-config-pool-selector-validatingadmissionpolicy.yaml` and its
//!   `...binding.yaml`, `Deny`, no parameters, every pool): a pool is created or updated only when its
//!   `machineConfigSelector` has `matchLabels` `machineconfiguration.openshift.io/role` equal to `master` or `worker`
//!   (also `arbiter` from release-4.19), or a `matchExpressions` entry on that key that is `In` with `worker` among
//!   its values or `NotIn` without it. The built-in pools pass by their own labels; no pool is exempt. Not on
//!   4.16–4.17.
//!
//! The rule here is written in the simulator's own CEL. Where the MCO's expression fails to evaluate (no
//! `machineConfigSelector`, or `matchLabels` without the role key and no accepted expression), the API server
//! refuses the write with the evaluation error (the policy fails closed); the simulator refuses it too, with the
//! policy's message.
//!
//! Not played: the MCO's other policies. `machine-configuration-guards` and `managed-bootimages-platform-check`
//! (4.16+) judge `MachineConfiguration` objects, which the simulator has not;
//! `machineconfigpool-osimagestream-reference-validation` (4.21+) judges pools' `spec.osImageStream` against the
//! streams the OSImageStream `cluster` lists (installed with the `OSStreams` feature gate, Default from 4.23), and
//! the simulator has no OSImageStream: every stream name is one it knows (numo only ever names a stream a target
//! pool boots already); `mcn-guards` (4.17+, applied by the
//! `MachineConfigDaemon` step) holds the daemon's MachineConfigNode writes to the node named by its
//! `authentication.kubernetes.io/node-name` credential claim, which the daemon's impersonated client cannot carry.

use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use kube::api::{Api, PostParams};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::platform::OPERATOR_FIELD_MANAGER;
use crate::release::OpenShiftRelease;

/// The policy on pools' `machineConfigSelector` (4.18+).
pub const POOL_SELECTOR_POLICY: &str = "custom-machine-config-pool-selector";
/// Its binding.
pub const POOL_SELECTOR_BINDING: &str = "custom-machine-config-pool-selector-binding";
/// The message of its refusal (the MCO's manifest's).
pub const POOL_SELECTOR_MESSAGE: &str = "All custom MachineConfigPools must inherit from the worker pool and must \
    have a machineConfigSelector that matches for a 'machineconfiguration.openshift.io/role: worker' label";
/// The names of every policy (and binding) the simulator may install, on any release: for cleaning a shared test
/// cluster.
pub const ALL: [(&str, &str); 1] = [(POOL_SELECTOR_POLICY, POOL_SELECTOR_BINDING)];

/// The step of the operator's sync that applies its controller's manifests, these policies among them.
pub const CONTROLLER_TASK: &str = "MachineConfigController";

/// The roles a pool's `matchLabels` may select on `release` (`arbiter` added in release-4.19).
fn accepted_roles(release: OpenShiftRelease) -> &'static [&'static str] {
    if release.has_arbiter_pool() {
        &["master", "worker", "arbiter"]
    } else {
        &["master", "worker"]
    }
}

/// The CEL of the pool-selector rule on `release`.
pub fn pool_selector_expression(release: OpenShiftRelease) -> String {
    let roles: Vec<String> = accepted_roles(release).iter().map(|r| format!("'{r}'")).collect();
    let key = numo::openshift::MC_ROLE;
    format!(
        "has(object.spec.machineConfigSelector) && (\
         (has(object.spec.machineConfigSelector.matchLabels) && '{key}' in object.spec.machineConfigSelector.matchLabels \
         && object.spec.machineConfigSelector.matchLabels['{key}'] in [{roles}]) || \
         (has(object.spec.machineConfigSelector.matchExpressions) && \
         object.spec.machineConfigSelector.matchExpressions.exists(r, r.key == '{key}' && \
         ((r.operator == 'In' && has(r.values) && 'worker' in r.values) || \
         (r.operator == 'NotIn' && !(has(r.values) && 'worker' in r.values))))))",
        roles = roles.join(", ")
    )
}

/// The policies and bindings the operator installs on `release`.
pub fn manifests(release: OpenShiftRelease) -> Vec<(ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding)> {
    if !release.has_custom_pool_selector_policy() {
        return Vec::new();
    }
    let policy = serde_json::from_value(json!({
        "metadata": {"name": POOL_SELECTOR_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "namespaceSelector": {},
                "objectSelector": {},
                "resourceRules": [{
                    "apiGroups": ["machineconfiguration.openshift.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["machineconfigpools"],
                    "scope": "*",
                }],
            },
            "validations": [{"expression": pool_selector_expression(release), "message": POOL_SELECTOR_MESSAGE}],
        },
    }));
    let binding = serde_json::from_value(json!({
        "metadata": {"name": POOL_SELECTOR_BINDING},
        "spec": {"policyName": POOL_SELECTOR_POLICY, "validationActions": ["Deny"]},
    }));
    match (policy, binding) {
        (Ok(policy), Ok(binding)) => vec![(policy, binding)],
        // Both are fixed documents of their kinds' own fields.
        (policy, binding) => unreachable!("malformed admission manifests: {policy:?} {binding:?}"),
    }
}

/// Whether `have` holds everything of `want`: every key of an object (with what it holds), every element of a list
/// (of the same length), equal scalars. So the API server's defaults on top of a manifest are no difference.
pub fn contains(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(have), Value::Object(want)) => {
            want.iter().all(|(key, want)| have.get(key).is_some_and(|have| contains(have, want)))
        }
        (Value::Array(have), Value::Array(want)) => {
            have.len() == want.len() && have.iter().zip(want).all(|(have, want)| contains(have, want))
        }
        (have, want) => have == want,
    }
}

/// The operator's apply of its controller's policies on one release.
pub struct AdmissionPolicies {
    client: kube::Client,
    release: OpenShiftRelease,
}

impl AdmissionPolicies {
    /// The apply of `release`, writing through `client` (which acts as the operator's ServiceAccount).
    pub fn new(client: kube::Client, release: OpenShiftRelease) -> Self {
        Self { client, release }
    }

    /// One pass: every policy, then every binding, read and created or put back; Err with the operator's message
    /// at the first that fails.
    pub async fn apply(&self) -> Result<(), String> {
        let manifests = manifests(self.release);
        let result = async {
            for (policy, _) in &manifests {
                apply_one(Api::all(self.client.clone()), policy).await?;
            }
            for (_, binding) in &manifests {
                apply_one(Api::all(self.client.clone()), binding).await?;
            }
            anyhow::Ok(())
        };
        result.await.map_err(|e| format!("failed to apply machine config controller manifests: {e:#}"))
    }
}

/// Reads `required`'s object; creates it when missing, or puts its spec back when it lacks any of `required`'s.
async fn apply_one<K>(api: Api<K>, required: &K) -> anyhow::Result<()>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + DeserializeOwned,
{
    let name = required.meta().name.clone().unwrap_or_default();
    let kind = K::kind(&());
    let params = PostParams { field_manager: Some(OPERATOR_FIELD_MANAGER.into()), ..Default::default() };
    let Some(existing) =
        api.get_opt(&name).await.map_err(api_error).with_context(|| format!("reading {kind} {name}"))?
    else {
        api.create(&params, required).await.map_err(api_error).with_context(|| format!("creating {kind} {name}"))?;
        tracing::info!(%kind, %name, "machine-config operator: created its admission policy");
        return Ok(());
    };
    let (mut have, want) = (serde_json::to_value(&existing)?, serde_json::to_value(required)?);
    if contains(&have["spec"], &want["spec"]) {
        return Ok(());
    }
    have["spec"] = want["spec"].clone();
    let object: K = serde_json::from_value(have)?;
    api.replace(&name, &params, &object).await.map_err(api_error).with_context(|| format!("updating {kind} {name}"))?;
    tracing::info!(%kind, %name, "machine-config operator: put its admission policy back");
    Ok(())
}

/// An API error as client-go prints it (its status message).
fn api_error(error: kube::Error) -> anyhow::Error {
    match error {
        kube::Error::Api(status) => anyhow::anyhow!("{}", status.message),
        other => anyhow::Error::new(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(minor: u32) -> OpenShiftRelease {
        OpenShiftRelease { minor }
    }

    #[test]
    fn the_pool_selector_policy_is_installed_from_4_18() {
        assert!(manifests(release(16)).is_empty() && manifests(release(17)).is_empty());
        for minor in 18..=OpenShiftRelease::NEWEST.minor {
            let installed = manifests(release(minor));
            assert_eq!(installed.len(), 1, "4.{minor}");
            let (policy, binding) = &installed[0];
            assert_eq!(policy.metadata.name.as_deref(), Some(POOL_SELECTOR_POLICY));
            assert_eq!(binding.spec.as_ref().and_then(|s| s.policy_name.as_deref()), Some(POOL_SELECTOR_POLICY));
        }
    }

    #[test]
    fn arbiter_is_accepted_from_4_19() {
        assert!(!pool_selector_expression(release(18)).contains("arbiter"));
        assert!(pool_selector_expression(release(19)).contains("'arbiter'"));
    }

    #[test]
    fn server_defaults_are_no_difference_but_a_changed_rule_is() {
        let want = json!({"a": {"b": [{"c": 1}]}, "d": "x"});
        assert!(contains(&json!({"a": {"b": [{"c": 1, "e": 2}], "f": 3}, "d": "x"}), &want));
        assert!(!contains(&json!({"a": {"b": [{"c": 2}]}, "d": "x"}), &want));
        assert!(!contains(&json!({"a": {"b": [{"c": 1}, {"c": 1}]}, "d": "x"}), &want));
        assert!(!contains(&json!({"a": {"b": [{"c": 1}]}}), &want));
    }
}
