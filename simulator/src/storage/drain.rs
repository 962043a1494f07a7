//! The machine-config controller's drain of a node's OSD pods (openshift/machine-config-operator
//! `pkg/controller/drain/drain_controller.go` `drainNode`, with `k8s.io/kubectl/pkg/drain`'s eviction loop): each OSD
//! pod on the node is evicted through the Eviction API as the controller's ServiceAccount; the API server refuses
//! with 429 while a PodDisruptionBudget covering the pod allows no disruption, and the drain tries again every
//! [`DrainTiming::eviction_retry`]. An attempt that has not evicted every pod after [`DrainTiming::attempt`] (or that
//! met another error, such as a pod two budgets cover) fails; the next starts [`DrainTiming::requeue`] later. Then
//! it waits until the evicted pods are gone.
//!
//! Only OSD pods are evicted: the simulated drain leaves every other pod where it is (the test world's Jobs
//! included), as it always has.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, EvictParams, ListParams};
use kube::ResourceExt;
use tokio::time::Instant;

use super::budgets::DEFAULT_BUDGET;
use super::ledger::Ledger;
use super::{DrainTiming, APP_LABEL, NAMESPACE, OSD_APP};

/// How often the drain looks whether an evicted pod is gone (`waitForDelete`'s interval).
const DELETE_POLL: Duration = Duration::from_secs(1);

/// Evicts OSD pods for the drain controller.
#[derive(Clone)]
pub struct Drainer {
    pods: Api<Pod>,
    timing: DrainTiming,
    ledger: Arc<Mutex<Ledger>>,
}

/// Why one eviction did not pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// 429: a budget allows no disruption now (its name, from the API's cause, when given).
    Budget(Option<String>),
    /// Anything else: the attempt fails.
    Error(String),
}

impl Drainer {
    /// A drainer acting through `client` (the machine-config controller's), recording into `ledger`.
    pub fn new(client: kube::Client, timing: DrainTiming, ledger: Arc<Mutex<Ledger>>) -> Self {
        Self { pods: Api::namespaced(client, NAMESPACE), timing, ledger }
    }

    /// Drains `node`'s OSD pods; returns once every one of them is evicted and gone (retrying for ever, as the MCO
    /// does). A node without OSD pods is drained at once.
    pub async fn drain(&self, node: &str) {
        let mut started = false;
        loop {
            let attempt_started = Instant::now();
            match self.attempt(node, attempt_started, &mut started).await {
                Ok(()) => break,
                Err(error) => {
                    tracing::info!(%node, %error, requeue = ?self.timing.requeue,
                        "drain controller: drain failed; waiting, then retrying");
                    tokio::time::sleep(self.timing.requeue).await;
                }
            }
        }
        if started {
            self.record(|ledger| ledger.drained(Instant::now(), node));
            tracing::info!(%node, "drain controller: OSD pods evicted");
        }
    }

    /// One attempt (`drain.RunNodeDrain` under the helper's timeout).
    async fn attempt(&self, node: &str, attempt_started: Instant, started: &mut bool) -> Result<(), String> {
        let params =
            ListParams::default().labels(&format!("{APP_LABEL}={OSD_APP}")).fields(&format!("spec.nodeName={node}"));
        let pods = self.pods.list(&params).await.map_err(|e| format!("listing the node's pods: {e}"))?.items;
        let pods: Vec<Pod> = pods.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        if pods.is_empty() {
            return Ok(());
        }
        if !*started {
            *started = true;
            self.record(Ledger::drain_started);
        }
        for pod in &pods {
            let name = pod.name_any();
            loop {
                match self.evict(&name).await {
                    Ok(()) => {
                        tracing::info!(%node, pod = %name, "drain controller: evicted pod");
                        break;
                    }
                    Err(Refusal::Budget(budget)) => {
                        let blocking = budget.as_deref().is_some_and(|b| b != DEFAULT_BUDGET);
                        self.record(|ledger| ledger.refused(Instant::now(), node, budget.as_deref(), blocking));
                        tracing::info!(%node, pod = %name, budget = budget.as_deref().unwrap_or("?"),
                            "drain controller: error when evicting pods/{name:?} -n {NAMESPACE:?} (will retry after \
                             {:?}): Cannot evict pod as it would violate the pod's disruption budget.",
                            self.timing.eviction_retry);
                        if attempt_started.elapsed() + self.timing.eviction_retry > self.timing.attempt {
                            return Err(format!("global timeout reached: {:?}", self.timing.attempt));
                        }
                        tokio::time::sleep(self.timing.eviction_retry).await;
                    }
                    Err(Refusal::Error(error)) => return Err(error),
                }
            }
        }
        for pod in &pods {
            self.wait_gone(pod, attempt_started).await?;
        }
        Ok(())
    }

    /// Evicts pod `name` (a pod already gone counts as evicted).
    async fn evict(&self, name: &str) -> Result<(), Refusal> {
        match self.pods.evict(name, &EvictParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 429 => {
                let causes = status.details.as_ref().map(|d| d.causes.as_slice()).unwrap_or_default();
                Err(Refusal::Budget(causes.iter().find_map(|c| budget_named(&c.message))))
            }
            Err(error) => Err(Refusal::Error(format!("error when evicting pods/{name:?} -n {NAMESPACE:?}: {error}"))),
        }
    }

    /// Waits until `pod` is gone or replaced by another of its name.
    async fn wait_gone(&self, pod: &Pod, attempt_started: Instant) -> Result<(), String> {
        let name = pod.name_any();
        loop {
            match self.pods.get_opt(&name).await {
                Ok(None) => return Ok(()),
                Ok(Some(now)) if now.uid() != pod.uid() => return Ok(()),
                Ok(Some(_)) | Err(_) if attempt_started.elapsed() > self.timing.attempt => {
                    return Err(format!("pod {name} not gone after {:?}", self.timing.attempt))
                }
                _ => tokio::time::sleep(DELETE_POLL).await,
            }
        }
    }

    fn record(&self, f: impl FnOnce(&mut Ledger)) {
        if let Ok(mut ledger) = self.ledger.lock() {
            f(&mut ledger);
        }
    }
}

/// The budget a 429's cause names: `The disruption budget <name> needs ...` or `... <name> is still being processed
/// by the server.` (`pkg/registry/core/pod/storage/eviction.go`).
pub fn budget_named(message: &str) -> Option<String> {
    let rest = message.strip_prefix("The disruption budget ")?;
    rest.split_whitespace().next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusing_budget_is_read_from_the_apis_cause() {
        assert_eq!(
            budget_named("The disruption budget rook-ceph-osd-rack-rack1 needs 3 healthy pods and has 3 currently"),
            Some("rook-ceph-osd-rack-rack1".into())
        );
        assert_eq!(
            budget_named("The disruption budget rook-ceph-osd is still being processed by the server."),
            Some("rook-ceph-osd".into())
        );
        assert_eq!(budget_named("something else"), None);
    }
}
