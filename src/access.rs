//! Everything numo does in the API, and why: one [`Grant`] per rule of its ClusterRole `numo-operator`.
//! `cargo xtask rbac` writes config/rbac/role.yaml from [`GRANTS`] (its test fails when the committed file differs),
//! and a custom health check may read none of the kinds numo is granted ([`reserved_kinds`]).

/// One rule of numo's ClusterRole.
#[derive(Clone, Copy, Debug)]
pub struct Grant {
    /// Why numo needs it, as the comment above the rule says it (lines joined by `\n`; empty: the comment above
    /// the previous rule covers it too).
    pub why: &'static str,
    /// Its API groups (`""`: the core group).
    pub groups: &'static [&'static str],
    /// Its resources, each with its kind.
    pub resources: &'static [(&'static str, &'static str)],
    /// The only object names it covers; empty: every name.
    pub names: &'static [&'static str],
    /// Its verbs.
    pub verbs: &'static [&'static str],
}

/// The kinds numo writes but never reads, whose objects a custom check may read (the rollout records numo creates
/// as ConfigMaps are never read back by numo, and other ConfigMaps are none of numo's business).
const OPEN_TO_CHECKS: [&str; 1] = ["ConfigMap"];

/// Every rule of numo's ClusterRole, in the order config/rbac/role.yaml lists them.
pub const GRANTS: &[Grant] = &[
    Grant {
        why: "Rule labels are added to and removed from the gated nodes (a merge patch of metadata.labels).",
        groups: &[""],
        resources: &[("nodes", "Node")],
        names: &[],
        verbs: &["get", "list", "watch", "patch"],
    },
    Grant {
        why: "Target pools are paused and steered, the canary pool's selector is replaced and everything is restored.",
        groups: &["machineconfiguration.openshift.io"],
        resources: &[("machineconfigpools", "MachineConfigPool")],
        names: &[],
        verbs: &["get", "list", "watch", "patch"],
    },
    Grant {
        why: "Image mode (OpenShift 4.19+): a target pool that builds its own OS image needs a canary that does too.",
        groups: &["machineconfiguration.openshift.io"],
        resources: &[("machineosconfigs", "MachineOSConfig")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "MachineConfigNodes (OpenShift 4.20+): when a node's drain for its upgrade ended, shown apart from its reboot,\n\
         and whether a node is NodeDegraded (the machineConfigNodes health check).",
        groups: &["machineconfiguration.openshift.io"],
        resources: &[("machineconfignodes", "MachineConfigNode")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "OpenShift Data Foundation's StorageClusters: status.failureDomainKey, the default failure-domain key of\n\
         spec.topology (an optional watch: where ODF is not installed the API is not served).",
        groups: &["ocs.openshift.io"],
        resources: &[("storageclusters", "StorageCluster")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "A node's version is read from its rendered MachineConfig's release-image-version annotation.",
        groups: &["machineconfiguration.openshift.io"],
        resources: &[("machineconfigs", "MachineConfig")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "The upgrade in progress: spec.desiredUpdate, status.desired and status.history of ClusterVersion \"version\".",
        groups: &["config.openshift.io"],
        resources: &[("clusterversions", "ClusterVersion")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "Health checks (spec.healthChecks): ClusterOperators that are Degraded or not Available hold the next node.",
        groups: &["config.openshift.io"],
        resources: &[("clusteroperators", "ClusterOperator")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "Health checks: PodDisruptionBudgets that allow no disruption.",
        groups: &["policy"],
        resources: &[("poddisruptionbudgets", "PodDisruptionBudget")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "Health checks: which pods a PodDisruptionBudget at zero covers on the node about to start. Listed only then,\n\
         by metadata only (names and labels), with a field selector on that one node; never watched, never read whole.",
        groups: &[""],
        resources: &[("pods", "Pod")],
        names: &[],
        verbs: &["list"],
    },
    Grant {
        why: "Gate and cleanup Jobs, in each rule's job namespace (the rule's own, or one on the operator's allow-list whose\n\
         ServiceAccount opted in), plus the server-side dry-run create that validates a rule's Job templates; patch\n\
         removes numo's result finalizer once the run config's status records a deleted Job's result.",
        groups: &["batch"],
        resources: &[("jobs", "Job")],
        names: &[],
        verbs: &["create", "get", "list", "watch", "patch"],
    },
    Grant {
        why: "The ServiceAccounts MutexRule Jobs would run as: their opt-in annotation\n\
         (openshift-optional.skrzypek.io/allow-mutex-rules-from) is read when a rule is validated and watched (metadata\n\
         only) so that a rule is judged again when it changes. Never written; no serviceaccounts/token.",
        groups: &[""],
        resources: &[("serviceaccounts", "ServiceAccount")],
        names: &[],
        verbs: &["get", "list", "watch"],
    },
    Grant {
        why: "Kubernetes Events on every transition and failure.",
        groups: &["", "events.k8s.io"],
        resources: &[("events", "Event")],
        names: &[],
        verbs: &["create", "patch"],
    },
    Grant {
        why: "Each run config's rollout record (src/rollout_record.rs): the ConfigMap numo-timeline-<run config> in the run\n\
         config's namespace, owned by it, which `numo timeline` draws. Created, added to by a merge patch of new keys\n\
         and deleted when a new rollout starts; never read, listed or watched by numo, so no ConfigMap's content is\n\
         open to it (a ConfigMap's name is only known once created, so the verbs cannot be narrowed by name).",
        groups: &[""],
        resources: &[("configmaps", "ConfigMap")],
        names: &[],
        verbs: &["create", "patch", "delete"],
    },
    Grant {
        why: "numo's own kinds: read, finalizer and annotations (update/patch), status by server-side apply.",
        groups: &["openshift-optional.skrzypek.io"],
        resources: &[("mutexrules", "MutexRule"), ("mutextargets", "MutexTarget"), ("mutexrunconfigs", "MutexRunConfig")],
        names: &[],
        verbs: &["get", "list", "watch", "update", "patch"],
    },
    Grant {
        why: "",
        groups: &["openshift-optional.skrzypek.io"],
        resources: &[("mutexrules/status", "MutexRule"), ("mutextargets/status", "MutexTarget"), ("mutexrunconfigs/status", "MutexRunConfig")],
        names: &[],
        verbs: &["get", "update", "patch"],
    },
    Grant {
        why: "Jobs in the run config's own namespace carry an owner reference to it; OpenShift's\n\
         OwnerReferencesPermissionEnforcement admission plugin lets an owner reference block the owner's deletion only\n\
         for those who may update the owner's finalizers.",
        groups: &["openshift-optional.skrzypek.io"],
        resources: &[("mutexrunconfigs/finalizers", "MutexRunConfig")],
        names: &[],
        verbs: &["update"],
    },
    Grant {
        why: "numo's ValidatingAdmissionPolicy numo-holds and its binding (src/admission_policy.rs): the API server refuses\n\
         other hands' writes to the pools and node labels numo holds. Applied by server-side apply (get, patch; update\n\
         to put back a spec another writer changed) of that one name, and watched by name (list and watch with the\n\
         field selector metadata.name=numo-holds) to put it back when someone deletes or changes it; create cannot be\n\
         restricted by name, so it is granted on the kind (docs/security.md says why this is still least privilege).",
        groups: &["admissionregistration.k8s.io"],
        resources: &[("validatingadmissionpolicies", "ValidatingAdmissionPolicy"), ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding")],
        names: &[],
        verbs: &["create"],
    },
    Grant {
        why: "",
        groups: &["admissionregistration.k8s.io"],
        resources: &[("validatingadmissionpolicies", "ValidatingAdmissionPolicy"), ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding")],
        names: &["numo-holds"],
        verbs: &["get", "list", "watch", "patch", "update"],
    },
    Grant {
        why: "The ConsolePlugin numo-console-plugin (src/console_plugin/object.rs): it points the OpenShift console at numo's\n\
         Service in numo's own namespace, which only the running pod knows, so numo applies it when it starts serving\n\
         the plugin. Server-side apply of that one name; create cannot be restricted by name.",
        groups: &["console.openshift.io"],
        resources: &[("consoleplugins", "ConsolePlugin")],
        names: &[],
        verbs: &["create"],
    },
    Grant {
        why: "",
        groups: &["console.openshift.io"],
        resources: &[("consoleplugins", "ConsolePlugin")],
        names: &["numo-console-plugin"],
        verbs: &["get", "patch", "update"],
    },
    Grant {
        why: "The policy, its binding and the ConsolePlugin are owned by numo's run-config CRD, so that removing the CRDs\n\
         removes them: its uid.",
        groups: &["apiextensions.k8s.io"],
        resources: &[("customresourcedefinitions", "CustomResourceDefinition")],
        names: &["mutexrunconfigs.openshift-optional.skrzypek.io"],
        verbs: &["get"],
    },
];

/// Kinds a custom check may not read, as (API group, kind; `*` every kind of the group): every kind numo's
/// ClusterRole names (but [`OPEN_TO_CHECKS`]), its leader-election Lease, and every kind of numo's own group.
pub fn reserved_kinds() -> Vec<(&'static str, &'static str)> {
    let mut kinds: Vec<(&str, &str)> = GRANTS
        .iter()
        .flat_map(|g| g.groups.iter().flat_map(move |group| g.resources.iter().map(move |(_, kind)| (*group, *kind))))
        .filter(|(_, kind)| !OPEN_TO_CHECKS.contains(kind))
        .filter(|(group, _)| *group != crate::api::GROUP)
        .collect();
    kinds.push(("coordination.k8s.io", "Lease"));
    kinds.push((crate::api::GROUP, "*"));
    kinds.sort();
    kinds.dedup();
    kinds
}

/// config/rbac/role.yaml as [`GRANTS`] give it.
pub fn role_yaml() -> String {
    let mut out = String::from(
        "# Everything numo does in the API, and nothing more: no secrets, no pod reads beyond metadata lists, no \
         pods/exec,\n# no wildcard. Generated from src/access.rs by `cargo xtask rbac`.\n",
    );
    out.push_str(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: numo-operator\n  labels:\n    \
         app.kubernetes.io/name: numo\n    app.kubernetes.io/component: operator\nrules:\n",
    );
    let list = |items: &mut dyn Iterator<Item = &str>| {
        let items: Vec<String> = items.map(|i| if i.is_empty() { "\"\"".to_string() } else { i.to_string() }).collect();
        format!("[{}]", items.join(", "))
    };
    for grant in GRANTS {
        for line in grant.why.lines().filter(|_| !grant.why.is_empty()) {
            out.push_str(&format!("  # {line}\n"));
        }
        out.push_str(&format!("  - apiGroups: {}\n", list(&mut grant.groups.iter().copied())));
        out.push_str(&format!("    resources: {}\n", list(&mut grant.resources.iter().map(|(r, _)| *r))));
        if !grant.names.is_empty() {
            out.push_str(&format!("    resourceNames: {}\n", list(&mut grant.names.iter().copied())));
        }
        out.push_str(&format!("    verbs: {}\n", list(&mut grant.verbs.iter().copied())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_numo_reads_for_itself_is_reserved_and_its_rollout_records_are_not() {
        let reserved = reserved_kinds();
        for kind in
            [("", "Node"), ("", "Pod"), ("batch", "Job"), ("machineconfiguration.openshift.io", "MachineConfigNode")]
        {
            assert!(reserved.contains(&kind), "{kind:?}");
        }
        assert!(reserved.contains(&(crate::api::GROUP, "*")));
        assert!(!reserved.iter().any(|(_, kind)| *kind == "ConfigMap"));
    }
}
