//! Reads what the planner needs from the cluster once, with the caller's own credentials, into the same caches the
//! operator's watches fill.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::Resource;

use crate::api::{MutexRule, MutexRunConfig, MutexTarget};
use crate::cached_job::CachedJob;
use crate::controllers::run_config::observe::{self, Stores};
use crate::guard::Guarded;
use crate::labels;
use crate::openshift::{ClusterVersion, MachineConfig, MachineConfigPool};

/// Lists every object of `K` (with `params`) into a cache.
async fn list<K>(api: Api<Guarded<K>>, params: &ListParams) -> Result<Store<Guarded<K>>, kube::Error>
where
    K: Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone + std::fmt::Debug + 'static,
    Guarded<K>: Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone + std::fmt::Debug,
{
    let (reader, mut writer) = reflector::store::<Guarded<K>>();
    let objects = api.list(params).await?;
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    Ok(reader)
}

/// The cache of an optional kind: empty, and said to be unreadable, when it could not be listed.
fn optional<K: Resource<DynamicType = ()> + Clone + 'static>(
    sources: &crate::watches::Sources,
    kind: &'static str,
    listed: Result<Store<Guarded<K>>, kube::Error>,
) -> Store<Guarded<K>> {
    match listed {
        Ok(store) => {
            sources.read_once(kind);
            store
        }
        Err(_) => reflector::store().0,
    }
}

/// Reads the run config `namespace/name` and everything its plan reads. ClusterOperators, PodDisruptionBudgets,
/// MachineOSConfigs, MachineConfigNodes and StorageClusters are optional, as for the operator: when they cannot be
/// read, the checks on them say so (and no pool counts as in image mode).
pub async fn read(client: &kube::Client, namespace: &str, name: &str) -> Result<(MutexRunConfig, Stores), String> {
    let all = ListParams::default();
    let what = |kind: &'static str| move |e: kube::Error| format!("cannot list {kind}: {e}");
    let run_config = Api::<MutexRunConfig>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| format!("cannot read MutexRunConfig {namespace}/{name}: {e}"))?;
    let jobs = ListParams::default().labels(&format!("{}={}", labels::JOB_MANAGED_BY, labels::MANAGER));
    let sources = crate::watches::Sources::default();
    let cluster_operators = optional(&sources, observe::CLUSTER_OPERATORS, list(Api::all(client.clone()), &all).await);
    let budgets = optional(&sources, observe::BUDGETS, list(Api::all(client.clone()), &all).await);
    let machine_os_configs =
        optional(&sources, observe::MACHINE_OS_CONFIGS, list(Api::all(client.clone()), &all).await);
    let storage_clusters = optional(&sources, observe::STORAGE_CLUSTERS, list(Api::all(client.clone()), &all).await);
    let machine_config_nodes =
        optional(&sources, observe::MACHINE_CONFIG_NODES, list(Api::all(client.clone()), &all).await);
    let stores = Stores {
        run_configs: list::<MutexRunConfig>(Api::all(client.clone()), &all).await.map_err(what("MutexRunConfigs"))?,
        rules: list::<MutexRule>(Api::all(client.clone()), &all).await.map_err(what("MutexRules"))?,
        targets: list::<MutexTarget>(Api::all(client.clone()), &all).await.map_err(what("MutexTargets"))?,
        pools: list::<MachineConfigPool>(Api::all(client.clone()), &all).await.map_err(what("MachineConfigPools"))?,
        nodes: list::<Node>(Api::all(client.clone()), &all).await.map_err(what("Nodes"))?,
        machine_configs: list::<PartialObjectMeta<MachineConfig>>(Api::all(client.clone()), &all)
            .await
            .map_err(what("MachineConfigs"))?,
        cluster_versions: list::<ClusterVersion>(Api::all(client.clone()), &all)
            .await
            .map_err(what("ClusterVersions"))?,
        jobs: list::<CachedJob>(Api::all(client.clone()), &jobs).await.map_err(what("numo's Jobs"))?,
        cluster_operators,
        budgets,
        machine_os_configs,
        machine_config_nodes,
        storage_clusters,
        sources,
        custom: None,
        node_views: Default::default(),
        job_views: Default::default(),
    };
    Ok((run_config, stores))
}

/// The data of run config `name`'s rollout record (empty when it has none yet).
pub async fn record(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let records: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client.clone(), namespace);
    let record_name = crate::rollout_record::config_map_name(name);
    match records.get_opt(&record_name).await {
        Ok(found) => Ok(found.and_then(|c| c.data).unwrap_or_default()),
        Err(e) => Err(format!("cannot read ConfigMap {namespace}/{record_name}: {e}")),
    }
}

/// Lists, with the caller's credentials, the objects each custom check of `snapshot`'s run config reads (the operator
/// watches them), into `snapshot`.
pub async fn custom_checks(client: &kube::Client, snapshot: &mut crate::controllers::run_config::snapshot::Snapshot) {
    use crate::controllers::run_config::custom_sources::{list_once, SourceKey};
    let Some(checks) = snapshot.run_config.spec.health_checks.clone() else { return };
    let mut custom = Vec::new();
    for check in &checks.custom {
        custom.push(match crate::cel_check::reserved(&check.api_version, &check.kind) {
            Some(why) => Err(why),
            None => list_once(client, &SourceKey::of(check)).await.map(|objects| observe::selected(check, objects)),
        });
    }
    snapshot.health.custom = custom;
}
