//! numo's ValidatingAdmissionPolicy `numo-holds`: the API server itself refuses other hands' writes to what numo
//! holds during a rollout, with a message that names the run config and how to end the hold.
//!
//! It refuses, unless the request comes from numo's own ServiceAccount:
//! - on a MachineConfigPool that carries numo's claim (`openshift-optional.skrzypek.io/claimed-by`): unpausing it
//!   (`spec.paused` from true to false or absent) and, on a custom pool, any change of `spec.nodeSelector` (absent
//!   and present included; the built-in pools' selectors are the machine-config operator's, which numo never
//!   steers). A write that also removes the claim annotation is allowed: that is the manual restore
//!   (`hack/restore-without-numo.sh`), the admin's way out when numo cannot run;
//! - on a node with numo's rule labels (`mutexrule.openshift-optional.skrzypek.io/...`): removing any of them, and
//!   adding or changing numo's release mark (`openshift-optional.skrzypek.io/released-to`), which alone moves a node
//!   into the canary (the `nodes` resource only, not `nodes/status`).
//!
//! It never refuses the platform's own components ([`PLATFORM_USERS`]): the machine-config operator puts the
//! built-in pools' selectors back on every sync on OpenShift 4.16–4.21, and a refused write would stop its whole
//! sync and degrade `machine-config`. Nor does it refuse the SR-IOV network operator the end of its own turn
//! ([`crate::taking_turns`]): it may unpause a held pool that carries its `sriovnetwork.openshift.io/state: Paused`
//! when numo keeps that pool unpaused (the canary, which SR-IOV paused), or when the unpause releases no node (the
//! pool's `spec.configuration` is its `status.configuration`: the check SR-IOV itself makes before it pauses);
//! numo then pauses a target pool again at once. Only its unpause is let through, nothing else.
//!
//! numo puts the policy and its binding in place itself when it starts leading ([`ensure`]), by server-side apply,
//! owned by its `mutexrunconfigs` CRD, so that removing numo's CRDs removes the policy too. Where the API is not
//! served (Kubernetes before 1.30, OpenShift before 4.17) or numo may not write it, [`ensure`] says so in a
//! sentence ([`PolicyStatus::Unavailable`]) and numo still notices such writes and puts back what it holds. While
//! it leads, numo watches both and puts back at once what someone deletes or changes ([`watch`]).
//!
//! Every refusal names the way out, including the one that works while numo is down: deleting the binding.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MatchCondition, MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding, ValidatingAdmissionPolicyBindingSpec, ValidatingAdmissionPolicySpec, Validation,
    Variable,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, Resource, ResourceExt};
use serde::Serialize;

use crate::api::MutexRunConfig;
use crate::labels::{POOL_CLAIMED_BY, POOL_WRITTEN, RELEASED, RULE_LABEL_PREFIX};
use crate::membership::{ARBITER, MASTER, WORKER};
use crate::openshift::MachineConfigPool;
use crate::taking_turns::{SRIOV_PAUSED, SRIOV_STATE, SRIOV_USER};

/// The name of the policy and of its binding.
pub const NAME: &str = "numo-holds";
/// The field manager of numo's writes of the policy and the binding.
pub const FIELD_MANAGER: &str = "numo";
/// The API the policy needs.
pub const API: &str = "admissionregistration.k8s.io/v1";

/// How often [`ensure`] tries when the API server fails for a passing reason (not for a 403 or a 404).
const ATTEMPTS: u32 = 4;
/// The pause before the second attempt; it doubles after each.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// The resource name of MachineConfigPools, as the admission request names it.
const POOLS: &str = "machineconfigpools";
/// The resource name of nodes.
const NODES: &str = "nodes";
/// The nodes' status subresource: labels can be written through it too.
const NODES_STATUS: &str = "nodes/status";

/// How an admin ends numo's hold, after the run config is named. Deleting the run config waits for numo's
/// finalizer, so the way out that works while numo is down comes too: deleting the binding.
const HOW_TO_END: &str = " (numo then restores the pools and labels), or set its spec.paused: true to stop new \
     nodes. If numo is down: `oc delete validatingadmissionpolicybinding numo-holds` lets everyone write again \
     (numo puts it back when it runs); to end the hold without numo, run the manual restore (docs/install.md, \
     hack/restore-without-numo.sh).";

/// The longest refusal message the API server returns: a longer result of a `messageExpression` is dropped for
/// the static message (`MaxEvaluatedMessageExpressionSizeBytes` of the API server, 5 KiB).
pub const MAX_MESSAGE: usize = 5 * 1024;

/// The spec fields of the policy that decide what it refuses, as `spec.<field>`: numo compares them with what it
/// applies.
pub const POLICY_FIELDS: &[&str] = &[
    "failurePolicy",
    "matchConstraints",
    "matchConditions",
    "variables",
    "validations",
    "paramKind",
    "auditAnnotations",
];
/// The spec fields of the binding that decide where the policy is in force and what a refusal does.
pub const BINDING_FIELDS: &[&str] = &["policyName", "validationActions", "paramRef", "matchResources"];

/// Whether the policy is in force, as [`ensure`] found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyStatus {
    /// The policy and its binding are applied: the API server refuses other hands' writes to what numo holds.
    InForce,
    /// The policy is not in force; the sentence says why and what an admin can do about it.
    Unavailable(String),
}

/// What [`ensure`] found last, shared between the task that puts the policy in place and the controllers that
/// report it. `None` until the first attempt finished. Controllers learn of each new status through [`changes`].
///
/// [`changes`]: PolicyState::changes
#[derive(Clone, Debug)]
pub struct PolicyState(Arc<tokio::sync::watch::Sender<Option<PolicyStatus>>>);

impl Default for PolicyState {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(None)))
    }
}

impl PolicyState {
    /// Records `status`, telling every [`changes`](PolicyState::changes) stream when it differs from the last.
    pub fn set(&self, status: PolicyStatus) {
        self.0.send_if_modified(|slot| {
            let changed = slot.as_ref() != Some(&status);
            *slot = Some(status);
            changed
        });
    }

    /// The status recorded last, if any.
    pub fn get(&self) -> Option<PolicyStatus> {
        self.0.borrow().clone()
    }

    /// A stream that yields once each time the recorded status changes (not for the status already recorded).
    pub fn changes(&self) -> impl futures::Stream<Item = ()> + Send + 'static {
        let mut receiver = self.0.subscribe();
        receiver.mark_unchanged();
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.changed().await.ok().map(|()| ((), receiver))
        })
    }
}

/// What [`PolicyStatus::Unavailable`] says when numo does not know its own user name.
pub fn unknown_service_account() -> PolicyStatus {
    PolicyStatus::Unavailable(
        "numo does not know its own ServiceAccount (set NUMO_SERVICE_ACCOUNT to \
         system:serviceaccount:<namespace>:<name>, or SERVICE_ACCOUNT_NAME and POD_NAMESPACE as \
         config/manager/manager.yaml does), so it cannot exempt its own writes and puts no ValidatingAdmissionPolicy \
         in place"
            .to_string(),
    )
}

/// Applies the policy and its binding (server-side apply, field manager [`FIELD_MANAGER`], forced), exempting the
/// user `username` (numo's own, `system:serviceaccount:<namespace>:<name>`), and says whether they are in force.
/// Both are owned by numo's `mutexrunconfigs` CRD when numo can read it (else applied without an owner, and a log
/// line says so); while that CRD is being deleted numo is being removed and applies nothing. Passing API-server
/// failures are retried a few times, with a short backoff.
pub async fn ensure(client: &kube::Client, username: &str) -> PolicyStatus {
    match put_in_place(client, username).await {
        Ok(_) => PolicyStatus::InForce,
        Err(failure) => PolicyStatus::Unavailable(failure.why),
    }
}

/// What numo's writes of the policy and the binding made: the resourceVersions each write returned, of each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Of the policy, in the order written.
    pub policy: Vec<String>,
    /// Of the binding, in the order written.
    pub binding: Vec<String>,
}

/// Why [`put_in_place`] did not put the policy in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotInPlace {
    /// The sentence an admin can act on.
    pub why: String,
    /// Whether the API server serves the ValidatingAdmissionPolicy API at all.
    pub served: bool,
}

/// [`ensure`], telling what numo's writes made (so that numo knows its own writes when its watch shows them).
pub async fn put_in_place(client: &kube::Client, username: &str) -> Result<Written, NotInPlace> {
    let owner = owner(client).await.map_err(|why| NotInPlace { why, served: true })?;
    let mut delay = FIRST_RETRY;
    let mut attempt = 1;
    loop {
        match apply(client, username, owner.as_ref()).await {
            Ok(written) => return Ok(written),
            Err(error) if attempt < ATTEMPTS && passing(&error) => {
                tracing::debug!(%error, attempt, "applying the ValidatingAdmissionPolicy {NAME} failed; trying again");
                tokio::time::sleep(delay).await;
                delay *= 2;
                attempt += 1;
            }
            Err(error) => {
                let served = !matches!(&error, kube::Error::Api(status) if status.code == 404);
                return Err(NotInPlace { why: unavailable_sentence(&error), served });
            }
        }
    }
}

/// The owner of the policy and the binding: numo's run-config CRD; `None` when numo cannot read it (a log line
/// says so). `Err` when the CRD is gone or being deleted: numo is being removed, and a policy applied now would
/// outlive it.
async fn owner(client: &kube::Client) -> Result<Option<OwnerReference>, String> {
    let crd = MutexRunConfig::crd_name();
    match Api::<CustomResourceDefinition>::all(client.clone()).get(crd).await {
        Ok(found) if found.metadata.deletion_timestamp.is_some() => Err(format!(
            "numo's CRD {crd} is being deleted, so numo is being removed and puts its ValidatingAdmissionPolicy \
             {NAME} in place no more (it would outlive numo)"
        )),
        Ok(found) => Ok(Some(crate::crd_owner::owner_reference(&found))),
        Err(kube::Error::Api(status)) if status.code == 404 => Err(format!(
            "numo's CRD {crd} is gone, so numo is being removed and puts its ValidatingAdmissionPolicy {NAME} in \
             place no more (it would outlive numo)"
        )),
        Err(error) => {
            tracing::warn!(
                crd,
                %error,
                "cannot read numo's CRD: the ValidatingAdmissionPolicy {NAME} is applied without an owner, so \
                 removing numo's CRDs will not remove it (delete it by hand then)"
            );
            Ok(None)
        }
    }
}

/// Applies both; where server-side apply leaves what another writer owns (a field it added, a value it added to a
/// list), replaces the spec with numo's whole (optimistically, on the version just applied).
async fn apply(client: &kube::Client, username: &str, owner: Option<&OwnerReference>) -> kube::Result<Written> {
    let policy = apply_one(client, &policy(username, owner)).await?;
    let binding = apply_one(client, &binding(owner)).await?;
    Ok(Written { policy, binding })
}

/// Applies `wanted` and, if the result still differs, replaces its spec; the versions written. Deleted in between
/// by someone else, it is left to the watch, which puts it back ([`watch`]).
async fn apply_one<K: PolicyObject>(client: &kube::Client, wanted: &K) -> kube::Result<Vec<String>> {
    let api = Api::<K>::all(client.clone());
    let applied = api.patch(NAME, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(wanted)).await?;
    let mut written: Vec<String> = applied.resource_version().into_iter().collect();
    if !differences(&applied, wanted).is_empty() {
        let mut whole = applied;
        whole.set_spec_from(wanted);
        let params = PostParams { field_manager: Some(FIELD_MANAGER.to_string()), ..Default::default() };
        match api.replace(NAME, &params, &whole).await {
            Ok(replaced) => written.extend(replaced.resource_version()),
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error),
        }
    }
    Ok(written)
}

/// The policy and the binding: what numo compares of each, and how it puts back the whole spec.
pub trait PolicyObject:
    Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + serde::de::DeserializeOwned
{
    /// The kind, as an admin reads it.
    const KIND: &'static str;
    /// The spec fields that decide what the policy refuses and where (`spec.<field>`), compared with numo's.
    const FIELDS: &'static [&'static str];
    /// Sets this object's spec to `other`'s.
    fn set_spec_from(&mut self, other: &Self);
}

impl PolicyObject for ValidatingAdmissionPolicy {
    const KIND: &'static str = "ValidatingAdmissionPolicy";
    const FIELDS: &'static [&'static str] = POLICY_FIELDS;
    fn set_spec_from(&mut self, other: &Self) {
        self.spec = other.spec.clone();
    }
}

impl PolicyObject for ValidatingAdmissionPolicyBinding {
    const KIND: &'static str = "ValidatingAdmissionPolicyBinding";
    const FIELDS: &'static [&'static str] = BINDING_FIELDS;
    fn set_spec_from(&mut self, other: &Self) {
        self.spec = other.spec.clone();
    }
}

/// The spec fields of `live` ([`PolicyObject::FIELDS`]) that differ from `wanted`, as the API server stores them (numo
/// writes out every field the API server would default).
pub fn differences<K: PolicyObject>(live: &K, wanted: &K) -> Vec<&'static str> {
    let spec = |object: &K| serde_json::to_value(object).ok().and_then(|v| v.get("spec").cloned()).unwrap_or_default();
    let (live, wanted) = (spec(live), spec(wanted));
    K::FIELDS.iter().copied().filter(|field| live.get(field) != wanted.get(field)).collect()
}

/// Whether `error` may pass by itself (the API server busy, restarting or unreachable), so trying again helps.
fn passing(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 409 || status.code == 429 || status.code >= 500,
        _ => true,
    }
}

/// What a failure to apply the policy or its binding means, in a sentence an admin can act on.
pub fn unavailable(error: &kube::Error) -> PolicyStatus {
    PolicyStatus::Unavailable(unavailable_sentence(error))
}

/// See [`unavailable`].
pub fn unavailable_sentence(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.code == 404 => format!(
            "the API {API} ValidatingAdmissionPolicy is not served by this cluster (it needs Kubernetes 1.30 or \
             OpenShift 4.17 or later), so numo cannot refuse other hands' writes to the pools and nodes it holds; \
             it still notices such changes and puts them back ({})",
            status.message
        ),
        kube::Error::Api(status) if status.code == 403 => format!(
            "numo is not allowed to create or update the ValidatingAdmissionPolicy {NAME} and its binding: grant \
             its ServiceAccount the admissionregistration.k8s.io rules of config/rbac/role.yaml (create, and get, \
             list, watch, patch and update of {NAME}); until then other hands' changes are only noticed and put \
             back ({})",
            status.message
        ),
        other => format!(
            "numo could not put the ValidatingAdmissionPolicy {NAME} in place ({other}); it tries again, and until \
             then other hands' changes are only noticed and put back"
        ),
    }
}

fn metadata(owner: Option<&OwnerReference>) -> ObjectMeta {
    ObjectMeta {
        name: Some(NAME.to_string()),
        labels: Some(
            [("app.kubernetes.io/name", "numo"), ("app.kubernetes.io/managed-by", "numo")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        ),
        owner_references: owner.map(|owner| vec![owner.clone()]),
        ..Default::default()
    }
}

/// The policy, exempting the user `username`.
pub fn policy(username: &str, owner: Option<&OwnerReference>) -> ValidatingAdmissionPolicy {
    let rule = |group: &str, resources: &[&str], operations: &[&str]| NamedRuleWithOperations {
        api_groups: Some(vec![group.to_string()]),
        api_versions: Some(vec!["v1".to_string()]),
        operations: Some(operations.iter().map(|o| o.to_string()).collect()),
        resources: Some(resources.iter().map(|r| r.to_string()).collect()),
        scope: Some("Cluster".to_string()),
        ..Default::default()
    };
    // A held pool may be neither changed nor deleted (the machine-config operator would create `worker` again,
    // unpaused); a held node's labels may be removed through neither the node nor its status.
    let pools = rule(&MachineConfigPool::group(&()), &[POOLS], &["UPDATE", "DELETE"]);
    let nodes = rule("", &[NODES, NODES_STATUS], &["UPDATE"]);
    ValidatingAdmissionPolicy {
        metadata: metadata(owner),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".to_string()),
            // What the API server would default is written out, so that what numo applies is what it stores.
            match_constraints: Some(MatchResources {
                resource_rules: Some(vec![pools, nodes]),
                match_policy: Some("Equivalent".to_string()),
                namespace_selector: Some(LabelSelector::default()),
                object_selector: Some(LabelSelector::default()),
                ..Default::default()
            }),
            match_conditions: Some(
                match_conditions(username)
                    .into_iter()
                    .map(|(name, expression)| MatchCondition { name: name.to_string(), expression })
                    .collect(),
            ),
            variables: Some(
                variables()
                    .into_iter()
                    .map(|(name, expression)| Variable { name: name.to_string(), expression })
                    .collect(),
            ),
            validations: Some(validations()),
            ..Default::default()
        }),
        status: None,
    }
}

/// The binding that puts the policy in force everywhere, denying what it refuses.
pub fn binding(owner: Option<&OwnerReference>) -> ValidatingAdmissionPolicyBinding {
    ValidatingAdmissionPolicyBinding {
        metadata: metadata(owner),
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: Some(NAME.to_string()),
            validation_actions: Some(vec!["Deny".to_string()]),
            ..Default::default()
        }),
    }
}

/// `text` as a CEL string literal: double-quoted, with backslashes, quotes and control characters escaped.
pub fn cel_string(text: &str) -> String {
    let mut literal = String::with_capacity(text.len() + 2);
    literal.push('"');
    for c in text.chars() {
        match c {
            '\\' => literal.push_str("\\\\"),
            '"' => literal.push_str("\\\""),
            '\n' => literal.push_str("\\n"),
            '\r' => literal.push_str("\\r"),
            '\t' => literal.push_str("\\t"),
            c if c.is_control() => literal.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => literal.push(c),
        }
    }
    literal.push('"');
    literal
}

/// The claim annotation's key, as a CEL literal.
fn claim() -> String {
    cel_string(POOL_CLAIMED_BY)
}

/// The rule labels' prefix (with its `/`), as a CEL literal.
fn rule_prefix() -> String {
    cel_string(&format!("{RULE_LABEL_PREFIX}/"))
}

/// The user-name prefixes of the platform components that write what numo holds, whose writes the policy never
/// refuses: the machine-config operator, controller and daemon (their ServiceAccounts in
/// `openshift-machine-config-operator`), the cluster-version operator (`openshift-cluster-version`) and the kubelets
/// (`system:node:<name>`). Only cluster admins can act as these.
pub const PLATFORM_USERS: &[&str] = &[
    "system:serviceaccount:openshift-machine-config-operator:",
    "system:serviceaccount:openshift-cluster-version:",
    "system:node:",
];

/// When the policy looks at a request at all (`(name, expression)`, all must hold): not numo's own, not the
/// platform's ([`PLATFORM_USERS`]), on a pool that carried numo's claim (a write that drops the claim is refused, see
/// [`validations`]), or on a node that carried a rule label.
fn match_conditions(username: &str) -> Vec<(&'static str, String)> {
    let (claim, prefix) = (claim(), rule_prefix());
    let platform: Vec<String> =
        PLATFORM_USERS.iter().map(|p| format!("request.userInfo.username.startsWith({})", cel_string(p))).collect();
    vec![
        ("not-numo", format!("request.userInfo.username != {}", cel_string(username))),
        ("not-the-platform", format!("!({})", platform.join(" || "))),
        (
            "held-by-numo",
            format!(
                "request.resource.resource == '{POOLS}' \
                 ? has(oldObject.metadata.annotations) && {claim} in oldObject.metadata.annotations \
                 : has(oldObject.metadata.labels) && oldObject.metadata.labels.exists(k, k.startsWith({prefix}))"
            ),
        ),
    ]
}

/// The policy's variables, in order. The pool's specs are `dyn`: the API server type-checks every expression
/// against every matched kind, and a node's spec has no `paused`.
fn variables() -> Vec<(&'static str, String)> {
    let (claim, prefix, released) = (claim(), rule_prefix(), cel_string(RELEASED));
    vec![
        ("pool", format!("request.resource.resource == '{POOLS}'")),
        (
            "runConfig",
            format!(
                "variables.pool && has(oldObject.metadata.annotations) && {claim} in oldObject.metadata.annotations \
                 ? oldObject.metadata.annotations[{claim}] : ''"
            ),
        ),
        ("deleting", "request.operation == 'DELETE'".to_string()),
        ("oldSpec", "variables.pool && has(oldObject.spec) ? dyn(oldObject.spec) : dyn({})".to_string()),
        (
            "newSpec",
            "variables.pool && !variables.deleting && has(object.spec) ? dyn(object.spec) : dyn({})".to_string(),
        ),
        (
            "oldStatus",
            "variables.pool && has(oldObject.status) ? dyn(oldObject.status) : dyn({})".to_string(),
        ),
        ("sriovTurn", sriov_turn()),
        ("builtInPool", format!("variables.pool && oldObject.metadata.name in ['{MASTER}', '{WORKER}', '{ARBITER}']")),
        (
            "claimKept",
            format!(
                "!variables.pool || variables.deleting || has(object.metadata.annotations) \
                 && {claim} in object.metadata.annotations && object.metadata.annotations[{claim}] == variables.runConfig"
            ),
        ),
        (
            "markedByOther",
            format!(
                "!variables.pool && has(object.metadata.labels) && {released} in object.metadata.labels \
                 && !(has(oldObject.metadata.labels) && {released} in oldObject.metadata.labels \
                      && oldObject.metadata.labels[{released}] == object.metadata.labels[{released}])"
            ),
        ),
        (
            "removedRuleLabels",
            format!(
                "!variables.pool && has(oldObject.metadata.labels) \
                 ? oldObject.metadata.labels.filter(k, k.startsWith({prefix}) \
                   && !(has(object.metadata.labels) && k in object.metadata.labels)) \
                 : []"
            ),
        ),
    ]
}

/// The SR-IOV network operator ends its own turn (`AfterCompleteDrainNode` of openshift/sriov-network-operator
/// `pkg/orchestrator/openshift/openshift.go`): its user, on a pool that says it holds it, which numo keeps unpaused
/// (numo's `written` record begins `{"paused":false`, see [`crate::pool_claim::PoolOriginal`]) or whose unpause
/// releases no node (both configurations named and equal).
fn sriov_turn() -> String {
    let (state, written) = (cel_string(SRIOV_STATE), cel_string(POOL_WRITTEN));
    let numo_unpaused = cel_string(r#"{"paused":false"#);
    format!(
        "variables.pool && request.userInfo.username == {user} && has(oldObject.metadata.annotations) \
         && {state} in oldObject.metadata.annotations && oldObject.metadata.annotations[{state}] == {paused} \
         && ({written} in oldObject.metadata.annotations \
             && oldObject.metadata.annotations[{written}].startsWith({numo_unpaused}) \
             || has(variables.oldSpec.configuration) && has(variables.oldSpec.configuration.name) \
             && has(variables.oldStatus.configuration) && has(variables.oldStatus.configuration.name) \
             && variables.oldSpec.configuration.name == variables.oldStatus.configuration.name)",
        user = cel_string(SRIOV_USER),
        paused = cel_string(SRIOV_PAUSED),
    )
}

/// The checks: a held pool stays paused and keeps its selector; a held node keeps its rule labels.
fn validations() -> Vec<Validation> {
    let end = cel_string(HOW_TO_END);
    let how_to_end = |run_config: &str| format!("'To end the hold, delete the MutexRunConfig ' + {run_config} + {end}");
    let label = "variables.removedRuleLabels[0]";
    let name_part = RULE_LABEL_PREFIX.chars().count() + 1;
    let check = |expression: String, message: String| Validation {
        expression,
        message: Some(static_message()),
        message_expression: Some(message),
        reason: Some("Forbidden".to_string()),
    };
    vec![
        check(
            "!variables.pool || !variables.deleting".to_string(),
            format!(
                "'MachineConfigPool ' + oldObject.metadata.name + ' is held by numo for the MutexRunConfig ' \
                 + variables.runConfig + '; deleted, it would come back without the hold (the machine-config \
                 operator creates worker again, unpaused) and its nodes would upgrade without their gate Jobs. ' \
                 + {}",
                how_to_end("variables.runConfig")
            ),
        ),
        check(
            "variables.claimKept".to_string(),
            format!(
                "'MachineConfigPool ' + oldObject.metadata.name + ' is held by numo for the MutexRunConfig ' \
                 + variables.runConfig + ': its annotation {POOL_CLAIMED_BY} says so, and only numo removes it \
                 (replacing the pool with a manifest from before the rollout drops it). ' + {}",
                how_to_end("variables.runConfig")
            ),
        ),
        check(
            "!variables.pool || variables.deleting || !(has(variables.oldSpec.paused) && variables.oldSpec.paused == true) \
             || has(variables.newSpec.paused) && variables.newSpec.paused == true || variables.sriovTurn"
                .to_string(),
            format!(
                "'MachineConfigPool ' + oldObject.metadata.name + ' is held paused by numo for the MutexRunConfig ' \
                 + variables.runConfig + ', so that no node upgrades without its gate Jobs; only numo unpauses it. \
                 If you paused it yourself before numo held it (an EUS-to-EUS update) and now want its nodes \
                 updated, let numo gate them instead: annotate that MutexRunConfig \
                 {}=' + oldObject.metadata.name + ' (numo leaves the pool unpaused at the end). ' + {}",
                crate::labels::GO_AHEAD_ANNOTATION,
                how_to_end("variables.runConfig")
            ),
        ),
        check(
            "!variables.pool || variables.deleting || variables.builtInPool || (has(variables.oldSpec.nodeSelector) \
             ? has(variables.newSpec.nodeSelector) && variables.newSpec.nodeSelector == variables.oldSpec.nodeSelector \
             : !has(variables.newSpec.nodeSelector))"
                .to_string(),
            format!(
                "'The nodeSelector of MachineConfigPool ' + oldObject.metadata.name + ' is steered by numo for the \
                 MutexRunConfig ' + variables.runConfig + ', so that each node upgrades only after its gate Jobs; \
                 only numo changes it. ' + {}",
                how_to_end("variables.runConfig")
            ),
        ),
        check(
            "!variables.markedByOther".to_string(),
            format!(
                "'Node ' + object.metadata.name + ' is held by numo until its gate Jobs succeeded; only numo marks a \
                 node released ({RELEASED}), which moves it into the canary pool. ' + {}",
                how_to_end("'that holds it'")
            ),
        ),
        check(
            "variables.pool || size(variables.removedRuleLabels) == 0".to_string(),
            format!(
                "'Node ' + object.metadata.name + ' is held by numo: its label ' + {label} + ' (MutexRule and \
                 namespace ' + {label}.substring({name_part}) + ') keeps it from upgrading until its gate Jobs \
                 succeeded; only numo removes it. ' + {}",
                how_to_end("'that runs this rule'")
            ),
        ),
    ]
}

/// The message when a message expression cannot be evaluated.
fn static_message() -> String {
    format!(
        "numo holds this object for a rollout (a MachineConfigPool with its {POOL_CLAIMED_BY} annotation, or a node \
         with a {RULE_LABEL_PREFIX}/ label); only numo may unpause such a pool, change its nodeSelector or remove \
         such a label. To end the hold, delete the MutexRunConfig that holds it{HOW_TO_END}"
    )
}

#[path = "admission_policy_watch.rs"]
pub mod watch;

#[cfg(test)]
#[path = "admission_policy_tests.rs"]
mod tests;
