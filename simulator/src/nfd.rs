//! The NFD stand-in, opt-in with [`crate::SimConfig::nfd_labels`].
//!
//! On a cluster set up like the reference's, Node Feature Discovery labels every node with
//! `machineconfiguration.openshift.io/release-image-version`: a MachineConfig writes the release into a feature file
//! on the node, and NFD's worker turns that file into a node label. The MCO itself never writes this label: it
//! annotates the rendered MachineConfigs with their release and the nodes with their configs. So by default the
//! simulator leaves nodes without it, as on a cluster without NFD.
//!
//! Played here as: a node whose `currentConfig` names a MachineConfig that carries a release gets that release as
//! its label, in a write of its own after the daemon's, so the label lags the node's config as NFD's does. A node
//! without a current config (not managed by the MCO, such as a Windows node) is left as it is.

use std::collections::{BTreeMap, HashMap};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use numo::openshift::RELEASE_VERSION;
use serde_json::json;

use crate::mco::View;
use crate::node_state;
use crate::platform::FIELD_MANAGER;

/// The label `node` should carry and does not: the release of its current config, when that config names one and
/// the node's label differs.
pub fn wanted_label<'a>(node: &Node, releases: &'a BTreeMap<String, String>) -> Option<&'a str> {
    let release = releases.get(node_state::current_config(node))?;
    (node.labels().get(RELEASE_VERSION) != Some(release)).then_some(release.as_str())
}

/// The stand-in's memory between passes.
pub struct Nfd {
    client: kube::Client,
    /// Node → the label last written, until the cache shows it.
    written: HashMap<String, String>,
}

impl Nfd {
    /// A stand-in writing through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client, written: HashMap::new() }
    }

    /// One pass: labels every node whose label is behind its current config. Errors are reported together at the
    /// end (the caller retries).
    pub async fn reconcile(&mut self, view: &View) -> anyhow::Result<()> {
        let releases = crate::render::releases(&view.configs);
        let nodes: BTreeMap<String, &Node> = view.nodes.iter().map(|n| (n.name_any(), n.as_ref())).collect();
        self.written
            .retain(|name, label| nodes.get(name).is_some_and(|n| n.labels().get(RELEASE_VERSION) != Some(&*label)));
        let api: Api<Node> = Api::all(self.client.clone());
        let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
        let mut first_error = None;
        for (name, node) in nodes {
            let Some(release) = wanted_label(node, &releases) else { continue };
            if self.written.get(&name).is_some_and(|w| w == release) {
                continue;
            }
            let body = json!({"metadata": {"labels": {RELEASE_VERSION: release}}});
            match api.patch(&name, &params, &Patch::Merge(&body)).await {
                Ok(_) => {
                    tracing::info!(node = %name, %release, "NFD stand-in labelled the node");
                    self.written.insert(name, release.to_string());
                }
                Err(err) => {
                    let err = anyhow::Error::new(err).context(format!("labelling node {name} with its release"));
                    tracing::debug!(error = %format!("{err:#}"), "NFD stand-in write failed; retrying");
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err).context("the NFD stand-in's pass is incomplete")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_state::tests::node;
    use crate::node_state::STATE_DONE;

    fn releases() -> BTreeMap<String, String> {
        BTreeMap::from([("rendered-worker-a".into(), "4.16.4".into()), ("rendered-worker-b".into(), "4.16.5".into())])
    }

    #[test]
    fn a_node_is_labelled_with_the_release_of_its_current_config() {
        let releases = releases();
        let updated = node("w", "rendered-worker-b", "rendered-worker-b", STATE_DONE);
        assert_eq!(wanted_label(&updated, &releases), Some("4.16.5"));
        let targeted = node("w", "rendered-worker-a", "rendered-worker-b", STATE_DONE);
        assert_eq!(wanted_label(&targeted, &releases), Some("4.16.4"), "the release it runs, not the one it targets");
    }

    #[test]
    fn a_labelled_node_and_a_node_without_a_known_config_are_left_alone() {
        let releases = releases();
        let mut labelled = node("w", "rendered-worker-a", "rendered-worker-a", STATE_DONE);
        labelled.labels_mut().insert(RELEASE_VERSION.into(), "4.16.4".into());
        assert_eq!(wanted_label(&labelled, &releases), None);
        assert_eq!(wanted_label(&node("w", "", "", ""), &releases), None, "no current config: not the MCO's node");
        let unknown = node("w", "rendered-worker-gone", "rendered-worker-gone", STATE_DONE);
        assert_eq!(wanted_label(&unknown, &releases), None);
    }
}
