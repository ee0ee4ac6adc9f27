use std::time::Duration;

use super::*;
use play_model::playground::state::ServiceState;

const OWNER: &str = "replica-a";

/// A store with one Playground (id returned) and a lease on it held by
/// `OWNER` (token returned).
async fn fixture() -> (crate::testing::TestStore, i64, i64) {
    let db = crate::testing::store().await;
    let store = &db.store;
    let (_, id) = crate::testing::playground_row(store).await;
    let lease = leases::claim(store, "playground", id, OWNER, time::now(), Duration::from_secs(60)).await.unwrap();
    (db, id, lease.unwrap().token)
}

fn fence(token: i64) -> Fence<'static> {
    Fence { reconciler: "playground", owner: OWNER, token }
}

/// One service, `web`, running.
fn web_running() -> Vec<ServiceStatus> {
    vec![ServiceStatus {
        name: "web".into(),
        status: ServiceState::Running,
        health: None,
        running: true,
        container: None,
    }]
}

async fn actions(store: &Store, account: i64) -> Vec<String> {
    events::list_for_account(store, account).await.unwrap().into_iter().map(|e| e.action).collect()
}

#[tokio::test]
async fn a_stale_token_writes_nothing() {
    let (db, id, token) = fixture().await;
    let store = &db.store;
    let services = web_running();
    assert!(record_observed(store, fence(token - 1), id, &services, Some(1)).await.unwrap().is_lost());
    assert!(record_error(store, fence(token + 1), id, CreationStep::ImagePull, "boom", true).await.unwrap().is_lost());
    assert!(finish_destroy(store, fence(0), id).await.unwrap().is_lost());
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.services.len(), p.error_message), ("in_progress", 0, None));

    assert!(record_observed(store, fence(token), id, &services, Some(1)).await.unwrap().is_held());
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.observed_generation), ("running", 1));
    assert_eq!(p.creation_step.map(CreationStep::as_str), Some("ready"));
    assert_eq!(p.services, services);
    assert_eq!(actions(store, p.account_id).await, ["status.changed"]);
    // Idempotent: the same observation again records no event.
    assert!(record_observed(store, fence(token), id, &services, Some(1)).await.unwrap().is_held());
    assert_eq!(actions(store, p.account_id).await.len(), 1);
}

#[tokio::test]
async fn terminal_errors_fail_the_playground_once() {
    let (db, id, token) = fixture().await;
    let store = &db.store;
    assert!(
        record_error(store, fence(token), id, CreationStep::ImageBuild, "no builds", true).await.unwrap().is_held()
    );
    assert!(
        record_error(store, fence(token), id, CreationStep::ImageBuild, "no builds", true).await.unwrap().is_held()
    );
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!(p.status, PlaygroundStatus::Failed);
    assert_eq!(
        (p.error_step.map(CreationStep::as_str), p.error_message.as_deref()),
        (Some("image_build"), Some("no builds"))
    );
    assert_eq!(actions(store, p.account_id).await, ["error", "status.changed"]);
}

#[tokio::test]
async fn errors_of_a_running_playground_keep_its_creation_step_and_clear_on_the_next_observation() {
    let (db, id, token) = fixture().await;
    let store = &db.store;
    let services = web_running();
    assert!(record_observed(store, fence(token), id, &services, Some(1)).await.unwrap().is_held());
    // A transient error (the host unreachable) reported at any step.
    assert!(
        record_error(store, fence(token), id, CreationStep::Queued, "host unreachable", false).await.unwrap().is_held()
    );
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.creation_step.map(CreationStep::as_str)), ("running", Some("ready")));
    assert_eq!(
        (p.error_message.as_deref(), p.error_step.map(CreationStep::as_str)),
        (Some("host unreachable"), Some("queued"))
    );
    // The next pass that gets through, converged already: cleared.
    assert!(record_observed(store, fence(token), id, &services, Some(1)).await.unwrap().is_held());
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.error_message, p.error_step, p.creation_step.map(CreationStep::as_str)), (None, None, Some("ready")));
    // Also by a pass that is still waiting (not converged).
    assert!(record_error(store, fence(token), id, CreationStep::Ready, "pull failed", false).await.unwrap().is_held());
    assert!(record_observed(store, fence(token), id, &services, None).await.unwrap().is_held());
    assert_eq!(load(store, id).await.unwrap().unwrap().error_message, None);
    // A terminal error stays until the Playground converges again.
    assert!(record_error(store, fence(token), id, CreationStep::Ready, "corrupt", true).await.unwrap().is_held());
    assert!(record_observed(store, fence(token), id, &services, None).await.unwrap().is_held());
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.error_message.as_deref()), ("failed", Some("corrupt")));
    assert_eq!(p.creation_step.map(CreationStep::as_str), Some("ready"), "failing a running Playground keeps its step");
    // A later error of the failed Playground (the next pass fails at load,
    // reported at `queued`) keeps it too: creation had finished.
    assert!(record_error(store, fence(token), id, CreationStep::Queued, "corrupt", true).await.unwrap().is_held());
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!(p.creation_step.map(CreationStep::as_str), Some("ready"), "a failed Playground that was ready stays so");
    // While it is created, the step follows the error.
    let (db, id, token) = fixture().await;
    assert!(
        record_error(&db.store, fence(token), id, CreationStep::ImagePull, "pull failed", false)
            .await
            .unwrap()
            .is_held()
    );
    assert_eq!(load(&db.store, id).await.unwrap().unwrap().creation_step.map(CreationStep::as_str), Some("image_pull"));
}

#[tokio::test]
async fn expiry_then_destroy_deletes_the_row_with_events() {
    let (db, id, token) = fixture().await;
    let store = &db.store;
    assert_eq!(ids_to_reconcile(store).await.unwrap(), [id]);
    let earlier = time::now() - chrono::Duration::hours(1);
    assert_eq!(expire_if_due(store, fence(token), id, earlier).await.unwrap(), Fenced::Held(false), "not due yet");
    assert_eq!(
        finish_destroy(store, fence(token), id).await.unwrap(),
        Fenced::Held(false),
        "desired state is still running"
    );
    assert_eq!(expire_if_due(store, fence(token), id, time::now()).await.unwrap(), Fenced::Held(true));
    let p = load(store, id).await.unwrap().unwrap();
    assert_eq!((p.desired_state.as_str(), p.status.as_str(), p.generation), ("destroyed", "destroying", 2));
    assert_eq!(expire_if_due(store, fence(token), id, time::now()).await.unwrap(), Fenced::Held(false), "expires once");
    assert_eq!(finish_destroy(store, fence(token), id).await.unwrap(), Fenced::Held(true));
    assert_eq!(load(store, id).await.unwrap(), None);
    assert!(ids_to_reconcile(store).await.unwrap().is_empty());
    assert_eq!(actions(store, p.account_id).await, ["expired", "status.changed", "destroyed"]);
}
