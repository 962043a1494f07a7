use std::sync::atomic::{AtomicUsize, Ordering};

use futures::channel::mpsc;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::ObjectMeta;

use super::*;

type Item = Result<Event<Node>, watcher::Error>;
type Sender = mpsc::UnboundedSender<Item>;
/// The events of one watch, as the controller gets them.
type Events = Pin<Box<dyn Stream<Item = Item> + Send>>;

fn node(name: &str) -> Node {
    Node { metadata: ObjectMeta { name: Some(name.into()), ..Default::default() }, ..Default::default() }
}

fn error() -> watcher::Error {
    watcher::Error::NoResourceVersion
}

/// A watch of `kind` fed by hand: its sender and the stream the controller would get.
fn fed(watches: &Watches, kind: &'static str) -> (Sender, Events) {
    let (sender, receiver) = mpsc::unbounded();
    (sender, Box::pin(watches.track(kind, receiver)))
}

/// What the stream yields for what was sent so far (without waiting for more).
fn drain(stream: &mut Events) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(Some(item)) = stream.next().now_or_never() {
        seen.push(match item {
            Ok(event) => event.to_string(),
            Err(error) => format!("Err({error})"),
        });
    }
    seen
}

/// Watches with a client that is never used (the events are fed by hand); building it needs a runtime.
fn watches(controller: &'static str, readiness: Readiness) -> Watches {
    let config = kube::Config::new("https://127.0.0.1:9".parse().expect("a URL"));
    Watches::new(controller, kube::Client::try_from(config).expect("a client"), readiness)
}

fn send(sender: &Sender, item: Item) {
    sender.unbounded_send(item).expect("the stream is alive");
}

#[tokio::test]
async fn ready_once_every_watch_listed_and_not_ready_while_one_fails_until_it_listed_again() {
    let readiness = Readiness::default();
    let watches = watches("mutex_target", readiness.clone());
    let (nodes, mut node_events) = fed(&watches, "Nodes");
    let (pools, mut pool_events) = fed(&watches, "MachineConfigPools");
    assert!(!readiness.is_ready());
    assert!(readiness.report().contains("mutex_target: starting"), "{}", readiness.report());

    send(&nodes, Ok(Event::Init));
    send(&nodes, Ok(Event::InitApply(node("a"))));
    send(&nodes, Ok(Event::InitDone));
    assert_eq!(drain(&mut node_events), ["Init", "InitApply(a)", "InitDone"]);
    assert!(!watches.is_listed() && !readiness.is_ready());
    assert_eq!(watches.pending(), ["MachineConfigPools"]);
    assert!(readiness.report().contains("listing MachineConfigPools"), "{}", readiness.report());
    send(&pools, Ok(Event::Init));
    send(&pools, Ok(Event::InitDone));
    drain(&mut pool_events);
    assert!(watches.is_listed() && readiness.is_ready(), "{}", readiness.report());

    // The node watch fails: the error stops here, the controller is not ready, the other watch goes on.
    send(&nodes, Err(error()));
    send(&nodes, Ok(Event::Init));
    send(&nodes, Err(error()));
    assert_eq!(drain(&mut node_events), ["Init"], "errors never reach the controller");
    assert_eq!(watches.failing(), ["Nodes"]);
    assert!(!readiness.is_ready());
    let report = readiness.report();
    assert!(report.contains("mutex_target: watches failing: Nodes (no metadata.resourceVersion"), "{report}");
    send(&pools, Ok(Event::Apply(node("pool"))));
    assert_eq!(drain(&mut pool_events), ["Apply(pool)"]);
    assert!(watches.is_listed(), "a failure after the first list keeps the caches usable");

    // A list that has begun is not yet a recovery; its end is.
    send(&nodes, Ok(Event::Init));
    send(&nodes, Ok(Event::InitApply(node("a"))));
    drain(&mut node_events);
    assert!(!readiness.is_ready());
    send(&nodes, Ok(Event::InitDone));
    drain(&mut node_events);
    assert!(watches.failing().is_empty());
    assert!(readiness.is_ready(), "{}", readiness.report());
}

#[tokio::test]
async fn a_failure_is_a_warning_once_and_its_end_is_reported() {
    let ((), text) = logged(|| {
        let watches = watches("mutexrunconfig", Readiness::default());
        let (jobs, mut events) = fed(&watches, "Jobs");
        send(&jobs, Ok(Event::InitDone));
        for _ in 0..5 {
            send(&jobs, Err(error()));
        }
        send(&jobs, Ok(Event::Init));
        send(&jobs, Ok(Event::InitDone));
        send(&jobs, Err(error()));
        drain(&mut events);
    });
    let warnings: Vec<&str> = text.lines().filter(|line| line.contains("WARN")).collect();
    assert_eq!(warnings.len(), 2, "one warning per failure, not per error: {text}");
    assert!(warnings.iter().all(|w| w.contains("kind=\"Jobs\"") && w.contains("watch failed")), "{text}");
    let recovered: Vec<&str> = text.lines().filter(|line| line.contains("listed again")).collect();
    assert_eq!(recovered.len(), 1, "{text}");
    assert!(recovered[0].contains("INFO") && recovered[0].contains("errors=5"), "{text}");
}

/// What `f` returns, and the log lines it wrote.
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    let logs = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = {
        let logs = logs.clone();
        move || Captured(logs.clone())
    };
    let subscriber = tracing_subscriber::fmt().with_writer(writer).with_ansi(false).finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(logs.lock().map(|l| l.clone()).unwrap_or_default()).unwrap_or_default();
    (out, text)
}

/// A log writer into a shared buffer.
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut logs) = self.0.lock() {
            logs.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A watch that answers its `n`th start (from 0) with `items(n)`, then nothing more; and how many times it started.
fn attempts(
    items: impl Fn(usize) -> Vec<Item> + Send + 'static,
) -> (Arc<AtomicUsize>, impl FnMut() -> futures::stream::BoxStream<'static, Item> + Send) {
    let started = Arc::new(AtomicUsize::new(0));
    let counted = started.clone();
    let start = move || {
        let attempt = counted.fetch_add(1, Ordering::SeqCst);
        futures::stream::iter(items(attempt)).chain(futures::stream::pending()).boxed()
    };
    (started, start)
}

#[tokio::test]
async fn after_an_error_the_watch_waits_for_itself_and_starts_over_with_a_fresh_list() {
    let (started, start) = attempts(|attempt| match attempt {
        // The first two attempts: a list begins, then the API server is gone.
        0 | 1 => vec![Ok(Event::Init), Err(error())],
        _ => vec![Ok(Event::Init), Ok(Event::InitApply(node("a"))), Ok(Event::InitDone)],
    });
    let first = Duration::from_millis(20);
    let mut watch = Box::pin(relisting(start, RetryDelays::new(first, Duration::from_secs(1)), None));
    let at = Instant::now();
    assert!(matches!(watch.next().await, Some(Ok(Event::Init))));
    assert!(matches!(watch.next().await, Some(Err(_))));
    assert_eq!(started.load(Ordering::SeqCst), 1);
    assert!(matches!(watch.next().await, Some(Ok(Event::Init))), "a fresh watch lists from the start");
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert!(at.elapsed() >= first, "it waited before starting over");
    assert!(matches!(watch.next().await, Some(Err(_))));
    let events: Vec<String> =
        watch.by_ref().take(3).map(|e| e.map(|e| e.to_string()).unwrap_or_default()).collect().await;
    assert_eq!(events, ["Init", "InitApply(a)", "InitDone"]);
    assert_eq!(started.load(Ordering::SeqCst), 3);
    assert!(at.elapsed() >= first * 3, "the second wait doubled");

    // A watch beside a failing one is not held up while the failing one waits.
    let attempts = Arc::new(AtomicUsize::new(0));
    let failing = Box::pin(relisting(
        {
            let attempts = attempts.clone();
            move || {
                attempts.fetch_add(1, Ordering::SeqCst);
                futures::stream::iter([Err::<Event<Node>, _>(error())]).chain(futures::stream::pending())
            }
        },
        RetryDelays::new(Duration::from_secs(3600), Duration::from_secs(3600)),
        None,
    ));
    let healthy =
        futures::stream::iter([Ok::<_, watcher::Error>(Event::Apply(node("b")))]).chain(futures::stream::pending());
    let mut both = futures::stream::select(failing, healthy);
    assert!(matches!(both.next().await, Some(Err(_))), "the failing watch's error comes first");
    assert!(matches!(both.next().await, Some(Ok(Event::Apply(_)))));
    assert_eq!(attempts.load(Ordering::SeqCst), 1, "the failing watch still waits");
}

/// What the API server answers a list of a kind it does not serve.
fn not_served_error() -> watcher::Error {
    let status = kube::core::Status { code: 404, reason: "NotFound".into(), ..Default::default() };
    watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status)))
}

#[tokio::test]
async fn an_optional_kind_the_cluster_does_not_serve_waits_the_absent_delays_and_other_errors_the_usual_ones() {
    let (started, start) = attempts(|attempt| match attempt {
        0 | 1 => vec![Err(not_served_error())],
        // The CRD was installed meanwhile.
        _ => vec![Ok(Event::<Node>::Init), Ok(Event::InitDone)],
    });
    // The usual delays are an hour here: a watch that used them would never get past its first error.
    let usual = RetryDelays::new(Duration::from_secs(3600), Duration::from_secs(3600));
    let absent = RetryDelays::new(Duration::from_millis(20), Duration::from_millis(40));
    let mut watch = Box::pin(relisting(start, usual, Some(absent)));
    let at = Instant::now();
    assert!(matches!(watch.next().await, Some(Err(_))));
    assert!(matches!(watch.next().await, Some(Err(_))));
    assert!(matches!(watch.next().await, Some(Ok(Event::Init))));
    assert!(at.elapsed() >= Duration::from_millis(60), "it waited the absent delays, doubling: {:?}", at.elapsed());
    assert_eq!(started.load(Ordering::SeqCst), 3);

    // Any other error of that watch waits the usual delays.
    let attempts = Arc::new(AtomicUsize::new(0));
    let mut other = Box::pin(relisting(
        {
            let attempts = attempts.clone();
            move || {
                attempts.fetch_add(1, Ordering::SeqCst);
                futures::stream::iter([Err::<Event<Node>, _>(error())]).chain(futures::stream::pending())
            }
        },
        RetryDelays::new(Duration::from_secs(3600), Duration::from_secs(3600)),
        Some(RetryDelays::new(Duration::from_millis(1), Duration::from_millis(1))),
    ));
    assert!(matches!(other.next().await, Some(Err(_))));
    assert!(tokio::time::timeout(Duration::from_millis(100), other.next()).await.is_err(), "still waiting");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    // The defaults: minutes, not seconds.
    assert!(ABSENT_FIRST_DELAY >= Duration::from_secs(60) && ABSENT_MAX_DELAY >= Duration::from_secs(300));
}

#[tokio::test]
async fn an_optional_kind_not_served_is_one_line_of_information_not_a_warning() {
    let (readable, text) = logged(|| {
        let watches = watches("run_config", Readiness::default());
        watches.shared.with(|health| health.entry("StorageClusters").or_default().optional = true);
        let (storage, mut events) = fed(&watches, "StorageClusters");
        for _ in 0..5 {
            send(&storage, Err(not_served_error()));
        }
        drain(&mut events);
        watches.sources().readable("StorageClusters")
    });
    assert!(!text.lines().any(|line| line.contains("WARN")), "{text}");
    let said: Vec<&str> = text.lines().filter(|line| line.contains("not served")).collect();
    assert_eq!(said.len(), 1, "{text}");
    assert!(said[0].contains("INFO") && said[0].contains("StorageClusters"), "{text}");
    assert!(readable.is_err(), "the checks that read it say it cannot be read");
}

#[test]
fn retry_delays_double_up_to_a_cap_and_start_again_after_a_quiet_while() {
    let mut delays = RetryDelays::default();
    let within = |delay: Duration, base: Duration| delay >= base && delay <= base + base / 4;
    let mut now = Instant::now();
    let mut base = FIRST_DELAY;
    for _ in 0..8 {
        let delay = delays.next_delay_at(now);
        assert!(within(delay, base), "{delay:?} is not {base:?} plus at most a quarter");
        base = (base * 2).min(MAX_DELAY);
        now += delay;
    }
    assert_eq!(base, MAX_DELAY);
    now += FRESH_AFTER + Duration::from_secs(1);
    let delay = delays.next_delay_at(now);
    assert!(within(delay, FIRST_DELAY), "a new failure much later starts again: {delay:?}");
}

#[test]
fn a_deleted_node_gets_past_a_predicate_that_saw_it_unchanged() {
    let labelled = |labels: &[(&str, &str)]| {
        let mut node = node("worker-0");
        node.metadata.uid = Some("u0".into());
        node.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        node
    };
    let same_labels = |node: &Node| {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let mut hasher = DefaultHasher::new();
        node.metadata.labels.hash(&mut hasher);
        node.metadata.deletion_timestamp.is_some().hash(&mut hasher);
        Some(hasher.finish())
    };
    let worker = labelled(&[("node-role.kubernetes.io/worker", "")]);
    // The delete event carries the node as it was last seen: nothing a predicate hashes has changed.
    let events: Vec<Item> = vec![Ok(Event::Apply(worker.clone())), Ok(Event::Delete(worker))];
    let passed = futures::stream::iter(events)
        .map_ok(marked_deleted)
        .touched_objects()
        .predicate_filter(same_labels, Default::default())
        .filter_map(|n| future::ready(n.ok()))
        .collect::<Vec<Node>>()
        .now_or_never()
        .unwrap_or_default();
    assert_eq!(passed.len(), 2, "the deletion reaches the controller");
    assert!(passed[1].metadata.deletion_timestamp.is_some());
}
