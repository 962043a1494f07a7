//! The console plugin's PRODUCTION build, loaded as the OpenShift console loads it: numo's own HTTPS server (in this
//! process, the certificate signed by a test CA) serves `console-plugin/dist`; the console shell
//! (`console-plugin/e2e/shell`: the console 4.22's plugin loader from `@openshift/dynamic-plugin-sdk` and a share
//! scope of the console-provided modules) runs in Debian's headless Chromium, driven by
//! `console-plugin/e2e/load.mjs`, and gets the plugin's files same-origin through its server, which fetches them
//! from numo's server verifying its certificate, as the console's backend does with the service CA. The shell
//! fetches the manifest, runs `plugin-entry.js` (the module federation container), initialises it with its share
//! scope, loads the plugin's translations (`locales/en/plugin__numo-console-plugin.json`) into the console's i18next,
//! resolves every code reference (each exposed module's chunks) and renders the run config's Rollout tab and
//! a Node's Upgrade gate item against the test cluster, where numo (in this process) has completed a rollout by
//! failure domain (the Rollout tab groups its nodes and its timeline by zone).
//! Screenshots, the shell's record and the script's log are kept in `target/test-output/console-plugin-load/`.
//!
//! Needs the plugin's build and the shell's (`make test` does both): `hack/console-plugin.sh build` and
//! `cd console-plugin && npm run build:shell`; Node.js and Chromium (`hack/install-prerequisites.sh`); skipped with
//! `NUMO_SKIP_BROWSER=1`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use numo::api::RunPhase;
use numo::console_plugin::assets::{Assets, MANIFEST};
use numo::console_plugin::serve::{self, CertFiles, ReloadingCert};
use numo::console_plugin::NAME;
use numo_testkit::{browser, browser_script};
use serde_json::json;
use support::*;

/// The checks load.mjs must report, each once and passed, in this order.
const CHECKS: [&str; 14] = [
    "shell-loaded",
    "manifest-served",
    "manifest-valid",
    "entry-served",
    "container-initialised",
    "code-refs-resolved",
    "files-from-numo",
    "locales-served",
    "rollout-tab",
    "domain-groups",
    "node-status",
    "no-page-errors",
    "older-console-refused",
    "done",
];
const WORKERS: usize = 2;
/// The failure-domain label of the rollout by zone.
const ZONE: &str = "topology.kubernetes.io/zone";
/// How long load.mjs may take (it has its own limit a little shorter).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(240);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_loads_the_production_plugin_from_numos_server() -> anyhow::Result<()> {
    let manifest = format!("dist/{MANIFEST}");
    let built = [
        (manifest.as_str(), "hack/console-plugin.sh build"),
        ("e2e/shell/dist/index.html", "cd console-plugin && npm run build:shell"),
    ];
    let Some((plugin, prerequisites)) = browser_script::console_plugin("console_plugin_load", &built) else {
        return Ok(());
    };

    // A run config whose rollout numo completed, zone by zone (worker-0 in zone-a, worker-1 without a zone label):
    // the Rollout tab has a phase, nodes grouped by failure domain and a timeline to show.
    let mut setup = Setup::new("console-plugin-load", WORKERS).await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let nodes = kube::Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone());
    let zone = json!({"metadata": {"labels": {ZONE: "zone-a"}}});
    nodes.patch("worker-0", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&zone)).await?;
    let spec = json!({"healthChecks": {}, "topology": {"key": ZONE, "mode": "DomainAtATime"}});
    setup.run_config("gated", &["check"], &["workers"], spec).await?;
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let phase = serde_json::to_value(done.status.as_ref().and_then(|s| s.phase))?;
    let phase = phase.as_str().unwrap_or_else(|| panic!("the run config has no phase: {:?}", done.status)).to_string();

    // numo's plugin server, with the real build and a certificate for 127.0.0.1 signed by a CA of the test's own.
    let work = std::env::temp_dir().join(format!("numo-plugin-load-{}", std::process::id()));
    let certs = work.join("certs");
    std::fs::create_dir_all(&certs)?;
    let numo_testkit::tls::SignedCertificate { ca, cert, key } =
        numo_testkit::tls::signed_certificate("numo test console plugin CA", &["127.0.0.1", "localhost"])
            .unwrap_or_else(|e| panic!("{e}"));
    let ca_file = work.join("ca.pem");
    std::fs::write(&ca_file, ca)?;
    std::fs::write(certs.join("tls.crt"), cert)?;
    std::fs::write(certs.join("tls.key"), key)?;
    let assets = Assets::from_dir(&plugin.join("dist"))?;
    let files = assets.len();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let tls = Arc::new(serve::tls_config(Arc::new(ReloadingCert::new(CertFiles::in_dir(&certs))))?);
    let server = tokio::spawn(serve::serve(listener, tls, Arc::new(assets)));

    let out = browser::output_dir().join("console-plugin-load");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out)?;
    let kubeconfig = numo_testkit::cluster().await?.kubeconfig().to_path_buf();
    let args: Vec<String> = [
        "e2e/load.mjs",
        "--kubeconfig",
        &kubeconfig.display().to_string(),
        "--namespace",
        &setup.ns,
        "--run-config",
        "gated",
        "--node",
        "worker-0",
        "--plugin-url",
        &format!("https://{address}"),
        "--plugin-ca",
        &ca_file.display().to_string(),
        "--expect-phase",
        &phase,
        "--expect-domains",
        "zone-a,none",
        "--out",
        &out.display().to_string(),
        "--timeout-seconds",
        &(SCRIPT_TIMEOUT.as_secs() - 20).to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let checks = browser_script::run_checks(
        &prerequisites,
        &plugin,
        args,
        SCRIPT_TIMEOUT,
        "load.mjs",
        &out,
        "screenshots, shell.json and load.log",
    )
    .await;
    server.abort();
    let _ = std::fs::remove_dir_all(&work);
    let checks = checks?;
    let names: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    assert_eq!(names, CHECKS, "the checks load.mjs reported, in order");

    let check = |name: &str| checks.iter().find(|c| c["check"] == name).cloned().unwrap_or_default();
    // The files came from numo's server as the console's backend would get them.
    let manifest = check("manifest-served");
    assert_eq!(manifest["from"], format!("https://{address}/{MANIFEST}"), "{manifest}");
    assert!(manifest["contentType"].as_str().is_some_and(|t| t.starts_with("application/json")), "{manifest}");
    assert_eq!(manifest["tls"]["authorized"], true, "{manifest}");
    assert_eq!(check("manifest-valid")["name"], NAME);
    let entry = check("entry-served");
    assert!(entry["contentType"].as_str().is_some_and(|t| t.starts_with("application/javascript")), "{entry}");
    let served = check("files-from-numo");
    assert!(served["files"].as_u64().is_some_and(|n| n >= 3 && n <= files as u64), "{served} of {files} files");
    // The plugin's English catalogue, which the console loads from the plugin's base URL, came from numo too, and
    // every word the plugin showed was in it (no-page-errors counts the keys it lacked).
    let locales = check("locales-served");
    assert_eq!(locales["file"], format!("locales/en/plugin__{NAME}.json"), "{locales}");
    assert!(locales["contentType"].as_str().is_some_and(|t| t.starts_with("application/json")), "{locales}");
    assert_eq!(locales["cacheControl"], "no-cache", "{locales}");
    assert!(locales["keys"].as_u64().is_some_and(|n| n > 100), "{locales}");
    assert_eq!(check("no-page-errors")["missingKeys"], 0);
    // The production container ran: every exposed module's export resolved, the tab shows what the API says.
    let resolved = check("code-refs-resolved");
    for module in ["RolloutTab", "NodeGateStatus", "NodeGateTab", "NodeGatesPage", "runConfigActions"] {
        assert_eq!(resolved["resolved"][module], "function", "{resolved}");
    }
    assert_eq!(check("rollout-tab")["phase"], phase.as_str(), "the phase the Rollout tab shows");
    // The production plugin reads numo's status.topology: the nodes by zone in wave order, both waves done.
    let domains = check("domain-groups");
    assert_eq!(
        domains["groups"],
        json!([
            {"domain": "zone-a", "state": "done", "header": "zone-a 1 of 1 node done done", "nodes": ["worker-0"]},
            {
                "domain": "none",
                "state": "done",
                "header": format!("(no {ZONE} label) 1 of 1 node done done"),
                "nodes": ["worker-1"]
            },
        ]),
        "{domains}"
    );
    assert_eq!(domains["timeline"][0]["text"], "zone-a (done): 1 of 1 node done", "{domains}");
    assert_eq!(check("node-status")["node"], "worker-0");
    Ok(())
}
