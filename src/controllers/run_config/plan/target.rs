//! What the gated nodes must reach, and which rollout brings them there. Under `trigger: Upgrade` the target is the
//! cluster's version and the rollout is named by it, exactly as the reference does. Under `AnyConfigChange` a node
//! must also run the content of its pool's rendered MachineConfig: content, not name, because a released node runs
//! the canary's rendered config, which has the same content under another name (the MCO hashes the spec only). The
//! pools' rendered configs are re-read on every reconcile, so a change that arrives during a rollout is rolled
//! within it; the rollout itself is named once, when it starts, and the name is kept in the status.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;

use crate::api::{MutexRunConfigStatus, PoolConfig, TargetConfig};
use crate::controllers::run_config::snapshot::{NodeView, PoolView};
use crate::controllers::run_config::version::is_behind;
use crate::openshift::config_content;

/// What the gated nodes must reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The rollout's name: its Jobs carry it and its node records belong to it. Under `Upgrade`, the version.
    pub key: String,
    /// The cluster's target version.
    pub version: String,
    /// Under `AnyConfigChange`: each gated node's pool's rendered config (a node whose pool has rendered none is
    /// absent); None under `Upgrade`.
    configs: Option<BTreeMap<String, String>>,
    /// Under `Upgrade`, when the cluster's target changed while a rollout ran: that rollout's name. Its nodes in
    /// flight go on in this one, to the new target, inside their gated turn.
    pub carried: Option<String>,
}

impl Target {
    /// Trigger `Upgrade`: the version, named by itself.
    pub fn upgrade(version: &str) -> Self {
        Self { key: version.to_string(), version: version.to_string(), configs: None, carried: None }
    }

    /// Trigger `AnyConfigChange`: the version and each gated node's pool's rendered config, for the rollout `key`;
    /// `gated` gives each gated node with its target pool.
    pub fn config_change<'a>(
        key: &str,
        version: &str,
        gated: impl Iterator<Item = (&'a NodeView, Option<&'a PoolView>)>,
    ) -> Self {
        let configs =
            gated.filter_map(|(node, pool)| Some((node.name.clone(), pool?.configuration.clone()?))).collect();
        Self { key: key.to_string(), version: version.to_string(), configs: Some(configs), carried: None }
    }

    /// This target, taking over the rollout `carried` whose target the cluster changed (see [`Target::carried`]).
    pub fn carrying(&self, carried: Option<String>) -> Self {
        Self { carried, ..self.clone() }
    }

    /// Whether this is a config-change rollout (`AnyConfigChange`).
    pub fn is_config_change(&self) -> bool {
        self.configs.is_some()
    }

    /// The rendered config `node` goes to (`AnyConfigChange` only).
    pub fn config_of(&self, node: &str) -> Option<&str> {
        self.configs.as_ref()?.get(node).map(String::as_str)
    }

    /// Whether `node` still needs the rollout: it runs a version below the target or, for a config change, a config
    /// whose content differs from its pool's rendered config.
    pub fn behind(&self, node: &NodeView) -> bool {
        if is_behind(node.version.as_deref(), &self.version) {
            return true;
        }
        match self.config_of(&node.name) {
            Some(wanted) => node.current_config.as_deref().map(config_content) != Some(config_content(wanted)),
            None => false,
        }
    }

    /// Whether a released `node` has arrived: not behind and, for a config change, the MCO's daemon is `Done` with
    /// it (a node that only started applying a config is not there yet).
    pub fn reached(&self, node: &NodeView) -> bool {
        !self.behind(node) && (!self.is_config_change() || node.mcd_state.as_deref() == Some("Done"))
    }

    /// Whether the MCO has set out to move `node` to the target: its `desiredConfig` differs from the config it
    /// runs and brings the target version (for a config change: the target config's content). Only numo's release
    /// of a held node may bring that about.
    pub fn started_ungated(&self, node: &NodeView) -> bool {
        let (Some(desired), Some(current)) = (node.desired_config.as_deref(), node.current_config.as_deref()) else {
            return false;
        };
        // Most nodes are on the config they are meant to run: the same name, no content to work out.
        if desired == current || config_content(desired) == config_content(current) {
            return false;
        }
        match self.config_of(&node.name) {
            Some(wanted) => config_content(desired) == config_content(wanted),
            None => node.desired_version.as_deref().is_some_and(|v| !is_behind(Some(v), &self.version)),
        }
    }

    /// What the nodes go to, for messages: the version, or the rendered configs.
    pub fn describe(&self) -> String {
        let Some(configs) = &self.configs else { return self.version.clone() };
        let mut distinct: Vec<&str> = configs.values().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        match distinct.as_slice() {
            [] => self.version.clone(),
            [one] => (*one).to_string(),
            many => many.join(", "),
        }
    }
}

/// Names a new config-change rollout: the version, then a hash of the target pools' rendered configs and of the
/// moment it starts (so a config that comes back, e.g. once a MachineConfig is removed again, is a new rollout whose
/// Jobs never share a name with an earlier one's).
pub fn new_rollout_key(version: &str, targets: &[&PoolView], now: &Timestamp) -> String {
    let configs: Vec<String> =
        targets.iter().map(|p| format!("{}={}", p.name, p.configuration.as_deref().unwrap_or_default())).collect();
    let identity = format!("{}\n{}\n{}", version, configs.join(","), now.as_nanosecond());
    format!("{version}-{}", crate::labels::hash_hex(&identity, 10))
}

/// The `status.targetConfig` of a config-change rollout `key`: the target pools' rendered configs and the
/// MachineConfigs that entered or left their sources since the config the pools last reported (`+name`, `-name`).
pub fn status_of(key: &str, targets: &[&PoolView], previous: &MutexRunConfigStatus) -> TargetConfig {
    let pools = targets
        .iter()
        .filter_map(|p| Some(PoolConfig { pool: p.name.clone(), rendered_config: p.configuration.clone()? }))
        .collect();
    let machine_configs = changed_machine_configs(targets);
    let carried = previous.target_config.as_ref().filter(|t| t.rollout == key);
    TargetConfig {
        rollout: key.to_string(),
        pools,
        machine_configs: if machine_configs.is_empty() {
            carried.map(|t| t.machine_configs.clone()).unwrap_or_default()
        } else {
            machine_configs
        },
        behind_since: carried.and_then(|t| t.behind_since.clone()),
    }
}

/// The MachineConfigs that entered or left the target pools' sources since the config the pools last reported
/// (`+name`, `-name`).
pub fn changed_machine_configs(targets: &[&PoolView]) -> Vec<String> {
    let mut machine_configs: Vec<String> = Vec::new();
    for pool in targets {
        if pool.status_sources.is_empty() {
            continue;
        }
        let added = pool.sources.iter().filter(|s| !pool.status_sources.contains(s)).map(|s| format!("+{s}"));
        let removed = pool.status_sources.iter().filter(|s| !pool.sources.contains(s)).map(|s| format!("-{s}"));
        for change in added.chain(removed) {
            if !machine_configs.contains(&change) {
                machine_configs.push(change);
            }
        }
    }
    machine_configs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(current: &str, desired: &str, desired_version: &str) -> NodeView {
        NodeView {
            name: "worker-1".into(),
            current_config: Some(current.into()),
            desired_config: Some(desired.into()),
            desired_version: Some(desired_version.into()),
            version: Some("4.16.4".into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_held_node_sent_to_the_target_content_under_any_pools_name_started_ungated() {
        let target = Target {
            key: "4.16.4-abc".into(),
            version: "4.16.4".into(),
            configs: Some(BTreeMap::from([("worker-1".to_string(), "rendered-worker-0badc0de".to_string())])),
            carried: None,
        };
        // The MCO gives a node the canary's rendered config: the target's content under the canary's name.
        assert!(target.started_ungated(&node("rendered-worker-0ff1ce", "rendered-canary-0badc0de", "4.16.4")));
        assert!(target.started_ungated(&node("rendered-worker-0ff1ce", "rendered-worker-0badc0de", "4.16.4")));
        assert!(!target.started_ungated(&node("rendered-worker-0ff1ce", "rendered-canary-0ff1ce", "4.16.4")), "a move");
        assert!(!target.started_ungated(&node("rendered-worker-0ff1ce", "rendered-canary-deadbeef", "4.16.4")));
        let upgrade = Target::upgrade("4.16.5");
        assert!(upgrade.started_ungated(&node("rendered-worker-0ff1ce", "rendered-canary-5ca1ab1e", "4.16.5")));
        assert!(!upgrade.started_ungated(&node("rendered-worker-0ff1ce", "rendered-canary-0ff1ce", "4.16.4")));
    }
}
