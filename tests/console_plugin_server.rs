//! numo serves its console plugin as the OpenShift console's backend fetches it: over HTTPS with the certificate
//! the service CA put in numo's Secret (read again when the service CA rotates it), each file with its MIME type;
//! and applies the ConsolePlugin that points the console at numo's Service, as its own ServiceAccount with exactly
//! its RBAC, on the real API server with the ConsolePlugin CRD of openshift/api.
//!
//! The files served are the plugin's real build (`console-plugin/dist`, built by `make test` before the tests)
//! when it is there, else a stand-in with the same names; the ConsolePlugin CRD comes from `hack/build-tools.sh
//! olm` (the openshift/api module OLM is built against), found through `$NUMO_OPENSHIFT_API_CRDS`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::CustomResourceExt;
use numo::api::MutexRunConfig;
use numo::console_plugin::assets::{Assets, ENTRY, MANIFEST};
use numo::console_plugin::object::{self, Outcome};
use numo::console_plugin::serve::{self, CertFiles, ReloadingCert};
use numo::console_plugin::NAME;

/// The plugin's build, if `npm run build` made one.
fn built_plugin() -> Option<PathBuf> {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("console-plugin/dist");
    dist.join(MANIFEST).is_file().then_some(dist)
}

/// A certificate for the Service's DNS name, signed by its own CA (as the service CA signs).
fn certificate(service: &str) -> numo_testkit::tls::SignedCertificate {
    numo_testkit::tls::signed_certificate("test service CA", &[service]).unwrap_or_else(|e| panic!("{e}"))
}

/// GETs `path` from the server at `address` as `host` with curl, trusting `ca`: (HTTP status, Content-Type, body).
fn fetch(address: SocketAddr, host: &str, ca: &Path, path: &str) -> (String, String, Vec<u8>) {
    let body = std::env::temp_dir().join(format!("numo-plugin-body-{}-{}", std::process::id(), path.len()));
    let output = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20", "--cacert"])
        .arg(ca)
        .args(["--resolve", &format!("{host}:{}:{}", address.port(), address.ip())])
        .args(["--output"])
        .arg(&body)
        .args(["--write-out", "%{http_code} %{content_type}"])
        .arg(format!("https://{host}:{}{path}", address.port()))
        .output()
        .unwrap_or_else(|e| panic!("curl: {e} (hack/install-prerequisites.sh installs it)"));
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    let (status, content_type) = out.split_once(' ').unwrap_or((&out, ""));
    let bytes = std::fs::read(&body).unwrap_or_default();
    let _ = std::fs::remove_file(&body);
    assert!(output.status.success(), "curl {path} failed: {}", String::from_utf8_lossy(&output.stderr));
    (status.to_string(), content_type.to_string(), bytes)
}

/// [`fetch`] on a blocking thread, for the async tests.
async fn fetch_blocking(address: SocketAddr, host: &str, ca: &Path, path: &str) -> (String, String, Vec<u8>) {
    let (host, ca, path) = (host.to_string(), ca.to_path_buf(), path.to_string());
    tokio::task::spawn_blocking(move || fetch(address, &host, &ca, &path)).await.unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_is_served_over_https_with_the_service_ca_certificate_and_follows_its_rotation() {
    let host = "numo-console-plugin.numo-system.svc";
    let work = std::env::temp_dir().join(format!("numo-plugin-tls-{}", std::process::id()));
    let certs = work.join("serving-cert");
    std::fs::create_dir_all(&certs).unwrap_or_else(|e| panic!("{e}"));
    let assets = match built_plugin() {
        Some(dist) => Assets::from_dir(&dist).unwrap_or_else(|e| panic!("{e}")),
        None => Assets::from_files([
            (MANIFEST, &br#"{"name":"numo-console-plugin","version":"0.2.0","extensions":[]}"#[..]),
            (ENTRY, &b"window.loadPluginEntry && window.loadPluginEntry()"[..]),
            ("locales/en/plugin__numo-console-plugin.json", br#"{"Rollout": "Rollout"}"#),
        ]),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap_or_else(|e| panic!("{e}"));
    let address = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let resolver = Arc::new(ReloadingCert::new(CertFiles::in_dir(&certs)));
    let tls = Arc::new(serve::tls_config(resolver).unwrap_or_else(|e| panic!("{e}")));
    let server = tokio::spawn(serve::serve(listener, tls, Arc::new(assets), None));

    // No certificate yet (the Secret not written): the handshake fails, and numo keeps serving once it comes.
    let numo_testkit::tls::SignedCertificate { ca, cert, key } = certificate(host);
    let ca_file = work.join("ca.pem");
    std::fs::write(&ca_file, &ca).unwrap_or_else(|e| panic!("{e}"));
    let early = tokio::task::spawn_blocking({
        let ca_file = ca_file.clone();
        move || {
            Command::new("curl")
                .args(["--silent", "--max-time", "5", "--cacert"])
                .arg(&ca_file)
                .args(["--resolve", &format!("{host}:{}:127.0.0.1", address.port())])
                .arg(format!("https://{host}:{}/{MANIFEST}", address.port()))
                .status()
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .unwrap_or_else(|e| panic!("curl: {e}"));
    assert!(!early.success(), "no certificate, no TLS");

    std::fs::write(certs.join("tls.crt"), &cert).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(certs.join("tls.key"), &key).unwrap_or_else(|e| panic!("{e}"));
    let (status, content_type, body) = fetch_blocking(address, host, &ca_file, "/plugin-manifest.json").await;
    assert_eq!(status, "200");
    assert_eq!(content_type, "application/json; charset=utf-8");
    let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("the manifest: {e}"));
    assert_eq!(manifest["name"], NAME, "{manifest}");
    let (status, content_type, _) = fetch_blocking(address, host, &ca_file, "/plugin-entry.js").await;
    assert_eq!((status.as_str(), content_type.as_str()), ("200", "application/javascript; charset=utf-8"));
    // The plugin's English catalogue, which the console loads from the plugin's base URL
    // (`locales/<language>/plugin__<name>.json`, the build's dist/locales/).
    let (status, content_type, body) =
        fetch_blocking(address, host, &ca_file, &format!("/locales/en/plugin__{NAME}.json")).await;
    assert_eq!((status.as_str(), content_type.as_str()), ("200", "application/json; charset=utf-8"));
    let catalogue: serde_json::Value = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("the catalogue: {e}"));
    assert_eq!(catalogue["Rollout"], "Rollout", "the console's tab name is in the catalogue");
    let (status, _, _) = fetch_blocking(address, host, &ca_file, "/../../etc/passwd").await;
    assert_eq!(status, "404");

    // The service CA rotates: a new CA and certificate. New connections get the new certificate (old CA refused).
    let numo_testkit::tls::SignedCertificate { ca: new_ca, cert: new_cert, key: new_key } = certificate(host);
    for (file, content) in [("tls.key", &new_key), ("tls.crt", &new_cert)] {
        std::fs::write(certs.join(file), content).unwrap_or_else(|e| panic!("{e}"));
        // Files written within the same tick as the first ones: their modification time says they are newer.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(certs.join(file))
            .and_then(|f| f.set_modified(later))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let new_ca_file = work.join("new-ca.pem");
    std::fs::write(&new_ca_file, &new_ca).unwrap_or_else(|e| panic!("{e}"));
    let (status, _, _) = fetch_blocking(address, host, &new_ca_file, "/plugin-manifest.json").await;
    assert_eq!(status, "200", "served with the rotated certificate");

    server.abort();
    let _ = std::fs::remove_dir_all(&work);
}

/// The ConsolePlugin CRD of openshift/api (`$NUMO_OPENSHIFT_API_CRDS/consoleplugins.crd.yaml`) as the test world
/// serves it: stored as `v1` (the version numo writes) and without conversion, since the console operator's
/// conversion webhook (between `v1alpha1` and `v1`) does not run here.
fn console_plugin_crd() -> CustomResourceDefinition {
    let mut crd = numo_testkit::crds::openshift_api("consoleplugins.crd.yaml").unwrap_or_else(|e| panic!("{e:#}"));
    for version in &mut crd.spec.versions {
        version.storage = version.name == "v1";
    }
    crd.spec.conversion = None;
    crd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numo_applies_the_console_plugin_for_its_service_owned_by_its_crd() {
    let cluster = numo_testkit::cluster().await.unwrap_or_else(|e| panic!("{e:#}"));
    let world = cluster.world("console-plugin-object").await.unwrap_or_else(|e| panic!("{e:#}"));
    let admin = cluster.client();
    let crds = Api::<CustomResourceDefinition>::all(admin.clone());
    crds.patch(
        "consoleplugins.console.openshift.io",
        &PatchParams::apply("numo-tests").force(),
        &Patch::Apply(&console_plugin_crd()),
    )
    .await
    .unwrap_or_else(|e| panic!("installing the ConsolePlugin CRD: {e}"));
    let plugins = Api::<DynamicObject>::all_with(admin.clone(), &object::resource());
    // The CRD is served once established; until then the API answers 404, which ensure reports as such.
    let operator = numo_testkit::rbac::operator_client(cluster).await.unwrap_or_else(|e| panic!("{e:#}"));
    let mut outcome = object::ensure(&operator, "numo-system").await;
    for _ in 0..100 {
        if outcome == Outcome::Applied {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        outcome = object::ensure(&operator, "numo-system").await;
    }
    assert_eq!(outcome, Outcome::Applied, "as numo's ServiceAccount with exactly its RBAC");
    let plugin = plugins.get(NAME).await.unwrap_or_else(|e| panic!("{e}"));
    let service = &plugin.data["spec"]["backend"]["service"];
    assert_eq!(service["name"], "numo-console-plugin");
    assert_eq!(service["namespace"], "numo-system");
    assert_eq!(service["port"], 9443);
    // The real CRD takes the proxy to numo's backend, which forwards the user's token.
    let proxy = &plugin.data["spec"]["proxy"][0];
    assert_eq!(proxy["alias"], "numo", "{proxy}");
    assert_eq!(proxy["authorization"], "UserToken", "{proxy}");
    assert_eq!(proxy["endpoint"]["service"]["name"], "numo-console-plugin", "{proxy}");
    assert_eq!(proxy["endpoint"]["service"]["namespace"], "numo-system", "{proxy}");
    assert_eq!(proxy["endpoint"]["service"]["port"], 9443, "{proxy}");
    let crd = crds.get(MutexRunConfig::crd_name()).await.unwrap_or_else(|e| panic!("{e}"));
    let owners = plugin.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_eq!(Some(owners[0].uid.clone()), crd.metadata.uid, "owned by numo's run-config CRD, goes with it");
    // Applying again (a restart, a second replica) changes nothing.
    assert_eq!(object::ensure(&operator, "numo-system").await, Outcome::Applied);
    let again = plugins.get(NAME).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.metadata.resource_version, plugin.metadata.resource_version);

    let _ = plugins.delete(NAME, &DeleteParams::default()).await;
    drop(world);
}
