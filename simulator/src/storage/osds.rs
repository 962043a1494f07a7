//! Rook's OSD Deployments: one per storage node (a node with [`STORAGE_NODE_LABEL`] and the failure-domain label),
//! created by Rook's operator as its ServiceAccount, named `rook-ceph-osd-<id>` with the labels Rook gives OSDs
//! (rook/rook `pkg/operator/ceph/cluster/osd/labels.go` `getOSDLabels`, `spec.go`: `nodeSelector` on the host,
//! strategy `Recreate`). IDs are handed out in node-name order, after the highest one in use.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;
use serde_json::json;

use super::{FailureDomain, APP_LABEL, NAMESPACE, OSD_APP, STORAGE_NODE_LABEL};

/// The label of an OSD's id (`OsdIdLabelKey`).
pub const OSD_ID_LABEL: &str = "ceph-osd-id";
/// The label of an OSD's id keyed by its daemon type (`CephDaemonAppLabels`), which Rook's default budget excludes
/// down OSDs by.
pub const OSD_LABEL: &str = "osd";
/// The label of an OSD's failure domain value (`FailureDomainKey`).
pub const FAILURE_DOMAIN_LABEL: &str = "failure-domain";

/// A storage node's failure domain, if it is a storage node with a domain label.
pub fn domain_of(node: &Node, domain: FailureDomain) -> Option<String> {
    let labels = node.labels();
    labels.get(STORAGE_NODE_LABEL)?;
    labels.get(domain.node_label()).filter(|v| !v.is_empty()).cloned()
}

/// The node an OSD Deployment runs on (its `nodeSelector`).
pub fn node_of(deployment: &Deployment) -> Option<&str> {
    let selector = deployment.spec.as_ref()?.template.spec.as_ref()?.node_selector.as_ref()?;
    selector.get("kubernetes.io/hostname").map(String::as_str)
}

/// The OSD id of a Deployment (its [`OSD_ID_LABEL`]).
pub fn id_of(deployment: &Deployment) -> Option<u32> {
    deployment.labels().get(OSD_ID_LABEL)?.parse().ok()
}

/// The Deployments to create: one for each storage node without an OSD, in node-name order, with ids from after
/// the highest in use and at least `first_id`.
pub fn missing(nodes: &[&Node], deployments: &[&Deployment], domain: FailureDomain, first_id: u32) -> Vec<Deployment> {
    let placed: BTreeSet<&str> = deployments.iter().filter_map(|d| node_of(d)).collect();
    let mut next_id = deployments.iter().filter_map(|d| id_of(d)).max().map_or(0, |id| id + 1).max(first_id);
    let mut sorted: Vec<&&Node> = nodes.iter().collect();
    sorted.sort_by_key(|n| n.name_any());
    let mut created = Vec::new();
    for node in sorted {
        let name = node.name_any();
        let Some(value) = domain_of(node, domain) else { continue };
        if placed.contains(name.as_str()) {
            continue;
        }
        created.push(deployment(next_id, node, domain, &value));
        next_id += 1;
    }
    created
}

/// OSD `id` on `node`, in failure domain `value`.
pub fn deployment(id: u32, node: &Node, domain: FailureDomain, value: &str) -> Deployment {
    let name = node.name_any();
    let id_text = id.to_string();
    let mut labels = BTreeMap::from([
        (APP_LABEL.to_string(), OSD_APP.to_string()),
        ("rook_cluster".to_string(), NAMESPACE.to_string()),
        ("ceph_daemon_type".to_string(), OSD_LABEL.to_string()),
        ("ceph_daemon_id".to_string(), id_text.clone()),
        (OSD_LABEL.to_string(), id_text.clone()),
        (OSD_ID_LABEL.to_string(), id_text.clone()),
        (FAILURE_DOMAIN_LABEL.to_string(), value.to_string()),
        (super::location_label("host"), name.clone()),
    ]);
    labels.insert(domain.location_label(), value.to_string());
    let object = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": format!("{OSD_APP}-{id}"),
            "namespace": NAMESPACE,
            "labels": labels,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node.uid().unwrap_or_default()}],
        },
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {APP_LABEL: OSD_APP, OSD_ID_LABEL: id_text, "rook_cluster": NAMESPACE}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": name},
                    "containers": [{"name": "osd", "image": "quay.io/ceph/ceph:v19"}],
                },
            },
        },
    });
    // The object is built from known-good parts; a failure here is a bug in this function.
    serde_json::from_value(object).unwrap_or_default()
}

/// Whether the OSD of `deployment` is up: a ready replica.
pub fn is_up(deployment: &Deployment) -> bool {
    deployment.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0) >= 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, rack: Option<&str>, storage: bool) -> Node {
        let mut node = Node::default();
        node.metadata.name = Some(name.into());
        node.metadata.uid = Some(format!("uid-{name}"));
        if storage {
            node.labels_mut().insert(STORAGE_NODE_LABEL.into(), String::new());
        }
        if let Some(rack) = rack {
            node.labels_mut().insert(FailureDomain::Rack.node_label().into(), rack.into());
        }
        node
    }

    #[test]
    fn every_storage_node_gets_one_osd_labelled_like_rooks() {
        let nodes = [node("w-1", Some("rack1"), true), node("w-0", Some("rack0"), true), node("w-2", None, true)];
        let other = node("w-3", Some("rack0"), false);
        let refs: Vec<&Node> = nodes.iter().chain([&other]).collect();
        let created = missing(&refs, &[], FailureDomain::Rack, 0);
        assert_eq!(created.len(), 2, "no domain label or no storage label: no OSD");
        let first = &created[0];
        assert_eq!(first.name_any(), "rook-ceph-osd-0");
        assert_eq!(node_of(first), Some("w-0"));
        assert_eq!(first.labels().get("topology-location-rack").map(String::as_str), Some("rack0"));
        assert_eq!(first.labels().get("topology-location-host").map(String::as_str), Some("w-0"));
        assert_eq!(first.labels().get(APP_LABEL).map(String::as_str), Some(OSD_APP));
        let template = first.spec.as_ref().and_then(|s| s.template.metadata.as_ref()).and_then(|m| m.labels.as_ref());
        assert_eq!(template.and_then(|l| l.get("topology-location-rack")).map(String::as_str), Some("rack0"));
        assert_eq!(first.owner_references()[0].name, "w-0");
        assert_eq!(id_of(&created[1]), Some(1));
        assert_eq!(node_of(&created[1]), Some("w-1"));
    }

    #[test]
    fn nodes_with_an_osd_get_none_and_new_ids_follow_the_highest() {
        let nodes = [node("w-0", Some("rack0"), true), node("w-1", Some("rack1"), true)];
        let existing = deployment(4, &nodes[0], FailureDomain::Rack, "rack0");
        let refs: Vec<&Node> = nodes.iter().collect();
        let created = missing(&refs, &[&existing], FailureDomain::Rack, 0);
        assert_eq!(created.iter().map(|d| d.name_any()).collect::<Vec<_>>(), ["rook-ceph-osd-5"]);
        let created = missing(&refs, &[&existing], FailureDomain::Rack, 7);
        assert_eq!(created.iter().map(|d| d.name_any()).collect::<Vec<_>>(), ["rook-ceph-osd-7"], "ids created before");
    }
}
