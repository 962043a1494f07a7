//! The fleet samples (`config/samples/fleet/`, docs/fleet.md) against the real CRDs of the tools that read them —
//! Open Cluster Management's policy framework and API (what ACM serves), TALM and Argo CD, as `hack/build-tools.sh
//! fleet-crds` takes them from their modules into `$NUMO_FLEET_CRDS` (make test sets it) — on the real API server:
//! every sample is accepted by a server-side dry run with strict field validation (an unknown field fails), the
//! configuration policies the ACM policies carry too, and the objects those compare (numo's MutexRunConfig status,
//! ClusterVersion) name only fields their CRDs have. ACM's own configuration policy controller
//! (`$NUMO_CONFIG_POLICY_CONTROLLER`, run by `numo_testkit::acm`) evaluates the two policies of a TALM batch while
//! numo rolls out: the batch ends when numo is done, not when the control plane is. And the Argo CD samples leave to
//! numo and the platform exactly what they write: numo's objects from the path the Application syncs are applied as
//! Argo CD applies them, numo runs a rollout, and every field someone other than Argo CD then owns is one the
//! Application ignores.

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;
use kube::Resource;
use numo::api::{MutexRule, MutexRunConfig, MutexTarget, RunPhase};
use numo::openshift::{ClusterVersion, MachineConfigPool};
use numo_testkit::acm::{self, PolicyController, PLACEHOLDER};
use numo_testkit::repo::{self, documents, kustomization_resources};
use serde_json::{json, Value};
use support::*;

/// The fleet samples, one directory per tool, each applied with `kubectl apply -k`.
const FLEET: &str = "config/samples/fleet";
/// The field manager Argo CD applies with (its `argocd-controller`).
const ARGO_CD: &str = "argocd-controller";

/// Every fleet sample: its file and its objects, directory by directory.
fn fleet_samples() -> anyhow::Result<Vec<(PathBuf, Vec<Value>)>> {
    let mut samples = Vec::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(repo::root().join(FLEET))?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    dirs.sort();
    for dir in dirs.into_iter().filter(|d| d.is_dir()) {
        let listed = kustomization_resources(&dir)?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("kustomization.yaml"))
            .collect();
        files.sort();
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(sorted, files, "{}/kustomization.yaml lists every sample of its directory", dir.display());
        for file in listed {
            let objects = documents(&file)?;
            samples.push((file, objects));
        }
    }
    Ok(samples)
}

fn gvk_of(object: &Value) -> anyhow::Result<GroupVersionKind> {
    let api_version = object["apiVersion"].as_str().context("no apiVersion")?;
    let kind = object["kind"].as_str().context("no kind")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    Ok(GroupVersionKind::gvk(group, version, kind))
}

/// Creates `object` in a server-side dry run (`fieldValidation=Strict`: an unknown or duplicate field fails),
/// in namespace `ns` if its kind is namespaced.
async fn dry_run(client: &kube::Client, object: &Value, ns: &str) -> anyhow::Result<()> {
    let gvk = gvk_of(object)?;
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("{}/{} is not served", gvk.group, gvk.kind))?;
    let mut object = object.clone();
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => {
            object["metadata"]["namespace"] = json!(ns);
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let name = object["metadata"]["name"].as_str().context("no metadata.name")?.to_string();
    let params = PatchParams::apply("numo-fleet-samples").dry_run().validation_strict();
    api.patch(&name, &params, &Patch::Apply(&object)).await.with_context(|| format!("{} {name}", gvk.kind))?;
    Ok(())
}

/// The fields of `value` that `schema` does not have, and its values outside an enum, as `path: problem` (a value
/// that is a template placeholder is not checked against an enum).
fn schema_problems(path: &str, value: &Value, schema: &JSONSchemaProps, out: &mut Vec<String>) {
    if let (Some(allowed), Some(text)) = (&schema.enum_, value.as_str()) {
        if text != PLACEHOLDER && !allowed.iter().any(|a| a.0 == *value) {
            out.push(format!("{path}: {text:?} is none of {:?}", allowed.iter().map(|a| &a.0).collect::<Vec<_>>()));
        }
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                match (schema.properties.as_ref().and_then(|p| p.get(key)), &schema.additional_properties) {
                    (Some(child_schema), _) => schema_problems(&child_path, child, child_schema, out),
                    (None, Some(JSONSchemaPropsOrBool::Schema(child_schema))) => {
                        schema_problems(&child_path, child, child_schema, out)
                    }
                    (None, Some(JSONSchemaPropsOrBool::Bool(true))) => {}
                    _ if schema.x_kubernetes_preserve_unknown_fields == Some(true) => {}
                    _ => out.push(format!("{child_path}: no such field")),
                }
            }
        }
        Value::Array(items) => {
            if let Some(JSONSchemaPropsOrArray::Schema(item_schema)) = &schema.items {
                for (i, item) in items.iter().enumerate() {
                    schema_problems(&format!("{path}[{i}]"), item, item_schema, out);
                }
            }
        }
        _ => {}
    }
}

/// The problems of an object a configuration policy compares (`objectDefinition`) against the schema of its kind,
/// from the CRD the test cluster serves (`metadata` is not checked: only a name and a namespace are compared; not
/// every CRD's schema names `apiVersion` and `kind`).
async fn compared_object_problems(client: &kube::Client, object: &Value) -> anyhow::Result<Vec<String>> {
    let gvk = gvk_of(object)?;
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await?;
    let crd_name = format!("{}.{}", resource.plural, gvk.group);
    let crd = Api::<CustomResourceDefinition>::all(client.clone()).get(&crd_name).await?;
    let version = crd.spec.versions.iter().find(|v| v.name == gvk.version).context("version not in its CRD")?;
    let schema = version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()).context("no schema")?;
    let mut body = object.clone();
    if let Some(map) = body.as_object_mut() {
        for key in ["apiVersion", "kind", "metadata"] {
            map.remove(key);
        }
    }
    let mut problems = Vec::new();
    schema_problems(&gvk.kind, &body, schema, &mut problems);
    Ok(problems)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fleet_sample_is_accepted_by_the_real_crds_with_strict_field_validation() -> anyhow::Result<()> {
    let world = numo_testkit::world("fleet-samples").await?;
    let client = world.client.clone();
    let ns = world.namespace.clone();
    acm::install_fleet_crds(&client).await?;

    let samples = fleet_samples()?;
    let kinds: BTreeSet<String> = samples
        .iter()
        .flat_map(|(_, objects)| objects.iter().map(|o| o["kind"].as_str().unwrap_or("").to_string()))
        .collect();
    for kind in [
        "Policy",
        "PlacementBinding",
        "Placement",
        "ManagedClusterSetBinding",
        "ClusterGroupUpgrade",
        "Application",
        "ApplicationSet",
    ] {
        assert!(kinds.contains(kind), "a fleet sample is a {kind}: {kinds:?}");
    }
    let mut compared = BTreeSet::new();
    for (file, objects) in &samples {
        let file = file.strip_prefix(repo::root()).unwrap_or(file).display().to_string();
        for object in objects {
            dry_run(&client, object, &ns).await.with_context(|| file.clone())?;
            // What ACM creates on each managed cluster from a Policy, and what that compares.
            for template in acm::policy_templates(object) {
                dry_run(&client, &template, &ns).await.with_context(|| format!("{file}: policy template"))?;
                for compare in acm::object_templates(&template).with_context(|| file.clone())? {
                    let definition = &compare["objectDefinition"];
                    let problems = compared_object_problems(&client, definition).await?;
                    assert!(problems.is_empty(), "{file}: {}", problems.join("; "));
                    compared.insert(definition["kind"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    assert_eq!(
        compared,
        BTreeSet::from(["ClusterVersion".to_string(), "MutexRunConfig".to_string()]),
        "the policies compare the cluster's version and numo's run configs"
    );
    Ok(())
}

/// The check above fails on a typo: an unknown field in a sample, in a policy template, or in what a policy
/// compares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typo_in_a_fleet_sample_fails_the_check() -> anyhow::Result<()> {
    let world = numo_testkit::world("fleet-typos").await?;
    let client = world.client.clone();
    acm::install_fleet_crds(&client).await?;
    let samples = fleet_samples()?;
    let find = |kind: &str, name: &str| {
        samples
            .iter()
            .flat_map(|(_, objects)| objects.iter())
            .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .cloned()
            .with_context(|| format!("no {kind} {name} among the fleet samples"))
    };

    let mut upgrade = find("ClusterGroupUpgrade", "upgrade-4.21.4")?;
    upgrade["spec"]["remediationStrategy"]["maxConcurency"] = json!(5);
    let refused = dry_run(&client, &upgrade, &world.namespace).await.expect_err("an unknown field is refused");
    assert!(format!("{refused:#}").contains("maxConcurency"), "{refused:#}");

    let mut app = find("Application", "numo-rollout-config")?;
    app["spec"]["syncPolicy"]["syncOption"] = json!(["RespectIgnoreDifferences=true"]);
    let refused = dry_run(&client, &app, &world.namespace).await.expect_err("an unknown field is refused");
    assert!(format!("{refused:#}").contains("syncOption"), "{refused:#}");

    let policy = find("Policy", "numo-rollout-completed")?;
    let mut template = acm::policy_templates(&policy).remove(0);
    template["spec"]["evaluationIntervall"] = json!({"compliant": "watch"});
    let refused = dry_run(&client, &template, &world.namespace).await.expect_err("an unknown field is refused");
    assert!(format!("{refused:#}").contains("evaluationIntervall"), "{refused:#}");

    let raw =
        acm::policy_templates(&policy)[0]["spec"]["object-templates-raw"].as_str().unwrap_or_default().to_string();
    let typo = json!({"spec": {"object-templates-raw": raw.replace("targetVersion:", "targetVerison:")}});
    let definition = acm::object_templates(&typo)?.remove(0)["objectDefinition"].clone();
    let problems = compared_object_problems(&client, &definition).await?;
    assert_eq!(problems, ["MutexRunConfig.status.targetVerison: no such field"]);
    let typo = json!({"spec": {"object-templates-raw": raw.replace("phase: Completed", "phase: Complete")}});
    let definitions: Vec<Value> = acm::object_templates(&typo)?.iter().map(|t| t["objectDefinition"].clone()).collect();
    let mut problems = Vec::new();
    for definition in &definitions {
        problems.extend(compared_object_problems(&client, definition).await?);
    }
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("MutexRunConfig.status.phase: \"Complete\" is none of"), "{problems:?}");
    Ok(())
}

/// The objects of the path an Argo CD Application syncs (`spec.source.path`), read from this repository as the
/// Application's repository is: the files its kustomization lists.
fn argo_source_objects(app: &Value) -> anyhow::Result<Vec<Value>> {
    let repository = format!("{}.git", env!("CARGO_PKG_REPOSITORY"));
    assert_eq!(app["spec"]["source"]["repoURL"], json!(repository), "the Application syncs numo's repository");
    let path = app["spec"]["source"]["path"].as_str().context("no spec.source.path")?;
    let mut objects = Vec::new();
    for file in kustomization_resources(&repo::root().join(path))? {
        objects.extend(documents(&file)?);
    }
    Ok(objects)
}

/// The JSON pointers (as Argo CD's `ignoreDifferences` write them) of the fields of `object` that a field manager
/// other than Argo CD owns, outside the status.
fn written_by_others(object: &impl Resource) -> BTreeSet<String> {
    let escape = |key: &str| key.replace('~', "~0").replace('/', "~1");
    let mut pointers = BTreeSet::new();
    for entry in object.meta().managed_fields.iter().flatten() {
        if entry.manager.as_deref() == Some(ARGO_CD) || entry.subresource.as_deref() == Some("status") {
            continue;
        }
        let Some(fields) = entry.fields_v1.as_ref().and_then(|f| f.0.as_object()) else { continue };
        for (top, children) in fields {
            let Some(top) = top.strip_prefix("f:") else { continue };
            for child in children.as_object().into_iter().flat_map(|c| c.keys()) {
                let Some(child) = child.strip_prefix("f:") else { continue };
                match (top, child) {
                    ("metadata", "annotations" | "labels") => {
                        for key in children[&format!("f:{child}")].as_object().into_iter().flat_map(|m| m.keys()) {
                            if let Some(key) = key.strip_prefix("f:") {
                                pointers.insert(format!("/metadata/{child}/{}", escape(key)));
                            }
                        }
                    }
                    ("status", _) => {}
                    _ => {
                        pointers.insert(format!("/{top}/{child}"));
                    }
                }
            }
        }
    }
    pointers
}

/// The `jsonPointers` an Argo CD Application's `ignoreDifferences` lists for `kind`.
fn ignored(app: &Value, kind: &str) -> BTreeSet<String> {
    let entries = app["spec"]["ignoreDifferences"].as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| e["kind"] == kind)
        .flat_map(|e| e["jsonPointers"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argo_cd_leaves_to_numo_and_the_platform_exactly_the_fields_they_write() -> anyhow::Result<()> {
    let samples = fleet_samples()?;
    let find = |kind: &str| {
        samples
            .iter()
            .flat_map(|(_, objects)| objects.iter())
            .find(|o| o["kind"] == kind)
            .cloned()
            .with_context(|| format!("no {kind} among the fleet samples"))
    };
    let app = find("Application")?;
    let set = find("ApplicationSet")?;
    let template = &set["spec"]["template"]["spec"];
    assert_eq!(template["ignoreDifferences"], app["spec"]["ignoreDifferences"], "one list for both samples");
    assert_eq!(template["syncPolicy"], app["spec"]["syncPolicy"], "one sync policy for both samples");
    let options = app["spec"]["syncPolicy"]["syncOptions"].as_array().cloned().unwrap_or_default();
    assert!(options.contains(&json!("RespectIgnoreDifferences=true")), "a sync never writes an ignored field back");

    let mut setup = Setup::new("fleet-argo", 2).await?;
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    // The test world's canary makes way for the one in Git, applied as Argo CD applies it, with numo's objects.
    pools.delete("canary", &DeleteParams::default()).await?;
    for _ in 0..100 {
        if pools.get_opt("canary").await?.is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let objects = argo_source_objects(&app)?;
    for object in &objects {
        let gvk = gvk_of(object)?;
        let (resource, capabilities) = kube::discovery::pinned_kind(&setup.client, &gvk).await?;
        let mut object = object.clone();
        let api: Api<DynamicObject> = match capabilities.scope {
            Scope::Namespaced => {
                object["metadata"]["namespace"] = json!(setup.ns);
                Api::namespaced_with(setup.client.clone(), &setup.ns, &resource)
            }
            Scope::Cluster => Api::all_with(setup.client.clone(), &resource),
        };
        let name = object["metadata"]["name"].as_str().context("no name")?.to_string();
        api.patch(&name, &PatchParams::apply(ARGO_CD).force(), &Patch::Apply(&object))
            .await
            .with_context(|| format!("applying {} {name} from the Application's path", gvk.kind))?;
    }
    let run_config = objects
        .iter()
        .find(|o| o["kind"] == "MutexRunConfig")
        .and_then(|o| o["metadata"]["name"].as_str())
        .context("the Application syncs a MutexRunConfig")?
        .to_string();

    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    // numo holds the pools: the canary claimed and steered to the nodes numo releases into it, the worker paused.
    setup.wait_phase(&run_config, RunPhase::Upgrading, ROLLOUT).await?;
    let canary = numo_testkit::wait_until(&pools, "canary", ROLLOUT, "the canary steered", |pool| {
        let selector = serde_json::to_string(&pool.spec.node_selector).unwrap_or_default();
        selector.contains(numo::labels::RELEASED) && pool.spec.configuration.is_some()
    })
    .await?;
    let worker = pools.get("worker").await?;

    let pool_ignored = ignored(&app, "MachineConfigPool");
    let written = written_by_others(&canary);
    let numo_on_worker: BTreeSet<String> = {
        let mut worker = worker.clone();
        worker
            .metadata
            .managed_fields
            .get_or_insert_default()
            .retain(|e| e.manager.as_deref() == Some(numo::labels::MANAGER));
        written_by_others(&worker)
    };
    for field in written.iter().chain(&numo_on_worker) {
        assert!(
            pool_ignored.contains(field),
            "{field} is written by numo or the platform but not ignored: {pool_ignored:?}"
        );
    }
    // Nothing more: what numo holds on any pool it drives (a target's paused flag, the canary's maxUnavailable at
    // a concurrency above one), its record of the pool, and what the platform was seen writing.
    let mut expected: BTreeSet<String> = numo::field_managers::POOL_FIELDS
        .iter()
        .map(|path| format!("/{}", path.iter().map(|k| k.trim_start_matches("f:")).collect::<Vec<_>>().join("/")))
        .collect();
    for key in [numo::labels::POOL_CLAIMED_BY, numo::labels::POOL_ORIGINAL, numo::labels::POOL_WRITTEN] {
        expected.insert(format!("/metadata/annotations/{}", key.replace('/', "~1")));
    }
    expected.extend(written.iter().cloned());
    assert_eq!(pool_ignored, expected, "the pools' ignoreDifferences are exactly what numo and the platform write");

    let run_configs = Api::<MutexRunConfig>::namespaced(setup.client.clone(), &setup.ns);
    let written = written_by_others(&run_configs.get(&run_config).await?);
    assert_eq!(ignored(&app, "MutexRunConfig"), written, "numo's finalizer, and nothing else of a run config");
    assert_eq!(written, BTreeSet::from(["/metadata/finalizers".to_string()]));
    for object in objects.iter().filter(|o| o["kind"] == "MutexRule" || o["kind"] == "MutexTarget") {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let written = if object["kind"] == "MutexRule" {
            written_by_others(&Api::<MutexRule>::namespaced(setup.client.clone(), &setup.ns).get(name).await?)
        } else {
            written_by_others(&Api::<MutexTarget>::namespaced(setup.client.clone(), &setup.ns).get(name).await?)
        };
        assert!(written.is_empty(), "numo writes only the status of {} {name}: {written:?}", object["kind"]);
        assert!(ignored(&app, object["kind"].as_str().unwrap_or_default()).is_empty());
    }
    Ok(())
}

/// What a user watching the cluster sees at one moment of the batch.
#[derive(Debug, Clone, PartialEq)]
struct Moment {
    /// The ClusterVersion's latest history entry, `version state`.
    cluster_version: String,
    /// `platform-upgrade`'s compliance.
    platform_upgrade: Option<String>,
    /// `numo-rollout-completed`'s compliance.
    numo_rollout_completed: Option<String>,
    /// The run config's phase and target.
    run_config: String,
    /// Workers at the new release, of all workers.
    workers_upgraded: String,
}

/// One cluster of a TALM batch, played on the simulated cluster: the two ACM policies of the samples, bound with
/// `enforce` as TALM binds them for the clusters of the batch it runs and evaluated by ACM's real policy
/// controller, around a run config `gated-workers` of the test world's workers.
struct Batch {
    setup: Setup,
    policies: Api<DynamicObject>,
    controller: PolicyController,
    started: std::time::Instant,
    /// Every change a user watching the batch saw, and when.
    moments: Vec<(Duration, Moment)>,
}

impl Batch {
    /// The test world with `workers` workers, a run config whose gate Jobs fail if `failing`, numo running, and the
    /// two policies: `platform-upgrade` upgrades the world to its next release ([`NEW`]) as soon as the policy
    /// controller enforces it.
    async fn start(test: &str, workers: usize, failing: bool) -> anyhow::Result<Self> {
        let samples = fleet_samples()?;
        let policy = |name: &str| {
            samples
                .iter()
                .flat_map(|(_, objects)| objects.iter())
                .find(|o| o["kind"] == "Policy" && o["metadata"]["name"] == name)
                .map(|p| acm::policy_templates(p).remove(0))
                .with_context(|| format!("no Policy {name} among the fleet samples"))
        };
        let mut setup = Setup::new(test, workers).await?;
        let cluster = numo_testkit::cluster().await?;
        acm::install_fleet_crds(&setup.client).await?;
        setup.rule("gate", job_spec("2s", failing), Some(job_spec("1s", false))).await?;
        setup.target("workers", &["worker"]).await?;
        setup.run_config("gated-workers", &["gate"], &["workers"], json!({})).await?;
        setup.start_operator().await?;
        setup.wait_phase("gated-workers", RunPhase::Idle, Duration::from_secs(60)).await?;

        let policies = acm::configuration_policies(&setup.client, &setup.ns).await?;
        let parents = acm::policies(&setup.client, &setup.ns).await?;
        let controller = PolicyController::start(cluster.kubeconfig(), &setup.ns)?;
        for name in ["platform-upgrade", "numo-rollout-completed"] {
            // The sample's release, as an admin adapts it: this world's next one.
            let text = serde_json::to_string(&policy(name)?)?
                .replace("4.21.4", NEW)
                .replace("stable-4.21", &format!("stable-{}", &NEW[..4]));
            let mut template: Value = serde_json::from_str(&text)?;
            // As ACM's framework puts them on a managed cluster: the Policy, and its configuration policy owned by
            // it (the controller reports compliance as Events about the owner, which the hub shows).
            let mut parent = samples
                .iter()
                .flat_map(|(_, objects)| objects.iter())
                .find(|o| o["kind"] == "Policy" && o["metadata"]["name"] == name)
                .cloned()
                .context("the Policy")?;
            parent["metadata"]["namespace"] = json!(setup.ns);
            parent["spec"]["policy-templates"] = json!([{"objectDefinition": template}]);
            let parent =
                parents.patch(name, &PatchParams::apply("governance-policy-framework"), &Patch::Apply(&parent)).await?;
            template["metadata"]["namespace"] = json!(setup.ns);
            template["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "policy.open-cluster-management.io/v1", "kind": "Policy", "name": name,
                "uid": parent.metadata.uid, "blockOwnerDeletion": false, "controller": true,
            }]);
            template["spec"]["remediationAction"] = json!("enforce");
            policies.patch(name, &PatchParams::apply("talm"), &Patch::Apply(&template)).await?;
        }
        Ok(Self { setup, policies, controller, started: std::time::Instant::now(), moments: Vec::new() })
    }

    /// Looks at the cluster until `done` holds for what it sees (recording every change), at most [`ROLLOUT`].
    async fn watch_until(&mut self, what: &str, done: impl Fn(&Self, &Moment) -> bool) -> anyhow::Result<Moment> {
        loop {
            let moment = self.moment().await?;
            let at = self.started.elapsed();
            if self.moments.last().map(|(_, m)| m) != Some(&moment) {
                self.moments.push((at, moment.clone()));
            }
            if done(self, &moment) {
                return Ok(moment);
            }
            if at > ROLLOUT {
                bail!("{what}: not within {ROLLOUT:?}: {:#?}\n{}", self.timeline(), self.controller.tail());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// What a user sees now. The policies are read first: what they say was evaluated on what the run config said
    /// before it is read.
    async fn moment(&self) -> anyhow::Result<Moment> {
        let platform_upgrade = acm::compliance(&self.policies.get("platform-upgrade").await?);
        let numo_rollout_completed = acm::compliance(&self.policies.get("numo-rollout-completed").await?);
        let cv = Api::<ClusterVersion>::all(self.setup.client.clone()).get("version").await?;
        let status = self.setup.run_configs().get("gated-workers").await?.status.unwrap_or_default();
        let nodes = self.setup.node_versions().await?;
        let workers: Vec<_> = nodes.iter().filter(|(name, _)| name.starts_with("worker")).collect();
        let upgraded = workers.iter().filter(|(_, v)| v.as_deref() == Some(NEW)).count();
        let latest = cv.status.as_ref().and_then(|s| s.history.first());
        Ok(Moment {
            cluster_version: latest.map(|h| format!("{} {}", h.version, h.state)).unwrap_or_default(),
            platform_upgrade,
            numo_rollout_completed,
            run_config: format!("{:?} at {}", status.phase, status.target_version.unwrap_or_default()),
            workers_upgraded: format!("{upgraded}/{}", workers.len()),
        })
    }

    fn timeline(&self) -> Vec<String> {
        self.moments.iter().map(|(at, m)| format!("{:>5.1}s {m:?}", at.as_secs_f64())).collect()
    }

    /// Once it had seen the upgrade (NonCompliant at the new release), the numo policy said Compliant only with
    /// numo Completed at the new release.
    fn assert_compliant_only_when_numo_completed(&self) -> anyhow::Result<()> {
        let seen = self
            .moments
            .iter()
            .position(|(_, m)| m.cluster_version.starts_with(NEW) && is(&m.numo_rollout_completed, "NonCompliant"))
            .context("the numo policy saw the upgrade")?;
        for (_, m) in &self.moments[seen..] {
            if is(&m.numo_rollout_completed, "Compliant") {
                assert_eq!(m.run_config, format!("Some(Completed) at {NEW}"), "{:#?}", self.timeline());
            }
        }
        Ok(())
    }
}

fn is(compliance: &Option<String>, state: &str) -> bool {
    compliance.as_deref() == Some(state)
}

/// TALM starts the next batch when the last managed policy is compliant on every cluster of this one: with the
/// samples, when numo is done; with the upgrade policy alone, when the control plane is, the workers still at the
/// old release. Enforcing the numo policy changes nothing in the cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_talm_batch_is_done_when_numo_is_not_when_the_control_plane_is() -> anyhow::Result<()> {
    const WORKERS: usize = 3;
    let mut batch = Batch::start("fleet-batch", WORKERS, false).await?;
    let generation = batch.setup.run_configs().get("gated-workers").await?.metadata.generation;
    let at_control_plane =
        batch.watch_until("the control plane upgraded", |_, m| is(&m.platform_upgrade, "Compliant")).await?;
    let control_plane_at = batch.started.elapsed();
    // Compliant before the upgrade (nothing behind at the old release), NonCompliant while numo holds the workers:
    // the first Compliant after that ends the batch.
    let at_numo = batch
        .watch_until("numo done", |batch, m| {
            let held = batch.moments.iter().any(|(_, m)| is(&m.numo_rollout_completed, "NonCompliant"));
            held && is(&m.numo_rollout_completed, "Compliant")
        })
        .await?;
    let numo_at = batch.started.elapsed();
    let timeline = batch.timeline();
    println!("the batch, as a user watching it sees it:\n{}", timeline.join("\n"));

    // With the upgrade policy alone, TALM would count the cluster done here: the workers are not upgraded yet.
    assert_eq!(at_control_plane.cluster_version, format!("{NEW} Completed"));
    assert_ne!(at_control_plane.workers_upgraded, format!("{WORKERS}/{WORKERS}"), "{timeline:#?}");
    assert!(!is(&at_control_plane.numo_rollout_completed, "Compliant"), "{timeline:#?}");
    // With numo's policy after it, the batch ends when numo says Completed, every worker at the new release.
    assert_eq!(at_numo.run_config, format!("Some(Completed) at {NEW}"), "{timeline:#?}");
    assert_eq!(at_numo.workers_upgraded, format!("{WORKERS}/{WORKERS}"), "{timeline:#?}");
    assert!(numo_at > control_plane_at, "{timeline:#?}");
    batch.assert_compliant_only_when_numo_completed()?;
    // Enforcing the numo policy created and changed nothing: one run config, its spec as it was.
    let all = Api::<MutexRunConfig>::all(batch.setup.client.clone()).list(&Default::default()).await?;
    assert_eq!(all.items.len(), 1, "no run config created by the policy");
    assert_eq!(batch.setup.run_configs().get("gated-workers").await?.metadata.generation, generation);
    Ok(())
}

/// A gate that fails holds the batch: numo's run config is Failed, the pools paused, and its policy NonCompliant,
/// saying so in the message ACM shows, until an admin acts (here: fixes the gate and retries the node); then numo
/// finishes and the batch with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_gate_holds_the_talm_batch_until_an_admin_acts() -> anyhow::Result<()> {
    let mut batch = Batch::start("fleet-batch-failed", 2, true).await?;
    let failed = format!("Some(Failed) at {NEW}");
    let held = batch.watch_until("numo failed", |_, m| m.run_config == failed).await?;
    assert!(is(&held.platform_upgrade, "Compliant"), "the control plane is done: {:#?}", batch.timeline());
    assert_eq!(held.workers_upgraded, "0/2");
    // What ACM shows for the cluster.
    let ns = &batch.setup.ns;
    let message = acm::compliance_message(&batch.setup.client, ns, "numo-rollout-completed").await?;
    let wanted = format!(
        "NonCompliant; numo has not finished MutexRunConfig {ns}/gated-workers at this cluster's release (oc get mrc \
         -n {ns} gated-workers)."
    );
    assert_eq!(message.as_deref().map(str::trim), Some(wanted.as_str()));
    let still = batch.moment().await?;
    assert!(is(&still.numo_rollout_completed, "NonCompliant"), "the batch is held: {:#?}", batch.timeline());

    // The admin fixes the gate and retries the node.
    let rules = Api::<MutexRule>::namespaced(batch.setup.client.clone(), &batch.setup.ns);
    let mut fixed = json!({"spec": {"jobSpec": job_spec("2s", false)}});
    // A merge patch keeps keys it does not name: the failing annotation is removed explicitly.
    fixed["spec"]["jobSpec"]["template"]["metadata"]["annotations"]
        ["sim.numo.openshift-optional.skrzypek.io/job-result"] = Value::Null;
    let patched = rules.patch("gate", &PatchParams::default(), &Patch::Merge(&fixed)).await?;
    // numo judges the fixed rule before the retry: a retry it took while its cache still showed the failing rule
    // would run the failing Job again (numo's watches of rules and run configs deliver in their own order).
    let generation = patched.metadata.generation;
    numo_testkit::wait_until(&rules, "gate", Duration::from_secs(60), "the fixed rule judged", move |rule| {
        let status = rule.status.as_ref();
        numo::api::mutex_rule::usability(status, generation, false).is_ok()
    })
    .await?;
    let retry = json!({"metadata": {"annotations": {numo::labels::RETRY_ANNOTATION: "worker-0"}}});
    batch.setup.run_configs().patch("gated-workers", &PatchParams::default(), &Patch::Merge(&retry)).await?;
    let done =
        batch.watch_until("numo done after the retry", |_, m| is(&m.numo_rollout_completed, "Compliant")).await?;
    assert_eq!(done.run_config, format!("Some(Completed) at {NEW}"), "{:#?}", batch.timeline());
    assert_eq!(done.workers_upgraded, "2/2");
    batch.assert_compliant_only_when_numo_completed()?;
    Ok(())
}
