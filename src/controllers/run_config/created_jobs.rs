//! numo reads its own Job creates. The plan asks again for a Job it asked for and has not seen yet (a `requested`
//! record: after a restart, an existing Job of that name is numo's own), so a reconcile that runs before the Job
//! cache shows a Job numo just created would create it again, for a `409 AlreadyExists`. This remembers each Job numo
//! created until the cache shows it (or for [`REMEMBERED`] at most: a Job deleted at once is asked for again).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::ResourceExt;

use super::plan::Intent;
use super::snapshot::JobView;

/// How long a created Job that the cache does not show yet is not created again.
pub const REMEMBERED: Duration = Duration::from_secs(60);

/// The Jobs numo created that its cache has not shown yet, by (namespace, name), with when they were created.
#[derive(Debug, Default)]
pub struct CreatedJobs(Mutex<HashMap<(String, String), Instant>>);

impl CreatedJobs {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<(String, String), Instant>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Forgets the Jobs the cache shows now (`seen`) and those remembered for longer than [`REMEMBERED`].
    pub fn saw(&self, seen: &[std::sync::Arc<JobView>], now: Instant) {
        self.with(|created| {
            // Nothing remembered (most reconciles): no key to build for each of the thousands of Jobs seen.
            if created.is_empty() {
                return;
            }
            for job in seen {
                created.remove(&(job.namespace.clone(), job.name.clone()));
            }
            created.retain(|_, at| now.saturating_duration_since(*at) < REMEMBERED);
        });
    }

    /// `intents` without the creates of Jobs numo created already and does not see yet.
    pub fn not_created(&self, intents: Vec<Intent>) -> Vec<Intent> {
        self.with(|created| {
            intents
                .into_iter()
                .filter(|intent| match intent {
                    Intent::CreateJob(job) => !created.contains_key(&key(job)),
                    _ => true,
                })
                .collect()
        })
    }

    /// Remembers the Jobs `intents` created.
    pub fn created(&self, intents: &[Intent], now: Instant) {
        self.with(|created| {
            for intent in intents {
                if let Intent::CreateJob(job) = intent {
                    created.insert(key(job), now);
                }
            }
        });
    }
}

fn key(job: &k8s_openapi::api::batch::v1::Job) -> (String, String) {
    (job.namespace().unwrap_or_default(), job.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::Job;
    use kube::api::ObjectMeta;

    fn create(name: &str) -> Intent {
        let metadata = ObjectMeta { name: Some(name.into()), namespace: Some("ops".into()), ..Default::default() };
        Intent::CreateJob(Box::new(Job { metadata, ..Default::default() }))
    }

    fn seen(name: &str) -> JobView {
        JobView {
            name: name.into(),
            namespace: "ops".into(),
            node: "worker-0".into(),
            rule: "ops/check".into(),
            phase: crate::jobs::JobPhase::Gate,
            attempt: 1,
            target_version: "4.16.5".into(),
            result: crate::api::JobResult::Running,
            message: None,
            deleting: false,
            holds_result: true,
            uid: format!("uid-{name}"),
            creator: "numo".into(),
        }
    }

    #[test]
    fn a_job_numo_created_is_not_created_again_until_the_cache_shows_it_or_a_minute_passed() {
        let jobs = CreatedJobs::default();
        let t0 = Instant::now();
        jobs.created(&[create("a"), create("b")], t0);
        // The cache shows neither yet: the plan asks for both again, numo creates neither.
        assert!(jobs.not_created(vec![create("a"), create("b"), Intent::ClearRetry]) == vec![Intent::ClearRetry]);
        // The cache shows a; b was deleted before numo saw it: after a minute it is asked for and created again.
        jobs.saw(&[seen("a").into()], t0 + Duration::from_secs(1));
        assert_eq!(jobs.not_created(vec![create("b")]).len(), 0);
        jobs.saw(&[], t0 + REMEMBERED);
        assert_eq!(jobs.not_created(vec![create("b")]).len(), 1);
        // A Job of another namespace with the same name is another Job.
        jobs.created(&[create("c")], t0);
        let mut other = create("c");
        if let Intent::CreateJob(job) = &mut other {
            job.metadata.namespace = Some("elsewhere".into());
        }
        assert_eq!(jobs.not_created(vec![other]).len(), 1);
    }
}
