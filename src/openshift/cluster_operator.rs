//! `config.openshift.io/v1` ClusterOperator: one cluster operator's health as it reports it (`Available`,
//! `Degraded`, `Progressing`, `Upgradeable`).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ClusterVersionCondition;

/// A cluster operator; its spec is empty, everything it says is in its status.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "ClusterOperator",
    status = "ClusterOperatorStatus",
    shortname = "co",
    doc = "ClusterOperator reports the health of one cluster operator (derived fallback of the OpenShift CRD)."
)]
pub struct ClusterOperatorSpec {}

/// What the operator reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterOperatorStatus {
    /// `Available`, `Degraded`, `Progressing`, `Upgradeable` and others.
    #[serde(default)]
    pub conditions: Vec<ClusterVersionCondition>,
    /// The versions the operator and its operands run (`operator` is the operator's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versions: Vec<OperandVersion>,
}

impl ClusterOperatorStatus {
    /// The version of the operator itself (its `operator` entry), if it reports one.
    pub fn operator_version(&self) -> Option<&str> {
        self.versions.iter().find(|v| v.name == "operator").map(|v| v.version.as_str())
    }

    /// The condition `type_`, if the operator reports it.
    pub fn condition(&self, type_: &str) -> Option<&ClusterVersionCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// A version an operator reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OperandVersion {
    /// Whose version: `operator`, or an operand's name.
    pub name: String,
    /// The version.
    pub version: String,
}

/// The operator whose kubelet version skew controller says whether the kubelets allow the next minor update.
pub const KUBE_APISERVER: &str = "kube-apiserver";
/// The prefix of the `Upgradeable` reason the kube-apiserver operator gives for kubelet skew (library-go joins the
/// operator condition's type, less `Upgradeable`, and its reason: `KubeletMinorVersion_<reason>`).
const KUBELET_SKEW_REASON: &str = "KubeletMinorVersion_";

impl ClusterOperator {
    /// What the `kube-apiserver` operator says when kubelets too far behind the API server hold the next minor
    /// update (`Upgradeable=False`, reason `KubeletMinorVersion_KubeletMinorVersionUnsupportedNextUpgrade` or
    /// `..._KubeletMinorVersionUnsupported`, possibly among other reasons joined by `::`): its reason. None for any
    /// other operator or reason. (Its message counts the nodes behind and changes with every node upgraded: numo
    /// says that count itself.)
    pub fn kubelet_skew(&self) -> Option<String> {
        if self.metadata.name.as_deref() != Some(KUBE_APISERVER) {
            return None;
        }
        let upgradeable = self.status.as_ref()?.condition("Upgradeable")?;
        let reason = upgradeable.reason.as_deref().unwrap_or_default();
        let skew = reason.split("::").any(|r| r.starts_with(KUBELET_SKEW_REASON));
        (upgradeable.status == "False" && skew).then(|| reason.to_string())
    }

    /// Why the operator is unhealthy (`Degraded=True`, `Available=False`), as a sentence; None when it is not.
    pub fn problem(&self) -> Option<String> {
        let conditions = self.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        let says = |type_: &str, status: &str| conditions.iter().find(|c| c.type_ == type_ && c.status == status);
        let described = |what: &str, c: &ClusterVersionCondition| {
            let detail = [c.reason.as_deref(), c.message.as_deref()].into_iter().flatten().collect::<Vec<_>>();
            match detail.as_slice() {
                [] => what.to_string(),
                detail => format!("{what} ({})", detail.join(": ")),
            }
        };
        let problems: Vec<String> = [("Degraded", "True", "is Degraded"), ("Available", "False", "is not Available")]
            .into_iter()
            .filter_map(|(type_, status, what)| says(type_, status).map(|c| described(what, c)))
            .collect();
        (!problems.is_empty()).then(|| problems.join(" and "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operator(conditions: serde_json::Value) -> ClusterOperator {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator",
            "metadata": {"name": "ingress"}, "spec": {}, "status": {"conditions": conditions}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_kube_apiserver_says_when_kubelet_skew_holds_the_next_minor_update() {
        let named = |name: &str, conditions| {
            let mut o = operator(conditions);
            o.metadata.name = Some(name.into());
            o
        };
        let held = serde_json::json!([{"type": "Upgradeable", "status": "False",
            "reason": "KubeletMinorVersion_KubeletMinorVersionUnsupportedNextUpgrade",
            "message": "KubeletMinorVersionUpgradeable: Kubelet version (1.30.0) on node worker-0 will not be supported in the next OpenShift version upgrade."}]);
        let reason = named(KUBE_APISERVER, held.clone()).kubelet_skew();
        assert_eq!(reason.as_deref(), Some("KubeletMinorVersion_KubeletMinorVersionUnsupportedNextUpgrade"));
        assert_eq!(named("machine-config", held).kubelet_skew(), None, "only the kube-apiserver operator's");
        let other = serde_json::json!([{"type": "Upgradeable", "status": "False", "reason": "FeatureGates_RestrictedFeatureGates_TechPreviewNoUpgrade"}]);
        assert_eq!(named(KUBE_APISERVER, other).kubelet_skew(), None);
        let behind_ok = serde_json::json!([{"type": "Upgradeable", "status": "True", "reason": "AsExpected"}]);
        assert_eq!(named(KUBE_APISERVER, behind_ok).kubelet_skew(), None);
    }

    #[test]
    fn an_operator_is_unhealthy_when_degraded_or_not_available() {
        let healthy = operator(serde_json::json!([
            {"type": "Available", "status": "True"}, {"type": "Degraded", "status": "False"}
        ]));
        assert_eq!(healthy.problem(), None);
        let degraded = operator(serde_json::json!([
            {"type": "Available", "status": "False", "reason": "NoPods"},
            {"type": "Degraded", "status": "True", "reason": "IngressDegraded", "message": "2 of 2 pods crash"}
        ]));
        assert_eq!(
            degraded.problem().as_deref(),
            Some("is Degraded (IngressDegraded: 2 of 2 pods crash) and is not Available (NoPods)")
        );
    }
}
