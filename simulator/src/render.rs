//! What the MCO's template and render controllers produce, as pure functions: the template MachineConfigs
//! (`00-master`, `00-worker`) that carry the release the MCO runs, and each pool's rendered MachineConfig, merged from
//! the MachineConfigs its `machineConfigSelector` picks and named `rendered-<pool>-<hash>`.
//!
//! The content is a small model of Ignition: the merged config holds the `storage.files` and `systemd.units` of its
//! sources (in name order) and the OS image of the release. Two rendered configs with equal content differ only in
//! name, so moving a node between them needs no reboot (as on a real cluster, where the daemon sees an empty diff).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use kube::Resource;
use numo::openshift::{MachineConfig, MachineConfigPool, MachineConfigSpec, GENERATED_BY, MC_ROLE, RELEASE_VERSION};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Name prefix of rendered MachineConfigs; they are never sources of another rendering.
pub const RENDERED_PREFIX: &str = "rendered-";
/// Ignition spec version of every config the simulator writes.
pub const IGNITION_VERSION: &str = "3.4.0";
/// Value of [`GENERATED_BY`] on what the simulated MCO generates (the real one writes its git commit).
pub const CONTROLLER_VERSION: &str = concat!("numo-simulator-", env!("CARGO_PKG_VERSION"));

/// The release image pull spec of `version` (a digest derived from the version, so it is stable).
pub fn release_image(version: &str) -> String {
    format!("quay.io/openshift-release-dev/ocp-release@sha256:{}", hex_digest(&format!("release {version}"), 64))
}

/// The RHCOS image a release boots (a digest derived from the version).
pub fn os_image_url(version: &str) -> String {
    format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}", hex_digest(&format!("rhcos {version}"), 64))
}

/// Name of the template MachineConfig of `role`, e.g. `00-worker`.
pub fn template_name(role: &str) -> String {
    format!("00-{role}")
}

/// The template MachineConfig of `role` as the MCO generates it for `version`: labelled with the role, annotated
/// with the release version and [`GENERATED_BY`]; its content is one file naming the role.
pub fn template_config(role: &str, version: &str) -> MachineConfig {
    let mut config = MachineConfig::new(
        &template_name(role),
        MachineConfigSpec {
            config: Some(json!({
                "ignition": { "version": IGNITION_VERSION },
                "storage": { "files": [{
                    "path": "/etc/machine-config-role",
                    "mode": 420,
                    "contents": { "source": format!("data:,{role}") },
                }]},
            })),
            os_image_url: None,
        },
    );
    config.metadata.labels = Some(BTreeMap::from([(MC_ROLE.to_string(), role.to_string())]));
    config.metadata.annotations = Some(generated_annotations(version));
    config
}

/// The annotations of everything the simulated MCO generates for `version`.
pub fn generated_annotations(version: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (GENERATED_BY.to_string(), CONTROLLER_VERSION.to_string()),
        (RELEASE_VERSION.to_string(), version.to_string()),
    ])
}

/// Whether `config` is a rendered MachineConfig.
pub fn is_rendered(config: &MachineConfig) -> bool {
    config.metadata.name.as_deref().is_some_and(|n| n.starts_with(RENDERED_PREFIX))
}

/// Whether `config` is a template the MCO generates (not rendered, carries [`GENERATED_BY`]); the CVO moves these
/// to a new release when it updates the MCO.
pub fn is_template(config: &MachineConfig) -> bool {
    !is_rendered(config) && config.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(GENERATED_BY))
}

/// The MachineConfigs `pool` renders from: those its `machineConfigSelector` selects (a missing selector selects
/// none, an empty one all), rendered ones excluded, sorted by name.
pub fn sources<'a>(
    pool: &MachineConfigPool,
    configs: impl IntoIterator<Item = &'a MachineConfig>,
) -> Vec<&'a MachineConfig> {
    let selector = pool.spec.machine_config_selector.as_ref();
    let empty = BTreeMap::new();
    let mut picked: Vec<&MachineConfig> = configs
        .into_iter()
        .filter(|c| !is_rendered(c))
        .filter(|c| numo::selector::matches(selector, c.metadata.labels.as_ref().unwrap_or(&empty)))
        .collect();
    picked.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    picked
}

/// A pool's rendered configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Rendered {
    /// `rendered-<pool>-<hash>`.
    pub name: String,
    /// The release it was rendered for.
    pub version: String,
    /// The merged content.
    pub spec: MachineConfigSpec,
    /// Names of the source MachineConfigs.
    pub sources: Vec<String>,
}

/// Why a pool cannot be rendered; the message is what the pool's `RenderDegraded` condition says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The selector picks no MachineConfig.
    #[error("no MachineConfigs found matching selector {0}")]
    NoConfigs(String),
    /// No source names a release (no template MachineConfig is selected).
    #[error("none of the MachineConfigs {0} carries the {RELEASE_VERSION} annotation")]
    NoRelease(String),
}

/// Renders `pool_name` from `sources` (as returned by [`sources`]): the release is the one named by the first source
/// that carries [`RELEASE_VERSION`]; the name hashes the pool, the release and the content.
pub fn render(pool: &MachineConfigPool, sources: &[&MachineConfig]) -> Result<Rendered, RenderError> {
    let pool_name = pool.metadata.name.as_deref().unwrap_or_default();
    let names: Vec<String> = sources.iter().filter_map(|c| c.metadata.name.clone()).collect();
    if sources.is_empty() {
        let selector = serde_json::to_string(&pool.spec.machine_config_selector).unwrap_or_default();
        return Err(RenderError::NoConfigs(selector));
    }
    let version = sources
        .iter()
        .find_map(|c| c.release_version().filter(|v| !v.is_empty()))
        .ok_or_else(|| RenderError::NoRelease(names.join(", ")))?
        .to_string();
    let spec = MachineConfigSpec { config: Some(merge(sources)), os_image_url: Some(os_image_url(&version)) };
    let name = rendered_name(pool_name, &version, &spec);
    Ok(Rendered { name, version, spec, sources: names })
}

/// `rendered-<pool>-<32 hex digits>`, hashing the pool, the release and the content.
pub fn rendered_name(pool: &str, version: &str, spec: &MachineConfigSpec) -> String {
    let content = serde_json::to_string(spec).unwrap_or_default();
    format!("{RENDERED_PREFIX}{pool}-{}", hex_digest(&format!("{pool}\n{version}\n{content}"), 32))
}

/// The rendered MachineConfig object for `pool`: labelled with the pool's role, annotated like every generated
/// config, owned by the pool (so it goes when the pool goes).
pub fn rendered_config(pool: &MachineConfigPool, rendered: &Rendered) -> MachineConfig {
    let pool_name = pool.metadata.name.clone().unwrap_or_default();
    let owner = pool.metadata.uid.clone().map(|uid| OwnerReference {
        api_version: MachineConfigPool::api_version(&()).into_owned(),
        kind: MachineConfigPool::kind(&()).into_owned(),
        name: pool_name.clone(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    });
    MachineConfig {
        metadata: ObjectMeta {
            name: Some(rendered.name.clone()),
            labels: Some(BTreeMap::from([(MC_ROLE.to_string(), pool_name)])),
            annotations: Some(generated_annotations(&rendered.version)),
            owner_references: owner.map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        spec: rendered.spec.clone(),
    }
}

/// The merged Ignition config of `sources`: their `storage.files` and `systemd.units`, in order.
fn merge(sources: &[&MachineConfig]) -> Value {
    let mut files = Vec::new();
    let mut units = Vec::new();
    for source in sources {
        let Some(config) = source.spec.config.as_ref() else { continue };
        if let Some(f) = config.pointer("/storage/files").and_then(Value::as_array) {
            files.extend(f.iter().cloned());
        }
        if let Some(u) = config.pointer("/systemd/units").and_then(Value::as_array) {
            units.extend(u.iter().cloned());
        }
    }
    json!({
        "ignition": { "version": IGNITION_VERSION },
        "storage": { "files": files },
        "systemd": { "units": units },
    })
}

/// The first `len` hex digits of the SHA-256 of `input`.
fn hex_digest(input: &str, len: usize) -> String {
    let digest = Sha256::digest(input.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
    use numo::openshift::MachineConfigPoolSpec;

    fn pool(name: &str, roles: &[&str]) -> MachineConfigPool {
        let selector = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: MC_ROLE.into(),
                operator: "In".into(),
                values: Some(roles.iter().map(|r| r.to_string()).collect()),
            }]),
            match_labels: None,
        };
        MachineConfigPool::new(
            name,
            MachineConfigPoolSpec { machine_config_selector: Some(selector), ..MachineConfigPoolSpec::default() },
        )
    }

    fn user_config(name: &str, role: &str, file: &str) -> MachineConfig {
        let mut config = MachineConfig::new(
            name,
            MachineConfigSpec {
                config: Some(json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": file}]}})),
                os_image_url: None,
            },
        );
        config.metadata.labels = Some(BTreeMap::from([(MC_ROLE.to_string(), role.to_string())]));
        config
    }

    #[test]
    fn rendered_names_look_like_the_mco_and_depend_on_pool_and_release() {
        let configs = [template_config("worker", "4.16.4"), template_config("master", "4.16.4")];
        let worker = render(&pool("worker", &["worker"]), &sources(&pool("worker", &["worker"]), &configs)).unwrap();
        assert!(worker.name.starts_with("rendered-worker-"));
        assert_eq!(worker.name.len(), "rendered-worker-".len() + 32);
        assert!(worker.name["rendered-worker-".len()..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(worker.version, "4.16.4");
        assert_eq!(worker.sources, ["00-worker"]);

        let again = render(&pool("worker", &["worker"]), &sources(&pool("worker", &["worker"]), &configs)).unwrap();
        assert_eq!(again, worker, "rendering is deterministic");

        let newer = [template_config("worker", "4.16.5")];
        let upgraded = render(&pool("worker", &["worker"]), &sources(&pool("worker", &["worker"]), &newer)).unwrap();
        assert_ne!(upgraded.name, worker.name);
        assert_eq!(upgraded.version, "4.16.5");
        assert_ne!(upgraded.spec.os_image_url, worker.spec.os_image_url);
    }

    #[test]
    fn a_custom_pool_renders_the_worker_content_under_its_own_name() {
        let configs = [template_config("worker", "4.16.4"), template_config("master", "4.16.4")];
        let worker_pool = pool("worker", &["worker"]);
        let infra_pool = pool("infra", &["worker", "infra"]);
        let worker = render(&worker_pool, &sources(&worker_pool, &configs)).unwrap();
        let infra = render(&infra_pool, &sources(&infra_pool, &configs)).unwrap();
        assert!(infra.name.starts_with("rendered-infra-"));
        assert_eq!(infra.spec, worker.spec, "no infra configs: same content, so moving needs no reboot");

        let with_infra = [template_config("worker", "4.16.4"), user_config("99-infra-motd", "infra", "/etc/motd")];
        let custom = render(&infra_pool, &sources(&infra_pool, &with_infra)).unwrap();
        assert_ne!(custom.spec, worker.spec);
        assert_eq!(custom.sources, ["00-worker", "99-infra-motd"]);
        assert_eq!(custom.version, "4.16.4");
    }

    #[test]
    fn rendered_configs_are_never_sources_and_a_pool_without_configs_fails_to_render() {
        let worker_pool = pool("worker", &["worker"]);
        let rendered = render(&worker_pool, &sources(&worker_pool, &[template_config("worker", "1.0.0")])).unwrap();
        let mut as_object = rendered_config(&worker_pool, &rendered);
        as_object.metadata.labels = Some(BTreeMap::from([(MC_ROLE.to_string(), "worker".to_string())]));
        assert!(is_rendered(&as_object));
        assert!(sources(&worker_pool, [&as_object]).is_empty());
        assert!(matches!(render(&worker_pool, &[]), Err(RenderError::NoConfigs(_))));
        let unversioned = user_config("99-worker-x", "worker", "/x");
        assert!(matches!(render(&worker_pool, &[&unversioned]), Err(RenderError::NoRelease(_))));
    }

    #[test]
    fn rendered_objects_carry_the_release_and_are_owned_by_their_pool() {
        let mut worker_pool = pool("worker", &["worker"]);
        worker_pool.metadata.uid = Some("uid-1".into());
        let rendered = render(&worker_pool, &sources(&worker_pool, &[template_config("worker", "4.16.4")])).unwrap();
        let object = rendered_config(&worker_pool, &rendered);
        assert_eq!(object.release_version(), Some("4.16.4"));
        assert!(object.metadata.annotations.as_ref().unwrap().contains_key(GENERATED_BY));
        let owner = &object.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("MachineConfigPool", "worker", "uid-1")
        );
        assert!(is_template(&template_config("worker", "4.16.4")));
        assert!(!is_template(&object));
    }
}
