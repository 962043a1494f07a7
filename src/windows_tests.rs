use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn window(schedule: &str, duration: &str, zone: Option<&str>) -> MaintenanceWindow {
    MaintenanceWindow { schedule: schedule.into(), duration: duration.into(), time_zone: zone.map(String::from) }
}

fn blackout(start: &str, end: &str, reason: &str) -> BlackoutWindow {
    let parse = |s: &str| Time(s.parse().unwrap_or_else(|e| panic!("{s}: {e}")));
    BlackoutWindow { start: parse(start), end: parse(end), reason: Some(reason.into()) }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}")).with_timezone(&Utc)
}

fn schedule(windows: &[MaintenanceWindow], blackouts: &[BlackoutWindow]) -> Schedule {
    Schedule::parse(windows, blackouts).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The next window as RFC 3339 text in its own time zone.
fn next(verdict: &Verdict) -> Option<(String, Option<String>)> {
    verdict.next.as_ref().map(|(start, end)| (start.to_rfc3339(), end.as_ref().map(|e| e.to_rfc3339())))
}

fn pair(start: &str, end: &str) -> Option<(String, Option<String>)> {
    Some((start.into(), Some(end.into())))
}

#[test]
fn no_windows_never_hold_and_never_wake_numo() {
    let verdict = schedule(&[], &[]).at(at("2026-11-23T12:00:00Z"));
    assert_eq!(verdict, Verdict { closed: vec![], next: None, changes_at: None });
}

#[test]
fn a_daily_window_opens_at_its_start_and_closes_after_its_duration() {
    let s = schedule(&[window("0 22 * * *", "4h", None)], &[]);
    let before = s.at(at("2026-11-23T21:59:00Z"));
    assert_eq!(before.closed, vec![Closed::OutsideWindow]);
    assert_eq!(next(&before), pair("2026-11-23T22:00:00+00:00", "2026-11-24T02:00:00+00:00"));
    assert_eq!(before.changes_at, Some(at("2026-11-23T22:00:00Z")));

    let opening = s.at(at("2026-11-23T22:00:00Z"));
    assert_eq!(opening.closed, vec![], "the window is open from its first instant");
    let inside = s.at(at("2026-11-24T01:59:59Z"));
    assert_eq!(inside.closed, vec![]);
    assert_eq!(next(&inside), pair("2026-11-23T22:00:00+00:00", "2026-11-24T02:00:00+00:00"));
    assert_eq!(inside.changes_at, Some(at("2026-11-24T02:00:00Z")));

    let closing = s.at(at("2026-11-24T02:00:00Z"));
    assert_eq!(closing.closed, vec![Closed::OutsideWindow], "the window is closed from its end");
    assert_eq!(next(&closing), pair("2026-11-24T22:00:00+00:00", "2026-11-25T02:00:00+00:00"));
}

#[test]
fn a_window_is_read_in_its_time_zone_and_shown_in_it() {
    let s = schedule(&[window("0 22 * * FRI", "4h", Some("Europe/Warsaw"))], &[]);
    // Monday 2026-11-23; the next Friday 22:00 in Warsaw (CET, +01:00) is 21:00 UTC.
    let verdict = s.at(at("2026-11-23T12:00:00Z"));
    assert_eq!(verdict.closed, vec![Closed::OutsideWindow]);
    assert_eq!(next(&verdict), pair("2026-11-27T22:00:00+01:00", "2026-11-28T02:00:00+01:00"));
    assert_eq!(verdict.changes_at, Some(at("2026-11-27T21:00:00Z")));
}

#[test]
fn a_blackout_holds_inside_an_open_window_and_the_window_resumes_after_it() {
    let s = schedule(
        &[window("0 22 * * *", "4h", None)],
        &[blackout("2026-11-23T23:00:00Z", "2026-11-23T23:30:00Z", "database maintenance")],
    );
    let before = s.at(at("2026-11-23T22:30:00Z"));
    assert_eq!(before.closed, vec![]);
    assert_eq!(before.changes_at, Some(at("2026-11-23T23:00:00Z")), "numo wakes when the blackout starts");
    assert_eq!(next(&before), pair("2026-11-23T22:00:00+00:00", "2026-11-23T23:00:00+00:00"));

    let during = s.at(at("2026-11-23T23:10:00Z"));
    assert_eq!(
        during.closed,
        vec![Closed::Blackout { end: at("2026-11-23T23:30:00Z"), reason: Some("database maintenance".into()) }]
    );
    assert_eq!(next(&during), pair("2026-11-23T23:30:00+00:00", "2026-11-24T02:00:00+00:00"));
    assert_eq!(during.changes_at, Some(at("2026-11-23T23:30:00Z")));
}

#[test]
fn a_blackout_over_a_whole_window_moves_the_next_window_to_the_one_after() {
    let s = schedule(
        &[window("0 22 * * *", "4h", None)],
        &[blackout("2026-11-23T20:00:00Z", "2026-11-24T03:00:00Z", "freeze")],
    );
    let verdict = s.at(at("2026-11-23T21:00:00Z"));
    assert!(
        matches!(verdict.closed.as_slice(), [Closed::Blackout { .. }, Closed::OutsideWindow]),
        "both hold: {:?}",
        verdict.closed
    );
    assert_eq!(next(&verdict), pair("2026-11-24T22:00:00+00:00", "2026-11-25T02:00:00+00:00"));
    assert_eq!(verdict.changes_at, Some(at("2026-11-23T22:00:00Z")), "the window opens inside the blackout");
}

#[test]
fn every_edge_changes_the_verdict_when_a_window_opens_inside_a_short_blackout() {
    // The window opens at T = 22:00; a blackout runs from T-10s to T+20s.
    let s = schedule(
        &[window("0 22 * * *", "1h", None)],
        &[blackout("2026-11-23T21:59:50Z", "2026-11-23T22:00:20Z", "failover test")],
    );
    let before = s.at(at("2026-11-23T21:59:40Z"));
    assert_eq!(before.closed, vec![Closed::OutsideWindow]);
    assert_eq!(before.changes_at, Some(at("2026-11-23T21:59:50Z")), "the blackout starts");
    let both = s.at(at("2026-11-23T21:59:55Z"));
    assert!(matches!(both.closed.as_slice(), [Closed::Blackout { .. }, Closed::OutsideWindow]), "{:?}", both.closed);
    assert_eq!(both.changes_at, Some(at("2026-11-23T22:00:00Z")), "the window opens at T, inside the blackout");
    let blackout_only = s.at(at("2026-11-23T22:00:00Z"));
    assert!(matches!(blackout_only.closed.as_slice(), [Closed::Blackout { .. }]), "{:?}", blackout_only.closed);
    assert_eq!(blackout_only.changes_at, Some(at("2026-11-23T22:00:20Z")));
    let open = s.at(at("2026-11-23T22:00:20Z"));
    assert_eq!(open.closed, vec![]);
    assert_eq!(open.changes_at, Some(at("2026-11-23T23:00:00Z")), "the window closes");
}

#[test]
fn blackouts_alone_hold_only_while_they_last() {
    let s = schedule(&[], &[blackout("2026-12-24T00:00:00Z", "2026-12-27T00:00:00Z", "holidays")]);
    let before = s.at(at("2026-12-23T12:00:00Z"));
    assert_eq!(before.closed, vec![]);
    assert_eq!(before.next, None, "no maintenance window to show");
    assert_eq!(before.changes_at, Some(at("2026-12-24T00:00:00Z")));
    let during = s.at(at("2026-12-25T12:00:00Z"));
    assert!(matches!(during.closed.as_slice(), [Closed::Blackout { .. }]));
    assert_eq!(next(&during).map(|(start, _)| start), Some("2026-12-27T00:00:00+00:00".into()));
    assert_eq!(during.changes_at, Some(at("2026-12-27T00:00:00Z")));
    assert_eq!(s.at(at("2026-12-27T00:00:00Z")).closed, vec![]);
}

#[test]
fn touching_blackouts_hold_as_one() {
    let s = schedule(
        &[],
        &[
            blackout("2026-12-24T00:00:00Z", "2026-12-25T00:00:00Z", "a"),
            blackout("2026-12-25T00:00:00Z", "2026-12-26T00:00:00Z", "b"),
        ],
    );
    let verdict = s.at(at("2026-12-24T06:00:00Z"));
    assert_eq!(verdict.closed, vec![Closed::Blackout { end: at("2026-12-26T00:00:00Z"), reason: Some("a".into()) }]);
}

#[test]
fn a_start_in_the_spring_forward_gap_opens_the_window_right_after_the_gap() {
    // Europe/Warsaw skips 02:00–03:00 on 2026-03-29: 02:30 does not exist that day.
    let s = schedule(&[window("30 2 * * *", "1h", Some("Europe/Warsaw"))], &[]);
    let verdict = s.at(at("2026-03-28T23:00:00Z"));
    assert_eq!(next(&verdict), pair("2026-03-29T03:00:00+02:00", "2026-03-29T04:00:00+02:00"));
    // The day after, the window opens at 02:30 again.
    let verdict = s.at(at("2026-03-29T06:00:00Z"));
    assert_eq!(next(&verdict), pair("2026-03-30T02:30:00+02:00", "2026-03-30T03:30:00+02:00"));
}

#[test]
fn a_start_in_the_repeated_fall_back_hour_opens_the_window_once_for_its_elapsed_duration() {
    // Europe/Warsaw repeats 02:00–03:00 on 2026-10-25 (first +02:00, then +01:00).
    let s = schedule(&[window("30 2 * * *", "2h", Some("Europe/Warsaw"))], &[]);
    let verdict = s.at(at("2026-10-24T23:00:00Z"));
    // Opens at the first 02:30 (00:30 UTC) and stays open two real hours: until 03:30 on the wall clock after it
    // went back.
    assert_eq!(next(&verdict), pair("2026-10-25T02:30:00+02:00", "2026-10-25T03:30:00+01:00"));
    // During the second pass of 02:30 the window opened the first time is still open; it does not open again.
    let second_pass = s.at(at("2026-10-25T01:30:00Z"));
    assert_eq!(second_pass.closed, vec![]);
    assert_eq!(second_pass.changes_at, Some(at("2026-10-25T02:30:00Z")));
    let after = s.at(at("2026-10-25T02:30:00Z"));
    assert_eq!(after.closed, vec![Closed::OutsideWindow]);
    assert_eq!(next(&after).map(|(start, _)| start), Some("2026-10-26T02:30:00+01:00".into()));
}

#[test]
fn overlapping_starts_keep_the_window_open_without_end() {
    let s = schedule(&[window("0 * * * *", "90m", None)], &[]);
    let verdict = s.at(at("2026-11-23T12:10:00Z"));
    assert_eq!(verdict.closed, vec![]);
    let changes_at = verdict.changes_at.unwrap_or_else(|| panic!("a bounded look ahead"));
    assert!(changes_at > at("2026-11-30T00:00:00Z"), "followed far ahead: {changes_at}");
}

#[test]
fn two_windows_count_as_open_when_either_is() {
    let s = schedule(&[window("0 1 * * *", "1h", None), window("0 13 * * *", "1h", Some("Asia/Tokyo"))], &[]);
    // 13:00 in Tokyo is 04:00 UTC.
    assert_eq!(s.at(at("2026-11-23T01:30:00Z")).closed, vec![]);
    assert_eq!(s.at(at("2026-11-23T04:30:00Z")).closed, vec![]);
    let between = s.at(at("2026-11-23T02:30:00Z"));
    assert_eq!(between.closed, vec![Closed::OutsideWindow]);
    assert_eq!(next(&between), pair("2026-11-23T13:00:00+09:00", "2026-11-23T14:00:00+09:00"));
}

#[test]
fn every_bad_window_is_named() {
    let problems = Schedule::parse(
        &[
            window("0 22 * *", "4h", None),
            window("0 22 * * *", "4h", Some("Mars/Olympus")),
            window("61 22 * * *", "4 hours", None),
        ],
        &[blackout("2026-12-24T00:00:00Z", "2026-12-23T00:00:00Z", "backwards")],
    )
    .err()
    .unwrap_or_default();
    let text = problems.join("\n");
    assert!(text.contains("maintenanceWindows[0].schedule \"0 22 * *\" is not a 5-field cron expression"), "{text}");
    assert!(text.contains("maintenanceWindows[1].timeZone \"Mars/Olympus\" is not an IANA time zone"), "{text}");
    assert!(text.contains("maintenanceWindows[2].schedule"), "{text}");
    assert!(text.contains("maintenanceWindows[2].duration \"4 hours\" is not a duration"), "{text}");
    assert!(text.contains("blackoutWindows[0] ends before it starts"), "{text}");
    assert_eq!(problems.len(), 5);
}

#[test]
fn a_six_field_expression_is_refused() {
    assert!(Schedule::parse(&[window("0 0 22 * * *", "4h", None)], &[]).is_err());
}

#[test]
fn the_safe_to_proceed_sample_has_windows_numo_reads() {
    let text =
        include_str!("../config/samples/safe-to-proceed/openshift-optional.skrzypek.io_v1alpha1_mutexrunconfig.yaml");
    let rc: crate::api::MutexRunConfig = serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    let s = schedule(&rc.spec.maintenance_windows, &rc.spec.blackout_windows);
    // Monday 2026-11-23 12:00 UTC: closed; the window opens at 22:00 in Warsaw.
    let verdict = s.at(at("2026-11-23T12:00:00Z"));
    assert_eq!(next(&verdict), pair("2026-11-23T22:00:00+01:00", "2026-11-24T05:00:00+01:00"));
    // Inside the freeze, the next window is the first weeknight after it.
    let frozen = s.at(at("2026-12-22T23:00:00Z"));
    assert!(matches!(frozen.closed.as_slice(), [Closed::Blackout { .. }]));
    assert_eq!(next(&frozen).map(|(start, _)| start), Some("2027-01-04T22:00:00+01:00".into()));
    assert_eq!(rc.spec.soak_time(), Some(std::time::Duration::from_secs(900)));
}

#[test]
fn a_schedule_that_never_opens_is_refused_and_judged_once() {
    let never = [window("0 0 30 2 *", "1h", None)];
    let problems = Schedule::parse(&never, &[]).err().unwrap_or_default();
    assert_eq!(
        problems,
        ["maintenanceWindows[0].schedule \"0 0 30 2 *\" never opens (no such date in the next 8 years)"]
    );
    for _ in 0..100 {
        assert!(Schedule::parse(&never, &[]).is_err());
    }
    let searched = super::SEARCHED.lock().map(|s| s.iter().filter(|t| *t == "0 0 30 2 *").count()).unwrap_or(0);
    assert_eq!(searched, 1, "the schedule was searched again");
    // A leap day opens every four years: fine.
    assert!(Schedule::parse(&[window("0 0 29 2 *", "1h", None)], &[]).is_ok());
}

#[test]
fn open_periods_and_blackouts_are_listed_between_two_instants() {
    let s = schedule(
        &[window("0 22 * * *", "4h", None)],
        &[blackout("2026-11-23T23:00:00Z", "2026-11-24T00:00:00Z", "freeze")],
    );
    let periods = s.open_periods(at("2026-11-23T12:00:00Z"), at("2026-11-25T00:00:00Z"));
    assert_eq!(
        periods,
        vec![
            (at("2026-11-23T22:00:00Z"), at("2026-11-24T02:00:00Z")),
            (at("2026-11-24T22:00:00Z"), at("2026-11-25T00:00:00Z")),
        ],
        "the blackout inside a window does not split it; the last one is clipped"
    );
    let blackouts = s.blackout_periods(at("2026-11-23T12:00:00Z"), at("2026-11-25T00:00:00Z"));
    assert_eq!(blackouts, vec![(at("2026-11-23T23:00:00Z"), at("2026-11-24T00:00:00Z"), Some("freeze".into()))]);
    assert_eq!(schedule(&[], &[]).open_periods(at("2026-11-23T12:00:00Z"), at("2026-11-25T00:00:00Z")), vec![]);
}
