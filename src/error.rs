//! The operator's one error type.

use std::time::Duration;

/// Everything a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A call to the Kubernetes API failed.
    #[error("Kubernetes API call failed: {0}")]
    Kube(#[from] kube::Error),

    /// An object could not be (de)serialized.
    #[error("could not serialize or parse an object: {0}")]
    Serialization(#[from] serde_json::Error),

    /// An object misses a field the operator needs (e.g. a namespace on a namespaced object).
    #[error("object is missing {0}")]
    MissingField(&'static str),

    /// Another writer changed an object between read and write; retried at once.
    #[error("conflicting write: {0}")]
    Conflict(String),
}

impl Error {
    /// A short, bounded label for the `reconcile_errors` metric.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(_) => "kube",
            Error::Serialization(_) => "serialization",
            Error::MissingField(_) => "missing_field",
            Error::Conflict(_) => "conflict",
        }
    }

    /// How long to wait before the next attempt: a conflicting write is retried at once, anything else backs off
    /// briefly. (An invalid spec is not an error: it is a verdict in the status, and the reconcile waits for a
    /// change.)
    pub fn retry_after(&self) -> Duration {
        match self {
            Error::Conflict(_) => Duration::from_millis(200),
            Error::Kube(kube::Error::Api(status)) if status.code == 409 => Duration::from_millis(200),
            _ => Duration::from_secs(5),
        }
    }
}

/// The result type of reconcile steps.
pub type Result<T, E = Error> = std::result::Result<T, E>;
