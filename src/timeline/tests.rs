use chrono::{DateTime, Duration, Utc};

use super::axis::{tick_spacing, ticks};
use super::group::drawn_rows;
use super::*;

/// The time `text` (RFC 3339).
pub(super) fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}")).with_timezone(&Utc)
}

/// A node's row: each node step two minutes, from `start` on.
pub(super) fn node(name: &str, start: DateTime<Utc>, projected: bool, outcome: RowOutcome) -> Row {
    let mut t = start;
    let segments = Step::NODE
        .into_iter()
        .map(|step| {
            let s = Segment { step, start: t, end: t + Duration::minutes(2), projected };
            t += Duration::minutes(2);
            s
        })
        .collect();
    Row { node: name.to_string(), outcome, segments, group: None }
}

fn timeline(rows: Vec<Row>) -> Timeline {
    let start = at("2026-11-23T12:00:00Z");
    Timeline {
        title: "ops/example — 4.16.5".into(),
        start,
        end: start + Duration::hours(1),
        now: start + Duration::minutes(20),
        rows,
        windows: vec![Band { start, end: start + Duration::minutes(45), label: "maintenance window".into() }],
        blackouts: vec![Band {
            start: start + Duration::minutes(30),
            end: start + Duration::minutes(35),
            label: "freeze".into(),
        }],
        holds: vec![Hold {
            start: start + Duration::minutes(10),
            end: start + Duration::minutes(12),
            check: "ClusterOperators".into(),
            message: "storage is Degraded".into(),
        }],
        restore: Some(Band {
            start: start + Duration::minutes(50),
            end: start + Duration::minutes(55),
            label: "restore walk".into(),
        }),
        estimated_end: Some(start + Duration::minutes(55)),
        markers: Vec::new(),
        domains: Vec::new(),
    }
}

/// The rects of `svg` that have a tooltip (steps, bands, holds' strips are in groups): their attributes and tooltip.
fn tipped_rects(svg: &str) -> Vec<(&str, &str)> {
    svg.split("<rect ")
        .skip(1)
        .filter_map(|rest| {
            let (attributes, rest) = rest.split_once('>')?;
            let title = rest.strip_prefix("<title>")?.split_once("</title>")?.0;
            Some((attributes, title))
        })
        .collect()
}

/// The steps drawn in `svg`: fill, whether dashed, tooltip.
fn steps_drawn(svg: &str) -> Vec<(String, bool, String)> {
    tipped_rects(svg)
        .into_iter()
        .filter(|(attributes, _)| attributes.contains(&format!(r#"height="{}""#, LAYOUT.row_height)))
        .map(|(attributes, title)| {
            let fill = attributes.split(r#"fill=""#).nth(1).and_then(|f| f.split('"').next()).unwrap_or_default();
            (fill.to_string(), attributes.contains("stroke-dasharray"), title.to_string())
        })
        .collect()
}

#[test]
fn every_step_is_drawn_in_its_colour_with_its_times_and_projected_steps_differ() {
    let start = at("2026-11-23T12:00:00Z");
    let svg = render(&timeline(vec![
        node("worker-0", start, false, RowOutcome::Done),
        node("worker-1", start + Duration::minutes(10), false, RowOutcome::Failed),
        node("worker-2", start + Duration::minutes(25), true, RowOutcome::Projected),
    ]));
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    assert!(!svg.contains("<script") && !svg.contains("href"), "standalone: no script, no link");
    let steps = steps_drawn(&svg);
    assert_eq!(steps.len(), 3 * 5 + 1, "five steps of three nodes and the restore walk: {steps:?}");
    for step in Step::NODE.into_iter().chain([Step::Restore]) {
        let name = crate::estimate::name(step);
        assert!(
            steps.iter().any(|(fill, _, title)| fill == colour(step) && title.contains(&format!(": {name}"))),
            "{step:?} is not drawn in {}",
            colour(step)
        );
    }
    assert!(steps.contains(&(
        colour(Step::Upgrade).to_string(),
        false,
        "worker-0: upgrade, 2026-11-23 12:04:00 UTC – 2026-11-23 12:06:00 UTC (2m00s)".to_string()
    )));
    let projected: Vec<&String> = steps.iter().filter(|(_, dashed, _)| *dashed).map(|(_, _, title)| title).collect();
    assert_eq!(projected.len(), 5 + 1, "only the projected node's steps and the restore walk to come: {projected:?}");
    assert!(projected[..5].iter().all(|t| t.starts_with("worker-2: ") && t.contains("(projected)")), "{projected:?}");
    assert_eq!(svg.matches(r#"fill-opacity="0.35""#).count(), 5 + 1 + 1, "and the legend's key");
}

#[test]
fn the_restore_walk_is_drawn_as_it_happened_up_to_now_and_projected_after() {
    let mut t = timeline(Vec::new());
    t.now = at("2026-11-23T12:52:00Z");
    let steps = steps_drawn(&render(&t));
    let restore = colour(Step::Restore).to_string();
    assert_eq!(
        steps,
        [
            (
                restore.clone(),
                false,
                "restore walk: restore, 2026-11-23 12:50:00 UTC – 2026-11-23 12:52:00 UTC (2m00s)".to_string()
            ),
            (
                restore,
                true,
                "restore walk: restore (projected), 2026-11-23 12:52:00 UTC – 2026-11-23 12:55:00 UTC (3m00s)"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn a_step_colour_is_drawn_only_where_the_step_is() {
    let start = at("2026-11-23T12:00:00Z");
    let mut only_gates = node("worker-0", start, false, RowOutcome::InFlight);
    only_gates.segments.truncate(1);
    let mut t = timeline(vec![only_gates]);
    t.restore = None;
    let steps = steps_drawn(&render(&t));
    let fills: Vec<&str> = steps.iter().map(|(fill, _, _)| fill.as_str()).collect();
    assert_eq!(fills, [colour(Step::Gate)]);
}

#[test]
fn rows_holds_bands_and_outcomes_are_drawn_with_their_tooltips() {
    let start = at("2026-11-23T12:00:00Z");
    let svg = render(&timeline(vec![
        node("worker-0", start, false, RowOutcome::Done),
        node("worker-1", start + Duration::minutes(10), false, RowOutcome::Failed),
        node("worker-2", start + Duration::minutes(25), false, RowOutcome::Ungated),
        node("worker-3", start + Duration::minutes(35), false, RowOutcome::Skipped),
    ]));
    let rows: Vec<&str> = svg
        .split(r#"<g class="row"><title>"#)
        .skip(1)
        .filter_map(|rest| rest.split_once("</title>").map(|(title, _)| title))
        .collect();
    assert_eq!(
        rows,
        [
            "worker-0: done",
            "worker-1: failed",
            "worker-2: ungated",
            "worker-3: skipped",
            "restore walk: 2026-11-23 12:50:00 UTC – 2026-11-23 12:55:00 UTC (5m00s)"
        ]
    );
    let failed_markers = svg.matches(&format!(r#"fill="{FAILED_COLOUR}"/>"#)).count();
    assert_eq!(failed_markers, 2 + 1, "a marker for the failed and the ungated node, and the legend's key");
    assert!(svg.contains(&format!(r#"fill="{FAILED_COLOUR}" font-weight="bold">failed</text>"#)));
    assert!(svg.contains(&format!(r#"fill="{FAILED_COLOUR}" font-weight="bold">ungated</text>"#)));
    assert!(svg.contains(r#"font-style="italic">skipped</text>"#));
    let bands = tipped_rects(&svg);
    assert!(bands.iter().any(|(a, t)| a.contains(WINDOW_COLOUR)
        && *t == "maintenance window: 2026-11-23 12:00:00 UTC – 2026-11-23 12:45:00 UTC"));
    assert!(bands.iter().any(|(a, t)| a.contains(BLACKOUT_COLOUR)
        && *t == "blackout: freeze: 2026-11-23 12:30:00 UTC – 2026-11-23 12:35:00 UTC"));
    // Ten minutes into an hour over 940 pixels, two minutes long.
    assert!(svg.contains(&format!(
        r#"<g class="hold"><title>held by ClusterOperators: storage is Degraded (2026-11-23 12:10:00 UTC – 2026-11-23 12:12:00 UTC)</title><rect x="396.7" y="80" width="31.3" height="5" fill="{HOLD_COLOUR}"/>"#
    )));
    assert!(svg.contains(r#"font-size="9">ClusterOperators</text>"#), "the hold's check is its label");
    assert!(svg.contains("estimated end 2026-11-23 12:55:00 UTC"));
}

#[test]
fn a_new_release_asked_for_mid_rollout_is_marked_across_the_rows_with_its_story() {
    let mut t = timeline(vec![node("worker-0", at("2026-11-23T12:00:00Z"), false, RowOutcome::Done)]);
    t.markers.push(Marker {
        at: at("2026-11-23T12:15:00Z"),
        label: "target 4.18.0".into(),
        note: "target changed from 4.17.0 to 4.18.0; worker-1 went on to 4.18.0 inside its gated turn".into(),
        from: "4.17.0".into(),
        to: "4.18.0".into(),
        in_flight: vec!["worker-1".into()],
    });
    let svg = render(&t);
    let marked = svg.split("<g><title>").skip(1).find(|g| g.starts_with("target changed")).expect("the marker");
    assert!(marked.contains("worker-1 went on to 4.18.0"), "{marked}");
    assert!(marked.contains(r#"stroke-dasharray="8,3,2,3""#) && marked.contains(">target 4.18.0</text>"), "{marked}");
    // At a quarter of the hour-wide chart.
    let x = |at| LAYOUT.chart_left as f64 + (LAYOUT.chart_right - LAYOUT.chart_left) as f64 * at;
    assert!(marked.contains(&format!(r#"x1="{:.1}""#, x(0.25))), "{marked}");
}

#[test]
fn user_text_is_escaped() {
    let start = at("2026-11-23T12:00:00Z");
    let mut t = timeline(vec![node("<b>&\"x\"", start, false, RowOutcome::Done)]);
    t.title = "<i>ops</i> & 'co'".into();
    t.holds[0].check = "<Custom>".into();
    t.holds[0].message = "<script>alert(1)</script>".into();
    t.windows[0].label = "<w>".into();
    t.blackouts[0].label = "<freeze> & \"go\"".into();
    if let Some(restore) = t.restore.as_mut() {
        restore.label = "<restore>".into();
    }
    let svg = render(&t);
    for raw in ["<b>", "<i>", "<Custom>", "<script>", "<w>", "<freeze>", "<restore>", "& ", "'co'", "\"go\""] {
        assert!(!svg.contains(raw), "{raw} is not escaped: {svg}");
    }
    for escaped in [
        ">&lt;b&gt;&amp;&quot;x&quot;</text>",
        "<title>&lt;b&gt;&amp;&quot;x&quot;: done</title>",
        "&lt;i&gt;ops&lt;/i&gt; &amp; &apos;co&apos;",
        "held by &lt;Custom&gt;: &lt;script&gt;alert(1)&lt;/script&gt;",
        "maintenance window: &lt;w&gt;",
        "blackout: &lt;freeze&gt; &amp; &quot;go&quot;",
        ">&lt;restore&gt;</text>",
    ] {
        assert!(svg.contains(escaped), "{escaped} is not in {svg}");
    }
}

#[test]
fn beyond_the_row_limit_nodes_are_grouped_and_the_picture_stays_bounded() {
    let start = at("2026-11-23T12:00:00Z");
    let rows = |n: usize| -> Vec<Row> {
        (0..n)
            .map(|i| node(&format!("worker-{i}"), start + Duration::seconds(i as i64), false, RowOutcome::Done))
            .collect()
    };
    assert_eq!(drawn_rows(&rows(MAX_ROWS)).len(), MAX_ROWS);
    let grouped = drawn_rows(&rows(2000));
    assert!(grouped.len() <= MAX_ROWS && grouped.len() >= MAX_ROWS / 2, "{}", grouped.len());
    assert_eq!(grouped[0].label, "worker-0 … worker-6 (7 nodes)");
    assert_eq!(grouped[0].title, "worker-0 … worker-6 (7 nodes): 7 done");
    assert_eq!(grouped[0].segments[0].start, start);
    assert_eq!(grouped[0].segments[0].end, start + Duration::seconds(6) + Duration::minutes(2));
    let small = render(&timeline(rows(MAX_ROWS))).len();
    let large = render(&timeline(rows(2000))).len();
    assert!(large <= small * 3 / 2, "2,000 nodes draw about as much as 300: {large} vs {small} bytes");
    assert!(large < 512 * 1024, "{large} bytes");
}

#[test]
fn a_summary_row_keeps_its_count_when_names_are_long_and_counts_its_outcomes() {
    let start = at("2026-11-23T12:00:00Z");
    let rows: Vec<Row> = (0..MAX_ROWS * 2 + 2)
        .map(|i| {
            let outcome = match i {
                0 => RowOutcome::Failed,
                1 => RowOutcome::Skipped,
                _ => RowOutcome::Done,
            };
            node(&format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 250, i % 250), start, false, outcome)
        })
        .collect();
    let grouped = drawn_rows(&rows);
    assert_eq!(grouped.len(), MAX_ROWS / 3 * 2 + 1, "three nodes to a row");
    let first = &grouped[0];
    assert_eq!(first.label, "ip-10-0-0… … ip-10-0-0… (3 nodes)");
    assert_eq!(
        first.title,
        "ip-10-0-0-0.eu-west-1.compute.internal … ip-10-0-0-2.eu-west-1.compute.internal (3 nodes): \
         1 failed, 1 skipped, 1 done"
    );
    assert_eq!(first.outcome, RowOutcome::Failed, "a group shows the outcome that most needs attention");
    assert_eq!(grouped[1].outcome, RowOutcome::Done);
    let svg = render(&timeline(rows));
    assert!(svg.contains(">ip-10-0-0… … ip-10-0-0… (3 nodes)</text>"), "the label is drawn");
    assert!(svg.contains("<title>ip-10-0-0-0.eu-west-1.compute.internal … ip-10-0-0-2.eu-west-1.compute.internal (3 nodes): 1 failed, 1 skipped, 1 done</title>"));
}

#[test]
fn ticks_suit_the_span() {
    assert_eq!(tick_spacing(Duration::seconds(90)), Duration::seconds(10));
    assert_eq!(tick_spacing(Duration::minutes(4)), Duration::seconds(30));
    assert_eq!(tick_spacing(Duration::minutes(10)), Duration::minutes(1));
    assert_eq!(tick_spacing(Duration::hours(5)), Duration::hours(1));
    assert_eq!(tick_spacing(Duration::days(3)), Duration::hours(6));
    assert_eq!(tick_spacing(Duration::days(30)), Duration::days(3));
}

/// The labels of the ticks from `start` for `span`.
fn labels(start: &str, span: Duration) -> Vec<String> {
    let start = at(start);
    ticks(start, start + span).into_iter().map(|(_, label)| label).collect()
}

#[test]
fn tick_labels_are_utc_on_whole_steps_and_tell_ticks_apart() {
    assert_eq!(
        labels("2026-11-23T12:00:05Z", Duration::seconds(90)),
        ["12:00:10", "12:00:20", "12:00:30", "12:00:40", "12:00:50", "12:01:00", "12:01:10", "12:01:20", "12:01:30"],
        "ticks less than a minute apart show seconds"
    );
    assert_eq!(
        labels("2026-11-23T12:00:30Z", Duration::minutes(10)),
        ["12:01", "12:02", "12:03", "12:04", "12:05", "12:06", "12:07", "12:08", "12:09", "12:10"]
    );
    assert_eq!(labels("2026-11-23T12:20:00+02:00", Duration::hours(5)), ["11:00", "12:00", "13:00", "14:00", "15:00"]);
    let days = labels("2026-11-23T10:00:00Z", Duration::days(3));
    assert_eq!(days.len(), 12, "{days:?}");
    assert_eq!(days[..3], ["11-23 12:00", "11-23 18:00", "11-24 00:00"], "a span over a day shows the date");
    assert_eq!(
        labels("2026-11-01T10:00:00Z", Duration::days(30)),
        ["11-03", "11-06", "11-09", "11-12", "11-15", "11-18", "11-21", "11-24", "11-27", "11-30"],
        "day ticks fall on midnight UTC"
    );
    let svg = render(&timeline(Vec::new()));
    assert!(svg.contains(">UTC</text>"), "the axis says its times are UTC");
}

#[test]
fn an_empty_rollout_still_draws_a_valid_picture_that_says_so() {
    let mut t = timeline(Vec::new());
    t.restore = None;
    let svg = render(&t);
    assert!(svg.contains("No node in this rollout yet."));
    assert!(svg.trim_end().ends_with("</svg>"));
}

fn hold(start: DateTime<Utc>, seconds: i64, check: &str, message: &str) -> Hold {
    Hold { start, end: start + Duration::seconds(seconds), check: check.into(), message: message.into() }
}

#[test]
fn holds_apart_are_drawn_apart_and_holds_too_close_to_tell_apart_as_one() {
    let start = at("2026-11-23T12:00:00Z");
    let mut t = timeline(Vec::new());
    // A one-hour chart: two pixels are about 7.7 s.
    t.holds = vec![
        hold(start + Duration::minutes(5), 60, "Alerts", "KubeNodeNotReady is firing"),
        hold(start + Duration::minutes(30), 20, "ClusterOperators", "storage is Degraded"),
        hold(start + Duration::minutes(30) + Duration::seconds(25), 90, "Custom", "ceph is HEALTH_WARN"),
        hold(start + Duration::minutes(32), 5, "ClusterOperators", "storage is Degraded"),
        hold(start - Duration::hours(2), 60, "Alerts", "before the chart"),
    ];
    let svg = render(&t);
    assert_eq!(svg.matches(r#"<g class="hold">"#).count(), 2, "{svg}");
    assert!(svg.contains(
        "<title>held by Alerts: KubeNodeNotReady is firing (2026-11-23 12:05:00 UTC – 2026-11-23 12:06:00 UTC)</title>"
    ));
    assert!(
        svg.contains(
            "<title>held 3 times, too close to draw apart, by ClusterOperators, Custom: 2026-11-23 12:30:00 UTC – \
             2026-11-23 12:32:05 UTC; the longest: held by Custom: ceph is HEALTH_WARN (2026-11-23 12:30:25 UTC – \
             2026-11-23 12:31:55 UTC)</title>"
        ),
        "{svg}"
    );
    assert!(svg.contains(r#"font-size="9">ClusterOperators, Custom</text>"#), "the merged hold's checks are its label");
    assert!(!svg.contains("before the chart"), "a hold outside the chart is not drawn");
}

#[test]
fn thousands_of_holds_windows_and_blackouts_stay_bounded_by_the_chart_width() {
    let start = at("2026-11-23T12:00:00Z");
    let most = (LAYOUT.chart_right - LAYOUT.chart_left) as usize / 2 + 1;
    let message = "ClusterOperator storage is Degraded: 3 of 5 OSDs are down; the pool would stall the drain";
    for every in [1, 5, 8, 20, 60] {
        let mut t = timeline(Vec::new());
        t.holds = (0..5000).map(|i| hold(start + Duration::seconds(every * i), 1, "Alerts", message)).collect();
        t.windows = (0..5000)
            .map(|i| Band {
                start: start + Duration::seconds(every * i),
                end: start + Duration::seconds(every * i + 1),
                label: "maintenance window".into(),
            })
            .collect();
        t.blackouts = t.windows.iter().map(|w| Band { label: format!("freeze {}", w.start), ..w.clone() }).collect();
        let svg = render(&t);
        let holds = svg.matches(r#"<g class="hold">"#).count();
        assert!((1..=most).contains(&holds), "holds every {every}s: {holds} drawn");
        if every == 60 {
            assert_eq!(holds, 60, "holds a minute apart in an hour are each drawn");
        }
        let labels = svg.matches(r#"font-size="9">"#).count();
        assert!(labels <= 940 / 30, "hold labels every {every}s: {labels}, they would overlap");
        let bands = svg.matches("maintenance window").count() + svg.matches("blackout").count();
        assert!(bands <= 4 * most, "bands every {every}s: {bands}");
        assert!(svg.len() < 256 * 1024, "every {every}s: {} bytes", svg.len());
    }
}

#[test]
fn rows_of_failure_domains_are_drawn_as_groups_and_summaries_never_span_two() {
    let start = at("2026-11-23T12:00:00Z");
    let in_rack =
        |name: &str, rack: &str| Row { group: Some(rack.into()), ..node(name, start, false, RowOutcome::Done) };
    let rows = vec![in_rack("worker-3", "rack-b"), in_rack("worker-4", "rack-b"), in_rack("worker-0", "rack-a")];
    let svg = render(&timeline(rows));
    assert!(svg.contains(">rack-b · worker-3<") && svg.contains(">rack-a · worker-0<"), "labels name the domain");
    assert_eq!(svg.matches("<title>failure domain rack-a</title>").count(), 1, "one rule where rack-a begins");
    assert_eq!(svg.matches("<title>failure domain").count(), 1, "no rule above the first domain");
    // A long domain gives way to the node's name.
    let long = render(&timeline(vec![in_rack("worker-4", "(nodes without the topology.rook.io/rack label)")]));
    assert!(long.contains(" · worker-4<"), "the node's name stays whole in the label");

    // 301 nodes in two domains: the summary rows of one domain never take a node of the other.
    let many: Vec<Row> =
        (0..301).map(|i| in_rack(&format!("worker-{i:03}"), if i < 150 { "rack-a" } else { "rack-b" })).collect();
    let drawn = drawn_rows(&many);
    assert!(drawn.len() <= MAX_ROWS + 1, "{}", drawn.len());
    for row in &drawn {
        let (first, last) = row.name.split_once(" … ").map_or((row.name.as_str(), ""), |(f, l)| (f, l));
        let index = |n: &str| n.trim_start_matches("worker-").get(..3).and_then(|d| d.parse::<usize>().ok());
        if let (Some(a), Some(b)) = (index(first), index(last)) {
            assert_eq!(a < 150, b < 150, "a summary row spans two domains: {}", row.name);
        }
        assert!(row.label.starts_with("rack-"), "{}", row.label);
    }
}
