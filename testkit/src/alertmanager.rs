//! A real Prometheus Alertmanager for tests, built from the Go module proxy by `hack/build-tools.sh alertmanager`
//! and started on a loopback port, one per test. Tests post alerts and silences to it through its v2 API, as
//! Prometheus and an admin would.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::process::{Child, Command};

/// Environment variable naming the Alertmanager binary (`hack/test.sh` sets it).
pub const BINARY_ENV: &str = "NUMO_ALERTMANAGER_BIN";

/// The smallest configuration Alertmanager starts with: every alert goes to a receiver that sends nothing.
const CONFIG: &str = "route:\n  receiver: 'null'\nreceivers:\n  - name: 'null'\n";

/// A running Alertmanager; stopped (killed) when dropped.
pub struct Alertmanager {
    /// Its base URL, e.g. `http://127.0.0.1:39123`.
    pub url: String,
    _child: Child,
    _dir: TempDir,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The binary: `$NUMO_ALERTMANAGER_BIN`, else the newest build in numo's cache (`alertmanager-*/`).
pub fn binary() -> anyhow::Result<PathBuf> {
    match crate::lock::tool(BINARY_ENV, "alertmanager-", &["alertmanager", "bin/alertmanager"]) {
        Some(binary) => Ok(binary),
        None => bail!("no Alertmanager binary: set {BINARY_ENV}, or build it with `hack/build-tools.sh alertmanager`"),
    }
}

impl Alertmanager {
    /// Starts an Alertmanager on a free loopback port and waits until it is ready.
    pub async fn start() -> anyhow::Result<Self> {
        let binary = binary()?;
        let dir = std::env::temp_dir().join(format!("numo-alertmanager-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir)?;
        let dir = TempDir(dir);
        std::fs::write(dir.0.join("alertmanager.yml"), CONFIG)?;
        let port = free_port()?;
        let url = format!("http://127.0.0.1:{port}");
        let child = Command::new(&binary)
            .arg(format!("--config.file={}", dir.0.join("alertmanager.yml").display()))
            .arg(format!("--storage.path={}", dir.0.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let alertmanager = Self { url, _child: child, _dir: dir };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while request(&alertmanager.url, "GET", "/-/ready", None).await.is_err() {
            if tokio::time::Instant::now() > deadline {
                bail!("Alertmanager at {} was not ready within 30s", alertmanager.url);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(alertmanager)
    }

    /// Fires an alert with these labels (as Prometheus posts it: it stays active for an hour unless resolved).
    pub async fn fire(&self, labels: &[(&str, &str)]) -> anyhow::Result<()> {
        let labels: serde_json::Map<String, Value> =
            labels.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
        let ends = std::time::SystemTime::now() + Duration::from_secs(3600);
        let ends = k8s_openapi::jiff::Timestamp::try_from(ends)?.to_string();
        let body = serde_json::json!([{"labels": labels, "endsAt": ends}]);
        request(&self.url, "POST", "/api/v2/alerts", Some(body)).await?;
        Ok(())
    }

    /// Silences every alert named `alertname` for an hour; returns the silence's ID.
    pub async fn silence(&self, alertname: &str) -> anyhow::Result<String> {
        let now = k8s_openapi::jiff::Timestamp::now();
        let ends = now + Duration::from_secs(3600);
        let body = serde_json::json!({
            "matchers": [{"name": "alertname", "value": alertname, "isRegex": false, "isEqual": true}],
            "startsAt": now.to_string(), "endsAt": ends.to_string(),
            "createdBy": "numo tests", "comment": "maintenance",
        });
        let answer = request(&self.url, "POST", "/api/v2/silences", Some(body)).await?;
        Ok(answer["silenceID"].as_str().unwrap_or_default().to_string())
    }

    /// The alerts Alertmanager lists as active, unsilenced and uninhibited.
    pub async fn active(&self) -> anyhow::Result<Vec<Value>> {
        let answer =
            request(&self.url, "GET", "/api/v2/alerts?active=true&silenced=false&inhibited=false", None).await?;
        Ok(answer.as_array().cloned().unwrap_or_default())
    }
}

/// A free TCP port on the loopback interface.
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// One request; the answer's JSON (Null when it has none).
async fn request(base: &str, method: &str, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<bytes::Bytes>>();
    let bytes = body.map(|b| b.to_string()).unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(bytes::Bytes::from(bytes)))?;
    let response = client.request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!("{method} {path}: HTTP {status}: {}", String::from_utf8_lossy(&body));
    }
    Ok(serde_json::from_slice(&body).unwrap_or(Value::Null))
}
