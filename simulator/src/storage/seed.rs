//! Seeding a storage cluster on top of a seeded one: the worker nodes labelled as ODF's storage nodes, each in a
//! failure domain, and what Rook's operator needs to act as itself (namespace [`NAMESPACE`], ServiceAccount
//! [`ROOK_SERVICE_ACCOUNT`], a ClusterRole and ClusterRoleBinding of its name with the rules on the kinds the
//! simulator has). Labels are merged in; what exists is kept.

use std::collections::BTreeMap;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::ResourceExt;
use serde_json::json;

use super::{FailureDomain, NAMESPACE, STORAGE_NODE_LABEL};
use crate::create::create_if_missing;
use crate::membership::ROLE_LABEL_PREFIX;
use crate::platform::accounts::{ensure_identity, Identity};
use crate::platform::FIELD_MANAGER;
use crate::platform::ROOK_SERVICE_ACCOUNT;

/// The storage nodes' shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageShape {
    /// The failure domain the workers are spread over.
    pub domain: FailureDomain,
    /// How many domains: `rack0`, `rack1`, ... (`zone0`, ... for zones); worker `worker-N` goes to domain N mod this.
    /// Ignored for [`FailureDomain::Host`] (each node its own).
    pub domains: usize,
}

/// The domain of worker `index` (its number in `worker-N`).
pub fn domain_name(shape: &StorageShape, index: usize) -> String {
    format!("{}{}", shape.domain.crush_type(), index % shape.domains.max(1))
}

/// Labels every worker as a storage node in its domain and creates Rook's identity.
pub async fn seed_storage(client: &kube::Client, shape: &StorageShape) -> anyhow::Result<()> {
    ensure_rook_identity(client).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let workers = nodes
        .list(&ListParams::default().labels(&format!("{ROLE_LABEL_PREFIX}worker")))
        .await
        .context("listing the workers")?;
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
    for (position, node) in workers.items.iter().enumerate() {
        let name = node.name_any();
        let index = name.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(position);
        let mut labels = BTreeMap::from([(STORAGE_NODE_LABEL.to_string(), String::new())]);
        if shape.domain != FailureDomain::Host {
            labels.insert(shape.domain.node_label().to_string(), domain_name(shape, index));
        }
        nodes
            .patch(&name, &params, &Patch::Merge(&json!({"metadata": {"labels": labels}})))
            .await
            .with_context(|| format!("labelling node {name} a storage node"))?;
    }
    tracing::info!(domain = %shape.domain, domains = shape.domains, nodes = workers.items.len(), "seeded storage nodes");
    Ok(())
}

/// Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding of Rook's operator.
async fn ensure_rook_identity(client: &kube::Client) -> anyhow::Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    create_if_missing(client, namespace).await?;
    let read = json!(["get", "list", "watch"]);
    let write = json!(["get", "list", "watch", "create", "update", "patch", "delete"]);
    let rules = json!([
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": read},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": write},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": write},
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": write},
    ]);
    let account = ROOK_SERVICE_ACCOUNT;
    let identity = Identity { namespace: NAMESPACE, account, role: account, rules: Some(rules), binding: account };
    ensure_identity(client, identity).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_go_round_robin_over_the_domains() {
        let shape = StorageShape { domain: FailureDomain::Rack, domains: 3 };
        let names: Vec<String> = (0..5).map(|i| domain_name(&shape, i)).collect();
        assert_eq!(names, ["rack0", "rack1", "rack2", "rack0", "rack1"]);
        let zones = StorageShape { domain: FailureDomain::Zone, domains: 3 };
        assert_eq!(domain_name(&zones, 7), "zone1");
    }
}
