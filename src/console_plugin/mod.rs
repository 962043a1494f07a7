//! numo's OpenShift console plugin, served by numo itself: the plugin's built files (`console-plugin/`, a dynamic
//! plugin in TypeScript) over HTTPS on their own port, with the certificate OpenShift's service CA issues for the
//! Service `numo-console-plugin`, and the cluster-scoped `ConsolePlugin` object that tells the console where to
//! find them.
//!
//! - [`assets`]: the files, embedded in the binary when it is built with the `console-plugin` feature (the image
//!   is), or read from a folder (`--console-plugin-assets`, for development and tests).
//! - [`serve`]: the HTTPS server; it reads the certificate again whenever the service CA rotates it.
//! - [`object`]: the `ConsolePlugin`, applied when numo starts, owned by numo's run-config CRD so that it goes
//!   with numo's CRDs.
//! - [`timeline`]: a run config's timeline laid out, as JSON, read as the console's user ([`as_user`]) through the
//!   console's plugin proxy.
//!
//! The plugin reads and changes numo's objects as the console's logged-in user; numo lends it no privilege, and
//! reads what it serves the plugin with the user's token, never with its own.

pub mod as_user;
pub mod assets;
pub mod object;
pub mod serve;
pub mod timeline;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use assets::Assets;
use serve::{CertFiles, ReloadingCert};

/// The plugin's name: the `ConsolePlugin` object, the name in the console operator's `spec.plugins`, and the
/// name the CSV offers (`console.openshift.io/plugins`).
pub const NAME: &str = "numo-console-plugin";
/// The Service in numo's namespace that the console reaches the plugin through (config/manager).
pub const SERVICE: &str = "numo-console-plugin";
/// The Service's (and the container's) port of the plugin.
pub const PORT: u16 = 9443;

/// Where and how numo serves its console plugin (`numo run --console-plugin-*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The address of the plugin's HTTPS server.
    pub address: SocketAddr,
    /// The folder with the serving certificate (`tls.crt`, `tls.key`); `None`: the plugin is not served.
    pub cert_dir: Option<PathBuf>,
    /// A folder of built plugin files to serve instead of those in the binary.
    pub assets_dir: Option<PathBuf>,
    /// numo's namespace, where its Service `numo-console-plugin` is; `None`: no ConsolePlugin is applied.
    pub namespace: Option<String>,
}

/// Starts serving the plugin (its files, and the timelines read as the user with `timeline`), if `settings` ask
/// for it and there is a plugin to serve, and applies the ConsolePlugin in the background. Never fails numo: what
/// cannot be done is logged with what to do about it.
pub async fn start(
    settings: Settings,
    client: kube::Client,
    timeline: timeline::Source,
) -> Option<tokio::task::JoinHandle<()>> {
    let Some(cert_dir) = settings.cert_dir else {
        tracing::info!("console plugin not served (no --console-plugin-cert-dir)");
        return None;
    };
    let assets = match settings.assets_dir {
        Some(dir) => match Assets::from_dir(&dir) {
            Ok(assets) => assets,
            Err(error) => {
                tracing::warn!(%error, "console plugin not served");
                return None;
            }
        },
        None => match Assets::embedded() {
            Some(assets) => assets,
            None => {
                tracing::warn!(
                    "console plugin not served: this numo was built without it (cargo build --features \
                     console-plugin, after npm run build in console-plugin/; the image's numo has it)"
                );
                return None;
            }
        },
    };
    let tls = match serve::tls_config(Arc::new(ReloadingCert::new(CertFiles::in_dir(&cert_dir)))) {
        Ok(tls) => Arc::new(tls),
        Err(error) => {
            tracing::warn!(%error, "console plugin not served: no TLS settings");
            return None;
        }
    };
    let listener = match tokio::net::TcpListener::bind(settings.address).await {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(address = %settings.address, %error, "console plugin not served: cannot listen");
            return None;
        }
    };
    tracing::info!(
        address = %settings.address,
        files = assets.len(),
        bytes = assets.total_bytes(),
        cert_dir = %cert_dir.display(),
        "serving the console plugin over HTTPS"
    );
    if let Some(namespace) = settings.namespace {
        tokio::spawn(async move {
            match object::ensure(&client, &namespace).await {
                object::Outcome::Applied => tracing::info!(
                    plugin = NAME,
                    "ConsolePlugin applied: enable it in the console (Installed Operators, or Console settings)"
                ),
                object::Outcome::NotApplied(why) => tracing::warn!(plugin = NAME, reason = %why, "no ConsolePlugin"),
            }
        });
    }
    Some(tokio::spawn(serve::serve(listener, tls, Arc::new(assets), Some(Arc::new(timeline)))))
}
