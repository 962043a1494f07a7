//! The Kubernetes Events a plan publishes about the run config.

/// A Kubernetes Event to publish about the run config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Warning (true) or Normal.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What numo did.
    pub action: &'static str,
    /// A sentence for people.
    pub note: String,
}

impl Notice {
    /// A Normal Event.
    pub fn normal(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: false, reason, action, note }
    }

    /// A Warning Event.
    pub fn warning(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: true, reason, action, note }
    }
}
