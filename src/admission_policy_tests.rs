//! The policy's objects as the API server receives them, and its CEL run here (with the `cel` crate and the strings
//! extension the API server also has) over the requests it must refuse and those it must let through. The same
//! requests go to a real API server in `tests/admission_policy.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::*;

const NUMO: &str = "system:serviceaccount:numo-system:numo-operator";
const ADMIN: &str = "kube:admin";
const RUN_CONFIG: &str = "upgrade-ops/gated-workers";
const LABEL: &str = "mutexrule.openshift-optional.skrzypek.io/drain.upgrade-ops";

fn env() -> cel::Env {
    let mut env = cel::Env::stdlib();
    env.add_extension(cel::extensions::strings).unwrap_or_else(|e| panic!("the strings extension: {e:?}"));
    env
}

fn eval(env: &Arc<cel::Env>, expression: &str, bindings: &[(&str, cel::Value)]) -> Result<cel::Value, String> {
    let program = env.compile(expression).map_err(|e| format!("{expression}: {e}"))?;
    let mut context = cel::Context::with_env(env.clone());
    for (name, value) in bindings {
        context.add_variable_from_value(*name, value.clone());
    }
    program.execute(&context).map_err(|e| format!("{expression}: {e}"))
}

/// What the API server does with `request` (`{userInfo, resource, object, oldObject}`): `Ok(None)` lets it
/// through, `Ok(Some(message))` refuses it, `Err` is an expression that failed (which, with `failurePolicy: Fail`,
/// also refuses it: a test that gets one has found a bug).
fn admit(policy: &ValidatingAdmissionPolicy, request: &Value) -> Result<Option<String>, String> {
    let env = Arc::new(env());
    let spec = policy.spec.clone().unwrap_or_default();
    let value = |v: &Value| cel::to_value(v).map_err(|e| e.to_string());
    let mut bindings = vec![
        (
            "request",
            value(&json!({"userInfo": request["userInfo"], "resource": request["resource"],
                          "operation": request["operation"]}))?,
        ),
        ("object", value(&request["object"])?),
        ("oldObject", value(&request["oldObject"])?),
    ];
    for condition in spec.match_conditions.unwrap_or_default() {
        if eval(&env, &condition.expression, &bindings)? != cel::Value::Bool(true) {
            return Ok(None);
        }
    }
    // The API server evaluates variables lazily; here all of them, in order, so each must be safe for every kind.
    let mut variables: HashMap<String, cel::Value> = HashMap::new();
    for variable in spec.variables.unwrap_or_default() {
        let with = [bindings.clone(), vec![("variables", cel::Value::from(variables.clone()))]].concat();
        variables.insert(variable.name.clone(), eval(&env, &variable.expression, &with)?);
    }
    bindings.push(("variables", cel::Value::from(variables)));
    for validation in spec.validations.unwrap_or_default() {
        if eval(&env, &validation.expression, &bindings)? != cel::Value::Bool(true) {
            let message = eval(&env, validation.message_expression.as_deref().unwrap_or("''"), &bindings)?;
            return match message {
                cel::Value::String(text) => Ok(Some(text.to_string())),
                other => Err(format!("the message expression gives {other:?}")),
            };
        }
    }
    Ok(None)
}

fn pool(annotations: Value, spec: Value) -> Value {
    json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
           "metadata": {"name": "infra", "annotations": annotations}, "spec": spec})
}

fn claimed() -> Value {
    json!({"openshift-optional.skrzypek.io/claimed-by": RUN_CONFIG, "openshift-optional.skrzypek.io/original": "{}"})
}

fn selector(key: &str) -> Value {
    json!({"matchLabels": {"node-role.kubernetes.io/worker": ""},
           "matchExpressions": [{"key": key, "operator": "Exists"}]})
}

fn update(user: &str, resource: &str, old: Value, new: Value) -> Value {
    let group = if resource == "nodes" { "" } else { "machineconfiguration.openshift.io" };
    json!({"userInfo": {"username": user}, "resource": {"group": group, "version": "v1", "resource": resource},
           "operation": "UPDATE", "object": new, "oldObject": old})
}

/// A DELETE of the pool `old` by `user` (the API server gives no `object`).
fn delete(user: &str, old: Value) -> Value {
    json!({"userInfo": {"username": user},
           "resource": {"group": "machineconfiguration.openshift.io", "version": "v1", "resource": "machineconfigpools"},
           "operation": "DELETE", "object": null, "oldObject": old})
}

fn node(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "labels": labels}, "spec": {}})
}

fn refused(request: &Value) -> String {
    match admit(&policy(NUMO, None), request) {
        Ok(Some(message)) => message,
        other => panic!("{request} must be refused, got {other:?}"),
    }
}

fn allowed(request: &Value) {
    assert_eq!(admit(&policy(NUMO, None), request), Ok(None), "{request}");
}

#[test]
fn the_policy_is_what_the_api_server_receives() {
    let owner = OwnerReference {
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        name: "mutexrunconfigs.openshift-optional.skrzypek.io".into(),
        uid: "1234".into(),
        ..Default::default()
    };
    let policy = serde_json::to_value(policy(NUMO, Some(&owner))).unwrap_or_default();
    assert_eq!(policy["apiVersion"], "admissionregistration.k8s.io/v1");
    assert_eq!(policy["kind"], "ValidatingAdmissionPolicy");
    assert_eq!(policy["metadata"]["name"], NAME);
    assert_eq!(policy["metadata"]["ownerReferences"], json!([owner]));
    let spec = &policy["spec"];
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(
        spec["matchConstraints"]["resourceRules"],
        json!([
            {"apiGroups": ["machineconfiguration.openshift.io"], "apiVersions": ["v1"],
             "operations": ["UPDATE", "DELETE"], "resources": ["machineconfigpools"], "scope": "Cluster"},
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes", "nodes/status"],
             "scope": "Cluster"},
        ])
    );
    // What the API server would default is written out: what numo applies is what it stores and compares.
    assert_eq!(spec["matchConstraints"]["matchPolicy"], "Equivalent");
    assert_eq!(spec["matchConstraints"]["namespaceSelector"], json!({}));
    assert_eq!(spec["matchConstraints"]["objectSelector"], json!({}));
    assert_eq!(POOLS, MachineConfigPool::plural(&()));
    let conditions: Vec<&str> =
        spec["matchConditions"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(conditions, ["not-numo", "not-the-platform", "held-by-numo"]);
    assert_eq!(spec["matchConditions"][0]["expression"], format!("request.userInfo.username != \"{NUMO}\""));
    for validation in spec["validations"].as_array().into_iter().flatten() {
        assert_eq!(validation["reason"], "Forbidden");
        let message = validation["message"].as_str().unwrap_or_default();
        assert!(message.contains("hack/restore-without-numo.sh"), "{message}");
        assert!(validation["messageExpression"].is_string());
    }
    assert!(spec.get("paramKind").is_none());

    let binding = serde_json::to_value(binding(Some(&owner))).unwrap_or_default();
    assert_eq!(binding["apiVersion"], "admissionregistration.k8s.io/v1");
    assert_eq!(binding["kind"], "ValidatingAdmissionPolicyBinding");
    assert_eq!(binding["metadata"]["name"], NAME);
    assert_eq!(binding["metadata"]["ownerReferences"], json!([owner]));
    assert_eq!(binding["spec"], json!({"policyName": NAME, "validationActions": ["Deny"]}));
    let unowned = serde_json::to_value(super::binding(None)).unwrap_or_default();
    assert!(unowned["metadata"].get("ownerReferences").is_none());
}

#[test]
fn every_expression_parses() {
    let env = env();
    let policy = policy(NUMO, None);
    let spec = policy.spec.unwrap_or_default();
    let mut expressions: Vec<String> = Vec::new();
    expressions.extend(spec.match_conditions.unwrap_or_default().into_iter().map(|c| c.expression));
    expressions.extend(spec.variables.unwrap_or_default().into_iter().map(|v| v.expression));
    for validation in spec.validations.unwrap_or_default() {
        expressions.extend([Some(validation.expression), validation.message_expression].into_iter().flatten());
    }
    for expression in expressions {
        assert!(env.compile(&expression).is_ok(), "{expression}");
    }
}

#[test]
fn a_user_name_is_embedded_as_a_literal_whatever_it_holds() {
    let env = Arc::new(env());
    for text in [NUMO, "", "a\"b", "a\\\"b", "x' || true || '", "line\nbreak\ttab\r", "\u{1}\u{7f}", "ü → 中"] {
        let literal = cel_string(text);
        assert_eq!(eval(&env, &literal, &[]), Ok(cel::Value::from(text)), "{literal}");
    }
    // An impostor whose name tries to close the literal is not numo.
    let impostor = policy("\" || true || \"", None);
    let request =
        update(ADMIN, "machineconfigpools", pool(claimed(), json!({"paused": true})), pool(claimed(), json!({})));
    assert!(matches!(admit(&impostor, &request), Ok(Some(_))));
}

#[test]
fn unpausing_a_claimed_pool_is_refused_naming_the_run_config() {
    let old = pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}));
    for spec in [json!({"paused": false, "nodeSelector": selector("x")}), json!({"nodeSelector": selector("x")})] {
        let message = refused(&update(ADMIN, "machineconfigpools", old.clone(), pool(claimed(), spec)));
        assert!(message.starts_with("MachineConfigPool infra is held paused by numo"), "{message}");
        assert!(message.contains(&format!("delete the MutexRunConfig {RUN_CONFIG} (numo then restores")), "{message}");
        assert!(message.contains("set its spec.paused: true"), "{message}");
        assert!(message.contains("docs/install.md, hack/restore-without-numo.sh"), "{message}");
    }
}

#[test]
fn changing_the_selector_of_a_claimed_pool_is_refused() {
    let paused = |selector: Option<Value>| {
        let mut spec = json!({"paused": true});
        if let Some(selector) = selector {
            spec["nodeSelector"] = selector;
        }
        pool(claimed(), spec)
    };
    for (old, new) in [
        (Some(selector("x")), Some(selector("y"))),
        (Some(selector("x")), None),
        (None, Some(selector("x"))),
        (Some(json!({})), None),
    ] {
        let message = refused(&update(ADMIN, "machineconfigpools", paused(old.clone()), paused(new.clone())));
        assert!(message.starts_with("The nodeSelector of MachineConfigPool infra is steered by numo"), "{message}");
        assert!(message.contains(RUN_CONFIG), "{message}");
    }
    // The same selector, or none before and after, with anything else changed: let through.
    for same in [Some(selector("x")), None] {
        let mut new = paused(same.clone());
        new["spec"]["configuration"] = json!({"name": "rendered-worker-2"});
        allowed(&update(ADMIN, "machineconfigpools", paused(same), new));
    }
    // Pausing a claimed pool, or leaving it unpaused (the canary), is no unpausing.
    let unpaused = pool(claimed(), json!({"paused": false}));
    allowed(&update(ADMIN, "machineconfigpools", unpaused.clone(), pool(claimed(), json!({"paused": true}))));
    allowed(&update(ADMIN, "machineconfigpools", pool(claimed(), json!({})), unpaused));
}

#[test]
fn numo_itself_an_unclaimed_pool_and_a_released_claim_are_let_through() {
    let old = pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}));
    let unpaused = pool(claimed(), json!({"paused": false}));
    allowed(&update(NUMO, "machineconfigpools", old.clone(), unpaused));
    let plain = |paused: bool| pool(json!({"other": "annotation"}), json!({"paused": paused}));
    allowed(&update(ADMIN, "machineconfigpools", plain(true), plain(false)));
    let bare = json!({"metadata": {"name": "infra"}, "spec": {"paused": true}});
    allowed(&update(ADMIN, "machineconfigpools", bare.clone(), json!({"metadata": {"name": "infra"}})));
    // numo's own restore: the claim goes in the same write that unpauses and restores the selector.
    let released = pool(json!({"openshift-optional.skrzypek.io/original": "{}"}), json!({"paused": false}));
    allowed(&update(NUMO, "machineconfigpools", old.clone(), released));
    allowed(&delete(ADMIN, pool(json!({}), json!({"paused": true}))));
}

#[test]
fn a_held_pool_replaced_without_its_claim_or_deleted_is_refused() {
    let old = pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}));
    // `kubectl replace` or a GitOps replace sync with the manifest from before the rollout.
    for manifest in [
        pool(json!({}), json!({"paused": true, "nodeSelector": selector("x")})),
        json!({"metadata": {"name": "infra"}, "spec": {"paused": false}}),
        pool(json!({"openshift-optional.skrzypek.io/claimed-by": "other/run-config"}), json!({"paused": true})),
    ] {
        let message = refused(&update(ADMIN, "machineconfigpools", old.clone(), manifest));
        assert!(message.starts_with("MachineConfigPool infra is held by numo for the MutexRunConfig"), "{message}");
        assert!(message.contains("only numo removes it"), "{message}");
    }
    let message = refused(&delete(ADMIN, old.clone()));
    assert!(
        message.starts_with(&format!("MachineConfigPool infra is held by numo for the MutexRunConfig {RUN_CONFIG}"))
    );
    assert!(message.contains("deleted, it would come back without the hold"), "{message}");
    allowed(&delete(NUMO, old.clone()));
    allowed(&delete("system:serviceaccount:openshift-machine-config-operator:machine-config-operator", old));
}

#[test]
fn a_rule_label_removed_through_the_node_status_is_refused() {
    let held = node(json!({LABEL: "", "node-role.kubernetes.io/worker": ""}));
    let mut request = update(ADMIN, "nodes", held, node(json!({"node-role.kubernetes.io/worker": ""})));
    request["resource"]["subresource"] = json!("status");
    let message = refused(&request);
    assert!(message.starts_with(&format!("Node worker-1 is held by numo: its label {LABEL}")), "{message}");
}

#[test]
fn removing_a_rule_label_from_a_node_is_refused_naming_the_label() {
    let held = node(json!({LABEL: "", "node-role.kubernetes.io/worker": ""}));
    for new in [node(json!({"node-role.kubernetes.io/worker": ""})), json!({"metadata": {"name": "worker-1"}})] {
        let message = refused(&update(ADMIN, "nodes", held.clone(), new));
        assert!(message.starts_with(&format!("Node worker-1 is held by numo: its label {LABEL}")), "{message}");
        assert!(message.contains("(MutexRule and namespace drain.upgrade-ops)"), "{message}");
        assert!(message.contains("delete the MutexRunConfig that runs this rule (numo then restores"), "{message}");
    }
    // Its labels kept (and others changed, or its value changed): let through; numo removes them.
    let relabelled = node(json!({LABEL: "x", "team": "a"}));
    allowed(&update(ADMIN, "nodes", held.clone(), relabelled));
    allowed(&update(NUMO, "nodes", held, node(json!({"node-role.kubernetes.io/worker": ""}))));
    let plain = node(json!({"node-role.kubernetes.io/worker": ""}));
    allowed(&update(ADMIN, "nodes", plain.clone(), node(json!({}))));
    allowed(&update(ADMIN, "nodes", json!({"metadata": {"name": "worker-1"}, "spec": {}}), plain));
}

#[test]
fn the_platform_is_never_refused() {
    let old = pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}));
    let new = pool(claimed(), json!({"paused": false, "nodeSelector": selector("y")}));
    let held = node(json!({LABEL: "", "node-role.kubernetes.io/worker": ""}));
    for user in [
        "system:serviceaccount:openshift-machine-config-operator:machine-config-operator",
        "system:serviceaccount:openshift-machine-config-operator:machine-config-controller",
        "system:serviceaccount:openshift-machine-config-operator:machine-config-daemon",
        "system:serviceaccount:openshift-cluster-version:default",
        "system:node:worker-1",
    ] {
        allowed(&update(user, "machineconfigpools", old.clone(), new.clone()));
        allowed(&update(user, "nodes", held.clone(), node(json!({RELEASED: "canary"}))));
    }
    // A look-alike namespace is not the platform.
    let impostor = "system:serviceaccount:openshift-machine-config-operator-fake:machine-config-operator";
    refused(&update(impostor, "machineconfigpools", old, new));
}

#[test]
fn a_built_in_pools_selector_is_the_machine_config_operators() {
    let built_in = |name: &str, key: &str| {
        let mut pool = pool(claimed(), json!({"paused": true, "nodeSelector": selector(key)}));
        pool["metadata"]["name"] = json!(name);
        pool
    };
    for name in ["worker", "master", "arbiter"] {
        allowed(&update(ADMIN, "machineconfigpools", built_in(name, "x"), built_in(name, "y")));
    }
    refused(&update(ADMIN, "machineconfigpools", built_in("infra", "x"), built_in("infra", "y")));
    // Unpausing a claimed built-in pool is still refused.
    let mut unpaused = built_in("worker", "x");
    unpaused["spec"]["paused"] = json!(false);
    let message = refused(&update(ADMIN, "machineconfigpools", built_in("worker", "x"), unpaused));
    assert!(message.starts_with("MachineConfigPool worker is held paused by numo"), "{message}");
}

#[test]
fn only_numo_marks_a_held_node_released() {
    let held = node(json!({LABEL: "", "node-role.kubernetes.io/worker": ""}));
    let forged = node(json!({LABEL: "", "node-role.kubernetes.io/worker": "", RELEASED: "canary"}));
    let message = refused(&update(ADMIN, "nodes", held.clone(), forged.clone()));
    assert!(message.starts_with("Node worker-1 is held by numo until its gate Jobs succeeded"), "{message}");
    assert!(message.contains(RELEASED), "{message}");
    allowed(&update(NUMO, "nodes", held.clone(), forged.clone()));
    // Another value is another mark; the same mark kept is let through.
    let mut moved = forged.clone();
    moved["metadata"]["labels"][RELEASED] = json!("other");
    refused(&update(ADMIN, "nodes", forged.clone(), moved));
    let mut relabelled = forged.clone();
    relabelled["metadata"]["labels"]["team"] = json!("a");
    allowed(&update(ADMIN, "nodes", forged, relabelled));
}

fn held_pool_again() -> Value {
    pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}))
}

#[test]
fn every_refusal_names_the_way_out_that_works_while_numo_is_down() {
    let way_out = "If numo is down: `oc delete validatingadmissionpolicybinding numo-holds` lets everyone write \
                   again (numo puts it back when it runs)";
    let held_pool = pool(claimed(), json!({"paused": true, "nodeSelector": selector("x")}));
    let held_node = node(json!({LABEL: "", "node-role.kubernetes.io/worker": ""}));
    let refusals = [
        refused(&update(ADMIN, "machineconfigpools", held_pool.clone(), pool(claimed(), json!({"paused": false})))),
        refused(&update(ADMIN, "machineconfigpools", held_pool, pool(claimed(), json!({"paused": true})))),
        refused(&update(ADMIN, "nodes", held_node.clone(), node(json!({LABEL: "", RELEASED: "canary"})))),
        refused(&update(ADMIN, "nodes", held_node, node(json!({})))),
        refused(&update(ADMIN, "machineconfigpools", held_pool_again(), pool(json!({}), json!({"paused": true})))),
        refused(&delete(ADMIN, held_pool_again())),
        static_message(),
    ];
    for message in refusals {
        assert!(message.contains(way_out), "{message}");
        assert!(message.contains("docs/install.md, hack/restore-without-numo.sh"), "{message}");
        // Longer, and the API server would drop the message expression's result for the static message.
        assert!(message.len() < MAX_MESSAGE, "{} bytes: {message}", message.len());
        assert!(!message.contains('\n'), "{message}");
    }
}

#[test]
fn the_api_missing_or_forbidden_is_a_sentence_an_admin_can_act_on() {
    let status = |code: u16, message: &str| {
        let mut status = kube::core::Status::failure(message, "");
        status.code = code;
        kube::Error::Api(Box::new(status))
    };
    let PolicyStatus::Unavailable(missing) =
        unavailable(&status(404, "the server could not find the requested resource"))
    else {
        panic!("a 404 is Unavailable")
    };
    assert!(missing.contains("admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is not served"), "{missing}");
    assert!(missing.contains("Kubernetes 1.30 or OpenShift 4.17"), "{missing}");
    let PolicyStatus::Unavailable(forbidden) = unavailable(&status(403, "cannot create resource")) else {
        panic!("a 403 is Unavailable")
    };
    assert!(forbidden.starts_with("numo is not allowed to create or update the ValidatingAdmissionPolicy numo-holds"));
    assert!(forbidden.contains("config/rbac/role.yaml") && forbidden.contains("cannot create resource"));
    assert!(!passing(&status(404, "")) && !passing(&status(403, "")) && !passing(&status(422, "")));
    assert!(passing(&status(503, "")) && passing(&status(429, "")));
    let PolicyStatus::Unavailable(other) = unavailable(&status(422, "invalid")) else { panic!("Unavailable") };
    assert!(other.contains("could not put the ValidatingAdmissionPolicy numo-holds in place"), "{other}");
}

#[test]
fn the_shared_state_holds_the_last_status() {
    let state = PolicyState::default();
    assert_eq!(state.get(), None);
    let reader = state.clone();
    state.set(unknown_service_account());
    assert!(matches!(reader.get(), Some(PolicyStatus::Unavailable(s)) if s.contains("NUMO_SERVICE_ACCOUNT")));
    state.set(PolicyStatus::InForce);
    assert_eq!(reader.get(), Some(PolicyStatus::InForce));
}

#[tokio::test]
async fn every_new_status_is_told_once_and_a_repeated_one_not_at_all() {
    use futures::{FutureExt, StreamExt};
    let state = PolicyState::default();
    state.set(unknown_service_account());
    let mut changes = Box::pin(state.changes());
    assert_eq!(changes.next().now_or_never(), None, "the status already recorded is not a change");
    state.set(PolicyStatus::InForce);
    assert_eq!(changes.next().await, Some(()));
    state.set(PolicyStatus::InForce);
    assert_eq!(changes.next().now_or_never(), None, "the same status again is not a change");
    state.set(unknown_service_account());
    assert_eq!(changes.next().await, Some(()));
    drop(state);
    assert_eq!(changes.next().await, None, "the stream ends with the state");
}

/// A pool SR-IOV says it holds (`sriovnetwork.openshift.io/state: Paused`), claimed by numo, numo's `written`
/// record saying `paused`, with `spec.configuration` and `status.configuration` as given.
fn sriov_pool(numo_paused: bool, spec_config: &str, status_config: &str, paused: bool) -> Value {
    let mut annotations = claimed();
    annotations["sriovnetwork.openshift.io/state"] = json!("Paused");
    annotations["openshift-optional.skrzypek.io/written"] =
        json!(serde_json::to_string(&crate::pool_claim::PoolOriginal { paused: numo_paused, ..Default::default() })
            .unwrap_or_default());
    let mut object = pool(annotations, json!({"paused": paused, "configuration": {"name": spec_config}}));
    object["status"] = json!({"configuration": {"name": status_config}});
    object
}

#[test]
fn sriov_ends_its_turn_on_the_canary_it_paused() {
    let old = sriov_pool(false, "rendered-canary-b", "rendered-canary-a", true);
    let new = sriov_pool(false, "rendered-canary-b", "rendered-canary-a", false);
    allowed(&update(crate::taking_turns::SRIOV_USER, "machineconfigpools", old.clone(), new.clone()));
    // Not another user, even with SR-IOV's annotation on the pool.
    refused(&update(ADMIN, "machineconfigpools", old, new));
}

#[test]
fn sriov_unpauses_a_pool_numo_holds_only_when_that_releases_no_node() {
    let sriov = crate::taking_turns::SRIOV_USER;
    let settled = sriov_pool(true, "rendered-worker-a", "rendered-worker-a", true);
    allowed(&update(
        sriov,
        "machineconfigpools",
        settled.clone(),
        sriov_pool(true, "rendered-worker-a", "rendered-worker-a", false),
    ));
    let pending = sriov_pool(true, "rendered-worker-b", "rendered-worker-a", true);
    let message = refused(&update(
        sriov,
        "machineconfigpools",
        pending,
        sriov_pool(true, "rendered-worker-b", "rendered-worker-a", false),
    ));
    assert!(message.contains("held paused by numo"), "{message}");
    // Without its own annotation saying Paused, SR-IOV is any other hand.
    let mut idle = settled.clone();
    idle["metadata"]["annotations"]["sriovnetwork.openshift.io/state"] = json!("Idle");
    let mut new = idle.clone();
    new["spec"]["paused"] = json!(false);
    refused(&update(sriov, "machineconfigpools", idle, new));
    // Nothing else of a held pool.
    let mut moved = settled.clone();
    moved["spec"]["nodeSelector"] = selector("y");
    refused(&update(sriov, "machineconfigpools", settled, moved));
}

#[test]
fn numos_written_record_begins_with_its_paused_flag() {
    for paused in [false, true] {
        let text = serde_json::to_string(&crate::pool_claim::PoolOriginal {
            paused,
            node_selector: Some(Default::default()),
            ..Default::default()
        })
        .unwrap_or_default();
        assert!(text.starts_with(&format!("{{\"paused\":{paused}")), "the policy reads this prefix: {text}");
    }
}
