//! numo's plugin server serves a run config's timeline (`GET /api/timeline/<namespace>/<name>`, what the console's
//! plugin proxy forwards with the logged-in user's token) read as that user, never as numo: on the real API server,
//! with numo running in this process and real ServiceAccount tokens (TokenRequest) as the users' tokens. A user who
//! may read the run config (the `view` role in its namespace, which numo's viewer role is aggregated into) gets the
//! timeline, with the projection numo's planner holds while the rollout is under way; one who may not gets 403 and
//! nothing of it; a request without a token gets 401.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, PostParams};
use numo::api::RunPhase;
use numo::console_plugin::assets::{Assets, MANIFEST};
use numo::console_plugin::serve::{self, CertFiles, ReloadingCert};
use numo::console_plugin::timeline::Source;
use serde_json::{json, Value};
use support::*;

/// numo's plugin server in this process, serving the timelines with `projections`: its address, the CA to trust.
async fn plugin_server(
    work: &Path,
    projections: numo::projections::Projections,
) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let certs = work.join("certs");
    std::fs::create_dir_all(&certs)?;
    let signed = numo_testkit::tls::signed_certificate("timeline test CA", &["127.0.0.1"])?;
    std::fs::write(work.join("ca.pem"), signed.ca)?;
    std::fs::write(certs.join("tls.crt"), signed.cert)?;
    std::fs::write(certs.join("tls.key"), signed.key)?;
    let assets = Assets::from_files([(MANIFEST, &br#"{"name":"numo-console-plugin"}"#[..])]);
    let tls = Arc::new(serve::tls_config(Arc::new(ReloadingCert::new(CertFiles::in_dir(&certs))))?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let source = Source { config: numo_testkit::cluster().await?.config().clone(), projections };
    let task = tokio::spawn(serve::serve(listener, tls, Arc::new(assets), Some(Arc::new(source))));
    Ok((address, task))
}

/// GETs `path` from numo's server at `address` with `token` as bearer (none: no Authorization), as the console's
/// proxy does: (HTTP status, JSON body).
async fn get(address: SocketAddr, ca: &Path, path: &str, token: Option<&str>) -> anyhow::Result<(u16, Value)> {
    let (ca, url, token) = (ca.to_path_buf(), format!("https://{address}{path}"), token.map(str::to_string));
    tokio::task::spawn_blocking(move || {
        let mut curl = Command::new("curl");
        curl.args(["--silent", "--show-error", "--max-time", "40", "--cacert"]).arg(&ca);
        if let Some(token) = &token {
            curl.args(["--header", &format!("Authorization: Bearer {token}")]);
        }
        let output = curl.args(["--write-out", "\n%{http_code}"]).arg(&url).output()?;
        anyhow::ensure!(output.status.success(), "curl {url}: {}", String::from_utf8_lossy(&output.stderr));
        let out = String::from_utf8_lossy(&output.stdout).to_string();
        let (body, status) = out.rsplit_once('\n').unwrap_or(("", &out));
        Ok((status.trim().parse()?, serde_json::from_str(body).unwrap_or(Value::Null)))
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_is_served_to_whoever_may_read_the_run_config_and_to_no_one_else() -> anyhow::Result<()> {
    let mut setup = Setup::new("console-plugin-timeline", 2).await?;
    setup.check_workers("gated", job_spec("4s", false), None, json!({"healthChecks": {}})).await?;
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;

    let work = std::env::temp_dir().join(format!("numo-timeline-test-{}", std::process::id()));
    let (address, server) = plugin_server(&work, setup.projections.clone()).await?;
    let ca = work.join("ca.pem");
    let path = format!("/api/timeline/{}/gated", setup.ns);

    // Two people with real tokens: one with the `view` role in the run config's namespace, one with nothing.
    let viewer = numo_testkit::users::service_account(&setup.client, &setup.ns, "timeline-viewer").await?;
    let stranger = numo_testkit::users::service_account(&setup.client, &setup.ns, "timeline-stranger").await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "timeline-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "ServiceAccount", "name": "timeline-viewer", "namespace": setup.ns}],
    }))?;
    Api::<RoleBinding>::namespaced(setup.client.clone(), &setup.ns).create(&PostParams::default(), &binding).await?;
    let groups = ["system:serviceaccounts".to_string(), "system:authenticated".to_string()];
    for resource in ["mutexrunconfigs", "configmaps"] {
        let group = if resource == "configmaps" { "" } else { "openshift-optional.skrzypek.io" };
        numo_testkit::rbac::wait_until_granted(
            &setup.client,
            &viewer.name,
            &groups,
            (group, resource, "get", Some(&setup.ns)),
        )
        .await?;
    }

    // Under way: the viewer gets the timeline, the nodes still to go projected by numo's planner.
    setup.upgrade_cluster(NEW).await?;
    setup.wait_phase("gated", RunPhase::Upgrading, ROLLOUT).await?;
    let (status, drawing) = get(address, &ca, &path, Some(&viewer.token)).await?;
    assert_eq!(status, 200, "{drawing}");
    assert_eq!(drawing["runConfig"], format!("{}/gated", setup.ns));
    assert_eq!(drawing["rollout"], NEW, "{drawing}");
    assert_eq!(drawing["projection"], "Planner", "numo's planner holds a projection while it runs: {drawing}");
    assert_eq!(drawing["unread"], json!([]), "the viewer reads the record too: {drawing}");
    let rows = drawing["rows"].as_array().cloned().unwrap_or_default();
    let nodes: Vec<&str> = rows.iter().filter_map(|r| r["node"].as_str()).collect();
    assert_eq!(nodes.len(), 2, "a row per worker: {drawing}");
    assert!(
        rows.iter().flat_map(|r| r["segments"].as_array().cloned().unwrap_or_default()).any(|s| s["projected"] == true),
        "something still to go is projected: {drawing}"
    );

    // The stranger gets the API server's refusal, and nothing of the timeline.
    let (status, refused) = get(address, &ca, &path, Some(&stranger.token)).await?;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["message"].as_str().is_some_and(|m| m.contains("forbidden")), "{refused}");
    assert_eq!(refused.as_object().map(|o| o.len()), Some(2), "only code and message: {refused}");
    assert_eq!(refused["code"], 403);
    // No token: 401; a token the API server does not take: its 401, passed on.
    let (status, anonymous) = get(address, &ca, &path, None).await?;
    assert_eq!(status, 401, "{anonymous}");
    assert!(anonymous.get("rows").is_none());
    let (status, _) = get(address, &ca, &path, Some("not-a-token")).await?;
    assert_eq!(status, 401);
    // A run config that is not there: the API server's 404.
    let (status, missing) =
        get(address, &ca, &format!("/api/timeline/{}/absent", setup.ns), Some(&viewer.token)).await?;
    assert_eq!(status, 404, "{missing}");

    // Done: every node's row done, drawn from the record and the status.
    setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let (status, drawing) = get(address, &ca, &path, Some(&viewer.token)).await?;
    assert_eq!(status, 200, "{drawing}");
    let outcomes: Vec<&str> =
        drawing["rows"].as_array().into_iter().flatten().filter_map(|r| r["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["Done", "Done"], "{drawing}");

    server.abort();
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}
