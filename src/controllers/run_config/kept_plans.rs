//! What each run config's plans keep between them ([`plan::Kept`]), held by the controller for as long as the run
//! config lives.

use std::collections::HashMap;
use std::sync::Mutex;

use super::plan;

/// Each run config's [`plan::Kept`], by `namespace/name`.
#[derive(Default)]
pub struct KeptPlans(Mutex<HashMap<String, plan::Kept>>);

impl KeptPlans {
    /// What the plans of run config `key` keep (shared: the next plan finds what this one keeps).
    pub fn of(&self, key: &str) -> plan::Kept {
        let mut all = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        all.entry(key.to_string()).or_default().clone()
    }

    /// Forgets what the plans of run config `key` kept (it is gone).
    pub fn forget(&self, key: &str) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(key);
    }
}
