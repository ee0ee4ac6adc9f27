//! The gate under tokio's paused clock: lines and ticks at exact instants.

use std::collections::HashSet;

use tokio::time::{Duration, Instant, advance, pause};

use super::*;

/// The monitor's tick: pending Playgrounds are taken to the store (and
/// answered) then.
const TICK: Duration = Duration::from_secs(1);

fn sleeping(ids: &[i64]) -> HashSet<i64> {
    ids.iter().copied().collect()
}

/// Runs the monitor's side for `duration`: `per_second` lines for each of
/// `ids` spread evenly, and a tick every second; answers the store calls
/// made (line or tick), by Playground, in order.
async fn drive(
    gate: &mut WakeLineGate,
    ids: &[i64],
    asleep: &HashSet<i64>,
    per_second: u32,
    duration: Duration,
) -> Vec<i64> {
    let step = Duration::from_secs(1) / per_second;
    let end = Instant::now() + duration;
    let mut next_tick = Instant::now() + TICK;
    let mut calls = Vec::new();
    while Instant::now() < end {
        for id in ids {
            if gate.admit(*id, asleep, Instant::now()) == Verdict::Store {
                gate.stored(*id, Instant::now());
                calls.push(*id);
            }
        }
        advance(step).await;
        if Instant::now() >= next_tick {
            next_tick += TICK;
            for id in gate.due(asleep, Instant::now()) {
                gate.stored(id, Instant::now());
                calls.push(id);
            }
        }
    }
    calls
}

#[tokio::test]
async fn a_flood_at_one_sleeping_playground_reaches_the_store_once_per_cooldown() {
    pause();
    let mut gate = WakeLineGate::new(Instant::now());
    let asleep = sleeping(&[7]);
    // 2,000 requests in 2 s.
    let calls = drive(&mut gate, &[7], &asleep, 1000, Duration::from_secs(2)).await;
    assert_eq!(calls, [7, 7], "the first line, and one recheck of the 1,999 its cooldown coalesced");
    // No more lines: no more store calls.
    advance(COOLDOWN * 3).await;
    assert!(gate.due(&asleep, Instant::now()).is_empty());
    assert_eq!(gate.report(Instant::now()), None, "nothing was over the rate");
    // A longer flood: one store call per cooldown, whatever the rate.
    let calls = drive(&mut gate, &[7], &asleep, 1000, Duration::from_secs(30)).await;
    assert!((14..=16).contains(&calls.len()), "{} store calls in 30 s", calls.len());
}

#[tokio::test]
async fn lines_for_playgrounds_not_sleeping_are_ignored() {
    pause();
    let mut gate = WakeLineGate::new(Instant::now());
    let asleep = sleeping(&[1]);
    for _ in 0..1000 {
        assert_eq!(gate.admit(2, &asleep, Instant::now()), Verdict::Ignored);
    }
    // It woke and ran: its pending recheck and mark are forgotten.
    assert_eq!(gate.admit(1, &asleep, Instant::now()), Verdict::Store);
    gate.stored(1, Instant::now());
    assert_eq!(gate.admit(1, &asleep, Instant::now()), Verdict::Coalesced);
    assert!(gate.due(&sleeping(&[]), Instant::now()).is_empty());
    assert_eq!(gate.admit(1, &sleeping(&[]), Instant::now()), Verdict::Ignored);
    // Asleep again at once: its next line goes to the store at once.
    assert_eq!(gate.admit(1, &asleep, Instant::now()), Verdict::Store);
}

#[tokio::test]
async fn a_playground_put_to_sleep_again_within_the_cooldown_still_wakes() {
    pause();
    let mut gate = WakeLineGate::new(Instant::now());
    let asleep = sleeping(&[3]);
    assert_eq!(gate.admit(3, &asleep, Instant::now()), Verdict::Store);
    gate.stored(3, Instant::now());
    // Woken, then asleep again before the edge's snapshot changed: the
    // request's line is coalesced, not lost.
    advance(Duration::from_millis(500)).await;
    assert_eq!(gate.admit(3, &asleep, Instant::now()), Verdict::Coalesced);
    advance(Duration::from_millis(500)).await;
    assert!(gate.due(&asleep, Instant::now()).is_empty(), "still in its cooldown");
    advance(COOLDOWN).await;
    assert_eq!(gate.due(&asleep, Instant::now()), [3], "rechecked once the cooldown is over");
}

#[tokio::test]
async fn lines_for_many_playgrounds_are_bound_by_the_rate_and_none_is_lost() {
    pause();
    let mut gate = WakeLineGate::new(Instant::now());
    let ids: Vec<i64> = (1..=100).collect();
    let asleep = sleeping(&ids);
    // A host prints a line for each of its 100 sleeping Playgrounds, 10
    // times a second, for 5 s.
    let calls = drive(&mut gate, &ids, &asleep, 10, Duration::from_secs(5)).await;
    let bound = BURST as usize + 5 * RATE as usize;
    assert!(calls.len() <= bound, "{} store calls in 5 s, bound {bound}", calls.len());
    assert!(calls.len() >= bound - 2, "the bucket is used: {}", calls.len());
    let over = gate.report(Instant::now()).unwrap();
    assert!(over >= 50, "the lines over the rate are counted: {over}");
    assert_eq!(gate.report(Instant::now() + Duration::from_secs(1)), None, "reported at most once a minute");
    // The lines stop: every Playground still reaches the store, once each
    // beyond its earlier call, within the bucket's time.
    let mut reached: HashSet<i64> = calls.iter().copied().collect();
    for _ in 0..20 {
        advance(TICK).await;
        for id in gate.due(&asleep, Instant::now()) {
            gate.stored(id, Instant::now());
            reached.insert(id);
        }
    }
    assert_eq!(reached, asleep, "no wake lost");
    advance(REPORT_EVERY).await;
    assert_eq!(gate.report(Instant::now()), None, "nothing more over the rate");
}

#[tokio::test]
async fn a_wake_the_store_failed_is_tried_again_after_the_cooldown() {
    pause();
    let mut gate = WakeLineGate::new(Instant::now());
    let asleep = sleeping(&[5]);
    assert_eq!(gate.admit(5, &asleep, Instant::now()), Verdict::Store);
    gate.failed(5, Instant::now());
    assert!(gate.due(&asleep, Instant::now()).is_empty(), "not at once");
    advance(COOLDOWN).await;
    assert_eq!(gate.due(&asleep, Instant::now()), [5], "again, without another line");
}
