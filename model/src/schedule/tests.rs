use chrono::{Duration, TimeZone, Utc};

use super::*;

fn at(h: u32, m: u32, s: u32) -> Timestamp {
    Utc.with_ymd_and_hms(2026, 11, 27, h, m, s).single().unwrap()
}

fn spec(pattern: &str) -> Spec {
    Spec::new(pattern, None, Policy::Forbid, None, at(0, 0, 0)).unwrap()
}

#[test]
fn five_fields_or_six_with_seconds_in_a_time_zone() {
    let every_minute = spec("* * * * *");
    assert_eq!(every_minute.next_after(at(10, 0, 30)), Some(at(10, 1, 0)));
    let every_two_seconds = spec("*/2 * * * * *");
    assert_eq!(every_two_seconds.next_after(at(10, 0, 1)), Some(at(10, 0, 2)));
    let paris = Spec::new("0 9 * * *", Some("Europe/Paris"), Policy::Forbid, None, at(0, 0, 0)).unwrap();
    assert_eq!(paris.next_after(at(0, 0, 0)), Some(at(8, 0, 0)), "09:00 in Paris is 08:00 UTC in November");
    let refused =
        |pattern: &str, zone: Option<&str>| Spec::new(pattern, zone, Policy::Forbid, None, at(0, 0, 0)).unwrap_err();
    assert_eq!(refused("* * * *", None).0, "cron");
    assert_eq!(refused("* * * * * * 2027", None).0, "cron");
    assert_eq!(refused("61 * * * *", None).0, "cron");
    assert_eq!(refused("0 0 30 2 *", None), ("cron", "`0 0 30 2 *` never fires (no date matches it)".into()));
    assert_eq!(refused("* * * * *", Some("Mars/Olympus")).0, "time_zone");
}

#[test]
fn fire_times_are_whole_seconds_whatever_the_clock_reads() {
    let s = spec("*/2 * * * * *");
    let fraction = at(10, 0, 1) + Duration::milliseconds(569);
    assert_eq!(s.next_after(fraction), Some(at(10, 0, 2)));
    assert_eq!(s.next_after(at(10, 0, 2) + Duration::milliseconds(1)), Some(at(10, 0, 4)));
    let due = plan(&s, at(10, 0, 2), at(10, 0, 2) + Duration::milliseconds(300));
    assert_eq!(due.start, Some(at(10, 0, 2)));
}

#[test]
fn the_shortest_gap_is_what_the_minimum_interval_is_checked_against() {
    assert_eq!(spec("*/2 * * * * *").shortest_gap(at(0, 0, 0)), Some(Duration::seconds(2)));
    assert_eq!(spec("0,1 * * * *").shortest_gap(at(0, 0, 0)), Some(Duration::minutes(1)));
    assert_eq!(spec("0 3 * * *").shortest_gap(at(0, 0, 0)), Some(Duration::days(1)));
    assert!(too_frequent(&spec("*/2 * * * * *"), Duration::seconds(60), at(0, 0, 0)).unwrap().contains("every 2 s"));
    assert_eq!(too_frequent(&spec("* * * * *"), Duration::seconds(60), at(0, 0, 0)), None);
}

#[test]
fn a_due_time_starts_once_and_nothing_is_due_before_its_time() {
    let s = spec("*/10 * * * * *");
    let nothing = plan(&s, at(10, 0, 10), at(10, 0, 5));
    assert_eq!(nothing, Plan { start: None, missed: vec![], more_missed: false, next: Some(at(10, 0, 10)) });
    let due = plan(&s, at(10, 0, 10), at(10, 0, 11));
    assert_eq!(due, Plan { start: Some(at(10, 0, 10)), missed: vec![], more_missed: false, next: Some(at(10, 0, 20)) });
    // The next pass starts from the plan's cursor: the same time never twice.
    let after = plan(&s, due.next.unwrap(), at(10, 0, 12));
    assert_eq!(after.start, None);
}

#[test]
fn after_an_outage_at_most_one_catch_up_run_and_the_rest_missed() {
    let s = spec("*/2 * * * * *");
    // Down from 10:00:00 to 10:00:31 with the cursor at 10:00:02: the
    // latest time (10:00:30) is within the 10-minute deadline.
    let p = plan(&s, at(10, 0, 2), at(10, 0, 31));
    assert_eq!(p.start, Some(at(10, 0, 30)));
    assert_eq!(p.missed.len(), 14, "10:00:02 to 10:00:28");
    assert_eq!((p.missed[0], *p.missed.last().unwrap()), (at(10, 0, 2), at(10, 0, 28)));
    assert_eq!(p.next, Some(at(10, 0, 32)));

    // Past the deadline, nothing starts: every time is missed.
    let short = Spec::new("*/2 * * * * *", None, Policy::Forbid, Some(Duration::seconds(0)), at(0, 0, 0)).unwrap();
    let late = plan(&short, at(10, 0, 2), at(10, 0, 31));
    assert_eq!((late.start, late.missed.len()), (None, 15));

    // A long outage records a bounded number of missed times.
    let long = plan(&s, at(1, 0, 0), at(10, 0, 1));
    assert_eq!((long.start, long.missed.len(), long.more_missed), (Some(at(10, 0, 0)), MAX_MISSED_RECORDED, true));
}
