//! What the MCO's template and render controllers produce, as pure functions: the template MachineConfigs
//! (`00-master`, `00-worker`) that carry the release the MCO runs, and each pool's rendered MachineConfig, merged from
//! the MachineConfigs its `machineConfigSelector` picks and named `rendered-<pool>-<hash>`.
//!
//! The content is a small model of Ignition: the merged config holds the `storage.files` and `systemd.units` of its
//! sources (in name order), their `storage.disks`, `filesystems`, `raid` and `luks` ([`STORAGE_SECTIONS`]) and the
//! OS image of the release. Names are content-addressed as the MCO's are: the hash
//! covers the rendered spec only, not the pool, so pools with equal content get rendered configs that differ only in
//! the pool part of their name, and moving a node between them needs no reboot (as on a real cluster, where the
//! daemon sees an empty diff). A release changes the hash through the content (the OS image), and rendering the
//! same sources again (say, after a MachineConfig was removed) gives back the earlier name.
//!
//! Like the MCO, rendering fails when a selected MachineConfig's Ignition config cannot be parsed: its
//! `ignition.version` is missing or not one the MCO of the simulated releases supports
//! ([`SUPPORTED_IGNITION_VERSIONS`]). Nothing else of Ignition is validated.

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
/// The Ignition spec versions the MCO of the simulated releases (4.16) parses; a MachineConfig with another one
/// fails to render.
pub const SUPPORTED_IGNITION_VERSIONS: [&str; 6] = ["2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0"];

/// The release image pull spec of `version` (a digest derived from the version, so it is stable).
pub fn release_image(version: &str) -> String {
    format!("quay.io/openshift-release-dev/ocp-release@sha256:{}", hex_digest(&format!("release {version}"), 64))
}

/// Each MachineConfig that names a release (the rendered ones do), by name: MachineConfig → release.
pub fn releases(configs: &[std::sync::Arc<MachineConfig>]) -> std::collections::BTreeMap<String, String> {
    configs
        .iter()
        .filter_map(|c| {
            Some((c.metadata.name.clone()?, c.metadata.annotations.as_ref()?.get(RELEASE_VERSION)?.clone()))
        })
        .collect()
}

/// The RHCOS image a release boots on the cluster's default OS image stream (a digest derived from the version).
pub fn os_image_url(version: &str) -> String {
    os_image_url_of_stream(version, None)
}

/// The OS image a release boots on OS image stream `stream` (None: the cluster's default stream); each stream of a
/// release is its own image (the render controller takes the stream's `osImage` from the OSImageStream `cluster`,
/// `pkg/controller/common/helpers.go` `GetBaseImageContainer`).
pub fn os_image_url_of_stream(version: &str, stream: Option<&str>) -> String {
    let source = match stream {
        None => format!("rhcos {version}"),
        Some(stream) => format!("rhcos {version} stream {stream}"),
    };
    format!("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:{}", hex_digest(&source, 64))
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

/// Why a pool cannot be rendered; the message is what the pool's `RenderDegraded` condition says after
/// `Failed to render configuration for pool <pool>: `.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The selector picks no MachineConfig.
    #[error("no MachineConfigs found matching selector {0}")]
    NoConfigs(String),
    /// A selected MachineConfig's Ignition config cannot be parsed. The MCO's message does not name the
    /// MachineConfig, so neither does this one's (the simulator logs the name).
    #[error("could not generate rendered MachineConfig: {problem}")]
    Ignition {
        /// The MachineConfig that failed to parse.
        config: String,
        /// What is wrong with it.
        problem: IgnitionError,
    },
    /// No source names a release (no template MachineConfig is selected).
    #[error("none of the MachineConfigs {0} carries the {RELEASE_VERSION} annotation")]
    NoRelease(String),
}

/// Why the MCO cannot parse an Ignition config, in its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IgnitionError {
    /// `ignition.version` is missing or not a semantic version (`x.y.z`).
    #[error("parsing Ignition config failed: invalid version. Supported spec versions: {}", supported_versions())]
    InvalidVersion,
    /// `ignition.version` is a version the MCO does not support.
    #[error("parsing Ignition config failed: unknown version. Supported spec versions: {}", supported_versions())]
    UnknownVersion,
}

/// `2.2, 3.0, ...`: [`SUPPORTED_IGNITION_VERSIONS`] as the MCO lists them.
fn supported_versions() -> String {
    let minors: Vec<&str> = SUPPORTED_IGNITION_VERSIONS.iter().filter_map(|v| v.strip_suffix(".0")).collect();
    minors.join(", ")
}

/// Checks that the MCO can parse `config`'s Ignition config: none at all is fine (a MachineConfig may set only,
/// say, kernel arguments); otherwise `ignition.version` must be one of [`SUPPORTED_IGNITION_VERSIONS`].
pub fn check_ignition(config: &MachineConfig) -> Result<(), IgnitionError> {
    let Some(ignition) = config.spec.config.as_ref() else { return Ok(()) };
    match ignition.pointer("/ignition/version").and_then(Value::as_str) {
        Some(version) if SUPPORTED_IGNITION_VERSIONS.contains(&version) => Ok(()),
        Some(version) if is_semver(version) => Err(IgnitionError::UnknownVersion),
        _ => Err(IgnitionError::InvalidVersion),
    }
}

/// Whether `version` is `major.minor.patch` (numbers), optionally followed by `-pre-release` or `+build`.
fn is_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Renders `pool` from `sources` (as returned by [`sources`]): every source must parse ([`check_ignition`]); the
/// release is the one named by the first source that carries [`RELEASE_VERSION`]; the name hashes the merged spec.
pub fn render(pool: &MachineConfigPool, sources: &[&MachineConfig]) -> Result<Rendered, RenderError> {
    render_on_stream(pool, sources, None)
}

/// [`render`] with the pool's OS image stream (None: the default stream), which picks its OS image.
pub fn render_on_stream(
    pool: &MachineConfigPool,
    sources: &[&MachineConfig],
    stream: Option<&str>,
) -> Result<Rendered, RenderError> {
    let pool_name = pool.metadata.name.as_deref().unwrap_or_default();
    let names: Vec<String> = sources.iter().filter_map(|c| c.metadata.name.clone()).collect();
    if sources.is_empty() {
        let selector = serde_json::to_string(&pool.spec.machine_config_selector).unwrap_or_default();
        return Err(RenderError::NoConfigs(selector));
    }
    for source in sources {
        check_ignition(source).map_err(|problem| RenderError::Ignition {
            config: source.metadata.name.clone().unwrap_or_default(),
            problem,
        })?;
    }
    let version = sources
        .iter()
        .find_map(|c| c.release_version().filter(|v| !v.is_empty()))
        .ok_or_else(|| RenderError::NoRelease(names.join(", ")))?
        .to_string();
    let spec = MachineConfigSpec {
        config: Some(merge(sources)),
        os_image_url: Some(os_image_url_of_stream(&version, stream)),
    };
    let name = rendered_name(pool_name, &spec);
    Ok(Rendered { name, version, spec, sources: names })
}

/// `rendered-<pool>-<32 hex digits>`, the digits hashing `spec` and nothing else, as the MCO's render controller
/// names rendered configs (it takes the MD5 of a salt and the spec's YAML, also 32 hex digits). The pool is only the
/// prefix and the release enters only through the content (the OS image), so equal content gets equal digits in
/// every pool. The simulator hashes with SHA-256 and without the MCO's salt: its digits never equal a real
/// cluster's, which nothing should compare anyway.
pub fn rendered_name(pool: &str, spec: &MachineConfigSpec) -> String {
    let content = serde_json::to_string(spec).unwrap_or_default();
    format!("{RENDERED_PREFIX}{pool}-{}", hex_digest(&content, 32))
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

/// The storage sections besides `files` that take part in the rendered content (and its hash) when a source has
/// them: a change of the first three cannot be reconciled ([`crate::reconcile`]).
pub const STORAGE_SECTIONS: [&str; 4] = ["disks", "filesystems", "raid", "luks"];

/// The merged Ignition config of `sources`: their `storage.files` and `systemd.units`, in order, and the
/// [`STORAGE_SECTIONS`] any of them has (appended in order, as Ignition's merge appends lists; left out when all are
/// empty, so content without them hashes as before).
fn merge(sources: &[&MachineConfig]) -> Value {
    let mut files = Vec::new();
    let mut units = Vec::new();
    let mut storage: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for source in sources {
        let Some(config) = source.spec.config.as_ref() else { continue };
        if let Some(f) = config.pointer("/storage/files").and_then(Value::as_array) {
            files.extend(f.iter().cloned());
        }
        if let Some(u) = config.pointer("/systemd/units").and_then(Value::as_array) {
            units.extend(u.iter().cloned());
        }
        for section in STORAGE_SECTIONS {
            if let Some(items) = config.pointer(&format!("/storage/{section}")).and_then(Value::as_array) {
                storage.entry(section).or_default().extend(items.iter().cloned());
            }
        }
    }
    let mut merged = json!({
        "ignition": { "version": IGNITION_VERSION },
        "storage": { "files": files },
        "systemd": { "units": units },
    });
    for (section, items) in storage.into_iter().filter(|(_, items)| !items.is_empty()) {
        merged["storage"][section] = Value::Array(items);
    }
    merged
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

    /// The hash part of a rendered config's name.
    fn suffix(name: &str) -> &str {
        name.rsplit('-').next().unwrap_or_default()
    }

    #[test]
    fn rendered_names_look_like_the_mco_and_hash_the_content() {
        let configs = [template_config("worker", "4.16.4"), template_config("master", "4.16.4")];
        let worker = render(&pool("worker", &["worker"]), &sources(&pool("worker", &["worker"]), &configs)).unwrap();
        assert!(worker.name.starts_with("rendered-worker-"));
        assert_eq!(worker.name.len(), "rendered-worker-".len() + 32);
        assert!(suffix(&worker.name).chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(worker.name, rendered_name("worker", &worker.spec), "the name is the spec's hash");
        assert_eq!(worker.version, "4.16.4");
        assert_eq!(worker.sources, ["00-worker"]);

        let again = render(&pool("worker", &["worker"]), &sources(&pool("worker", &["worker"]), &configs)).unwrap();
        assert_eq!(again, worker, "rendering is deterministic");

        let master = render(&pool("master", &["master"]), &sources(&pool("master", &["master"]), &configs)).unwrap();
        assert_ne!(suffix(&master.name), suffix(&worker.name), "the master template differs from the worker's");
    }

    #[test]
    fn a_new_release_changes_the_hash_through_the_os_image() {
        let worker_pool = pool("worker", &["worker"]);
        let old = render(&worker_pool, &sources(&worker_pool, &[template_config("worker", "4.16.4")])).unwrap();
        let new = render(&worker_pool, &sources(&worker_pool, &[template_config("worker", "4.16.5")])).unwrap();
        assert_eq!(new.version, "4.16.5");
        assert_eq!(new.spec.config, old.spec.config, "the templates' files do not name the release");
        assert_ne!(new.spec.os_image_url, old.spec.os_image_url);
        assert_ne!(suffix(&new.name), suffix(&old.name));
    }

    #[test]
    fn pools_with_equal_content_get_the_same_hash_under_their_own_names() {
        let configs = [template_config("worker", "4.16.4"), template_config("master", "4.16.4")];
        let worker_pool = pool("worker", &["worker"]);
        let canary_pool = pool("canary", &["worker", "canary"]);
        let worker = render(&worker_pool, &sources(&worker_pool, &configs)).unwrap();
        let canary = render(&canary_pool, &sources(&canary_pool, &configs)).unwrap();
        assert!(canary.name.starts_with("rendered-canary-"), "{}", canary.name);
        assert_eq!(suffix(&canary.name), suffix(&worker.name), "no config of its own: the worker content's hash");
        assert_eq!(canary.spec, worker.spec, "same content, so moving a node between them needs no reboot");

        let with_own = [template_config("worker", "4.16.4"), user_config("99-canary-motd", "canary", "/etc/motd")];
        let custom = render(&canary_pool, &sources(&canary_pool, &with_own)).unwrap();
        assert_eq!(custom.sources, ["00-worker", "99-canary-motd"]);
        assert_eq!(custom.version, "4.16.4");
        assert_ne!(custom.spec, worker.spec);
        assert_ne!(suffix(&custom.name), suffix(&worker.name), "a config of its own: another hash");
    }

    #[test]
    fn a_config_for_a_role_rerenders_every_pool_selecting_it_and_its_removal_brings_the_old_names_back() {
        let worker_pool = pool("worker", &["worker"]);
        let canary_pool = pool("canary", &["worker", "canary"]);
        let before = [template_config("worker", "4.16.4")];
        let after = [template_config("worker", "4.16.4"), user_config("99-worker-chrony", "worker", "/etc/chrony")];
        let names = |configs: &[MachineConfig]| {
            [&worker_pool, &canary_pool].map(|p| render(p, &sources(p, configs)).unwrap().name)
        };
        let [old_worker, old_canary] = names(&before);
        let [new_worker, new_canary] = names(&after);
        assert_ne!(new_worker, old_worker);
        assert_ne!(new_canary, old_canary);
        assert_eq!(suffix(&new_worker), suffix(&new_canary));
        assert_eq!(names(&before), [old_worker, old_canary], "the same sources render the same names again");
    }

    #[test]
    fn the_hash_does_not_depend_on_the_order_of_keys_in_a_source() {
        let worker_pool = pool("worker", &["worker"]);
        let with_files = |files: &str| {
            let mut config = user_config("99-worker-x", "worker", "/x");
            let files: Value = serde_json::from_str(files).unwrap();
            config.spec.config = Some(json!({"ignition": {"version": "3.2.0"}, "storage": {"files": files}}));
            config
        };
        let a = with_files(r#"[{"path": "/x", "mode": 420}]"#);
        let b = with_files(r#"[{"mode": 420, "path": "/x"}]"#);
        let template = template_config("worker", "4.16.4");
        let name_with = |c: &MachineConfig| render(&worker_pool, &[&template, c]).unwrap().name;
        assert_eq!(name_with(&a), name_with(&b));
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
    fn a_config_the_mco_cannot_parse_fails_the_render_of_every_pool_selecting_it() {
        let with_version = |version: Option<Value>| {
            let mut config = user_config("99-worker-bad", "worker", "/x");
            let ignition = version.map(|v| json!({"version": v})).unwrap_or_else(|| json!({}));
            config.spec.config = Some(json!({"ignition": ignition, "storage": {"files": [{"path": "/x"}]}}));
            config
        };
        let check = |version: Option<Value>| check_ignition(&with_version(version));
        assert_eq!(check(None), Err(IgnitionError::InvalidVersion));
        assert_eq!(check(Some(json!("3.2"))), Err(IgnitionError::InvalidVersion));
        assert_eq!(check(Some(json!(3))), Err(IgnitionError::InvalidVersion));
        assert_eq!(check(Some(json!("3.5.0"))), Err(IgnitionError::UnknownVersion));
        assert_eq!(check(Some(json!("3.4.0-experimental"))), Err(IgnitionError::UnknownVersion));
        assert_eq!(check(Some(json!("2.1.0"))), Err(IgnitionError::UnknownVersion));
        for supported in SUPPORTED_IGNITION_VERSIONS {
            assert_eq!(check(Some(json!(supported))), Ok(()), "{supported}");
        }
        let mut no_ignition = user_config("99-worker-kargs", "worker", "/x");
        no_ignition.spec.config = None;
        assert_eq!(check_ignition(&no_ignition), Ok(()), "a config without Ignition (say, only kernel arguments)");

        let configs = [template_config("worker", "4.16.4"), template_config("master", "4.16.4"), with_version(None)];
        for p in [pool("worker", &["worker"]), pool("canary", &["worker", "canary"])] {
            let err = render(&p, &sources(&p, &configs)).unwrap_err();
            assert_eq!(
                err,
                RenderError::Ignition { config: "99-worker-bad".into(), problem: IgnitionError::InvalidVersion }
            );
            assert_eq!(
                err.to_string(),
                "could not generate rendered MachineConfig: parsing Ignition config failed: invalid version. \
                 Supported spec versions: 2.2, 3.0, 3.1, 3.2, 3.3, 3.4"
            );
        }
        let master_pool = pool("master", &["master"]);
        assert!(render(&master_pool, &sources(&master_pool, &configs)).is_ok(), "a pool not selecting it renders");
    }

    #[test]
    fn storage_sections_take_part_in_the_content_and_its_hash() {
        let worker_pool = pool("worker", &["worker"]);
        let template = template_config("worker", "4.16.4");
        let plain = render(&worker_pool, &sources(&worker_pool, std::slice::from_ref(&template))).unwrap();
        let mut disk = user_config("99-worker-disk", "worker", "/etc/x");
        disk.spec.config = Some(json!({"ignition": {"version": "3.2.0"}, "storage": {
            "disks": [{"device": "/dev/sdb"}], "filesystems": [{"device": "/dev/sdb1", "format": "xfs"}], "raid": [],
        }}));
        let with_disk = render(&worker_pool, &sources(&worker_pool, &[template, disk])).unwrap();
        assert_ne!(with_disk.name, plain.name, "a disk is content");
        let storage = with_disk.spec.config.as_ref().and_then(|c| c.get("storage")).cloned().unwrap_or_default();
        assert_eq!(storage["disks"], json!([{"device": "/dev/sdb"}]));
        assert_eq!(storage["filesystems"][0]["format"], "xfs");
        assert!(storage.get("raid").is_none() && storage.get("luks").is_none(), "empty sections are left out");
        assert!(plain.spec.config.as_ref().and_then(|c| c.pointer("/storage/disks")).is_none());
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
