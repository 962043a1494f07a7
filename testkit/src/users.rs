//! People with tokens: a ServiceAccount and a token for it from the API server's TokenRequest, as the console's
//! logged-in user's bearer token would be, for tests of what numo reads as that user.

use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};

/// How long a test user's token lasts, in seconds.
const TOKEN_SECONDS: i64 = 3600;

/// A person: their user name and a bearer token the API server takes.
#[derive(Clone, Debug)]
pub struct User {
    /// `system:serviceaccount:<namespace>:<name>`.
    pub name: String,
    /// The bearer token.
    pub token: String,
}

/// The ServiceAccount `namespace/name` (created if missing) and a fresh token for it.
pub async fn service_account(client: &kube::Client, namespace: &str, name: &str) -> anyhow::Result<User> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    if accounts.get_opt(name).await?.is_none() {
        let account = ServiceAccount {
            metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
            ..Default::default()
        };
        match accounts.create(&PostParams::default(), &account).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error).with_context(|| format!("creating ServiceAccount {namespace}/{name}")),
        }
    }
    let request = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(TOKEN_SECONDS), ..Default::default() },
        ..Default::default()
    };
    let issued = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .with_context(|| format!("a token for ServiceAccount {namespace}/{name}"))?;
    let token = issued.status.map(|s| s.token).context("the TokenRequest has no token")?;
    Ok(User { name: format!("system:serviceaccount:{namespace}:{name}"), token })
}
