use chrono::TimeZone;

use super::*;
use crate::{accounts, templates};
use play_model::model::event::Acting;
use play_model::model::quota::QuotaLimits;
use play_model::model::schedule::RunEnd;
use play_model::schedule::{Spec, plan};

const BODY: &str = "svc:\n  job_mode: true\n  schedule_config: {enabled: true, cron: \"*/2 * * * * *\"}\nservices:\n  job:\n    image: busybox\n";
const OFF: &str = "svc:\n  job_mode: true\nservices:\n  job:\n    image: busybox\n";

async fn template(store: &Store, account: i64, body: &str) -> i64 {
    crate::testing::template(store, account, "nightly", body).await
}

/// Account `acme` with a template whose version enables a schedule
/// every two seconds (`BODY`): the account and that schedule.
async fn scheduled(store: &Store) -> (i64, Schedule) {
    let account = accounts::create_account(store, "acme").await.unwrap().0.id;
    template(store, account, BODY).await;
    (account, launch_settings::list::<Schedule>(store, account).await.unwrap().remove(0))
}

fn at(s: u32) -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 11, 27, 10, 0, s).single().unwrap()
}

#[tokio::test]
async fn a_version_with_an_enabled_schedule_makes_the_schedule_and_a_later_one_switches_it_off() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let account = accounts::create_account(store, "acme").await.unwrap().0.id;
    let id = template(store, account, BODY).await;
    let all = launch_settings::list::<Schedule>(store, account).await.unwrap();
    assert_eq!(all.len(), 1);
    let schedule = &all[0];
    assert_eq!((schedule.template_id, schedule.config_version), (id, 1));
    assert_eq!(schedule.settings.as_ref().unwrap().cron, "*/2 * * * * *");
    assert_eq!(
        schedule.condition(),
        Some("needs a Playroom: PATCH /api/schedules/{id} with playroom_id, or PUT /api/launch_defaults")
    );

    templates::create_version(
        store,
        Acting::system(account),
        id,
        crate::testing::version(OFF),
        &QuotaLimits::default(),
    )
    .await
    .unwrap();
    let off = launch_settings::get::<Schedule>(store, account, schedule.id).await.unwrap();
    assert_eq!((off.settings.as_ref(), off.config_version), (None, 2));
    assert!(off.condition().unwrap().starts_with("disabled"));
    let other = accounts::create_account(store, "other").await.unwrap().0.id;
    assert!(
        matches!(launch_settings::get::<Schedule>(store, other, schedule.id).await, Err(Error::NotFound(_))),
        "another account's is 404"
    );
}

#[tokio::test]
async fn a_scheduled_time_is_recorded_once_whoever_plans_it() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (account, schedule) = scheduled(store).await;
    assert!(start_cursor(store, schedule.id, at(2)).await.unwrap());
    assert!(!start_cursor(store, schedule.id, at(4)).await.unwrap(), "set once");
    let spec = Spec::new("*/2 * * * * *", None, Policy::Forbid, None, at(0)).unwrap();
    let decided = plan(&spec, at(2), at(7));
    assert_eq!((decided.start, decided.missed.len()), (Some(at(6)), 2));
    // Two passes that read the same cursor: one writes, the other nothing.
    let (a, b) =
        tokio::join!(record_plan(store, &schedule, at(2), &decided), record_plan(store, &schedule, at(2), &decided));
    let started: Vec<i64> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(started.len(), 1, "one pending run");
    let listed = runs(store, account, schedule.id, 10).await.unwrap();
    let statuses: Vec<(Timestamp, RunStatus)> = listed.iter().map(|r| (r.scheduled_at, r.status)).collect();
    assert_eq!(statuses, [(at(6), RunStatus::Pending), (at(4), RunStatus::Missed), (at(2), RunStatus::Missed)]);
    assert_eq!(launch_settings::get::<Schedule>(store, account, schedule.id).await.unwrap().next_at, Some(at(8)));

    // The run ends: the schedule keeps its health.
    finish_run(
        store,
        &schedule,
        started[0],
        RunEnd { status: RunStatus::Failed, reason: None, exit_code: Some(3), log_tail: Some("boom".into()) },
    )
    .await
    .unwrap();
    finish_run(
        store,
        &schedule,
        started[0],
        RunEnd { status: RunStatus::Succeeded, reason: None, exit_code: Some(0), log_tail: None },
    )
    .await
    .unwrap();
    let after = launch_settings::get::<Schedule>(store, account, schedule.id).await.unwrap();
    assert_eq!((after.consecutive_failures, after.last_success_at), (1, None), "a closed run is not closed again");
    let run = &runs(store, account, schedule.id, 1).await.unwrap()[0];
    assert_eq!((run.status, run.exit_code, run.log_tail.as_deref()), (RunStatus::Failed, Some(3), Some("boom")));
}

#[tokio::test]
async fn a_pending_run_closed_as_missed_is_a_missed_event() {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (account, schedule) = scheduled(store).await;
    start_cursor(store, schedule.id, at(2)).await.unwrap();
    let spec = Spec::new("*/2 * * * * *", None, Policy::Forbid, None, at(0)).unwrap();
    let run = record_plan(store, &schedule, at(2), &plan(&spec, at(2), at(3))).await.unwrap().unwrap();
    let reason = Some("not started within the starting deadline".to_owned());
    finish_run(store, &schedule, run, RunEnd { status: RunStatus::Missed, reason, exit_code: None, log_tail: None })
        .await
        .unwrap();
    let all = events::list_for_account(store, account).await.unwrap();
    let actions: Vec<&str> = all.iter().filter(|e| e.entity_type == "schedule").map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["run.missed"]);
}
