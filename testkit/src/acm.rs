//! Red Hat Advanced Cluster Management (ACM) on a managed cluster, for tests: ACM's real configuration policy
//! controller, built from the Go module proxy by `hack/build-tools.sh config-policy-controller` and run against the
//! test cluster as it runs on a managed cluster; the CRDs of the fleet tools (Open Cluster Management's policy
//! framework and API, TALM, Argo CD) that `hack/build-tools.sh fleet-crds` takes from their modules; and readers of
//! what ACM's policies carry and report.
//!
//! ```no_run
//! # async fn example(client: kube::Client, kubeconfig: &std::path::Path) -> anyhow::Result<()> {
//! numo_testkit::acm::install_fleet_crds(&client).await?;
//! let policies = numo_testkit::acm::configuration_policies(&client, "my-test").await?;
//! let _controller = numo_testkit::acm::PolicyController::start(kubeconfig, "my-test")?;
//! // ... apply ConfigurationPolicies in my-test, then read numo_testkit::acm::compliance(&policies.get("p").await?)
//! # Ok(()) }
//! ```

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams};
use kube::ResourceExt;
use serde_json::Value;

/// Environment variable naming ACM's config-policy-controller binary (`hack/test.sh` sets it).
pub const BINARY_ENV: &str = "NUMO_CONFIG_POLICY_CONTROLLER";

/// Environment variable naming the folder of the fleet tools' CRDs (`hack/test.sh` sets it).
pub const CRDS_ENV: &str = "NUMO_FLEET_CRDS";

/// The API group of ACM's policies (`Policy`, `ConfigurationPolicy`).
pub const POLICY_GROUP: &str = "policy.open-cluster-management.io";

/// What [`object_templates`] puts where `object-templates-raw` has a lone template variable (`{{ $desired }}`).
pub const PLACEHOLDER: &str = "<template value>";

/// How many of the controller's last log lines [`PolicyController::tail`] gives.
const TAIL_LINES: usize = 40;

/// The binary: `$NUMO_CONFIG_POLICY_CONTROLLER`, else the newest build in numo's cache
/// (`config-policy-controller-*/bin/config-policy-controller`).
pub fn binary() -> anyhow::Result<PathBuf> {
    let candidates = ["bin/config-policy-controller", "config-policy-controller"];
    match crate::lock::tool(BINARY_ENV, "config-policy-controller-", &candidates) {
        Some(binary) => Ok(binary),
        None => bail!(
            "{BINARY_ENV} is not set: it names ACM's config-policy-controller that hack/build-tools.sh \
             config-policy-controller builds (make test sets it)"
        ),
    }
}

/// ACM's configuration policy controller evaluating (and, where a policy says `enforce`, remediating) the
/// ConfigurationPolicies of one namespace of the test cluster, as it does on a managed cluster: no leader election,
/// no metrics, no policy namespace of OCM's own, a one-second evaluation backoff. Its output goes to a log file
/// ([`PolicyController::tail`]); it is killed, and its log removed, when dropped.
pub struct PolicyController {
    child: std::process::Child,
    log: PathBuf,
}

impl PolicyController {
    /// Starts the controller ([`binary`]) with the cluster of `kubeconfig`, watching namespace `ns`.
    pub fn start(kubeconfig: &Path, ns: &str) -> anyhow::Result<Self> {
        let binary = binary()?;
        let log = std::env::temp_dir().join(format!("numo-config-policy-controller-{ns}.log"));
        let out = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let child = std::process::Command::new(&binary)
            .args([
                "controller",
                "--leader-elect=false",
                "--enable-ocm-policy-namespace=false",
                "--enable-metrics=false",
            ])
            .args(["--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0", "--evaluation-backoff=1"])
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .env("WATCH_NAMESPACE", ns)
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok(Self { child, log })
    }

    /// The last lines it logged, to say what it did when a test fails.
    pub fn tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }
}

impl Drop for PolicyController {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Every CRD of `$NUMO_FLEET_CRDS` (its YAML files), without annotations.
pub fn fleet_crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let dir = std::env::var_os(CRDS_ENV).with_context(|| {
        format!(
            "{CRDS_ENV} is not set: it names the folder of the fleet tools' CRDs that hack/build-tools.sh \
             fleet-crds takes from their modules (make test sets it)"
        )
    })?;
    let mut crds = numo_simulator::crds::read_crds(Path::new(&dir))?;
    for crd in &mut crds {
        crd.metadata.annotations = None;
    }
    if crds.len() < 8 {
        bail!("{dir:?} holds {} CRDs; run hack/build-tools.sh fleet-crds", crds.len());
    }
    Ok(crds)
}

/// Installs the fleet tools' CRDs ([`fleet_crds`]) and waits until each is served.
pub async fn install_fleet_crds(client: &kube::Client) -> anyhow::Result<()> {
    numo_simulator::crds::apply_crds(client, fleet_crds()?).await.context("installing the fleet CRDs")?;
    Ok(())
}

/// The API of ACM's `kind` (`Policy`, `ConfigurationPolicy`, …) of [`POLICY_GROUP`] `v1` in namespace `ns`, as the
/// cluster serves it (the fleet CRDs installed).
async fn policy_api(client: &kube::Client, ns: &str, kind: &str) -> anyhow::Result<Api<DynamicObject>> {
    let gvk = GroupVersionKind::gvk(POLICY_GROUP, "v1", kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("{POLICY_GROUP}/{kind} is not served: install the fleet CRDs"))?;
    Ok(Api::namespaced_with(client.clone(), ns, &resource))
}

/// The ACM Policies of namespace `ns` (what the governance framework puts on a managed cluster).
pub async fn policies(client: &kube::Client, ns: &str) -> anyhow::Result<Api<DynamicObject>> {
    policy_api(client, ns, "Policy").await
}

/// The ConfigurationPolicies of namespace `ns` (what [`PolicyController`] evaluates).
pub async fn configuration_policies(client: &kube::Client, ns: &str) -> anyhow::Result<Api<DynamicObject>> {
    policy_api(client, ns, "ConfigurationPolicy").await
}

/// A configuration policy's `status.compliant` (`Compliant`, `NonCompliant`, …), if it was evaluated.
pub fn compliance(policy: &DynamicObject) -> Option<String> {
    policy.data["status"]["compliant"].as_str().map(str::to_string)
}

/// The latest compliance message about the Policy `name` of namespace `ns`: the Events the controller reports about
/// the owner of a configuration policy, which ACM's Governance pages show for the cluster.
pub async fn compliance_message(client: &kube::Client, ns: &str, name: &str) -> anyhow::Result<Option<String>> {
    let events = Api::<Event>::namespaced(client.clone(), ns);
    let params = ListParams::default().fields(&format!("involvedObject.name={name}"));
    let mut events: Vec<_> = events
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|e| e.involved_object.kind.as_deref() == Some("Policy"))
        .collect();
    events.sort_by(|a, b| {
        (&a.metadata.creation_timestamp, a.name_any()).cmp(&(&b.metadata.creation_timestamp, b.name_any()))
    });
    Ok(events.pop().and_then(|e| e.message))
}

/// The configuration policies an ACM Policy carries (`spec.policy-templates[].objectDefinition`).
pub fn policy_templates(policy: &Value) -> Vec<Value> {
    let templates = policy["spec"]["policy-templates"].as_array().cloned().unwrap_or_default();
    templates.iter().map(|t| t["objectDefinition"].clone()).collect()
}

/// The object templates of a configuration policy: `object-templates`, or `object-templates-raw` read as YAML with
/// its Go template actions taken out (what TALM does to check a policy before it remediates it): a lone variable
/// (`{{ $rc.metadata.name }}`) becomes [`PLACEHOLDER`], any other action (`range`, `if`, `end`, assignments)
/// disappears.
pub fn object_templates(policy: &Value) -> anyhow::Result<Vec<Value>> {
    if let Some(templates) = policy["spec"]["object-templates"].as_array() {
        return Ok(templates.clone());
    }
    let raw = policy["spec"]["object-templates-raw"].as_str().context("neither object-templates nor -raw")?;
    let mut text = String::new();
    let mut rest = raw;
    while let Some(start) = rest.find("{{") {
        text.push_str(&rest[..start]);
        let end = rest[start..].find("}}").context("an unclosed {{")? + start;
        let action = rest[start + 2..end].trim_matches(|c: char| c == '-' || c.is_whitespace());
        let variable = action.starts_with('$') && action.chars().all(|c| c.is_alphanumeric() || "$._".contains(c));
        if variable {
            text.push_str(PLACEHOLDER);
        }
        rest = &rest[end + 2..];
    }
    text.push_str(rest);
    let templates: Vec<Value> =
        serde_yaml::from_str(&text).with_context(|| format!("object-templates-raw without its actions:\n{text}"))?;
    Ok(templates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_object_templates_lose_their_actions_and_keep_their_variables_as_placeholders() {
        let raw = "{{- range $rc := (lookup \"numo.io/v1alpha1\" \"MutexRunConfig\" \"\" \"\").items }}\n\
                   - complianceType: musthave\n  objectDefinition:\n    kind: MutexRunConfig\n    metadata:\n      \
                   name: {{ $rc.metadata.name }}\n{{- end }}\n";
        let policy = json!({"spec": {"object-templates-raw": raw}});
        let templates = object_templates(&policy).unwrap();
        assert_eq!(templates.len(), 1, "{templates:?}");
        assert_eq!(templates[0]["objectDefinition"]["metadata"]["name"], PLACEHOLDER);
        assert_eq!(templates[0]["complianceType"], "musthave");
    }

    #[test]
    fn a_policy_carries_its_configuration_policies() {
        let policy = json!({"spec": {"policy-templates": [{"objectDefinition": {"kind": "ConfigurationPolicy"}}]}});
        assert_eq!(policy_templates(&policy), vec![json!({"kind": "ConfigurationPolicy"})]);
        assert!(policy_templates(&json!({})).is_empty());
    }
}
