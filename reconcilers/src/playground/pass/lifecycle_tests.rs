use super::*;
use crate::runtime::Next;
use play_model::testing::playground as a_playground;
use play_model::time;

fn at(minutes: i64) -> Timestamp {
    time::now() + chrono::Duration::minutes(minutes)
}

#[test]
fn each_state_has_its_arm() {
    let now = time::now();
    let mut p = a_playground();
    p.expires_at = Some(at(60));
    p.status = PlaygroundStatus::Running;
    assert_eq!(classify(&p, now, false, None), Lifecycle::Converge);
    let cutoff = at(-10);
    assert_eq!(classify(&p, now, false, Some(cutoff)), Lifecycle::FallAsleep { cutoff });
    // Still being created: it sleeps once it has run.
    p.status = PlaygroundStatus::InProgress;
    assert_eq!(classify(&p, now, false, Some(cutoff)), Lifecycle::Converge);
    p.sleep.power = Power::Asleep;
    assert_eq!(classify(&p, now, false, Some(cutoff)), Lifecycle::Asleep);
    p.desired_state = DesiredState::Destroyed;
    assert_eq!(classify(&p, now, false, None), Lifecycle::Clean);
    p.desired_state = DesiredState::Complete;
    assert_eq!(classify(&p, now, false, None), Lifecycle::Clean);
    p.job_mode = true;
    assert_eq!(classify(&p, now, true, None), Lifecycle::Released);
    p.desired_state = DesiredState::Destroyed;
    assert_eq!(classify(&p, now, true, None), Lifecycle::Released);
}

#[test]
fn past_its_expiry_anything_not_destroyed_expires_first() {
    let now = time::now();
    let mut p = a_playground();
    p.expires_at = Some(at(-1));
    for (desired, power) in [
        (DesiredState::Running, Power::Awake),
        (DesiredState::Running, Power::Asleep),
        (DesiredState::Complete, Power::Awake),
    ] {
        p.desired_state = desired;
        p.sleep.power = power;
        assert_eq!(classify(&p, now, true, Some(at(-5))), Lifecycle::Expire, "{desired:?} {power:?}");
    }
    p.desired_state = DesiredState::Destroyed;
    assert_eq!(classify(&p, now, false, None), Lifecycle::Clean, "destroyed: it is cleaned, not expired again");
}

#[test]
fn the_next_visit_is_the_first_of_poll_expiry_and_sleep() {
    let mut p = a_playground();
    p.expires_at = Some(at(60));
    assert_eq!(next_visit(&p, None, None).0, Next::At(p.expires_at.unwrap()));
    let five = at(5);
    assert_eq!(next_visit(&p, Some(five), None).0, Next::At(five), "idle before it expires");
    let poll = Duration::from_secs(2);
    assert_eq!(next_visit(&p, Some(five), Some(poll)).0, Next::After(poll));
    p.expires_at = Some(time::now() + chrono::Duration::seconds(1));
    assert_eq!(next_visit(&p, None, Some(poll)).0, Next::At(p.expires_at.unwrap()), "expiry before the poll");
    p.expires_at = None;
    assert_eq!(next_visit(&p, None, None).0, Next::AwaitChange);
}
