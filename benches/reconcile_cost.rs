//! What one node event costs numo's run-config controller, at several cluster sizes: the cluster held in the same
//! caches the controller reads (`N` workers, four finished Jobs each, the rendered configs), a run config in
//! `Restoring` (every node done, the MCO moving nodes back into their pool), and one node event — a node moved to
//! its pool's rendered config — followed by what the controller then does for it. Prints a table; asserts only that
//! the MCO's walk woke no run config.
//!
//! A second table gives what a reconcile costs while a rollout gates nodes: 5 at once whatever the cluster's size
//! (the cost an event adds as the cluster grows), and 5 % of the nodes at once (see [`gated`]); the plan that starts
//! them, the plan after it, with nothing to start, and that plan halfway through the rollout (see [`half_done`]),
//! each after one node event, with what the run config's earlier plans kept (see [`after_an_event`]).
//!
//!   cargo bench --bench reconcile_cost            (SIZES=20,200,2000 by default; TABLES=gated for the gated ones;
//!                                                 ROUNDS=n to time each gated step n times, e.g. under a profiler)

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use numo::api::NodePhase;
use numo::api::RunPhase;
use numo::cached_job::CachedJob;
use numo::controllers::run_config::node_interest::NodeInterest;
use numo::controllers::run_config::node_views::NodeViews;
use numo::controllers::run_config::snapshot::{self, JobView, NodeView, Snapshot};
use numo::controllers::run_config::{observe, plan, preview};
use numo::guard::Guarded;
use serde_json::{json, Value};

const NS: &str = "ops";
const OLD: &str = "4.16.4";
const NEW: &str = "4.16.5";

fn main() {
    let sizes: Vec<usize> = std::env::var("SIZES")
        .unwrap_or_else(|_| "20,200,2000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let only_gated = std::env::var("TABLES").is_ok_and(|t| t == "gated");
    println!("| nodes | snapshot | plan | a node event that wakes the run config | a node event of the MCO's walk |");
    println!("| --- | --- | --- | --- | --- |");
    for &n in sizes.iter().filter(|_| !only_gated) {
        let mut world = World::new(n, None);
        let rc = world.run_config();
        let key = format!("{NS}/example");
        let rounds = (20_000 / n).clamp(50, 500);
        let snapshot = time(rounds, || drop(observe::snapshot(&world.stores, &rc, Timestamp::now())));
        let taken = observe::snapshot(&world.stores, &rc, Timestamp::now());
        let planned = plan::plan(&taken);
        assert_eq!(planned.status.phase, Some(RunPhase::Restoring), "{:?}", planned.status.message);
        let plan_time = time(rounds, || drop(plan::plan(&taken)));
        // What the controller does for one node event: the cache takes it, the run configs it concerns are woken,
        // and each woken one is reconciled (snapshot and plan).
        let interest = NodeInterest::default();
        let kept = plan::Kept::default();
        let moves: Vec<[Guarded<Node>; 2]> =
            (0..n).map(|i| [node(i, "rendered-canary-new"), node(i, "rendered-worker-new")]).collect();
        let mut i = 0;
        let woken = std::cell::Cell::new(0);
        let mut event = |world: &mut World| {
            i += 1;
            // Each pass over the nodes moves every one to the other rendered config (both at the same version).
            let moved = &moves[i % n][(i / n) % 2];
            let applied = watcher::Event::Apply(moved.clone());
            world.node_writer.apply_watcher_event(&applied);
            world.stores.node_views.saw((&applied).into());
            for _ in interest.woken_by(&world.stores.run_configs, &world.stores.machine_configs, moved) {
                woken.set(woken.get() + 1);
                let s = observe::snapshot(&world.stores, &rc, Timestamp::now());
                interest.planned(&key, plan::plan_kept(&s, &kept).node_reads);
            }
        };
        // The watch's first list shows every node to the controller.
        for i in 0..n {
            interest.woken_by(
                &world.stores.run_configs,
                &world.stores.machine_configs,
                &node(i, "rendered-canary-new"),
            );
        }
        let waking = time(rounds, || {
            interest.planned(&key, plan::NodeReads::Everything);
            event(&mut world)
        });
        interest.planned(&key, planned.node_reads);
        event(&mut world);
        let before = woken.get();
        let walk = time(rounds * 100, || event(&mut world));
        assert_eq!(woken.get(), before, "the MCO's walk woke the run config");
        println!("| {n} | {} | {} | {} | {} |", ms(snapshot), ms(plan_time), ms(waking), ms(walk));
    }
    gated(&sizes, Concurrency::Fixed(5));
    gated(&sizes, Concurrency::Share(20));
}

/// How many nodes a gated rollout takes at once.
#[derive(Clone, Copy)]
enum Concurrency {
    /// This many, whatever the cluster's size.
    Fixed(usize),
    /// One in this many nodes.
    Share(usize),
}

impl Concurrency {
    /// The concurrency of a rollout of `nodes` workers.
    fn of(self, nodes: usize) -> usize {
        match self {
            Concurrency::Fixed(c) => c.min(nodes),
            Concurrency::Share(every) => (nodes / every).max(1),
        }
    }
}

/// What one reconcile costs while a rollout gates `concurrency` nodes at once: the snapshot from the caches, and the
/// plan over a copy on which the planner's own writes were carried out as `numo plan` carries them out (pools
/// claimed and paused, nodes labelled) up to the plan that starts the first nodes; then the plan after that one, with
/// their first gate Jobs created and running; then that plan with half the nodes done.
fn gated(sizes: &[usize], concurrency: Concurrency) {
    println!();
    println!(
        "| nodes | in flight | snapshot while gated | plan while gated (it starts them) | plan while gated (nothing \
         to start) | the same, half the nodes done |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for &n in sizes {
        let in_flight = |n: usize| concurrency.of(n);
        let world = World::new(n, Some(concurrency));
        let rc = world.run_config();
        let mut s = observe::snapshot(&world.stores, &rc, Timestamp::now());
        let gating = |p: &plan::Plan| p.status.nodes.iter().filter(|e| e.phase == NodePhase::Gating).count();
        for _ in 0..20 {
            let p = plan::plan(&s);
            if gating(&p) == in_flight(n) {
                break;
            }
            carry_out(&mut s, &p);
        }
        keep_pools(&mut s);
        let p = plan::plan(&s);
        assert_eq!(gating(&p), in_flight(n), "{:?} {:?}", p.status.phase, p.status.message);
        // The plan after that one: its Jobs created and running, nothing to start (what most events find).
        let mut steady = s.clone();
        carry_out(&mut steady, &p);
        keep_pools(&mut steady);
        let next = plan::plan(&steady);
        assert_eq!(gating(&next), in_flight(n), "{:?}", next.status.message);
        assert!(!next.intents.iter().any(|i| matches!(i, plan::Intent::CreateJob(_))), "{:?}", next.intents);
        let halfway = half_done(&steady, &next);
        let rounds = rounds(n);
        let snapshot = time(rounds, || drop(observe::snapshot(&world.stores, &rc, Timestamp::now())));
        let plan_time = after_an_event(rounds, s);
        let steady_time = after_an_event(rounds, steady);
        let halfway_time = after_an_event(rounds, halfway);
        let (snapshot, plan_time, steady_time, halfway_time) =
            (ms(snapshot), ms(plan_time), ms(steady_time), ms(halfway_time));
        println!("| {n} | {} | {snapshot} | {plan_time} | {steady_time} | {halfway_time} |", in_flight(n));
    }
}

/// The plan of `s` after one node event, each time (one node's view replaced, as the node views replace the view of
/// a node that changed; the next node each time, and each view by an equal one, so every plan is the same), with what
/// the run config's earlier plans kept, as the controller plans it.
fn after_an_event(rounds: usize, mut s: Snapshot) -> Duration {
    let kept = plan::Kept::default();
    let names: Vec<String> = s.nodes.keys().cloned().collect();
    let mut spares: Vec<Arc<NodeView>> = s.nodes.values().map(|view| Arc::new((**view).clone())).collect();
    let first = plan::plan_kept(&s, &kept);
    let mut i = 0;
    time(rounds, || {
        let at = i % names.len();
        let before = s.nodes_mut().insert(names[at].clone(), Arc::clone(&spares[at]));
        spares[at] = before.expect("a node of the snapshot");
        let p = plan::plan_kept(&s, &kept);
        assert_eq!((p.intents.len(), p.status.phase), (first.intents.len(), first.status.phase), "another plan");
        i += 1;
    })
}

/// `steady` (planned as `planned`) halfway through the rollout: the second half of the nodes by name (none of them
/// in flight) finished, as the status lists them and as they run, at the target on their pool's rendered config,
/// with their rule labels. Its plan finds nothing to start, label or create, as in `steady`.
fn half_done(steady: &Snapshot, planned: &plan::Plan) -> Snapshot {
    let mut halfway = steady.clone();
    let names: Vec<String> = halfway.nodes.keys().cloned().collect();
    let done = &names[names.len() / 2..];
    for name in done {
        let view = Arc::make_mut(halfway.nodes_mut().get_mut(name).expect("a node of the snapshot"));
        view.version = Some(NEW.to_string());
        view.current_config = Some("rendered-worker-new".to_string());
        view.desired_config = Some("rendered-worker-new".to_string());
        view.desired_version = Some(NEW.to_string());
    }
    halfway.run_config.status = planned.status.clone();
    halfway.run_config.status.completed_nodes = done.to_vec().into();
    let p = plan::plan(&halfway);
    assert_eq!(p.status.completed_nodes.len(), done.len(), "{:?}", p.status.message);
    assert_eq!(p.status.nodes.len(), planned.status.nodes.len(), "{:?}", p.status.message);
    assert!(p.intents.is_empty(), "{:?}", p.intents);
    halfway
}

/// Each node's pool, worked out under the pools' selectors and kept in its view, as the controller's node views
/// keep it between reconciles (carrying the plan's writes out forgot it for the nodes they labelled).
fn keep_pools(s: &mut Snapshot) {
    let selectors = snapshot::pool_selectors(&s.pools);
    let fingerprint = snapshot::selectors_fingerprint(&selectors);
    for view in Arc::make_mut(&mut s.nodes).values_mut().map(Arc::make_mut) {
        view.keep_membership(&selectors, fingerprint);
    }
}

/// Carries `p`'s writes out on `s` as `numo plan` does, and adds the Jobs it creates as the cache shows them.
fn carry_out(s: &mut Snapshot, p: &plan::Plan) {
    preview::carry_out(s, p);
    s.jobs.extend(p.intents.iter().filter_map(created_job));
}

/// The Job a plan creates, as numo's cache shows it once the API server created it (a uid, no status: running).
fn created_job(intent: &plan::Intent) -> Option<Arc<JobView>> {
    let plan::Intent::CreateJob(job) = intent else { return None };
    let mut object = serde_json::to_value(job).ok()?;
    object["metadata"]["uid"] = format!("uid-{}", job.metadata.name.as_deref()?).into();
    let cached: Guarded<CachedJob> = serde_json::from_value(object).ok()?;
    observe::job_view(&cached).map(|(_, view)| Arc::new(view))
}

/// How many times to time a step at `n` nodes (`ROUNDS` sets it, e.g. to profile one size).
fn rounds(n: usize) -> usize {
    std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or((20_000 / n).clamp(5, 500))
}

fn time(rounds: usize, mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..rounds {
        f();
    }
    start.elapsed() / rounds as u32
}

fn ms(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

struct World {
    stores: observe::Stores,
    node_writer: reflector::store::Writer<Guarded<Node>>,
    run_config: Value,
}

fn store<K>(objects: impl IntoIterator<Item = Value>) -> (Store<Guarded<K>>, reflector::store::Writer<Guarded<K>>)
where
    K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned + Clone + 'static,
{
    let (reader, mut writer) = reflector::store::<Guarded<K>>();
    for object in objects {
        let guarded: Guarded<K> = serde_json::from_value(object).expect("a guard decodes any object");
        writer.apply_watcher_event(&watcher::Event::Apply(guarded));
    }
    (reader, writer)
}

fn node(i: usize, config: &str) -> Guarded<Node> {
    serde_json::from_value(node_json(i, config)).expect("a node")
}

fn node_json(i: usize, config: &str) -> Value {
    let mut labels = serde_json::Map::new();
    for (k, v) in [
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/os", "linux"),
        ("node-role.kubernetes.io/worker", ""),
        ("node.openshift.io/os_id", "rhcos"),
        ("topology.kubernetes.io/region", "eu-central-1"),
        ("topology.kubernetes.io/zone", "eu-central-1a"),
        ("node.kubernetes.io/instance-type", "m6i.2xlarge"),
    ] {
        labels.insert(k.into(), v.into());
    }
    labels.insert("kubernetes.io/hostname".into(), format!("worker-{i}").into());
    json!({"apiVersion": "v1", "kind": "Node",
        // As the API server sends it: a resourceVersion per version of the node (here, one per rendered config).
        "metadata": {"name": format!("worker-{i}"), "uid": format!("uid-{i}"), "labels": labels,
            "resourceVersion": format!("{i}-{config}"),
            "annotations": {
                "machineconfiguration.openshift.io/currentConfig": config,
                "machineconfiguration.openshift.io/desiredConfig": config,
                "machineconfiguration.openshift.io/state": "Done"}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

impl World {
    /// `gated`: the rollout is to start, this many nodes at once (nodes on the old rendered config, no Job, a run
    /// config without status); else it is over (`Restoring`, four finished Jobs per node).
    fn new(nodes: usize, concurrency: Option<Concurrency>) -> Self {
        let gated = concurrency.is_some();
        let meta = |name: &str| json!({"name": name, "namespace": NS, "generation": 1});
        let valid = json!({"conditions": [{"type": "ValidConfig", "status": "True", "reason": "Valid", "message": "",
            "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]});
        let pool = |name: &str, selector: Value, config: &str, updated: &str| {
            json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
                "metadata": {"name": name, "generation": 1},
                "spec": {"nodeSelector": selector, "configuration": {"name": config}},
                "status": {"observedGeneration": 1, "conditions": [{"type": "Updated", "status": updated}]}})
        };
        let pools = [
            pool(
                "worker",
                json!({"matchLabels": {"node-role.kubernetes.io/worker": ""}}),
                "rendered-worker-new",
                "False",
            ),
            pool(
                "canary",
                json!({"matchLabels": {"node-role.kubernetes.io/worker": ""},
                    "matchExpressions": [{"key": "isCanary", "operator": "Exists"}]}),
                // Before the rollout the canary renders worker's content (here: the same rendered config).
                if gated { "rendered-worker-new" } else { "rendered-canary-new" },
                "True",
            ),
            pool(
                "master",
                json!({"matchLabels": {"node-role.kubernetes.io/master": ""}}),
                "rendered-master-new",
                "True",
            ),
        ];
        let rendered = [
            ("rendered-worker-new", NEW),
            ("rendered-canary-new", NEW),
            ("rendered-master-new", NEW),
            ("rendered-worker-old", OLD),
        ]
        .map(|(name, version)| {
            json!({"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
                "metadata": {"name": name, "annotations": {"machineconfiguration.openshift.io/release-image-version": version}}})
        });
        let mut jobs = Vec::new();
        for i in (0..nodes).filter(|_| !gated) {
            for (rule, phase) in [("check", "gate"), ("check", "cleanup"), ("backup", "gate"), ("backup", "cleanup")] {
                jobs.push(json!({"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": format!("{rule}-{phase}-worker-{i}"), "namespace": NS,
                        "uid": format!("uid-{rule}-{phase}-{i}"), "resourceVersion": "1",
                        "labels": {"app.kubernetes.io/managed-by": "numo",
                            "openshift-optional.skrzypek.io/run-config": "example",
                            "openshift-optional.skrzypek.io/run-config-namespace": NS,
                            "openshift-optional.skrzypek.io/phase": phase,
                            "openshift-optional.skrzypek.io/attempt": "1"},
                        "annotations": {"openshift-optional.skrzypek.io/node": format!("worker-{i}"),
                            "openshift-optional.skrzypek.io/rule": format!("{NS}/{rule}"),
                            "openshift-optional.skrzypek.io/target-version": NEW,
                            "openshift-optional.skrzypek.io/run-config": format!("{NS}/example")}},
                    "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}}));
            }
        }
        let rule = |name: &str| {
            json!({"metadata": meta(name), "status": valid,
                "spec": {"jobName": name, "jobSpec": {"template": {"spec": {"containers": []}}},
                    "cleanUpJobSpec": {"template": {"spec": {"containers": []}}}}})
        };
        let config = if gated { "rendered-worker-old" } else { "rendered-canary-new" };
        let (node_store, node_writer) = store::<Node>((0..nodes).map(|i| node_json(i, config)));
        let run_config = match concurrency {
            Some(concurrency) => gated_run_config_json(concurrency.of(nodes)),
            None => run_config_json(nodes),
        };
        let stores = observe::Stores {
            run_configs: store([run_config.clone()]).0,
            rules: store([rule("check"), rule("backup")]).0,
            targets: store([json!({"metadata": meta("workers"), "status": valid,
                "spec": {"machineConfigPools": ["worker"]}})])
            .0,
            pools: store(pools).0,
            nodes: node_store,
            machine_configs: store(rendered).0,
            cluster_versions: store([json!({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion",
                "metadata": {"name": "version"},
                "spec": {"clusterID": "x", "desiredUpdate": {"version": NEW}},
                "status": {"desired": {"version": NEW}, "history": [{"version": NEW, "state": "Completed",
                    "startedTime": "2024-01-01T00:00:00Z", "verified": true, "image": "i"}]}})])
            .0,
            jobs: store(jobs).0,
            // As the controller keeps them: told by the node watch which nodes changed.
            node_views: NodeViews::fed(),
            ..Default::default()
        };
        Self { stores, node_writer, run_config }
    }

    fn run_config(&self) -> numo::api::MutexRunConfig {
        serde_json::from_value(self.run_config.clone()).expect("a run config")
    }
}

/// A run config about to gate its workers, `concurrency` at a time.
fn gated_run_config_json(concurrency: usize) -> Value {
    json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
        "metadata": {"name": "example", "namespace": NS, "generation": 1, "uid": "rc-uid",
            "finalizers": ["openshift-optional.skrzypek.io/restore-pools"]},
        "spec": {"canary": {"name": "canary"}, "mutexRules": [{"name": "check"}, {"name": "backup"}],
            "mutexTargets": [{"name": "workers"}], "concurrency": concurrency},
    })
}

/// A run config whose `nodes` workers are all done: the pools restored, the MCO moving the nodes back.
fn run_config_json(nodes: usize) -> Value {
    let completed: Vec<String> = (0..nodes).map(|i| format!("worker-{i}")).collect();
    json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
        "metadata": {"name": "example", "namespace": NS, "generation": 1, "uid": "rc-uid",
            "finalizers": ["openshift-optional.skrzypek.io/restore-pools"]},
        "spec": {"canary": {"name": "canary"}, "mutexRules": [{"name": "check"}, {"name": "backup"}],
            "mutexTargets": [{"name": "workers"}], "concurrency": 100},
        "status": {"phase": "Restoring", "targetVersion": NEW, "previousVersion": OLD,
            "completedNodes": completed, "progress": format!("{nodes}/{nodes}"), "totalNodes": nodes}
    })
}
