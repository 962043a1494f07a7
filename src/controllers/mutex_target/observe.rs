//! Reading the shared watch caches: every MachineConfigPool (with the selector that decides membership) and every
//! node's labels. No API calls: the caches are kept current by the controller's watches.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::Store;
use kube::ResourceExt;

use super::plan::PoolState;
use crate::guard::Guarded;
use crate::membership;
use crate::openshift::MachineConfigPool;

/// Every pool by name, as membership sees it.
pub fn pools(store: &Store<Guarded<MachineConfigPool>>) -> BTreeMap<String, PoolState> {
    store
        .state()
        .iter()
        .map(|guard| {
            let state = match &guard.0 {
                Ok(pool) => PoolState::Found(membership::effective_node_selector(pool)),
                Err(invalid) => PoolState::Unreadable(invalid.error.clone()),
            };
            (guard.name_any(), state)
        })
        .collect()
}

/// Every node's metadata (names and labels are what membership reads; they are known even of a node that cannot be
/// decoded).
pub fn nodes(store: &Store<Guarded<PartialObjectMeta<Node>>>) -> Vec<Arc<Guarded<PartialObjectMeta<Node>>>> {
    store.state()
}
