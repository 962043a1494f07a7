//! Other hands: what numo holds during a rollout (a claimed pool's `paused`, `nodeSelector` and `maxUnavailable`,
//! its claim, a held node's rule labels) can be changed by anyone a second later — the console's "Resume all
//! updates", a runbook's `oc patch`, a GitOps controller's self-heal, a relabelling script. Every such change is
//! noticed here from the objects themselves (a pool differs from what numo last wrote, recorded in its `written`
//! annotation), put back at once (re-pausing first), reported (a Warning Event, `status.foreignChanges`, the
//! `Contested` condition, a hold of the next node) and, when the same field is changed back again and again, no
//! longer fought over: after [`FIGHT_CHANGES`] changes, each within [`SERIES_GAP`] of the previous one, numo stops
//! writing that field until nobody changed it for [`QUIET`], then tries again. A target pool's `paused` flag and a
//! held node's rule labels are the exception: without them the MCO upgrades held nodes ungated, so numo keeps
//! putting them back and holds the next node for as long as the changes go on.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::intent::{Intent, PoolSpec, PutBack};
use super::notice::Notice;
use super::stage::condition;
use crate::api::{Blocker, ForeignChange};
use crate::controllers::run_config::snapshot::{PoolView, Snapshot, Writer};
use crate::pool_claim::PoolOriginal;

/// A change within this long of the previous change of the same field continues a series.
pub const SERIES_GAP: Duration = Duration::from_secs(60);
/// This many changes of one field in a series are a fight: numo stops writing the field (where it may).
pub const FIGHT_CHANGES: u32 = 3;
/// numo writes a field it stopped fighting over again once nobody changed it for this long.
pub const QUIET: Duration = Duration::from_secs(30);

/// At most this many Events about foreign changes per reconcile; the rest are told in one.
pub const MAX_EVENTS: usize = 10;
/// At most this many records in `status.foreignChanges` (the unresolved and most recent ones).
pub const MAX_RECORDS: usize = 32;

/// The check name of the hold in `status.blockedBy` and the `ReadyForNextNode` condition.
pub const CHECK: &str = crate::api::check::FOREIGN_CHANGE;

/// The fields of a pool numo holds, as `status.foreignChanges` names them.
pub const PAUSED: &str = "spec.paused";
/// See [`PAUSED`].
pub const NODE_SELECTOR: &str = "spec.nodeSelector";
/// See [`PAUSED`].
pub const MAX_UNAVAILABLE: &str = "spec.maxUnavailable";
/// See [`PAUSED`]: the canary's, while numo points it at the MachineConfigs of the pool it serves.
pub const MACHINE_CONFIG_SELECTOR: &str = "spec.machineConfigSelector";
/// numo's claim annotation on a pool.
pub const CLAIM: &str = "metadata.annotations";
/// A held node's rule labels.
pub const RULE_LABELS: &str = "metadata.labels";
/// A Job with numo's labels that is not the one numo created: its uid is none numo recorded.
pub const NOT_NUMOS: &str = "metadata.uid";

/// How numo answers a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// It writes the field back.
    PutBack,
    /// It leaves the field as the other writer wants it until the changes stop.
    Conceded,
}

/// The record of foreign changes, carried from the previous status and updated by this reconcile.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    now: Timestamp,
    /// By (object, field); `seen` marks those seen changed in this reconcile.
    records: BTreeMap<(String, String), (ForeignChange, bool)>,
    notices: Vec<Notice>,
    /// New changes beyond [`MAX_EVENTS`] in this reconcile, told in one summary Event.
    unannounced: usize,
    conceded: Vec<(String, &'static str)>,
}

impl Ledger {
    /// The ledger as the previous status left it.
    pub fn of(previous: &[ForeignChange], now: Timestamp) -> Self {
        let records = previous.iter().map(|r| ((r.object.clone(), r.field.clone()), (r.clone(), false))).collect();
        Self { now, records, notices: Vec::new(), unannounced: 0, conceded: Vec::new() }
    }

    /// Notes that `field` of `object` is not what numo set, changed by `changed_by`; `may_concede` when numo may
    /// stop writing it in a fight. Returns what numo does about it.
    pub fn saw(&mut self, object: &str, field: &'static str, changed_by: &str, may_concede: bool) -> Answer {
        let now = self.now;
        let key = (object.to_string(), field.to_string());
        let previous = self.records.get(&key).map(|(r, _)| r.clone());
        let mut record = match previous {
            // The same change, still there (numo's write back is not seen yet, or numo stopped writing).
            Some(r) if r.unresolved => r,
            Some(r) if since(&r.last_seen, now) <= SERIES_GAP => {
                ForeignChange { changes: r.changes + 1, last_seen: Time(now), unresolved: true, ..r }
            }
            _ => ForeignChange {
                object: object.to_string(),
                field: field.to_string(),
                changed_by: String::new(),
                changes: 1,
                first_seen: Time(now),
                last_seen: Time(now),
                unresolved: true,
                action: String::new(),
            },
        };
        let new = !self.records.get(&key).is_some_and(|(r, _)| r.unresolved);
        record.changed_by = changed_by.to_string();
        let fight = fighting(&record, now);
        let answer = if fight && may_concede { Answer::Conceded } else { Answer::PutBack };
        let was_conceded = may_concede && self.records.get(&key).is_some_and(|(r, _)| fighting(r, now));
        record.action = match (answer, fight) {
            (Answer::Conceded, _) => format!(
                "stopped writing it: it was changed {} times in {}s; numo writes it again once nobody changed it \
                 for {}s, and holds the next node until then",
                record.changes,
                since(&record.first_seen, now).as_secs(),
                QUIET.as_secs()
            ),
            (Answer::PutBack, true) => format!(
                "put it back ({} changes in {}s; numo keeps putting this field back, since without it held nodes \
                 would be upgraded ungated) and holds the next node until the changes stop",
                record.changes,
                since(&record.first_seen, now).as_secs()
            ),
            (Answer::PutBack, false) => "put it back".to_string(),
        };
        if new || (answer == Answer::Conceded && !was_conceded) {
            let what = format!(
                "{object} {field} was changed by {changed_by}, not by numo, while numo holds it for this rollout; \
                 numo {}.",
                record.action
            );
            let advice = if fight { format!(" {}", stop_advice(field)) } else { String::new() };
            let reason = if answer == Answer::Conceded { "ForeignChangeConceded" } else { "ForeignChange" };
            self.announce(Notice::warning(reason, "Hold", format!("{what}{advice}")));
        }
        if answer == Answer::Conceded {
            self.conceded.push((object.to_string(), field));
        }
        self.records.insert(key, (record, true));
        answer
    }

    /// Notes a Job with numo's labels for one of its nodes that numo did not create (`replaced`: that took the place
    /// of the one it created, under its name), made by `creator`. Told once, in a Warning and `status.foreignChanges`,
    /// for as long as it exists; it is never counted, so it holds nothing up.
    pub fn saw_not_numos(&mut self, object: &str, creator: &str, replaced: bool) {
        let key = (object.to_string(), NOT_NUMOS.to_string());
        let known = self.records.get(&key).filter(|(r, _)| r.unresolved).map(|(r, _)| r.clone());
        let record = known.clone().unwrap_or_else(|| ForeignChange {
            object: object.to_string(),
            field: NOT_NUMOS.to_string(),
            changed_by: creator.to_string(),
            changes: 1,
            first_seen: Time(self.now),
            last_seen: Time(self.now),
            unresolved: true,
            action: "ignored it: numo counts only the Jobs it created (their uid); this one releases no node".into(),
        });
        if known.is_none() {
            let what = if replaced {
                format!(
                    "{object} replaced the Job numo created under that name (deleted and created again, by                      {creator}); numo does not count it: the step keeps what numo saw of its own Job (one deleted                      before it finished has failed: retry the node to run the step again)."
                )
            } else {
                format!(
                    "{object} carries numo's labels but numo did not create it (made by {creator}); numo does not                      count it and it releases no node. Delete it; numo runs its own Jobs."
                )
            };
            self.announce(Notice::warning("ForeignJob", "Gate", what));
        }
        self.records.insert(key, (record, true));
    }

    /// Tells `notice` in an Event of its own, or (beyond [`MAX_EVENTS`] in this reconcile) in the summary.
    fn announce(&mut self, notice: Notice) {
        if self.notices.len() < MAX_EVENTS {
            self.notices.push(notice);
        } else {
            self.unannounced += 1;
        }
    }

    /// Whether numo was putting back rule labels someone removed when it last wrote the status.
    pub fn relabelling(&self) -> bool {
        self.records.values().any(|(r, _)| r.field == RULE_LABELS && r.unresolved)
    }

    /// Whether numo stopped writing `field` of `object` in this reconcile.
    pub fn conceded(&self, object: &str, field: &str) -> bool {
        self.conceded.iter().any(|(o, f)| o == object && *f == field)
    }

    /// What holds the next node now: changes not resolved, fights not over.
    pub fn holding(&self) -> Option<Blocker> {
        let now = self.now;
        let lines: Vec<String> = self
            .records
            .values()
            // A Job that is not numo's holds nothing up: it is never counted.
            .filter(|(record, _)| record.field != NOT_NUMOS)
            .filter_map(|(record, seen)| {
                let fight = fighting(record, now);
                ((record.unresolved && *seen) || fight).then(|| {
                    format!(
                        "{} {} changed by {}{}",
                        record.object,
                        record.field,
                        record.changed_by,
                        if fight { format!(" ({} times in a row)", record.changes) } else { String::new() }
                    )
                })
            })
            .collect();
        let more = lines.len().saturating_sub(5);
        let shown = lines.into_iter().take(5).collect::<Vec<_>>().join("; ");
        (!shown.is_empty()).then(|| Blocker {
            check: CHECK.to_string(),
            message: match more {
                0 => format!("{shown}; see status.foreignChanges"),
                more => format!("{shown}; and {more} more; see status.foreignChanges"),
            },
        })
    }

    /// The records for the status (changes not seen again are resolved; a series over for [`SERIES_GAP`] goes), the
    /// Events, what holds the next node, and when to look again.
    pub fn finish(self) -> Settled {
        let now = self.now;
        let blocker = self.holding();
        let fight = self.records.values().any(|(r, _)| fighting(r, now));
        let mut records = Vec::new();
        let mut wake: Option<Duration> = None;
        let mut at = |after: Duration, since_then: Duration| {
            if let Some(left) = after.checked_sub(since_then) {
                let left = left + Duration::from_millis(50);
                wake = Some(wake.map_or(left, |w| w.min(left)));
            }
        };
        for (_, (mut record, seen)) in self.records {
            let quiet_for = since(&record.last_seen, now);
            if !seen {
                record.unresolved = false;
                if quiet_for > SERIES_GAP {
                    continue;
                }
            }
            if fighting(&record, now) {
                at(QUIET, quiet_for);
            }
            at(SERIES_GAP, quiet_for);
            records.push(record);
        }
        // A script that strips the labels of thousands of nodes makes as many records: the status keeps the
        // unresolved and most recent ones.
        records.sort_by(|a, b| b.unresolved.cmp(&a.unresolved).then_with(|| b.last_seen.0.cmp(&a.last_seen.0)));
        let dropped = records.len().saturating_sub(MAX_RECORDS);
        records.truncate(MAX_RECORDS);
        records.sort_by(|a, b| (&a.object, &a.field).cmp(&(&b.object, &b.field)));
        let mut notices = self.notices;
        if self.unannounced > 0 {
            notices.push(Notice::warning(
                "ForeignChange",
                "Hold",
                format!(
                    "{} more changes by others to what numo holds in this moment (see status.foreignChanges{}).",
                    self.unannounced,
                    if dropped > 0 { format!(", which keeps the {MAX_RECORDS} most recent") } else { String::new() }
                ),
            ));
        }
        Settled { records, notices, blocker, fight, requeue_after: wake }
    }
}

/// What the ledger settled on.
#[derive(Clone, Debug, Default)]
pub struct Settled {
    /// `status.foreignChanges`.
    pub records: Vec<ForeignChange>,
    /// Warning Events of new changes and of fights numo stopped.
    pub notices: Vec<Notice>,
    /// The hold of the next node while a change is unresolved or a fight goes on.
    pub blocker: Option<Blocker>,
    /// Whether a field is being changed back again and again.
    pub fight: bool,
    /// When a fight's quiet time or a series ends.
    pub requeue_after: Option<Duration>,
}

/// Whether the field of `record` is fought over: changed back [`FIGHT_CHANGES`] times in a row, the last time less
/// than [`QUIET`] ago.
fn fighting(record: &ForeignChange, now: Timestamp) -> bool {
    record.changes >= FIGHT_CHANGES && since(&record.last_seen, now) < QUIET
}

fn since(time: &Time, now: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(time.0)).unwrap_or_default()
}

/// What other hands amount to in one plan.
pub struct Others {
    /// The plan's intents: put-backs first (re-pausing first), but none for a pool the plan restores anyway.
    pub intents: Vec<Intent>,
    /// Warning Events of new changes and of fights numo stopped.
    pub notices: Vec<Notice>,
    /// `status.foreignChanges`.
    pub records: Vec<ForeignChange>,
    /// The hold of the next node while a change is unresolved or a fight goes on.
    pub blocker: Option<Blocker>,
    /// The `Contested` condition's reason and message, when it is True.
    pub contested: Option<(&'static str, String)>,
    /// When a fight's quiet time or a series ends.
    pub requeue_after: Option<Duration>,
}

/// Settles `ledger`, and puts `put_back` before the `planned` intents.
pub fn settle(ledger: Ledger, put_back: Vec<Intent>, planned: Vec<Intent>) -> Others {
    let restored: Vec<&str> = planned
        .iter()
        .filter_map(|i| match i {
            Intent::RestorePool { pool, .. } => Some(pool.as_str()),
            _ => None,
        })
        .collect();
    let put_back: Vec<Intent> = put_back
        .into_iter()
        .filter(|i| !matches!(i, Intent::PutBackPool { pool, .. } if restored.contains(&pool.as_str())))
        .collect();
    let settled = ledger.finish();
    let reason = if settled.fight { "ChangedBackRepeatedly" } else { "ForeignChange" };
    let contested = settled.blocker.as_ref().map(|b| (reason, b.message.clone()));
    Others {
        intents: put_back.into_iter().chain(planned).collect(),
        notices: settled.notices,
        records: settled.records,
        blocker: settled.blocker,
        contested,
        requeue_after: settled.requeue_after,
    }
}

/// The Warning Event, once, that numo cannot put its admission policy in place.
pub fn policy_notice(snapshot: &Snapshot) -> Option<Notice> {
    let Some(Err(why)) = &snapshot.policy else { return None };
    let previous = crate::conditions::find(&snapshot.run_config.status.conditions, condition::FOREIGN_WRITES_REFUSED);
    if previous.is_some_and(|c| c.reason == "PolicyUnavailable") {
        return None;
    }
    Some(Notice::warning(
        "AdmissionPolicyUnavailable",
        "Guard",
        format!("{why}; numo notices other writers' changes to what it holds and puts them back instead."),
    ))
}

/// How to stop another controller from changing `field` back.
fn stop_advice(field: &str) -> String {
    match field {
        RULE_LABELS => {
            "Stop the script or controller that removes numo's rule labels from nodes while a rollout runs.".to_string()
        }
        _ => format!(
            "If a GitOps controller keeps MachineConfigPools as git has them, make it ignore /spec/paused and \
             /spec/nodeSelector (and the canary's /spec/maxUnavailable and /spec/machineConfigSelector) of \
             MachineConfigPools (Argo CD: ignoreDifferences with RespectIgnoreDifferences=true; \
             see docs/install.md); otherwise stop whoever changes {field} while numo holds the pool."
        ),
    }
}

/// `who` for a field whose writer `managedFields` names, or why not.
fn who(writer: Option<&Writer>) -> String {
    writer.map_or_else(|| "an unknown writer (managedFields names no owner of the field)".to_string(), Writer::describe)
}

/// Compares every pool this run config claims with what numo last wrote to it and notes each difference in the
/// ledger. Returns the writes that put back what may be put back, target pools' `paused` first.
pub fn pools(snapshot: &Snapshot, owner: &str, ledger: &mut Ledger) -> Vec<Intent> {
    let mut intents = Vec::new();
    let mut claimed: Vec<&PoolView> = snapshot.pools.values().filter(|p| p.owner() == Some(owner)).collect();
    // Re-pausing first: pools numo holds paused before the others.
    claimed
        .sort_by_key(|p| (!p.claim.claim().and_then(|c| c.written.as_ref()).is_some_and(|w| w.paused), p.name.clone()));
    for pool in claimed {
        let Some(written) = pool.claim.claim().and_then(|c| c.written.as_ref()) else { continue };
        let object = format!("MachineConfigPool/{}", pool.name);
        let mut put_back = PutBack::default();
        // An admin's unpause of a pool they had paused before numo held it is their go-ahead (`admin_hold`), not
        // another hand: numo pauses it again there, without a contest. A pool numo keeps unpaused (the canary) that
        // the SR-IOV network operator paused for its drain is its turn, not another hand: numo waits for it to end
        // ([`PoolView::sriov_turn`]) and writes nothing.
        let go_ahead = super::admin_hold::holds(pool) && written.paused && !pool.paused;
        if pool.paused != written.paused && !go_ahead && !pool.sriov_turn(written.paused) {
            // Unpausing a pool numo holds paused releases its held nodes to the MCO: never conceded.
            let may_concede = !written.paused;
            if ledger.saw(&object, PAUSED, &who(pool.writers.paused.as_ref()), may_concede) == Answer::PutBack {
                put_back.paused = Some(written.paused);
            }
        }
        // A built-in pool's selector is the machine-config operator's (it puts it back on every sync on 4.16–4.21):
        // numo does not hold it, so whoever writes it is not another hand.
        if pool.node_selector != written.node_selector && !crate::membership::is_built_in(&pool.name) {
            let by = who(pool.writers.node_selector.as_ref());
            if ledger.saw(&object, NODE_SELECTOR, &by, true) == Answer::PutBack {
                put_back.node_selector = Some(written.node_selector.clone());
            }
        }
        if pool.max_unavailable != written.max_unavailable {
            let by = who(pool.writers.max_unavailable.as_ref());
            if ledger.saw(&object, MAX_UNAVAILABLE, &by, true) == Answer::PutBack {
                put_back.max_unavailable = Some(written.max_unavailable.clone());
            }
        }
        // The canary's, once numo pointed it at a pool's MachineConfigs: changed under a released node, it would
        // reboot that node into another pool's config.
        if let Some(selector) = &written.machine_config_selector {
            if pool.machine_config_selector.as_ref() != Some(selector) {
                let by = who(pool.writers.machine_config_selector.as_ref());
                if ledger.saw(&object, MACHINE_CONFIG_SELECTOR, &by, true) == Answer::PutBack {
                    put_back.machine_config_selector = Some(selector.clone());
                }
            }
        }
        if put_back != PutBack::default() {
            intents.push(Intent::PutBackPool { pool: pool.name.clone(), owner: owner.to_string(), put_back });
        }
    }
    intents
}

/// What holds the next node while the SR-IOV network operator has paused the canary for its drain.
pub fn sriov_blocker(canary: &PoolView) -> Option<Blocker> {
    let written = canary.claim.claim().and_then(|c| c.written.as_ref()).is_some_and(|w| w.paused);
    canary.sriov_turn(written).then(|| Blocker {
        check: crate::api::check::OTHER_OPERATOR.to_string(),
        message: format!(
            "{} paused the canary MachineConfigPool {} for its drain of a node ({}: {}); numo releases the next \
             node once it unpauses the pool",
            crate::taking_turns::SRIOV,
            canary.name,
            crate::taking_turns::SRIOV_STATE,
            crate::taking_turns::SRIOV_PAUSED
        ),
    })
}

/// The pool settings numo has written once `spec` is applied to `pool`: the fields `spec` sets, the rest as numo
/// last wrote them (as the pool is, for a pool numo has not written yet).
pub fn written_after(pool: &PoolView, spec: &PoolSpec) -> PoolOriginal {
    let before = pool.claim.claim().and_then(|c| c.written.clone()).unwrap_or_else(|| as_is(pool));
    PoolOriginal {
        paused: spec.paused,
        node_selector: spec.node_selector.clone().or(before.node_selector),
        max_unavailable: spec.max_unavailable.clone().or(before.max_unavailable),
        machine_config_selector: spec.machine_config_selector.clone().or(before.machine_config_selector),
        // Not watched for other hands' changes: a canary on another stream than the pool it serves holds the next
        // node (the CanaryConfig check compares the rendered content, the OS image included).
        os_image_stream: None,
    }
}

/// A pool's settings as they are.
pub fn as_is(pool: &PoolView) -> PoolOriginal {
    PoolOriginal {
        paused: pool.paused,
        node_selector: pool.node_selector.clone(),
        max_unavailable: pool.max_unavailable.clone(),
        machine_config_selector: None,
        os_image_stream: None,
    }
}
