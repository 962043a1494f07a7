//! numo keeps its policy `numo-holds` and the binding in place while it leads: it watches both (by name) and, when
//! someone deletes either or changes what decides what it refuses (the policy's spec as numo renders it; the
//! binding's `policyName`, `validationActions`, `paramRef`, `matchResources`), puts it back at once with the same
//! writes as at start ([`super::put_in_place`]). Meanwhile every run config's `ForeignWritesRefused` condition says
//! that the policy is not in force, and what happened; it is in force again a moment after numo put it back, once
//! the API server applies it ([`TAKES_EFFECT`]).
//!
//! numo knows its own writes by the resourceVersions they returned: neither their echo in the watch nor what the
//! watch shows before it is taken for another writer's change, so no write of numo's starts another. Someone who
//! keeps deleting or changing it (a GitOps controller that prunes it, a script) is not fought: after
//! [`FIGHT_CHANGES`] changes, each within [`SERIES_GAP`] of the previous one, numo leaves it as they want it until
//! nobody changed it for [`QUIET`], then puts it back — as numo does with the fields of the pools it holds
//! (`controllers/run_config/plan/foreign.rs`, whose numbers these are).

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, WatchStreamExt};
use kube::ResourceExt;
use tokio::time::Instant;

use super::{PolicyObject, PolicyState, PolicyStatus, Written, FIELD_MANAGER, NAME};

/// A change within this long of the previous change of the same object continues a series.
pub const SERIES_GAP: Duration = Duration::from_secs(60);
/// This many changes of one object in a series are a fight: numo stops putting it back for a while.
pub const FIGHT_CHANGES: u32 = 3;
/// numo puts it back again once nobody changed it for this long.
pub const QUIET: Duration = Duration::from_secs(30);
/// How long after numo sees the policy and the binding back in place it reports them in force: the API server
/// applies a new or changed policy or binding within about a second (it refreshes its policies once a second).
pub const TAKES_EFFECT: Duration = Duration::from_secs(2);
/// The pause before numo tries again after it could not put them back; it doubles after each failure, up to
/// [`MAX_RETRY`].
pub const FIRST_RETRY: Duration = Duration::from_secs(5);
/// See [`FIRST_RETRY`].
pub const MAX_RETRY: Duration = Duration::from_secs(300);
/// The most resourceVersions of its own writes numo remembers per object (its watch shows them long before).
const REMEMBERED: usize = 16;
/// How long numo waits for its watch to show its own latest write before it judges what the watch shows anyway: the
/// watch shows a write within milliseconds, but a write whose version the watch never shows (a relist that skipped
/// it) must not keep numo from seeing every later change.
pub const AWAIT_WRITE: Duration = Duration::from_secs(10);

/// What numo sees of one of its two objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// As numo applies it, or as numo's own write left it.
    InPlace,
    /// Not there.
    Missing,
    /// Another writer changed these fields (`spec.<field>`); `by` names it as `managedFields` does, if it does;
    /// `edit` tells one change from the next (the object's uid and generation: a status write is no change).
    Changed { fields: Vec<&'static str>, by: Option<String>, edit: String },
}

/// What numo does about what it sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Both are as numo applies them.
    InPlace,
    /// Put them back now; the sentence says what happened.
    PutBack(String),
    /// They were changed too often: numo leaves them until `until`; the sentence says what happened.
    Contested { what: String, until: Instant },
}

/// A series of changes of one object by others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Series {
    changes: u32,
    last: Instant,
}

/// What numo knows of one object: its own writes, and the changes of others.
#[derive(Clone, Debug, Default)]
struct Slot {
    /// The resourceVersion numo's latest write returned, until the watch shows it: the watch shows events in
    /// order, so until then it shows what came before numo's write (another writer's change, the API server's
    /// status write after it), which numo's write has already answered.
    awaiting: Option<String>,
    /// When numo first judged what the watch shows while `awaiting`: it waits [`AWAIT_WRITE`] from then at most.
    awaiting_since: Option<Instant>,
    /// The resourceVersions numo's own writes returned.
    made: VecDeque<String>,
    /// Whether numo saw it in place, or put it there, at least once.
    ever_in_place: bool,
    /// The change of others counted last, while it is still there.
    counted: Option<Seen>,
    series: Option<Series>,
}

impl Slot {
    fn see<K: PolicyObject>(&mut self, live: Option<&K>, wanted: &K, now: Instant) -> Seen {
        let version = live.and_then(|o| o.resource_version());
        if let Some(awaiting) = &self.awaiting {
            let since = *self.awaiting_since.get_or_insert(now);
            if version.as_ref() != Some(awaiting) && now < since + AWAIT_WRITE {
                return Seen::InPlace;
            }
            (self.awaiting, self.awaiting_since) = (None, None);
        }
        let seen = match live {
            None => Seen::Missing,
            Some(_) if version.as_ref().is_some_and(|v| self.made.contains(v)) => Seen::InPlace,
            Some(live) => {
                let fields = super::differences(live, wanted);
                if fields.is_empty() {
                    Seen::InPlace
                } else {
                    Seen::Changed { fields, by: writer(live.meta()), edit: edit(live.meta()) }
                }
            }
        };
        if seen == Seen::InPlace {
            self.ever_in_place = true;
        }
        seen
    }

    /// Counts `seen` when it is a new change by others.
    fn note(&mut self, seen: &Seen, now: Instant) {
        if *seen == Seen::InPlace || !self.ever_in_place {
            self.counted = None;
            return;
        }
        if self.counted.as_ref() == Some(seen) {
            return;
        }
        self.counted = Some(seen.clone());
        self.series = Some(match self.series {
            Some(s) if now.saturating_duration_since(s.last) <= SERIES_GAP => {
                Series { changes: s.changes + 1, last: now }
            }
            _ => Series { changes: 1, last: now },
        });
    }

    fn fighting(&self, now: Instant) -> Option<Series> {
        self.series.filter(|s| s.changes >= FIGHT_CHANGES && now.saturating_duration_since(s.last) < QUIET)
    }

    fn wrote(&mut self, versions: &[String]) {
        (self.awaiting, self.awaiting_since) = (versions.last().cloned(), None);
        self.made.extend(versions.iter().cloned());
        while self.made.len() > REMEMBERED {
            self.made.pop_front();
        }
        self.ever_in_place = true;
    }

    /// What happened to it, in words, if it is not in place.
    fn describe<K: PolicyObject>(&self, seen: &Seen) -> Option<String> {
        let kind = K::KIND;
        match seen {
            Seen::InPlace => None,
            Seen::Missing if !self.ever_in_place => Some(format!("the {kind} {NAME} is not in place")),
            Seen::Missing => Some(format!("the {kind} {NAME} was deleted")),
            Seen::Changed { fields, by, .. } => Some(format!(
                "the {kind} {NAME} was changed ({}) by {}",
                fields.iter().map(|f| format!("spec.{f}")).collect::<Vec<_>>().join(", "),
                by.as_deref().unwrap_or("someone other than numo")
            )),
        }
    }
}

/// What tells one change of the object from the next: its uid and generation (which only a change of its spec
/// raises), or its resourceVersion where it has no generation.
fn edit(meta: &ObjectMeta) -> String {
    match meta.generation {
        Some(generation) => format!("{}/{generation}", meta.uid.as_deref().unwrap_or_default()),
        None => meta.resource_version.clone().unwrap_or_default(),
    }
}

/// The writer of `meta`'s latest change other than numo, as `managedFields` names it.
fn writer(meta: &ObjectMeta) -> Option<String> {
    let fields = meta.managed_fields.as_deref().unwrap_or_default();
    let others = fields.iter().filter(|f| f.manager.as_deref().is_some_and(|m| m != FIELD_MANAGER));
    others.max_by_key(|f| f.time.as_ref().map(|t| t.0)).and_then(|f| f.manager.clone())
}

/// What numo knows of both objects, and what it decides.
#[derive(Clone, Debug, Default)]
pub struct Keeper {
    policy: Slot,
    binding: Slot,
}

impl Keeper {
    /// Judges what the watch shows now (`None`: missing) against `wanted`.
    pub fn judge(
        &mut self,
        live: (Option<&ValidatingAdmissionPolicy>, Option<&ValidatingAdmissionPolicyBinding>),
        wanted: &(ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding),
        now: Instant,
    ) -> Verdict {
        let policy = self.policy.see(live.0, &wanted.0, now);
        let binding = self.binding.see(live.1, &wanted.1, now);
        self.policy.note(&policy, now);
        self.binding.note(&binding, now);
        let parts: Vec<String> = [
            self.policy.describe::<ValidatingAdmissionPolicy>(&policy),
            self.binding.describe::<ValidatingAdmissionPolicyBinding>(&binding),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            return Verdict::InPlace;
        }
        let what = parts.join(" and ");
        let fights = [self.policy.fighting(now), self.binding.fighting(now)];
        match fights.into_iter().flatten().max_by_key(|s| s.last) {
            None => Verdict::PutBack(what),
            Some(series) => Verdict::Contested {
                what: format!(
                    "{what}: changed {} times by others, each within {}s of the last, so numo stops putting it back \
                     until nobody changed it for {}s, not to fight another writer; stop whoever deletes or edits \
                     {NAME} (a GitOps controller that prunes it, a script), or end numo's holds by deleting the run \
                     configs",
                    series.changes,
                    SERIES_GAP.as_secs(),
                    QUIET.as_secs()
                ),
                until: series.last + QUIET,
            },
        }
    }

    /// Remembers numo's writes since the last judgement, so that their echo in the watch counts as numo's.
    pub fn wrote(&mut self, written: &Written) {
        self.policy.wrote(&written.policy);
        self.binding.wrote(&written.binding);
    }

    /// The watch listed anew: it shows what is there now, no longer what came before numo's writes.
    pub fn relisted(&mut self) {
        (self.policy.awaiting, self.policy.awaiting_since) = (None, None);
        (self.binding.awaiting, self.binding.awaiting_since) = (None, None);
    }

    /// When numo stops waiting for its watch to show its latest write (see [`AWAIT_WRITE`]) and judges what it
    /// shows: numo looks again then, whether or not the watch shows more.
    pub fn awaiting_until(&self) -> Option<Instant> {
        [&self.policy, &self.binding].iter().filter_map(|s| s.awaiting_since.map(|since| since + AWAIT_WRITE)).min()
    }
}

/// What `ForeignWritesRefused` says while numo puts back what happened (`what`).
pub fn putting_back(what: &str) -> String {
    format!(
        "{what}; numo puts it back at once, and reports the policy in force again a moment later, once the API \
         server applies it"
    )
}

/// What `ForeignWritesRefused` says when numo could not put back what happened (`what`), for the reason `why`.
pub fn could_not(what: &str, why: &str, retry: Duration) -> String {
    format!("{what}, and numo could not put it back: {why}; numo tries again in {}s", retry.as_secs())
}

/// Puts the policy in place as numo's own user `username` (as at start), records in `state` whether it is in
/// force, and keeps it in place for as long as numo runs: see the module's documentation.
pub async fn keep_in_place(client: kube::Client, username: String, state: PolicyState) {
    let wanted = (super::policy(&username, None), super::binding(None));
    let mut keeper = Keeper::default();
    // Whether numo's last attempt failed (the status says why, and when it tries again).
    let mut failing = false;
    match super::put_in_place(&client, &username).await {
        Ok(written) => {
            keeper.wrote(&written);
            tracing::info!(
                policy = NAME,
                "ValidatingAdmissionPolicy in force: the API server refuses other hands' writes to what numo holds"
            );
            state.set(PolicyStatus::InForce);
        }
        Err(failure) => {
            tracing::warn!(policy = NAME, reason = %failure.why, "ValidatingAdmissionPolicy not in force");
            state.set(PolicyStatus::Unavailable(failure.why));
            if !failure.served {
                return;
            }
            failing = true;
        }
    }

    let config = watcher::Config::default().fields(&format!("metadata.name={NAME}"));
    let (policies, policy_writer) = reflector::store::<ValidatingAdmissionPolicy>();
    let (bindings, binding_writer) = reflector::store::<ValidatingAdmissionPolicyBinding>();
    let policy_events = watcher(Api::<ValidatingAdmissionPolicy>::all(client.clone()), config.clone())
        .default_backoff()
        .reflect(policy_writer)
        .map(|event| (0, event.map(|e| Happened::of(&e))));
    let binding_events = watcher(Api::<ValidatingAdmissionPolicyBinding>::all(client.clone()), config)
        .default_backoff()
        .reflect(binding_writer)
        .map(|event| (1, event.map(|e| Happened::of(&e))));
    let mut events = std::pin::pin!(futures::stream::select(policy_events, binding_events));

    let mut listed = [false, false];
    let mut wake: Option<Instant> = None;
    let mut retry = FIRST_RETRY;
    let mut in_place_since: Option<Instant> = None;
    let mut watch_error: Option<String> = None;
    loop {
        let timer = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.next() => match event {
                None => return,
                Some((_, Ok(Happened::Nothing))) => continue,
                Some((which, Ok(Happened::Listed))) => {
                    listed[which] = true;
                    keeper.relisted();
                }
                Some((_, Ok(Happened::Changed))) => {}
                Some((_, Err(error))) => {
                    let error = error.to_string();
                    if watch_error.as_ref() != Some(&error) {
                        tracing::warn!(policy = NAME, %error, "cannot watch the ValidatingAdmissionPolicy; retrying");
                        watch_error = Some(error);
                    }
                    continue;
                }
            },
            () = timer => {}
        }
        watch_error = None;
        wake = None;
        if !listed.iter().all(|l| *l) {
            continue;
        }
        let now = Instant::now();
        let policy = policies.get(&ObjectRef::new(NAME));
        let binding = bindings.get(&ObjectRef::new(NAME));
        match keeper.judge((policy.as_deref(), binding.as_deref()), &wanted, now) {
            Verdict::InPlace => {
                retry = FIRST_RETRY;
                failing = false;
                if state.get() != Some(PolicyStatus::InForce) {
                    let since = *in_place_since.get_or_insert(now);
                    if now >= since + TAKES_EFFECT {
                        tracing::info!(policy = NAME, "ValidatingAdmissionPolicy in force again");
                        state.set(PolicyStatus::InForce);
                    } else {
                        wake = Some(since + TAKES_EFFECT);
                    }
                }
            }
            Verdict::PutBack(what) => {
                in_place_since = None;
                if !failing {
                    tracing::warn!(policy = NAME, "{what}; putting it back");
                    state.set(PolicyStatus::Unavailable(putting_back(&what)));
                }
                match super::put_in_place(&client, &username).await {
                    Ok(written) => keeper.wrote(&written),
                    Err(failure) => {
                        tracing::warn!(policy = NAME, reason = %failure.why, "{what}; could not put it back");
                        state.set(PolicyStatus::Unavailable(could_not(&what, &failure.why, retry)));
                        failing = true;
                        wake = Some(now + retry);
                        retry = (retry * 2).min(MAX_RETRY);
                    }
                }
            }
            Verdict::Contested { what, until } => {
                in_place_since = None;
                if state.get() != Some(PolicyStatus::Unavailable(what.clone())) {
                    tracing::warn!(policy = NAME, "{what}");
                }
                state.set(PolicyStatus::Unavailable(what));
                wake = Some(until);
            }
        }
        if let Some(at) = keeper.awaiting_until() {
            wake = Some(wake.map_or(at, |w| w.min(at)));
        }
    }
}

/// What a watch event means here.
enum Happened {
    /// The object was applied or deleted: judge again.
    Changed,
    /// A (re)list completed: the cache shows what is there now.
    Listed,
    /// A list is under way: wait for its end.
    Nothing,
}

impl Happened {
    fn of<K>(event: &watcher::Event<K>) -> Self {
        match event {
            watcher::Event::Apply(_) | watcher::Event::Delete(_) => Happened::Changed,
            watcher::Event::InitDone => Happened::Listed,
            watcher::Event::Init | watcher::Event::InitApply(_) => Happened::Nothing,
        }
    }
}

#[cfg(test)]
#[path = "admission_policy_watch_tests.rs"]
mod tests;
