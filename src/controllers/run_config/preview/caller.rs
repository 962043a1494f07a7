//! How `numo plan` answers what its plan asks when a node would start, as the operator's reconcile does but with the
//! caller's own credentials: the pods on those nodes are listed with the caller's client, and the alerts are asked of
//! the Alertmanager the caller names (with the caller's token). Where the caller names none, no alert is taken to
//! fire, and the preview says so.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::alerts::{AlertmanagerConfig, Bearer, FiringAlert};
use crate::controllers::run_config::on_demand::Ask;
use crate::controllers::run_config::snapshot::{BudgetPods, BudgetView, Source};

/// The caller's answers.
pub struct Caller<'a> {
    /// The caller's client.
    pub client: &'a kube::Client,
    /// The Alertmanager to ask; None when the caller named none.
    pub alertmanager: Option<&'a AlertmanagerConfig>,
    /// Whether the alerts were asked for while no Alertmanager was named.
    assumed: AtomicBool,
}

impl<'a> Caller<'a> {
    /// Answers with `client`, asking `alertmanager` for the alerts.
    pub fn new(client: &'a kube::Client, alertmanager: Option<&'a AlertmanagerConfig>) -> Self {
        Self { client, alertmanager, assumed: AtomicBool::new(false) }
    }

    /// What the preview assumed in place of an answer.
    pub fn notes(&self) -> Vec<String> {
        match self.assumed.load(Ordering::Relaxed) {
            true => vec![NO_ALERTMANAGER.to_string()],
            false => Vec::new(),
        }
    }
}

/// The note of a preview that took no alert to fire.
pub const NO_ALERTMANAGER: &str = "the alert check is shown as if no matching alert fired: to have numo plan ask \
     Alertmanager with your token, as the operator does when a node would start, give --alertmanager-url (on \
     OpenShift, https:// and the host of the route alertmanager-main in openshift-monitoring) and \
     --alertmanager-ca-file (the CA that signs its certificate)";

impl Ask for Caller<'_> {
    async fn budget_pods(&self, budgets: &[BudgetView], nodes: &[String]) -> Source<BudgetPods> {
        crate::controllers::run_config::observe::budget_pods(self.client, budgets, nodes).await
    }

    async fn firing(&self, matchers: &[String]) -> Source<Vec<FiringAlert>> {
        match self.alertmanager {
            Some(alertmanager) => crate::alerts::firing(alertmanager, matchers).await,
            None => {
                self.assumed.store(true, Ordering::Relaxed);
                Ok(Vec::new())
            }
        }
    }
}

/// Which Alertmanager `numo plan` asks, as its options say (`--alertmanager-url`, `--alertmanager-ca-file`,
/// `--alertmanager-token-file`).
#[derive(Clone, Debug, Default)]
pub struct AlertmanagerArgs {
    /// Alertmanager without `/api/v2`; None or empty: none is asked.
    pub url: Option<String>,
    /// The CAs that sign its certificate (none: only an `http://` Alertmanager can be asked).
    pub ca_file: Option<PathBuf>,
    /// The token to send instead of the kubeconfig's.
    pub token_file: Option<PathBuf>,
}

impl AlertmanagerArgs {
    /// The Alertmanager to ask, if a URL is given: sent the token of `token_file`, else the token `kubeconfig`
    /// authenticates with, if it has one.
    pub fn config(&self, kubeconfig: &kube::Config) -> Option<AlertmanagerConfig> {
        let url = self.url.as_deref().map(str::trim).filter(|url| !url.is_empty())?;
        Some(AlertmanagerConfig {
            url: url.to_string(),
            ca_file: self.ca_file.clone().unwrap_or_default(),
            token_file: self.token_file.clone().unwrap_or_default(),
            token: self.token_file.is_none().then(|| token(kubeconfig)).flatten(),
            ..Default::default()
        })
    }
}

/// The bearer token `kubeconfig` authenticates with (its `token`, else what its `tokenFile` holds); None for other
/// credentials (a client certificate, an exec plugin), which numo cannot send on.
pub fn token(kubeconfig: &kube::Config) -> Option<Bearer> {
    use secrecy::ExposeSecret;
    let auth = &kubeconfig.auth_info;
    let given = auth.token.as_ref().map(|t| t.expose_secret().to_string());
    let read = || std::fs::read_to_string(auth.token_file.as_ref()?).ok();
    given.or_else(read).map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).map(Bearer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(token: Option<&str>, token_file: Option<&str>) -> kube::Config {
        let mut config = kube::Config::new("https://api.example:6443".parse().unwrap_or_default());
        config.auth_info.token = token.map(|t| secrecy::SecretString::from(t.to_string()));
        config.auth_info.token_file = token_file.map(String::from);
        config
    }

    #[test]
    fn the_callers_own_token_is_sent_unless_a_token_file_is_given() {
        let config = kubeconfig(Some("sha256~mine"), None);
        let url = Some("https://am.apps.example".to_string());
        let args = AlertmanagerArgs { url: url.clone(), ca_file: Some("ca.crt".into()), token_file: None };
        let asked = args.config(&config).unwrap_or_default();
        assert_eq!(asked.token, Some(Bearer("sha256~mine".into())));
        assert_eq!((asked.url.as_str(), asked.ca_file), ("https://am.apps.example", PathBuf::from("ca.crt")));
        assert_eq!(format!("{:?}", asked.token), "Some(Bearer(redacted))", "a token is never printed");
        let args = AlertmanagerArgs { url, ca_file: None, token_file: Some("token".into()) };
        let given = args.config(&config).unwrap_or_default();
        assert_eq!((given.token, given.token_file), (None, PathBuf::from("token")));
    }

    #[test]
    fn no_url_asks_no_alertmanager() {
        let config = kubeconfig(Some("sha256~mine"), None);
        assert_eq!(AlertmanagerArgs::default().config(&config), None);
        assert_eq!(AlertmanagerArgs { url: Some(" ".into()), ..Default::default() }.config(&config), None);
    }

    #[test]
    fn a_kubeconfig_without_a_token_sends_none() {
        assert_eq!(token(&kubeconfig(None, None)), None);
        assert_eq!(token(&kubeconfig(None, Some("/nonexistent/token"))), None);
        assert_eq!(token(&kubeconfig(Some(" "), None)), None);
    }
}
