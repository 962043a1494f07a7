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
//! `hack/console-plugin.sh shell`; Node.js and Chromium (`hack/install-prerequisites.sh`); skipped with
//! `NUMO_SKIP_BROWSER=1`.

mod support;

use std::time::Duration;

use numo::api::RunPhase;
use numo::console_plugin::assets::MANIFEST;
use numo::console_plugin::NAME;
use numo_testkit::browser_script;
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
    let Some(mut shell) = browser_script::console_shell("console_plugin_load") else {
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
    shell.projections = setup.projections.clone();
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let phase = serde_json::to_value(done.status.as_ref().and_then(|s| s.phase))?;
    let phase = phase.as_str().unwrap_or_else(|| panic!("the run config has no phase: {:?}", done.status)).to_string();

    // numo's plugin server (the real build, a certificate for 127.0.0.1 signed by a CA of the test's own) and the
    // shell loading the plugin from it.
    let args = [
        "--namespace",
        &setup.ns,
        "--run-config",
        "gated",
        "--node",
        "worker-0",
        "--expect-phase",
        &phase,
        "--expect-domains",
        "zone-a,none",
    ];
    let browser_script::ShellChecks { checks, plugin_url, files } = shell
        .run(
            "load.mjs",
            &args,
            "console-plugin-load",
            SCRIPT_TIMEOUT,
            "screenshots, shell.json, load.log and plugin-requests.json",
        )
        .await?;
    let names: Vec<&str> = checks.iter().filter_map(|c| c["check"].as_str()).collect();
    assert_eq!(names, CHECKS, "the checks load.mjs reported, in order");

    let check = |name: &str| checks.iter().find(|c| c["check"] == name).cloned().unwrap_or_default();
    // The files came from numo's server as the console's backend would get them.
    let manifest = check("manifest-served");
    assert_eq!(manifest["from"], format!("{plugin_url}/{MANIFEST}"), "{manifest}");
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
    // The timeline's headers are numo's (laid out by numo, fetched through the console's plugin proxy as the user).
    assert_eq!(domains["timeline"][0]["text"], "zone-a (done): 1 of 1 node done", "{domains}");
    let fetches = domains["timelineFetches"].as_array().cloned().unwrap_or_default();
    let path = format!("/api/proxy/plugin/{NAME}/numo/api/timeline/{}/gated", setup.ns);
    assert!(!fetches.is_empty(), "{domains}");
    assert!(fetches.iter().all(|f| f["status"] == 200 && f["path"] == path.as_str()), "{domains}");
    assert_eq!(check("node-status")["node"], "worker-0");
    Ok(())
}
