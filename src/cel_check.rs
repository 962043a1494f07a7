//! The CEL expressions of custom health checks: compiled when the run config is validated, evaluated over each
//! selected object (bound as `object`) before a node starts. An expression is a predicate and must give a bool.
//!
//! CEL's parser recurses once per nesting level with large frames, and stops only at 96 levels: on a thread's
//! default 2 MiB stack an expression nesting some twenty brackets overflows it, which aborts the process. So every
//! compilation and evaluation runs on a thread of its own with a [`STACK`]-sized stack (reserved, not used, unless
//! an expression is that deep), and expressions nesting more than [`MAX_NESTING`] brackets are refused with a clear
//! message before they reach the parser.

use cel::{Context, Program, Value};

/// Why a custom check may not read objects of `api_version` and `kind`, if it may not: a kind numo's own role lets it
/// read ([`crate::access::reserved_kinds`]). numo reads them for its own work, across namespaces; a check on them
/// would let whoever may create a run config learn about objects (MachineConfigs with their files, Jobs, pods) they
/// may not read themselves. The built-in checks cover nodes, pools, ClusterOperators and PodDisruptionBudgets.
pub fn reserved(api_version: &str, kind: &str) -> Option<String> {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let reserved = crate::access::reserved_kinds();
    reserved.iter().any(|(g, k)| *g == group && (*k == "*" || k.eq_ignore_ascii_case(kind))).then(|| {
        format!(
            "numo reads {kind} ({api_version}) for its own work, with permissions the run config's author may not \
             have, so a custom check may not read it; the built-in checks cover nodes, pools, ClusterOperators and \
             PodDisruptionBudgets"
        )
    })
}

/// The stack of the thread CEL runs on.
const STACK: usize = 64 << 20;

/// The deepest nesting of brackets (`(`, `[`, `{`) an expression may have.
pub const MAX_NESTING: usize = 32;

/// Why `expression` does not compile, if it does not.
pub fn check(expression: &str) -> Result<(), String> {
    on_big_stack(|| compile(expression).map(|_| ()))
}

/// Whether `expression` is true of each of `objects`, in order; Err when it does not compile.
pub fn evaluate(expression: &str, objects: &[serde_json::Value]) -> Result<Vec<Result<bool, String>>, String> {
    on_big_stack(|| {
        let program = compile(expression)?;
        Ok(objects.iter().map(|object| holds(&program, object)).collect())
    })
}

fn on_big_stack<T: Send>(work: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new()
            .name("cel".into())
            .stack_size(STACK)
            .spawn_scoped(scope, work)
            .map_err(|e| format!("no thread to evaluate CEL on: {e}"))?;
        thread.join().unwrap_or_else(|_| Err("the CEL evaluation failed".into()))
    })
}

/// How deeply brackets nest in `expression`, outside string literals.
fn nesting(expression: &str) -> usize {
    let (mut depth, mut deepest, mut quote, mut escaped) = (0usize, 0usize, None, false);
    for c in expression.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
    }
    deepest
}

fn compile(expression: &str) -> Result<Program, String> {
    let depth = nesting(expression);
    if depth > MAX_NESTING {
        return Err(format!("it nests brackets {depth} deep; numo allows at most {MAX_NESTING}"));
    }
    Program::compile(expression).map_err(|e| e.to_string().trim().replace('\n', " "))
}

fn holds(program: &Program, object: &serde_json::Value) -> Result<bool, String> {
    let mut context = Context::default();
    let value = cel::to_value(object).map_err(|e| format!("the object cannot be given to CEL: {e}"))?;
    context.add_variable_from_value("object", value);
    match program.execute(&context) {
        Ok(Value::Bool(result)) => Ok(result),
        Ok(other) => Err(format!("the expression gives {:?}, not a bool", other.type_of())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ceph(health: &str) -> serde_json::Value {
        json!({"apiVersion": "ceph.rook.io/v1", "kind": "CephCluster", "metadata": {"name": "rook-ceph"},
               "status": {"ceph": {"health": health}}})
    }

    #[test]
    fn an_expression_is_true_or_false_of_each_object() {
        let results = evaluate("object.status.ceph.health == 'HEALTH_OK'", &[ceph("HEALTH_OK"), ceph("HEALTH_WARN")]);
        assert_eq!(results, Ok(vec![Ok(true), Ok(false)]));
    }

    #[test]
    fn errors_say_why() {
        assert!(check("object.status.ceph.health ==").is_err());
        let error = evaluate("object.status.missing.field == 'x'", &[ceph("HEALTH_OK")]);
        assert!(matches!(&error, Ok(r) if r[0].as_ref().is_err_and(|e| e.contains("missing"))), "{error:?}");
        let not_bool = evaluate("object.metadata.name", &[ceph("HEALTH_OK")]);
        assert_eq!(not_bool, Ok(vec![Err("the expression gives String, not a bool".into())]));
    }

    #[test]
    fn deeply_nested_expressions_are_refused_not_a_crash() {
        for open in ["(", "[", "size("] {
            let close = if open == "[" { "]" } else { ")" };
            for depth in [20, MAX_NESTING, 96, 5000] {
                let deep = format!("{}true{} == true", open.repeat(depth), close.repeat(depth));
                let result = check(&deep);
                if depth <= MAX_NESTING {
                    assert!(!result.as_ref().is_err_and(|e| e.contains("nests")), "{depth}: {result:?}");
                } else {
                    assert!(result.is_err_and(|e| e.contains(&format!("nests brackets {depth} deep"))));
                }
            }
        }
        // Brackets inside string literals do not count.
        assert_eq!(check(&format!("'{}' == ''", "(".repeat(100))), Ok(()));
    }

    /// The resource name of `kind`, as the API server forms it for the kinds numo's role names.
    fn plural(kind: &str) -> String {
        let kind = kind.to_ascii_lowercase();
        match kind.strip_suffix('y') {
            Some(stem) => format!("{stem}ies"),
            None => format!("{kind}s"),
        }
    }

    #[test]
    fn every_kind_numos_own_cluster_role_may_read_is_reserved() {
        let role: serde_json::Value =
            serde_yaml::from_str(include_str!("../config/rbac/role.yaml")).unwrap_or_else(|e| panic!("{e}"));
        let reads = |rule: &serde_json::Value| {
            rule["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| ["get", "list", "watch", "*"].contains(&v.as_str().unwrap_or("")))
        };
        for rule in role["rules"].as_array().into_iter().flatten().filter(|rule| reads(rule)) {
            for group in rule["apiGroups"].as_array().into_iter().flatten().filter_map(|g| g.as_str()) {
                for resource in rule["resources"].as_array().into_iter().flatten().filter_map(|r| r.as_str()) {
                    let resource = resource.split('/').next().unwrap_or_default();
                    let covered = crate::access::reserved_kinds()
                        .iter()
                        .any(|(g, k)| *g == group && (*k == "*" || plural(k) == resource));
                    assert!(covered, "{group}/{resource} is granted to numo but not reserved");
                }
            }
        }
        assert!(reserved("batch/v1", "Job").is_some());
        assert!(reserved("v1", "Pod").is_some());
        assert!(reserved("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy").is_some());
        assert!(reserved("openshift-optional.skrzypek.io/v1alpha1", "MutexRule").is_some());
        assert_eq!(reserved("ceph.rook.io/v1", "CephCluster"), None);
    }

    #[test]
    fn a_deep_object_is_evaluated_without_a_crash() {
        let mut deep = json!("leaf");
        for _ in 0..60 {
            deep = json!({"a": deep});
        }
        assert_eq!(evaluate("has(object.a)", &[deep]), Ok(vec![Ok(true)]));
    }
}
