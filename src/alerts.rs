//! The alerts that hold a rollout, read from Alertmanager's v2 API: active, unsilenced and uninhibited alerts that
//! match a run config's matchers.
//!
//! Which Alertmanager numo asks, and with which credentials, is the operator's setting ([`AlertmanagerConfig`]), never
//! a run config's: numo sends its ServiceAccount token with the request, and a run config that could name the URL
//! could have that token sent anywhere. On OpenShift the default is `alertmanager-main` in `openshift-monitoring`,
//! reached over TLS verified with the service CA, authenticated with numo's token (the `monitoring-alertmanager-view`
//! role in `openshift-monitoring` lets it read alerts).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde::Deserialize;

/// Where the ServiceAccount token and the service CA are mounted in a pod.
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// How long one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Which Alertmanager numo asks, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlertmanagerConfig {
    /// Base URL of Alertmanager (`http://` or `https://`), without `/api/v2`.
    pub url: String,
    /// PEM file of the CAs an `https` Alertmanager's certificate is verified with.
    pub ca_file: PathBuf,
    /// File holding the bearer token sent with each query (re-read every time: the kubelet rotates it); no
    /// `Authorization` header when the file does not exist.
    pub token_file: PathBuf,
    /// A bearer token sent with each query instead of `token_file`'s (`numo plan` sends the caller's own).
    pub token: Option<Bearer>,
    /// How often numo asks again while alerts hold a rollout (alerts and silences come without an event).
    pub poll_interval: Duration,
}

impl Default for AlertmanagerConfig {
    fn default() -> Self {
        Self {
            url: "https://alertmanager-main.openshift-monitoring.svc:9094".into(),
            ca_file: Path::new(SERVICE_ACCOUNT).join("service-ca.crt"),
            token_file: Path::new(SERVICE_ACCOUNT).join("token"),
            token: None,
            poll_interval: Duration::from_secs(30),
        }
    }
}

/// A bearer token held in memory; its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Bearer(pub String);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Bearer(redacted)")
    }
}

/// An alert that fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FiringAlert {
    /// Its `alertname` label.
    pub name: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
}

impl FiringAlert {
    /// `alertname` and the labels that say where, as a short phrase: `KubeNodeNotReady (severity=critical,
    /// node=worker-3)`.
    pub fn describe(&self) -> String {
        let shown: Vec<String> = self
            .labels
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "alertname" | "prometheus" | "openshift_io_alert_source"))
            .take(4)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if shown.is_empty() {
            self.name.clone()
        } else {
            format!("{} ({})", self.name, shown.join(", "))
        }
    }
}

/// An alert as Alertmanager's `GET /api/v2/alerts` returns it (the fields numo reads).
#[derive(Debug, Deserialize)]
struct Gettable {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    status: Option<GettableStatus>,
}

#[derive(Debug, Deserialize)]
struct GettableStatus {
    #[serde(default)]
    state: String,
}

/// The query of the alerts matching `matchers` that are active, not silenced and not inhibited.
pub fn query(matchers: &[String]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("active", "true").append_pair("silenced", "false").append_pair("inhibited", "false");
    for matcher in matchers {
        query.append_pair("filter", matcher);
    }
    format!("/api/v2/alerts?{}", query.finish())
}

/// The alerts matching `matchers` that fire now (active, unsilenced, uninhibited), or why they cannot be read.
pub async fn firing(config: &AlertmanagerConfig, matchers: &[String]) -> Result<Vec<FiringAlert>, String> {
    let url = format!("{}{}", config.url.trim_end_matches('/'), query(matchers));
    let fail = |why: String| format!("Alertmanager at {} cannot be queried: {why}", config.url);
    let body = tokio::time::timeout(QUERY_TIMEOUT, get(config, &url))
        .await
        .map_err(|_| fail(format!("no answer within {}s", QUERY_TIMEOUT.as_secs())))?
        .map_err(fail)?;
    parse(&body).map_err(|e| format!("Alertmanager at {} answered what is not a list of alerts: {e}", config.url))
}

/// The alerts of a `GET /api/v2/alerts` answer that are active.
fn parse(body: &[u8]) -> Result<Vec<FiringAlert>, serde_json::Error> {
    let alerts: Vec<Gettable> = serde_json::from_slice(body)?;
    Ok(alerts
        .into_iter()
        .filter(|a| a.status.as_ref().is_none_or(|s| s.state.is_empty() || s.state == "active"))
        .map(|a| FiringAlert { name: a.labels.get("alertname").cloned().unwrap_or_default(), labels: a.labels })
        .collect())
}

async fn get(config: &AlertmanagerConfig, url: &str) -> Result<Vec<u8>, String> {
    let mut request = http::Request::get(url).header(http::header::ACCEPT, "application/json");
    let token = config.token.as_ref().map(|t| t.0.clone()).or_else(|| std::fs::read_to_string(&config.token_file).ok());
    if let Some(token) = token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {}", token.trim()));
    }
    let request = request.body(Empty::<Bytes>::new()).map_err(|e| e.to_string())?;
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls(&config.ca_file)?)
        .https_or_http()
        .enable_http1()
        .build();
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let response = client.request(request).await.map_err(|e| format!("{e:?}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        return Err(format!("HTTP {status}: {}", text.trim().chars().take(300).collect::<String>()));
    }
    Ok(body.to_vec())
}

/// TLS that trusts the CAs of `ca_file` (none when it does not exist: an `https` query then fails, saying so).
fn tls(ca_file: &Path) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    if ca_file.exists() {
        for cert in CertificateDer::pem_file_iter(ca_file).map_err(|e| format!("{}: {e}", ca_file.display()))? {
            let cert = cert.map_err(|e| format!("{}: {e}", ca_file.display()))?;
            roots.add(cert).map_err(|e| format!("{}: {e}", ca_file.display()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_asks_for_active_unsilenced_uninhibited_alerts_matching_every_matcher() {
        let q = query(&[r#"severity="critical""#.into(), r#"namespace=~"openshift-.*""#.into()]);
        assert_eq!(
            q,
            "/api/v2/alerts?active=true&silenced=false&inhibited=false\
             &filter=severity%3D%22critical%22&filter=namespace%3D%7E%22openshift-.*%22"
        );
    }

    #[test]
    fn only_active_alerts_are_read_with_their_labels() {
        let body = br#"[
            {"labels": {"alertname": "KubeNodeNotReady", "severity": "critical", "node": "worker-3"},
             "status": {"state": "active", "silencedBy": [], "inhibitedBy": []}},
            {"labels": {"alertname": "Old", "severity": "critical"}, "status": {"state": "suppressed"}}
        ]"#;
        let alerts = parse(body).unwrap_or_default();
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].describe(), "KubeNodeNotReady (node=worker-3, severity=critical)");
        assert!(parse(b"{\"error\": 1}").is_err());
    }
}
