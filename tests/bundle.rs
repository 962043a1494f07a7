//! What OLM and the OpenShift console get from the committed bundle: the CRDs of config/crd, a CSV that matches the
//! crate, installs with config/rbac's least privilege and a restricted Deployment, and offers valid examples.
//! (`cargo xtask bundle --check` and xtask/tests prove the bundle is what config/ generates.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

const PACKAGE: &str = "openshift-node-upgrade-mutex-operator";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: impl AsRef<Path>) -> String {
    let path = repo().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn yaml(path: impl AsRef<Path>) -> Value {
    let text = read(path.as_ref());
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.as_ref().display()))
}

fn csv() -> Value {
    yaml(format!("bundle/manifests/{PACKAGE}.clusterserviceversion.yaml"))
}

fn crd_names() -> Vec<String> {
    numo::api::crds().into_iter().filter_map(|crd| crd.metadata.name).collect()
}

#[test]
fn the_bundle_ships_the_crds_of_config_crd_byte_for_byte() {
    for name in crd_names() {
        let file = format!("{name}.yaml");
        assert_eq!(read(format!("bundle/manifests/{file}")), read(format!("config/crd/{file}")), "{file}");
    }
}

#[test]
fn the_csv_is_named_and_versioned_after_the_crate() {
    let csv = csv();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(csv["metadata"]["name"], format!("{PACKAGE}.v{version}"));
    assert_eq!(csv["spec"]["version"], version);
    let image = csv["metadata"]["annotations"]["containerImage"].as_str().unwrap_or_default();
    assert!(image.ends_with(&format!(":{version}")) || image.contains("@sha256:"), "{image}");
    assert_eq!(csv["spec"]["relatedImages"][0]["image"], image);
    let deployed = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(deployed["image"], image);
}

#[test]
fn the_csv_owns_numos_three_crds_by_their_full_names() {
    let csv = csv();
    let owned = csv["spec"]["customresourcedefinitions"]["owned"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = owned.iter().filter_map(|o| o["name"].as_str()).collect();
    assert_eq!(names, crd_names());
    for entry in &owned {
        assert_eq!(entry["version"], numo::api::VERSION);
        for field in ["displayName", "description", "resources", "specDescriptors", "statusDescriptors"] {
            assert!(!entry[field].is_null(), "{} lacks {field}", entry["name"]);
        }
        // OLM's CSV schema requires name, kind and version of every resource (`kubectl create -f` refuses the
        // file otherwise): the plural of a custom resource, "" for a built-in kind.
        for resource in entry["resources"].as_array().into_iter().flatten() {
            let field = |key: &str| resource[key].as_str().unwrap_or_else(|| panic!("{resource} lacks {key}"));
            let plural = match field("kind") {
                "MachineConfigPool" => "machineconfigpools",
                "MutexRule" => "mutexrules",
                "MutexTarget" => "mutextargets",
                _ => "",
            };
            assert_eq!((field("name"), field("version").is_empty()), (plural, false), "{resource}");
        }
    }
    let descriptors = |kind: &str, list: &str| -> Vec<(String, Vec<String>)> {
        let entry = owned.iter().find(|o| o["kind"] == kind).cloned().unwrap_or_default();
        entry[list]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|d| {
                let x = d["x-descriptors"].as_array().cloned().unwrap_or_default();
                (
                    d["path"].as_str().unwrap_or_default().to_string(),
                    x.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
                )
            })
            .collect()
    };
    let has = |kind: &str, list: &str, path: &str, x: &str| {
        descriptors(kind, list).iter().any(|(p, xs)| p == path && xs.iter().any(|v| v == x))
    };
    let mcp = "urn:alm:descriptor:io.kubernetes:machineconfiguration.openshift.io:v1:MachineConfigPool";
    assert!(has("MutexRunConfig", "specDescriptors", "canary.name", mcp), "a MachineConfigPool picker for the canary");
    assert!(has("MutexRule", "specDescriptors", "jobNamespace", "urn:alm:descriptor:io.kubernetes:Namespace"));
    assert!(has("MutexRule", "specDescriptors", "jobSpec", "urn:alm:descriptor:com.tectonic.ui:hidden"));
    assert!(has("MutexRunConfig", "statusDescriptors", "phase", "urn:alm:descriptor:io.kubernetes.phase"));
    for kind in ["MutexRule", "MutexTarget", "MutexRunConfig"] {
        assert!(has(kind, "statusDescriptors", "conditions", "urn:alm:descriptor:io.kubernetes.conditions"), "{kind}");
    }
}

#[test]
fn alm_examples_hold_one_object_per_kind_that_the_crd_schema_and_the_rust_types_accept() {
    let csv = csv();
    let text = csv["metadata"]["annotations"]["alm-examples"].as_str().unwrap_or_default();
    let examples: Vec<Value> = serde_json::from_str(text).unwrap_or_default();
    let kinds: Vec<&str> = examples.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["MutexRule", "MutexTarget", "MutexRunConfig"]);
    for example in &examples {
        let kind = example["kind"].as_str().unwrap_or_default();
        let parsed = match kind {
            "MutexRule" => serde_json::from_value::<numo::api::MutexRule>(example.clone()).map(|_| ()),
            "MutexTarget" => serde_json::from_value::<numo::api::MutexTarget>(example.clone()).map(|_| ()),
            _ => serde_json::from_value::<numo::api::MutexRunConfig>(example.clone()).map(|_| ()),
        };
        assert!(parsed.is_ok(), "{kind}: {parsed:?}");
        let crd = numo::api::crds().into_iter().find(|c| c.spec.names.kind == kind).unwrap_or_else(|| panic!("{kind}"));
        let schema = crd.spec.versions[0].schema.as_ref().and_then(|s| s.open_api_v3_schema.as_ref()).cloned();
        let schema = serde_json::to_value(schema).unwrap_or_default();
        let validator = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{kind} schema: {e}"));
        let errors: Vec<String> =
            validator.iter_errors(example).map(|e| format!("{}: {e}", e.instance_path())).collect();
        assert!(errors.is_empty(), "{kind} example breaks the CRD schema: {errors:?}");
    }
}

#[test]
fn the_user_roles_of_config_rbac_ship_in_the_bundle() {
    for name in ["numo-viewer", "numo-editor", "numo-run-config-editor"] {
        let role = yaml(format!("bundle/manifests/{name}_rbac.authorization.k8s.io_v1_clusterrole.yaml"));
        assert_eq!((role["kind"].as_str(), role["metadata"]["name"].as_str()), (Some("ClusterRole"), Some(name)));
        let file = ["viewer_role", "editor_role", "run_config_editor_role"]
            .iter()
            .map(|f| yaml(format!("config/rbac/{f}.yaml")))
            .find(|r| r["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not in config/rbac"));
        assert_eq!(role["rules"], file["rules"], "{name}");
        assert_eq!(role["metadata"]["labels"], file["metadata"]["labels"], "{name}: its aggregation labels");
    }
}

#[test]
fn the_csv_grants_exactly_config_rbac_and_nothing_dangerous() {
    let csv = csv();
    let install = &csv["spec"]["install"]["spec"];
    assert_eq!(install["clusterPermissions"][0]["rules"], yaml("config/rbac/role.yaml")["rules"]);
    assert_eq!(install["permissions"][0]["rules"], yaml("config/rbac/leader_election_role.yaml")["rules"]);
    let account = yaml("config/rbac/service_account.yaml")["metadata"]["name"].clone();
    assert_eq!(install["clusterPermissions"][0]["serviceAccountName"], account);
    assert_eq!(install["deployments"][0]["spec"]["template"]["spec"]["serviceAccountName"], account);
    for permissions in ["clusterPermissions", "permissions"] {
        for rule in install[permissions][0]["rules"].as_array().cloned().unwrap_or_default() {
            let listed = |field: &str| -> Vec<String> {
                rule[field]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            };
            for value in listed("verbs").iter().chain(&listed("resources")).chain(&listed("apiGroups")) {
                assert_ne!(value, "*", "no wildcard in {permissions}: {rule}");
            }
            for resource in listed("resources") {
                assert!(!["secrets", "pods/exec", "pods/log"].contains(&resource.as_str()), "{rule}");
                // ConfigMaps only to write the rollout records: never read, listed or watched.
                if resource == "configmaps" {
                    assert_eq!(listed("verbs"), ["create", "patch", "delete"], "{rule}");
                }
                // Pods only to list the metadata of the pods on a node about to start (the PodDisruptionBudget
                // health check): never get, watch or anything else.
                if resource == "pods" {
                    assert_eq!(listed("verbs"), ["list"], "{rule}");
                }
            }
            assert!(
                !listed("verbs").iter().any(|v| ["escalate", "bind", "impersonate"].contains(&v.as_str())),
                "{rule}"
            );
            // Admission and CRDs: only numo's own policy numo-holds and its binding, and reading numo's run-config
            // CRD. Creating a policy cannot be restricted by name (docs/security.md); every other verb is.
            let groups = listed("apiGroups");
            if groups.iter().any(|g| g == "admissionregistration.k8s.io") {
                assert_eq!(groups, ["admissionregistration.k8s.io"], "{rule}");
                assert_eq!(listed("resources"), ["validatingadmissionpolicies", "validatingadmissionpolicybindings"]);
                if listed("resourceNames").is_empty() {
                    assert_eq!(listed("verbs"), ["create"], "{rule}");
                } else {
                    assert_eq!(listed("resourceNames"), ["numo-holds"], "{rule}");
                    assert_eq!(listed("verbs"), ["get", "list", "watch", "patch", "update"], "{rule}");
                }
            }
            if groups.iter().any(|g| g == "apiextensions.k8s.io") {
                assert_eq!(listed("resources"), ["customresourcedefinitions"], "{rule}");
                assert_eq!(listed("resourceNames"), ["mutexrunconfigs.openshift-optional.skrzypek.io"], "{rule}");
                assert_eq!(listed("verbs"), ["get"], "{rule}");
            }
        }
    }
    let modes: BTreeMap<String, bool> = csv["spec"]["installModes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| (m["type"].as_str().unwrap_or_default().to_string(), m["supported"] == true))
        .collect();
    assert_eq!(modes.get("AllNamespaces"), Some(&true));
}

#[test]
fn the_installed_deployment_runs_restricted_and_probed() {
    let csv = csv();
    let pod = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    assert!(pod["securityContext"]["runAsUser"].is_null(), "OpenShift's restricted-v2 SCC assigns the UID");
    let container = &pod["containers"][0];
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert!(
        !container["resources"]["requests"]["cpu"].is_null() && !container["resources"]["requests"]["memory"].is_null()
    );
    assert!(!container["resources"]["limits"]["memory"].is_null());
    let env: Vec<&str> =
        container["env"].as_array().map(|e| e.iter().filter_map(|v| v["name"].as_str()).collect()).unwrap_or_default();
    assert!(env.contains(&"POD_NAMESPACE") && env.contains(&"POD_NAME"), "{env:?}");
    // numo's own user name, which its ValidatingAdmissionPolicy exempts.
    assert!(env.contains(&"SERVICE_ACCOUNT_NAME"), "{env:?}");
    let args: Vec<&str> =
        container["args"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    assert_eq!(args.first(), Some(&"run"));
}

#[test]
fn every_openshift_feature_annotation_is_set_to_true_or_false() {
    let csv = csv();
    let annotations = &csv["metadata"]["annotations"];
    for feature in [
        "disconnected",
        "fips-compliant",
        "proxy-aware",
        "tls-profiles",
        "token-auth-aws",
        "token-auth-azure",
        "token-auth-gcp",
        "cnf",
        "cni",
        "csi",
    ] {
        let value = annotations[format!("features.operators.openshift.io/{feature}")].as_str();
        assert!(matches!(value, Some("true" | "false")), "features.operators.openshift.io/{feature}: {value:?}");
    }
    for key in ["createdAt", "repository", "capabilities", "categories", "operatorframework.io/suggested-namespace"] {
        assert!(annotations[key].as_str().is_some_and(|v| !v.is_empty()), "{key}");
    }
    assert!(csv["spec"]["icon"][0]["base64data"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(csv["spec"]["minKubeVersion"].as_str().is_some());
}

#[test]
fn bundle_dockerfile_labels_equal_the_bundle_annotations() {
    let annotations = yaml("bundle/metadata/annotations.yaml")["annotations"].clone();
    let labels: BTreeMap<String, String> = read("bundle.Dockerfile")
        .lines()
        .filter_map(|l| l.strip_prefix("LABEL "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect();
    let annotations: BTreeMap<String, String> = annotations
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default();
    assert_eq!(labels, annotations);
    assert_eq!(annotations["operators.operatorframework.io.bundle.channels.v1"], "stable");
    assert_eq!(annotations["operators.operatorframework.io.bundle.channel.default.v1"], "stable");
    assert_eq!(annotations["operators.operatorframework.io.bundle.package.v1"], PACKAGE);
    assert_eq!(annotations["operators.operatorframework.io.bundle.mediatype.v1"], "registry+v1");
    assert!(annotations.contains_key("com.redhat.openshift.versions"));
}

#[test]
fn there_is_one_console_yaml_sample_per_kind() {
    let dir = repo().join("bundle/manifests");
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with("_consoleyamlsample.yaml") {
            let sample = yaml(Path::new("bundle/manifests").join(&name));
            assert!(
                serde_yaml::from_str::<Value>(sample["spec"]["yaml"].as_str().unwrap_or_default()).is_ok(),
                "{name}"
            );
            kinds.push(sample["spec"]["targetResource"]["kind"].as_str().unwrap_or_default().to_string());
        }
    }
    kinds.sort();
    assert_eq!(kinds, ["MachineConfigPool", "MutexRule", "MutexRunConfig", "MutexTarget"]);
}

#[test]
fn the_image_is_built_as_the_crate_version_and_runs_as_a_numeric_non_root_user() {
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains(&format!("ARG VERSION={}", env!("CARGO_PKG_VERSION"))), "Dockerfile VERSION");
    assert!(dockerfile.lines().any(|l| l.trim() == "USER 65532:0" || l.trim() == "USER 65532"), "numeric USER");
    for label in
        ["name=", "vendor=", "version=", "summary=", "description=", "io.k8s.display-name=", "io.openshift.tags="]
    {
        assert!(dockerfile.contains(label), "Dockerfile lacks the {label} label");
    }
    assert!(dockerfile.contains("/licenses"), "the license goes under /licenses");
}

#[test]
fn the_bundle_ships_numos_alerts_and_lets_openshifts_monitoring_scrape_numo() {
    // The PrometheusRule and ServiceMonitor of config/prometheus, without a namespace (OLM installs them in numo's).
    let rule = yaml("bundle/manifests/numo-operator_monitoring.coreos.com_v1_prometheusrule.yaml");
    assert_eq!(rule["spec"], yaml("config/prometheus/rule.yaml")["spec"]);
    assert!(rule["metadata"]["namespace"].is_null());
    let monitor = yaml("bundle/manifests/numo-operator_monitoring.coreos.com_v1_servicemonitor.yaml");
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], "http-metrics");
    let service = yaml("bundle/manifests/numo-operator-metrics_v1_service.yaml");
    assert_eq!(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"]);
    // OpenShift's platform Prometheus may list numo's targets, and nothing more.
    let role = yaml("bundle/manifests/numo-prometheus_rbac.authorization.k8s.io_v1_role.yaml");
    for rule in role["rules"].as_array().into_iter().flatten() {
        assert_eq!(rule["verbs"], serde_json::json!(["get", "list", "watch"]), "{rule}");
    }
    let binding = yaml("bundle/manifests/numo-prometheus_rbac.authorization.k8s.io_v1_rolebinding.yaml");
    assert_eq!(binding["roleRef"]["name"], "numo-prometheus");
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "openshift-monitoring"}])
    );
    // The namespace the console creates for numo is labelled for OpenShift's platform monitoring, as config/default's.
    let annotations = &csv()["metadata"]["annotations"];
    let template: Value = serde_json::from_str(
        annotations["operatorframework.io/suggested-namespace-template"].as_str().unwrap_or_default(),
    )
    .unwrap_or_default();
    assert_eq!(template["metadata"]["name"], annotations["operatorframework.io/suggested-namespace"]);
    let namespace = yaml("config/default/namespace.yaml");
    for labels in [&template["metadata"]["labels"], &namespace["metadata"]["labels"]] {
        assert_eq!(labels["openshift.io/cluster-monitoring"], "true", "{labels}");
    }
    assert_eq!(annotations["operatorframework.io/cluster-monitoring"], "true");
}
