//! numo's alerts (`config/prometheus/rule.yaml`): OpenShift's alerting conventions and a runbook page for every
//! alert; every rule tested with `promtool test rules` (`config/prometheus/tests`), the tests feeding the rules series
//! named and labelled as numo serves them; only the alerts numo cannot get past by itself labelled
//! `openShiftUpdatePrecheck` (the rest would mark the next update, z-streams too, not recommended); and a rollout held
//! in the test world firing `NumoRolloutHeld` with its reason, through promtool on the series numo served at
//! `/metrics` (and the API server counting a refused write under the name and labels `NumoForeignWritesRefused`
//! reads).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::metrics::AwaitingAdmin;
use numo::openshift::{ClusterOperator, MachineConfigPool};
use numo_simulator::faults;
use numo_testkit::promtool;
use numo_testkit::repo::{self, yaml};
use serde_json::{json, Value};
use support::*;

/// Where every runbook_url points: a page per alert in docs/runbooks.
const RUNBOOKS: &str = "https://github.com/numo-operator/numo/blob/main/docs/runbooks/";
/// The labels Prometheus adds to every series it scrapes from numo (its target's); the rest are numo's own.
const TARGET_LABELS: [&str; 6] = ["namespace", "pod", "job", "instance", "endpoint", "service"];
/// The rule file promtool reads: rule.yaml's `spec` (promtool cannot read a PrometheusRule).
const RULES_FILE: &str = "numo-rules.yaml";
/// The alerts that make every update the cluster offers a risk while they fire: they carry
/// `openShiftUpdatePrecheck: "true"`, which `oc adm upgrade recommend` lists and, with the ClusterUpdateAcceptRisks
/// feature gate, the CVO turns into `Recommended=False` for every update, z-streams included (as it does any
/// `severity: critical` alert; openshift/cluster-version-operator `pkg/risk/alert/alert.go`). Only these three: the
/// rollout waits for an admin (a failed node, an ungated node) or for numo to run again, so the next release's
/// workers would wait behind them. Every other alert fires while numo holds a rollout it goes on with by itself, and
/// that rollout absorbs the next release, or while numo holds nothing (a skipped node its restored pool updates
/// ungated) (docs/install.md, "Which alerts hold back the next update").
const UPDATE_RISKS: [&str; 3] = ["NumoNodeFailed", "NumoNodeUngated", "NumoDownWhileHoldingPools"];
/// The pages whose tables say, per alert, whether it is a precheck (their last column, `yes` or `no`).
const PRECHECK_TABLES: [&str; 3] = ["docs/install.md", "docs/runbooks/README.md", "docs/metrics.md"];

fn rule() -> Value {
    yaml(&repo::root().join("config/prometheus/rule.yaml"))
}

/// Every alerting rule of every group.
fn alerts(rule: &Value) -> Vec<Value> {
    let groups = rule["spec"]["groups"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter(|r| r["alert"].is_string())
        .collect()
}

fn name(alert: &Value) -> String {
    alert["alert"].as_str().unwrap_or_default().to_string()
}

/// Whether the alert, firing, is a risk of every update the cluster offers: the CVO's `alertsToRisks` takes every
/// `severity: critical` alert and every alert labelled `openShiftUpdatePrecheck: "true"`.
fn makes_updates_a_risk(alert: &Value) -> bool {
    alert["labels"]["severity"] == "critical" || alert["labels"]["openShiftUpdatePrecheck"] == "true"
}

/// The rule with the alert named `alert` labelled `openShiftUpdatePrecheck: "true"`.
fn with_precheck(rule: &Value, alert: &str) -> Value {
    let mut rule = rule.clone();
    for group in rule["spec"]["groups"].as_array_mut().into_iter().flatten() {
        for r in group["rules"].as_array_mut().into_iter().flatten() {
            if r["alert"] == alert {
                r["labels"]["openShiftUpdatePrecheck"] = json!("true");
            }
        }
    }
    rule
}

/// The promtool test files of config/prometheus/tests: file name → text.
fn test_texts() -> BTreeMap<String, String> {
    let dir = repo::root().join("config/prometheus/tests");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
            (p.file_name().unwrap_or_default().to_string_lossy().into_owned(), text)
        })
        .collect()
}

/// The promtool test files, parsed (their `values` may read as other numbers: `0x20` is hexadecimal to YAML, so
/// promtool gets the files as written, never these).
fn test_files() -> BTreeMap<String, Value> {
    let parse = |(file, text): (String, String)| {
        let value = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {file}: {e}"));
        (file, value)
    };
    test_texts().into_iter().map(parse).collect()
}

/// A directory for promtool, removed when dropped: the rules as `numo-rules.yaml` and the given test files.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Scratch {
    fn new(name: &str, rule: &Value, tests: &BTreeMap<String, String>) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("numo-alert-rules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let scratch = Scratch(dir);
        let rules = json!({"groups": rule["spec"]["groups"]});
        std::fs::write(scratch.0.join(RULES_FILE), serde_yaml::to_string(&rules)?)?;
        for (file, test) in tests {
            std::fs::write(scratch.0.join(file), test)?;
        }
        Ok(scratch)
    }

    /// `promtool test rules` of every test file.
    fn test_rules(&self, tests: &BTreeMap<String, String>) -> anyhow::Result<promtool::Outcome> {
        let mut args = vec!["test", "rules"];
        args.extend(tests.keys().map(String::as_str));
        promtool::run(&self.0, &args)
    }
}

#[test]
fn every_alert_follows_openshifts_conventions_and_has_a_runbook() {
    let rule = rule();
    assert_eq!(rule["kind"], "PrometheusRule");
    let alerts = alerts(&rule);
    assert!(alerts.len() >= 7, "{alerts:?}");
    let mut pages = BTreeSet::new();
    for alert in &alerts {
        let name = name(alert);
        assert!(name.starts_with("Numo") && !name.contains(['-', '_', ' ']), "{name}: CamelCase, prefixed Numo");
        let severity = alert["labels"]["severity"].as_str().unwrap_or_default();
        // info: a notice that asks nothing of the admin.
        assert!(["info", "warning", "critical"].contains(&severity), "{name}: severity {severity:?}");
        let precheck = &alert["labels"]["openShiftUpdatePrecheck"];
        assert!(precheck.is_null() || precheck == "true", "{name}: openShiftUpdatePrecheck {precheck}");
        for annotation in ["summary", "description"] {
            let text = alert["annotations"][annotation].as_str().unwrap_or_default();
            assert!(text.len() > 20, "{name}: {annotation} {text:?}");
        }
        assert_eq!(alert["annotations"]["runbook_url"], format!("{RUNBOOKS}{name}.md"), "{name}");
        let page = repo::root().join(format!("docs/runbooks/{name}.md"));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{name} has no runbook page: {e}"));
        assert!(text.starts_with(&format!("# {name}\n")), "{}: its title is the alert's name", page.display());
        for section in ["## Meaning", "## Impact", "## Diagnosis", "## Mitigation"] {
            assert!(text.contains(&format!("\n{section}\n")), "{} lacks {section}", page.display());
        }
        pages.insert(format!("{name}.md"));
    }
    // No page for an alert that is gone; the index lists every page.
    let dir = repo::root().join("docs/runbooks");
    let index = std::fs::read_to_string(dir.join("README.md")).unwrap_or_default();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if file != "README.md" {
            assert!(pages.contains(&file), "docs/runbooks/{file} is no alert's runbook");
            assert!(index.contains(&format!("({file})")), "docs/runbooks/README.md does not list {file}");
        }
    }
}

#[test]
fn only_alerts_numo_cannot_get_past_by_itself_make_the_next_update_not_recommended() {
    let alerts = alerts(&rule());
    let risks: BTreeSet<String> = alerts.iter().filter(|a| makes_updates_a_risk(a)).map(name).collect();
    for alert in
        ["NumoRolloutHeld", "NumoTargetPoolsPausedTooLong", "NumoHoldsNextMinorUpdate", "NumoSkippedNodeNotUpdated"]
    {
        assert!(alerts.iter().any(|a| name(a) == alert), "no alert {alert}");
        assert!(
            !risks.contains(alert),
            "{alert} would mark every update, the z-stream numo absorbs mid-rollout too, not recommended"
        );
    }
    let expected: BTreeSet<String> = UPDATE_RISKS.iter().map(|a| a.to_string()).collect();
    assert_eq!(risks, expected, "the alerts labelled openShiftUpdatePrecheck or critical");

    // Each page's table says the same, alert by alert.
    for page in PRECHECK_TABLES {
        let text = std::fs::read_to_string(repo::root().join(page)).unwrap_or_default();
        for alert in &alerts {
            let name = name(alert);
            let row = text.lines().find(|line| {
                let first = line.split('|').nth(1).unwrap_or_default();
                line.starts_with("| ") && (first.contains(&format!("[{name}]")) || first.contains(&format!("`{name}`")))
            });
            let Some(row) = row else { panic!("{page} has no row for {name}") };
            let precheck = row.trim_end().trim_end_matches('|').rsplit('|').next().unwrap_or_default().trim();
            let want = if UPDATE_RISKS.contains(&name.as_str()) { "yes" } else { "no" };
            assert_eq!(precheck, want, "{page}: precheck of {name}");
        }
    }
}

#[test]
fn every_check_numo_has_is_left_out_of_numo_rollout_held_or_explained_in_its_description() {
    let rule = rule();
    let held = alerts(&rule).into_iter().find(|a| name(a) == "NumoRolloutHeld").unwrap_or_default();
    let expr = held["expr"].as_str().unwrap_or_default();
    let description = held["annotations"]["description"].as_str().unwrap_or_default();
    let excluded: BTreeSet<&str> = expr
        .split_once(r#"check!~""#)
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(list, _)| list.split('|').collect())
        .unwrap_or_default();
    for check in numo::api::check::ALL {
        let explained = description.contains(&format!(r#"eq $labels.check "{check}""#));
        assert!(
            excluded.contains(check) ^ explained,
            "the check {check} must be either left out of NumoRolloutHeld's expression or explained in its description"
        );
    }
}

#[test]
fn every_rule_passes_promtool_and_every_alert_fires_in_its_tests() -> anyhow::Result<()> {
    let (rule, texts) = (rule(), test_texts());
    let scratch = Scratch::new("all", &rule, &texts)?;
    let checked = promtool::run(&scratch.0, &["check", "rules", RULES_FILE])?;
    assert!(checked.success, "promtool check rules:\n{}", checked.output);
    let tested = scratch.test_rules(&texts)?;
    let tests = test_files();
    assert!(tested.success, "promtool test rules:\n{}", tested.output);

    // Each alert is shown firing in some test, and each firing alert carries the namespace label.
    let mut fired = BTreeSet::new();
    for (file, test) in &tests {
        for case in test["tests"].as_array().into_iter().flatten() {
            for check in case["alert_rule_test"].as_array().into_iter().flatten() {
                for expected in check["exp_alerts"].as_array().into_iter().flatten() {
                    assert!(expected["exp_labels"]["namespace"].is_string(), "{file}: {expected} has no namespace");
                    fired.insert(check["alertname"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    for alert in alerts(&rule) {
        assert!(fired.contains(&name(&alert)), "no promtool test shows {} firing", name(&alert));
    }
    Ok(())
}

#[test]
fn a_wrong_rule_fails_its_promtool_tests() -> anyhow::Result<()> {
    // The same tests against rules that wait two hours instead of one, and a description that drops the check.
    let tests = test_texts();
    let text = std::fs::read_to_string(repo::root().join("config/prometheus/rule.yaml"))?;
    for wrong in [text.replace("> 3600", "> 7200"), text.replace("the {{ $labels.check }} check", "a check")] {
        assert_ne!(wrong, text);
        let rule: Value = serde_yaml::from_str(&wrong)?;
        let scratch = Scratch::new("wrong", &rule, &tests)?;
        let tested = scratch.test_rules(&tests)?;
        assert!(!tested.success, "promtool passed a wrong rule:\n{}", tested.output);
        assert!(tested.output.contains("NumoRolloutHeld"), "{}", tested.output);
    }
    // And against rules that label an alert openShiftUpdatePrecheck that must not hold back the next update (the
    // test files that show it firing).
    let rule = rule();
    for alert in alerts(&rule).iter().map(name).filter(|n| !UPDATE_RISKS.contains(&n.as_str())) {
        let shown = format!("alertname: {alert}\n");
        let tests: BTreeMap<String, String> =
            tests.iter().filter(|(_, t)| t.contains(&shown)).map(|(f, t)| (f.clone(), t.clone())).collect();
        assert!(!tests.is_empty(), "no promtool test shows {alert}");
        let scratch = Scratch::new("precheck", &with_precheck(&rule, &alert), &tests)?;
        let tested = scratch.test_rules(&tests)?;
        assert!(!tested.success, "promtool passed {alert} labelled openShiftUpdatePrecheck:\n{}", tested.output);
        assert!(tested.output.contains(&alert), "{}", tested.output);
    }
    Ok(())
}

/// One series of the text exposition format: its name, its labels and its value.
#[derive(Clone, Debug, PartialEq)]
struct Series {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The series of a text exposition (`# HELP` and `# TYPE` lines skipped) and the families it declares (`# TYPE`).
fn parse_exposition(text: &str) -> (Vec<Series>, BTreeSet<String>) {
    let mut series = Vec::new();
    let mut families = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            families.extend(rest.split_whitespace().next().map(String::from));
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (head, value) = line.rsplit_once(' ').unwrap_or((line, "NaN"));
        let (name, labels) = match head.split_once('{') {
            Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
            None => (head, BTreeMap::new()),
        };
        series.push(Series { name: name.to_string(), labels, value: value.parse().unwrap_or(f64::NAN) });
    }
    (series, families)
}

/// `a="x",b="y"` as a map (numo's label values hold no quotes or commas).
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    text.split("\",")
        .filter_map(|pair| pair.split_once("=\""))
        .map(|(k, v)| (k.trim_start_matches(',').to_string(), v.trim_end_matches('"').to_string()))
        .collect()
}

/// The label names of a series, but the target's.
fn own_label_names(labels: &BTreeMap<String, String>) -> BTreeSet<String> {
    labels.keys().filter(|k| !TARGET_LABELS.contains(&k.as_str())).cloned().collect()
}

/// The numo metrics the rules read: every `numo_...` name in their expressions.
fn metrics_the_rules_read(rule: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for alert in alerts(rule) {
        let expr = alert["expr"].as_str().unwrap_or_default();
        for (at, _) in expr.match_indices("numo_") {
            let name: String = expr[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            names.insert(name);
        }
    }
    names
}

/// Asserts that every series a promtool test feeds the rules under a numo metric name is one numo serves: the
/// family exists, the series has the label names numo's series of that family have, and each label numo fills
/// from a fixed set (all but `run_config`) has a value numo serves. With `every_family` false, series of families
/// not served at all are passed over (a scrape shows only the families that have series).
fn assert_tests_use_what_numo_serves(
    served: &[Series],
    families: &BTreeSet<String>,
    tests: &BTreeMap<String, Value>,
    every_family: bool,
) {
    for (file, test) in tests {
        for case in test["tests"].as_array().into_iter().flatten() {
            for input in case["input_series"].as_array().into_iter().flatten() {
                let text = input["series"].as_str().unwrap_or_default();
                let (parsed, _) = parse_exposition(&format!("{text} 0"));
                let Some(series) = parsed.first().filter(|s| s.name.starts_with("numo_")) else { continue };
                if !every_family && !families.contains(&series.name) {
                    continue;
                }
                assert!(families.contains(&series.name), "{file}: numo serves no {}", series.name);
                let same: Vec<&Series> = served.iter().filter(|s| s.name == series.name).collect();
                assert!(!same.is_empty(), "{file}: numo served no series of {}", series.name);
                let names = own_label_names(&series.labels);
                assert!(
                    same.iter().any(|s| own_label_names(&s.labels) == names),
                    "{file}: {text} has labels {names:?}; numo's {} have {:?}",
                    series.name,
                    same.iter().map(|s| own_label_names(&s.labels)).collect::<Vec<_>>()
                );
                for (label, value) in series.labels.iter().filter(|(k, _)| !TARGET_LABELS.contains(&k.as_str())) {
                    if label != "run_config" {
                        assert!(
                            same.iter().any(|s| s.labels.get(label) == Some(value)),
                            "{file}: {text}: numo never serves {label}={value:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn the_series_the_tests_feed_the_rules_are_named_and_labelled_as_numo_serves_them() {
    // Every series the rules can read, as numo's metrics encode them for /metrics: every check, every phase that
    // waits for an admin, both reasons of a contested hold.
    let metrics = numo::metrics::Metrics::default();
    metrics.set_leader(true);
    for check in numo::api::check::ALL {
        metrics.set_check_blocking("ops/workers", check, true);
    }
    metrics.set_held_since("ops/workers", Some(1));
    metrics.set_pools_paused_since("ops/workers", Some(1));
    metrics.set_held_pools("ops/workers", 2);
    metrics.set_estimated_end("ops/workers", Some(1));
    metrics.set_next_minor_held("ops/workers", true);
    metrics.set_nodes_awaiting_admin("ops/workers", AwaitingAdmin { failed: 1, ungated: 1, skipped: 1 });
    metrics.set_contested("ops/workers", Some("ForeignChange"));
    metrics.set_contested("ops/infra", Some("ChangedBackRepeatedly"));
    let (served, families) = parse_exposition(&metrics.encode().unwrap_or_default());
    let rule = rule();
    for name in metrics_the_rules_read(&rule) {
        assert!(families.contains(&name), "the rules read {name}, which numo does not serve");
        assert!(served.iter().any(|s| s.name == name), "no series of {name}");
    }
    assert_tests_use_what_numo_serves(&served, &families, &test_files(), true);
}

/// A rollout held by a degraded ClusterOperator in the test world: numo's /metrics says so with the names and labels
/// the rules read, and those very series, recorded and replayed through promtool, fire NumoRolloutHeld after an
/// hour with the check that holds it in the description (and no other alert).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_rollout_fires_numo_rollout_held_with_its_reason() -> anyhow::Result<()> {
    let mut setup = Setup::new("alert-rules", 2).await?;
    setup.check_workers("held", job_spec("1s", false), None, json!({"healthChecks": {}})).await?;
    let operators = Api::<ClusterOperator>::all(setup.client.clone());
    let degraded = json!({"metadata": {"annotations": {faults::DEGRADED: "2 of 2 router pods crash"}}});
    operators.patch("ingress", &PatchParams::default(), &Patch::Merge(&degraded)).await?;

    // numo as `numo run` starts it: the controllers with the metrics its /metrics endpoint serves, as the leader.
    let cluster = numo_testkit::cluster().await?;
    let client = numo_testkit::rbac::operator_client(cluster).await?;
    let metrics = Arc::new(numo::metrics::Metrics::default());
    let mut ctx = numo::Context::new(client, Default::default(), metrics.clone());
    ctx.service_account = Some(numo_testkit::rbac::OPERATOR_USER.to_string());
    metrics.set_leader(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let readiness = ctx.readiness.clone();
    setup.world.spawn(async move {
        let _ = numo::server::serve(listener, metrics, readiness).await;
    });
    setup.operator = Some(setup.world.spawn(numo::controllers::run(ctx)));
    setup.upgrade_cluster(NEW).await?;

    let held = numo_testkit::wait_until(&setup.run_configs(), "held", ROLLOUT, "held by ClusterOperators", |rc| {
        rc.status.as_ref().is_some_and(|s| {
            s.held_since.is_some()
                && s.blocked_by.iter().any(|b| b.check == "ClusterOperators")
                && numo::conditions::is_true(&s.conditions, "TargetPoolsPaused")
        })
    })
    .await?;
    let status = held.status.clone().unwrap_or_default();
    let run_config = format!("{}/held", setup.ns);
    // numo records its metrics right after it writes the status: scrape until they show the hold (bounded).
    let shown = format!(r#"numo_health_check_blocking{{run_config="{run_config}",check="ClusterOperators"}} 1"#);
    let mut text = get(address, "/metrics").await;
    for _ in 0..100 {
        if text.contains(&shown) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        text = get(address, "/metrics").await;
    }
    let (mut served, families) = parse_exposition(text.split_once("\r\n\r\n").map_or(text.as_str(), |(_, body)| body));
    served.retain(|s| s.name.starts_with("numo_"));

    // What numo serves says it: which check holds the rollout, since when, the pools held and paused since when.
    let value = |name: &str, labels: &[(&str, &str)]| {
        served
            .iter()
            .find(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
            .map(|s| s.value)
    };
    let rc = [("run_config", run_config.as_str())];
    let held_since = status.held_since.as_ref().map(|t| t.0.as_second() as f64);
    let blocking = [("run_config", run_config.as_str()), ("check", "ClusterOperators")];
    assert_eq!(value("numo_health_check_blocking", &blocking), Some(1.0), "{text}");
    assert_eq!(value("numo_rollout_held_since_timestamp_seconds", &rc), held_since, "{text}");
    assert_eq!(value("numo_held_pools", &rc), Some(status.held_pools.len() as f64), "{text}");
    assert!(value("numo_held_pools", &rc).unwrap_or_default() >= 1.0, "{text}");
    let paused = numo::conditions::find(&status.conditions, "TargetPoolsPaused")
        .map(|c| c.last_transition_time.0.as_second() as f64);
    assert_eq!(value("numo_target_pools_paused_since_timestamp_seconds", &rc), paused, "{text}");
    let failed = [("run_config", run_config.as_str()), ("phase", "Failed")];
    assert_eq!(value("numo_nodes_awaiting_admin", &failed), Some(0.0), "{text}");
    let rule = rule();
    // Every family the rules read is served, but the one that has series only while someone contests numo's hold
    // (an empty family is not written at all; the encoding test above covers its labels).
    for name in metrics_the_rules_read(&rule).into_iter().filter(|n| n != "numo_foreign_change_contested") {
        assert!(families.contains(&name), "the rules read {name}, which numo does not serve:\n{text}");
    }
    assert_eq!(value("numo_leader", &[]), Some(1.0), "{text}");
    assert_tests_use_what_numo_serves(&served, &families, &test_files(), false);

    // The API server's side of NumoForeignWritesRefused: numo's admission policy refuses an admin's unpause of the
    // held pool (a dry run, so nothing changes even before the policy is in force), and the API server counts it
    // under the name and labels the rule reads.
    let before = refusals_counted(&setup.client).await?;
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    let dry_run = PatchParams { dry_run: true, ..Default::default() };
    let unpause = Patch::Merge(json!({"spec": {"paused": false}}));
    let mut refused = false;
    for _ in 0..150 {
        match pools.patch("worker", &dry_run, &unpause).await {
            Err(kube::Error::Api(status)) if status.code == 403 && status.message.contains("numo-holds") => {
                refused = true;
                break;
            }
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    assert!(refused, "numo's admission policy never refused unpausing the held pool");
    let after = refusals_counted(&setup.client).await?;
    assert!(after > before, "the API server counted {before} then {after} refusals of numo-holds");

    // The recording replayed for an hour and a half as Prometheus scrapes it (the target's labels added), its
    // timestamps as seconds since the earliest of them (promtool's clock starts at 0). The hold began `held`
    // seconds in; an hour and twenty minutes later the alert fires, not at one hour.
    let timestamps = served.iter().filter(|s| s.name.ends_with("_timestamp_seconds")).map(|s| s.value);
    let origin = timestamps.fold(f64::INFINITY, f64::min);
    let held = held_since.unwrap_or_default() - origin;
    let mut input = Vec::new();
    for series in &served {
        if series.name.ends_with("_bucket") || series.name.ends_with("_sum") || series.name.ends_with("_count") {
            continue;
        }
        let mut labels = series.labels.clone();
        labels.insert("namespace".into(), "numo-system".into());
        labels.insert("pod".into(), "numo-operator-1".into());
        labels.insert("job".into(), "numo-operator-metrics".into());
        let value = if series.name.ends_with("_timestamp_seconds") { series.value - origin } else { series.value };
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        input.push(
            json!({"series": format!("{}{{{}}}", series.name, labels.join(",")), "values": format!("{value}x100")}),
        );
    }
    let others: Vec<Value> = alerts(&rule)
        .iter()
        .map(name)
        .filter(|n| n != "NumoRolloutHeld")
        .map(|n| json!({"eval_time": format!("{}s", 4800.0 + held), "alertname": n, "exp_alerts": []}))
        .collect();
    let description = format!(
        "numo has held the next node of run config {run_config} for 1h 20m 0s and its target pools stay paused: the \
         ClusterOperators check holds it (a ClusterOperator is Degraded or not Available). The run config's \
         status.blockedBy names the objects."
    );
    let mut checks = vec![
        json!({"eval_time": format!("{}s", 3600.0 + held), "alertname": "NumoRolloutHeld", "exp_alerts": []}),
        json!({"eval_time": format!("{}s", 4800.0 + held), "alertname": "NumoRolloutHeld", "exp_alerts": [{
            "exp_labels": {
                "severity": "warning", "namespace": "numo-system", "run_config": run_config,
                "check": "ClusterOperators",
            },
            "exp_annotations": {
                "summary": format!("numo has held the worker rollout of run config {run_config} for over an hour."),
                "description": description,
                "runbook_url": format!("{RUNBOOKS}NumoRolloutHeld.md"),
            },
        }]}),
    ];
    checks.extend(others);
    let recorded = json!({
        "rule_files": [RULES_FILE],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": input, "alert_rule_test": checks}],
    });
    let recorded = BTreeMap::from([("recorded.yaml".to_string(), serde_yaml::to_string(&recorded)?)]);
    let scratch = Scratch::new("recorded", &rule, &recorded)?;
    let tested = scratch.test_rules(&recorded)?;
    assert!(tested.success, "promtool on the series numo served:\n{}\n{}", tested.output, recorded["recorded.yaml"]);
    tracing::info!("NumoRolloutHeld fires with: {description}");
    Ok(())
}

/// The writes numo's admission policy `numo-holds` refused, as the API server counts them on its `/metrics`
/// (`apiserver_validating_admission_policy_check_total{policy="numo-holds",enforcement_action="deny"}`, summed; 0
/// while it has no such series).
async fn refusals_counted(client: &kube::Client) -> anyhow::Result<f64> {
    let text = client.request_text(http::Request::get("/metrics").body(Vec::new())?).await?;
    let (series, _) = parse_exposition(&text);
    let name = "apiserver_validating_admission_policy_check_total";
    let label = |s: &Series, key: &str| s.labels.get(key).cloned().unwrap_or_default();
    Ok(series
        .iter()
        .filter(|s| s.name == name && label(s, "policy") == "numo-holds" && label(s, "enforcement_action") == "deny")
        .map(|s| s.value)
        .sum())
}

/// `GET path` from numo's endpoint at `address`, the whole HTTP response.
async fn get(address: SocketAddr, path: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: numo\r\nConnection: close\r\n\r\n");
    let exchange = move || {
        use std::io::{Read, Write};
        let mut response = String::new();
        if let Ok(mut stream) = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(10)) {
            if stream.write_all(request.as_bytes()).is_ok() {
                let _ = stream.read_to_string(&mut response);
            }
        }
        response
    };
    tokio::task::spawn_blocking(exchange).await.unwrap_or_default()
}
