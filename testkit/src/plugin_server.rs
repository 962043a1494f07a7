//! numo's console plugin server for the browser tests: a directory of the plugin's built files
//! (`console-plugin/dist`) served over HTTPS by numo's own server ([`numo::console_plugin::serve`]) in the test's
//! process, on a free port of 127.0.0.1, with a certificate for 127.0.0.1 signed by a CA of the test's own, which
//! the console shell's server (`console-plugin/e2e/shell/server.mjs`) trusts as the console's backend trusts the
//! service CA. With a [`Source`], it serves the timelines too (`/api/timeline/...`, read as the user whose token
//! the request carries), as `numo run` does.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use numo::console_plugin::assets::Assets;
use numo::console_plugin::serve::{self, CertFiles, ReloadingCert};
pub use numo::console_plugin::timeline::Source;

/// numo's plugin server, serving until dropped.
pub struct PluginServer {
    /// Its address, `127.0.0.1:<port>`.
    pub address: std::net::SocketAddr,
    /// The PEM file of the CA that signed its certificate.
    pub ca_file: PathBuf,
    /// How many files it serves.
    pub files: usize,
    work: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl PluginServer {
    /// Serves the plugin's files in `dist` (which must hold a build: its manifest) over HTTPS, and with `timeline`
    /// the run configs' timelines.
    pub async fn start(dist: &Path, timeline: Option<Source>) -> anyhow::Result<Self> {
        static SERVERS: AtomicUsize = AtomicUsize::new(0);
        let work = std::env::temp_dir().join(format!(
            "numo-plugin-server-{}-{}",
            std::process::id(),
            SERVERS.fetch_add(1, Ordering::Relaxed)
        ));
        let certs = work.join("certs");
        std::fs::create_dir_all(&certs)?;
        let crate::tls::SignedCertificate { ca, cert, key } =
            crate::tls::signed_certificate("numo test console plugin CA", &["127.0.0.1", "localhost"])?;
        let ca_file = work.join("ca.pem");
        std::fs::write(&ca_file, ca)?;
        std::fs::write(certs.join("tls.crt"), cert)?;
        std::fs::write(certs.join("tls.key"), key)?;
        let assets = Assets::from_dir(dist)?;
        let files = assets.len();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let tls = Arc::new(serve::tls_config(Arc::new(ReloadingCert::new(CertFiles::in_dir(&certs))))?);
        let task = tokio::spawn(serve::serve(listener, tls, Arc::new(assets), timeline.map(Arc::new)));
        Ok(Self { address, ca_file, files, work, task })
    }

    /// Its URL, `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.address)
    }

    /// The arguments that point the console shell's scripts (`e2e/run.mjs`, `e2e/load.mjs`) at it: `--plugin-url`
    /// and `--plugin-ca`.
    pub fn script_args(&self) -> Vec<String> {
        vec!["--plugin-url".into(), self.url(), "--plugin-ca".into(), self.ca_file.display().to_string()]
    }
}

impl Drop for PluginServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.work);
    }
}
