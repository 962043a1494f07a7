//! The kube-apiserver operator's kubelet version skew controller, as the `kube-apiserver` ClusterOperator's
//! `Upgradeable` shows it (openshift/cluster-kube-apiserver-operator
//! `pkg/operator/kubeletversionskewcontroller/kubelet_version_skew_controller.go`, the same logic on release-4.16
//! to release-4.23; the status union is library-go's `pkg/operator/status/condition.go` `UnionCondition`).
//!
//! The controller compares every node's kubelet minor with the API server's. The supported skew alternates with the
//! OpenShift minor: an even minor (4.16, 4.18, … 4.22) allows kubelets two minors behind, an odd one (4.17, … 4.23)
//! one. A node one minor behind at an even minor is fine now but would be two behind after the next minor update,
//! where only one is allowed: `Upgradeable=False` `KubeletMinorVersionUnsupportedNextUpgrade`, and the CVO refuses
//! the next minor update until the node catches up. That is what a worker numo holds one minor behind after an
//! update to an even minor causes.
//!
//! Played here as: a node's kubelet runs the Kubernetes minor of the release of its current rendered config
//! (OpenShift 4.y ships Kubernetes 1.(y+13)); a node without a known config is left out (its kubelet is not the
//! MCO's to update). The API server runs the Kubernetes minor of the operator's own version. The condition is
//! written only when it changes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;

use crate::node_state;
use crate::release::OpenShiftRelease;
use numo::openshift::ClusterOperatorStatus;
pub use numo::openshift::KUBE_APISERVER;

/// The ClusterOperator condition the controller's verdict feeds.
const UPGRADEABLE: &str = "Upgradeable";
/// The operator condition the controller sets (its prefix names it in the ClusterOperator's reason and message).
const OPERATOR_CONDITION: &str = "KubeletMinorVersionUpgradeable";
/// A kubelet would be too far behind after the next minor update.
pub const UNSUPPORTED_NEXT_UPGRADE: &str = "KubeletMinorVersionUnsupportedNextUpgrade";
/// A kubelet is already too far behind.
pub const UNSUPPORTED: &str = "KubeletMinorVersionUnsupported";
/// A kubelet is behind, and still supported after the next minor update.
const SUPPORTED_NEXT_UPGRADE: &str = "KubeletMinorVersionSupportedNextUpgrade";
/// A kubelet is ahead of the API server (a rollback under way).
const AHEAD: &str = "KubeletMinorVersionAhead";
/// Every kubelet runs the API server's minor.
const SYNCED: &str = "KubeletMinorVersionsSynced";

/// The Kubernetes minor that OpenShift `4.<minor>` ships.
pub fn kube_minor(openshift_minor: u64) -> u64 {
    openshift_minor + 13
}

/// The OpenShift minor of a version such as `4.18.3`.
pub fn openshift_minor(version: &str) -> Option<u64> {
    let mut parts = version.split('.');
    (parts.next() == Some("4")).then_some(())?;
    parts.next()?.parse().ok()
}

/// How far behind the API server a kubelet may be at OpenShift `4.<minor>` (`minSupportedKubeletSkewForOpenShift
/// Version`): two minors at an even minor, one at an odd one.
fn min_supported_skew(openshift_minor: u64) -> i64 {
    if openshift_minor % 2 == 0 {
        -2
    } else {
        -1
    }
}

/// The controller's operator condition: status, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `True`, `False` or `Unknown`.
    pub status: &'static str,
    /// Its reason.
    pub reason: &'static str,
    /// Its message.
    pub message: String,
}

/// The controller's verdict with the API server at OpenShift `version`, on `kubelets` (node name → the OpenShift
/// minor its kubelet ships with), in the wording of `release`; None when `version` is not a 4.y version.
pub fn verdict(version: &str, kubelets: &BTreeMap<String, u64>, release: OpenShiftRelease) -> Option<Verdict> {
    let minor = openshift_minor(version)?;
    let api_server = kube_minor(minor) as i64;
    let (min_skew, min_skew_next) = (min_supported_skew(minor), min_supported_skew(minor + 1));
    let mut unsupported_now = Vec::new();
    let mut unsupported_next = Vec::new();
    let mut behind = Vec::new();
    let mut ahead = Vec::new();
    for (node, &kubelet_minor) in kubelets {
        let kubelet = kube_minor(kubelet_minor) as i64;
        let skew = kubelet - api_server;
        let entry = (node.as_str(), kubelet);
        match skew {
            0 => {}
            s if s < min_skew => unsupported_now.push(entry),
            s if s - 1 < min_skew_next => unsupported_next.push(entry),
            s if s < 0 => behind.push(entry),
            _ => ahead.push(entry),
        }
    }
    // 4.22 dropped "minor" from the messages.
    let (unsupported, kubelet, upgrade, synced) = if release.says_kubelet_version_without_minor() {
        ("Unsupported Kubelet", "Kubelet", "OpenShift version upgrade", "Kubelet and API server versions are synced.")
    } else {
        (
            "Unsupported kubelet minor",
            "Kubelet minor",
            "OpenShift minor version upgrade",
            "Kubelet and API server minor versions are synced.",
        )
    };
    let api = format!("1.{api_server}.0");
    let (status, reason, message) = if !unsupported_now.is_empty() {
        let tail = format!("too far behind the target API server version ({api}).");
        ("False", UNSUPPORTED, listed(&unsupported_now, unsupported, &format!("is {tail}"), &format!("are {tail}")))
    } else if !ahead.is_empty() {
        let tail = format!("ahead of the target API server version ({api}).");
        ("Unknown", AHEAD, listed(&ahead, unsupported, &format!("is {tail}"), &format!("are {tail}")))
    } else if !unsupported_next.is_empty() {
        let tail = format!("will not be supported in the next {upgrade}.");
        ("False", UNSUPPORTED_NEXT_UPGRADE, listed(&unsupported_next, kubelet, &tail, &tail))
    } else if !behind.is_empty() {
        let tail = |it| {
            format!("behind the expected API server version; nevertheless, {it} continue to be supported in the next {upgrade}.")
        };
        let (one, many) = (format!("is {}", tail("it will")), format!("are {}", tail("they will")));
        ("True", SUPPORTED_NEXT_UPGRADE, listed(&behind, kubelet, &one, &many))
    } else {
        ("True", SYNCED, synced.to_string())
    };
    Some(Verdict { status, reason, message })
}

/// The controller's sentence on `entries` (node, kubelet Kubernetes minor): one node is named with its version,
/// two or three are named, more are counted.
fn listed(entries: &[(&str, i64)], noun: &str, one: &str, many: &str) -> String {
    match entries {
        [(node, minor)] => format!("{noun} version (1.{minor}.0) on node {node} {one}"),
        few if few.len() <= 3 => format!("{noun} versions on nodes {} {many}", names(few)),
        all => format!("{noun} versions on {} nodes {many}", all.len()),
    }
}

/// `a`, `a and b`, `a, b, and c` (the controller's `nodes()`).
fn names(entries: &[(&str, i64)]) -> String {
    match entries {
        [(a, _), (b, _)] => format!("{a} and {b}"),
        _ => {
            let mut all: Vec<String> = entries.iter().map(|(n, _)| n.to_string()).collect();
            if let Some(last) = all.last_mut() {
                *last = format!("and {last}");
            }
            all.join(", ")
        }
    }
}

/// Each node's kubelet, as the OpenShift minor of its current rendered config's release (`releases`: rendered
/// config → release); nodes without a known config are left out.
pub fn kubelets(nodes: &[std::sync::Arc<Node>], releases: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    nodes
        .iter()
        .filter_map(|node| {
            let release = releases.get(node_state::current_config(node))?;
            Some((node.name_any(), openshift_minor(release)?))
        })
        .collect()
}

/// Writes the verdict into the ClusterOperator's `Upgradeable`, as library-go's union of the operator's
/// `*Upgradeable` conditions does (the skew controller's is the only one the simulator plays): a verdict that is
/// not `True` gives reason `KubeletMinorVersion_<reason>`; a `True` one `AsExpected`; the message is the verdict's,
/// prefixed with `KubeletMinorVersionUpgradeable: `. `lastTransitionTime` moves only when the status flips.
pub fn report(status: &mut ClusterOperatorStatus, verdict: &Verdict, now: &Time) {
    let prefix = OPERATOR_CONDITION.trim_end_matches(UPGRADEABLE);
    let reason =
        if verdict.status == "True" { "AsExpected".to_string() } else { format!("{prefix}_{}", verdict.reason) };
    let message = format!("{OPERATOR_CONDITION}: {}", verdict.message);
    crate::cvo::set_condition_status(&mut status.conditions, UPGRADEABLE, verdict.status, &reason, &message, now);
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEWEST: OpenShiftRelease = OpenShiftRelease::NEWEST;

    fn kubelets(nodes: &[(&str, u64)]) -> BTreeMap<String, u64> {
        nodes.iter().map(|(n, m)| (n.to_string(), *m)).collect()
    }

    #[test]
    fn a_worker_one_minor_behind_an_even_minor_holds_the_next_minor_update() {
        let v = verdict("4.18.0", &kubelets(&[("master-0", 18), ("worker-0", 17)]), NEWEST).unwrap();
        assert_eq!((v.status, v.reason), ("False", UNSUPPORTED_NEXT_UPGRADE));
        assert_eq!(
            v.message,
            "Kubelet version (1.30.0) on node worker-0 will not be supported in the next OpenShift version upgrade."
        );
    }

    #[test]
    fn a_worker_one_minor_behind_an_odd_minor_is_still_supported_next() {
        let v = verdict("4.17.2", &kubelets(&[("worker-0", 16), ("worker-1", 16)]), NEWEST).unwrap();
        assert_eq!((v.status, v.reason), ("True", SUPPORTED_NEXT_UPGRADE));
        assert!(v.message.starts_with("Kubelet versions on nodes worker-0 and worker-1 are behind"), "{}", v.message);
        assert!(v.message.contains("they will continue to be supported"), "{}", v.message);
    }

    #[test]
    fn two_minors_behind_an_even_minor_is_already_too_far_at_the_next() {
        // 4.16 kubelets under a 4.18 API server: allowed at 4.18 (two behind), not after 4.19.
        let v = verdict("4.18.0", &kubelets(&[("a", 16), ("b", 16), ("c", 16), ("d", 16)]), NEWEST).unwrap();
        assert_eq!((v.status, v.reason), ("False", UNSUPPORTED_NEXT_UPGRADE));
        assert_eq!(
            v.message,
            "Kubelet versions on 4 nodes will not be supported in the next OpenShift version upgrade."
        );
        // Two behind an odd minor is already unsupported.
        let v = verdict("4.19.0", &kubelets(&[("a", 17), ("b", 19), ("c", 17)]), NEWEST).unwrap();
        assert_eq!((v.status, v.reason), ("False", UNSUPPORTED));
        assert_eq!(
            v.message,
            "Unsupported Kubelet versions on nodes a and c are too far behind the target API server version (1.32.0)."
        );
    }

    #[test]
    fn synced_ahead_and_the_wording_before_4_22() {
        let synced = verdict("4.21.1", &kubelets(&[("w", 21)]), OpenShiftRelease { minor: 21 }).unwrap();
        assert_eq!(
            synced,
            Verdict {
                status: "True",
                reason: SYNCED,
                message: "Kubelet and API server minor versions are synced.".into()
            }
        );
        let old = verdict("4.20.0", &kubelets(&[("w", 19)]), OpenShiftRelease { minor: 20 }).unwrap();
        assert_eq!(
            old.message,
            "Kubelet minor version (1.32.0) on node w will not be supported in the next OpenShift minor version \
             upgrade."
        );
        let ahead = verdict("4.20.0", &kubelets(&[("a", 21), ("b", 21), ("c", 21)]), NEWEST).unwrap();
        assert_eq!((ahead.status, ahead.reason), ("Unknown", AHEAD));
        assert!(ahead.message.contains("nodes a, b, and c are ahead"), "{}", ahead.message);
        assert_eq!(verdict("5.0.0", &kubelets(&[]), NEWEST), None);
    }

    #[test]
    fn the_cluster_operator_shows_the_union_of_the_operator_conditions() {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(100).unwrap());
        let later = Time(k8s_openapi::jiff::Timestamp::from_second(200).unwrap());
        let mut status = crate::cluster_operators::healthy_status(KUBE_APISERVER, "4.18.0", &now);
        let held = verdict("4.18.0", &kubelets(&[("worker-0", 17)]), NEWEST).unwrap();
        report(&mut status, &held, &later);
        let c = status.condition(UPGRADEABLE).unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some("KubeletMinorVersion_KubeletMinorVersionUnsupportedNextUpgrade"))
        );
        assert_eq!(c.message.as_deref(), Some(format!("KubeletMinorVersionUpgradeable: {}", held.message).as_str()));
        assert_eq!(c.last_transition_time.as_ref(), Some(&later));
        let synced = verdict("4.18.0", &kubelets(&[("worker-0", 18)]), NEWEST).unwrap();
        report(&mut status, &synced, &now);
        let c = status.condition(UPGRADEABLE).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("True", Some("AsExpected")));
    }
}
