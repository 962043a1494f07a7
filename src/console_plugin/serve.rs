//! The console plugin's HTTPS server: the console's backend fetches the plugin's files from numo's Service
//! `numo-console-plugin` over TLS, trusting OpenShift's service CA, which issues the Service's certificate into a
//! Secret that numo's pod mounts (config/manager).
//!
//! The certificate is read when a connection arrives and read again whenever its files change: the service CA
//! rotates it, and at the first install the Secret may appear a moment after numo started. Until a certificate can
//! be read, handshakes fail and say why (once per change of the files).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::assets::Assets;

/// How long a client may take to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause after a failed `accept` (too many open files, say), so that a lasting failure does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The serving certificate's files: `tls.crt` (the chain, PEM) and `tls.key` (PEM), as the service CA writes its
/// Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertFiles {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

impl CertFiles {
    /// `tls.crt` and `tls.key` in `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self { cert: dir.join("tls.crt"), key: dir.join("tls.key") }
    }
}

/// Reads the certificate when its files change and hands the last good one to every handshake.
#[derive(Debug)]
pub struct ReloadingCert {
    files: CertFiles,
    loaded: Mutex<Loaded>,
}

#[derive(Debug, Default)]
struct Loaded {
    /// The files' modification times when they were last read.
    stamp: Option<(SystemTime, SystemTime)>,
    key: Option<Arc<CertifiedKey>>,
}

impl ReloadingCert {
    /// A resolver of the certificate in `files`; nothing is read until the first handshake.
    pub fn new(files: CertFiles) -> Self {
        Self { files, loaded: Mutex::default() }
    }

    /// The current certificate: read again if the files changed since they were last read; the last good one if
    /// they cannot be read now.
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        let stamp = modified(&self.files.cert).zip(modified(&self.files.key));
        if stamp.is_some() && stamp != loaded.stamp {
            loaded.stamp = stamp;
            match load(&self.files) {
                Ok(key) => {
                    tracing::info!(cert = %self.files.cert.display(), "console plugin: serving certificate loaded");
                    loaded.key = Some(Arc::new(key));
                }
                Err(error) => tracing::warn!(
                    cert = %self.files.cert.display(),
                    %error,
                    "console plugin: cannot read the serving certificate{}",
                    if loaded.key.is_some() { "; the previous one is still served" } else { "" }
                ),
            }
        }
        if stamp.is_none() && loaded.key.is_none() {
            tracing::debug!(
                cert = %self.files.cert.display(),
                "console plugin: no serving certificate yet (OpenShift's service CA writes it into the Secret \
                 numo-console-plugin-cert)"
            );
        }
        loaded.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The certificate chain and key in `files`, checked to belong together.
pub fn load(files: &CertFiles) -> Result<CertifiedKey, String> {
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", files.cert.display()))?;
    if chain.is_empty() {
        return Err(format!("{} holds no certificate", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| format!("{}: {e}", files.key.display()))?;
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(chain, key, &provider).map_err(|e| format!("{}: {e}", files.key.display()))
}

/// The TLS settings of the plugin's server: rustls' safe defaults, HTTP/1.1, the certificate from `resolver`.
pub fn tls_config(resolver: Arc<ReloadingCert>) -> Result<rustls::ServerConfig, rustls::Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `assets`, and with `timeline` the run configs' timelines ([`super::timeline`]), over TLS on `listener`
/// until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    assets: Arc<Assets>,
    timeline: Option<Arc<super::timeline::Source>>,
) {
    let acceptor = TlsAcceptor::from(tls);
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "console plugin: cannot accept a connection");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        tokio::spawn(connection(acceptor.clone(), stream, peer, assets.clone(), timeline.clone()));
    }
}

async fn connection(
    acceptor: TlsAcceptor,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    assets: Arc<Assets>,
    timeline: Option<Arc<super::timeline::Source>>,
) {
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            tracing::debug!(%peer, %error, "console plugin: TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "console plugin: TLS handshake timed out");
            return;
        }
    };
    let service = hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
        let (assets, timeline) = (assets.clone(), timeline.clone());
        async move {
            let path = request.uri().path();
            let mut response = match &timeline {
                Some(source) if path.starts_with(super::timeline::PREFIX) => {
                    super::timeline::respond(source, request.method(), path, request.headers()).await
                }
                _ => respond(&assets, request.method(), path),
            };
            response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
            Ok::<_, Infallible>(response)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // A client that opens a connection and sends nothing does not hold it open forever.
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    if let Err(error) = builder.serve_connection(TokioIo::new(stream), service).await {
        tracing::debug!(%peer, %error, "console plugin: connection ended with an error");
    }
}

/// The answer to `method path`: the file with its type and cache policy (no body for `HEAD`), 404 for a path
/// that is not one of the plugin's files, 405 for a method other than `GET` and `HEAD`.
pub fn respond(assets: &Assets, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let mut response = if method != Method::GET && method != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        response
    } else {
        match assets.get(path) {
            Some(asset) => {
                let length = asset.bytes.len();
                let body = if method == Method::HEAD { Bytes::new() } else { asset.bytes };
                let mut response = Response::new(Full::new(body));
                let headers = response.headers_mut();
                headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(asset.cache_control));
                headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
                response
            }
            None => text(StatusCode::NOT_FOUND, "not one of the numo console plugin's files\n"),
        }
    };
    response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn assets() -> Assets {
        Assets::from_files([("plugin-manifest.json", &b"{\"name\":\"numo-console-plugin\"}"[..])])
    }

    async fn body(response: Response<Full<Bytes>>) -> Bytes {
        response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_file_is_served_with_its_type_and_length() {
        let response = respond(&assets(), &Method::GET, "/plugin-manifest.json");
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers().clone();
        assert_eq!(headers[header::CONTENT_TYPE], "application/json; charset=utf-8");
        assert_eq!(headers[header::CONTENT_LENGTH], "30");
        assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(body(response).await, Bytes::from_static(b"{\"name\":\"numo-console-plugin\"}"));
    }

    #[tokio::test]
    async fn head_has_the_headers_and_no_body() {
        let response = respond(&assets(), &Method::HEAD, "/plugin-manifest.json");
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()[header::CONTENT_LENGTH], "30");
        assert!(body(response).await.is_empty());
    }

    #[tokio::test]
    async fn other_paths_and_methods_are_refused() {
        let missing = respond(&assets(), &Method::GET, "/../../etc/passwd");
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let post = respond(&assets(), &Method::POST, "/plugin-manifest.json");
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(post.headers()[header::ALLOW], "GET, HEAD");
    }

    #[test]
    fn no_certificate_files_means_no_certificate_yet() {
        let dir = std::env::temp_dir().join(format!("numo-no-cert-{}", std::process::id()));
        let resolver = ReloadingCert::new(CertFiles::in_dir(&dir));
        assert!(resolver.current().is_none());
    }

    #[test]
    fn a_broken_certificate_is_refused_with_its_file_named() {
        let dir = std::env::temp_dir().join(format!("numo-bad-cert-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("tls.crt"), "not a certificate");
        let _ = std::fs::write(dir.join("tls.key"), "not a key");
        let error = load(&CertFiles::in_dir(&dir)).err().unwrap_or_default();
        assert!(error.contains("tls.crt holds no certificate"), "{error}");
        assert!(ReloadingCert::new(CertFiles::in_dir(&dir)).current().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
