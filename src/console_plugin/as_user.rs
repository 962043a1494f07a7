//! A Kubernetes client that acts as the console's logged-in user: the bearer token the console's plugin proxy
//! forwards (`authorization: UserToken` in the ConsolePlugin's `spec.proxy`), sent to numo's own API server (its
//! URL and CA), and nothing of numo's own identity. Whatever it reads, the API server authorizes as that user.

use std::time::Duration;

use http::HeaderMap;

/// How long connecting to the API server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the API server may take to answer one read.
const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// The longest token taken (a ServiceAccount token is about a kilobyte; OpenShift's OAuth tokens are shorter).
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The bearer token of `headers`' `Authorization`, if it has a plausible one.
pub fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    let plausible = scheme.eq_ignore_ascii_case("bearer")
        && !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && token.bytes().all(|b| b.is_ascii_graphic());
    plausible.then(|| token.to_string())
}

/// `numo`'s client configuration (`base`: its API server URL, CA and settings) with only `token` as credentials.
pub fn config(base: &kube::Config, token: &str) -> kube::Config {
    let mut config = base.clone();
    config.auth_info = kube::config::AuthInfo { token: Some(token.to_string().into()), ..Default::default() };
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(READ_TIMEOUT);
    config.write_timeout = Some(READ_TIMEOUT);
    config
}

/// A client for `base`'s API server that acts as the holder of `token`.
pub fn client(base: &kube::Config, token: &str) -> Result<kube::Client, kube::Error> {
    kube::Client::try_from(config(base, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, value.parse().expect("a header value"));
        headers
    }

    #[test]
    fn only_a_bearer_token_is_taken() {
        assert_eq!(bearer(&headers("Bearer abc.def")), Some("abc.def".to_string()));
        assert_eq!(bearer(&headers("bearer abc")), Some("abc".to_string()));
        assert_eq!(bearer(&headers("Basic dXNlcjpwYXNz")), None);
        assert_eq!(bearer(&headers("Bearer ")), None);
        assert_eq!(bearer(&headers(&format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1)))), None);
        assert_eq!(bearer(&HeaderMap::new()), None);
    }

    #[test]
    fn the_users_client_carries_the_token_and_nothing_of_numos_identity() {
        let mut base = kube::Config::new("https://10.0.0.1:6443".parse().expect("a URL"));
        base.root_cert = Some(vec![b"ca".to_vec()]);
        base.auth_info = kube::config::AuthInfo {
            token_file: Some("/var/run/secrets/kubernetes.io/serviceaccount/token".into()),
            client_certificate_data: Some("cert".into()),
            impersonate: Some("someone".into()),
            ..Default::default()
        };
        let config = config(&base, "user-token");
        assert_eq!(config.cluster_url, base.cluster_url);
        assert_eq!(config.root_cert, base.root_cert);
        assert_eq!(config.auth_info.token_file, None);
        assert_eq!(config.auth_info.client_certificate_data, None);
        assert_eq!(config.auth_info.impersonate, None);
        let token = config.auth_info.token.as_ref().map(|t| secrecy::ExposeSecret::expose_secret(t).to_string());
        assert_eq!(token.as_deref(), Some("user-token"));
        assert_eq!(config.read_timeout, Some(READ_TIMEOUT));
    }
}
