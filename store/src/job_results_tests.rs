use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::playspecs;
use crate::{accounts, leases};
use crate::{playground_status as status_store, playground_status::load};
use play_model::model::event::{Acting, Actor};
use play_model::model::playspec::PlayspecFields;
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::playground::model::{NewPlayground, Playground, ServiceStatus};
use play_model::playground::state::ServiceState;

const OWNER: &str = "replica-a";

/// What a delete asks of the store: the Playground marked `destroying`.
async fn request_destroy(f: &Fixture) -> Playground {
    let mut tx = f.store.write().await.unwrap();
    let p = crate::playgrounds::request_destroy_in(&mut tx, f.account, f.id, Actor::System).await.unwrap();
    tx.commit().await.unwrap();
    p
}

struct Fixture {
    _db: crate::testing::TestStore,
    store: Store,
    account: i64,
    playspec: i64,
    id: i64,
    token: i64,
    limits: QuotaLimits,
}

impl Fixture {
    fn fence(&self) -> Fence<'static> {
        Fence { reconciler: "playground", owner: OWNER, token: self.token }
    }

    async fn new_playground(&self, name: &str) -> crate::Result<Playground> {
        let new =
            NewPlayground { job_mode: true, ..crate::testing::new_playground(name, self.room().await, self.playspec) };
        let mut tx = self.store.write().await?;
        crate::quotas::check(&mut tx, self.account, Resource::Playgrounds, &self.limits).await?;
        let made = crate::playgrounds::insert_in(&mut tx, self.account, &new, Actor::System).await?;
        tx.commit().await?;
        Ok(made)
    }

    async fn room(&self) -> i64 {
        sqlx::query("SELECT id FROM playrooms WHERE account_id = $1")
            .bind(self.account)
            .fetch_one(self.store.pool())
            .await
            .unwrap()
            .try_get("id")
            .unwrap()
    }

    /// The Playground events, oldest first.
    async fn actions(&self) -> Vec<String> {
        let all = events::list_for_account(&self.store, self.account).await.unwrap();
        all.into_iter().filter(|e| e.entity_type == "playground").map(|e| e.action).collect()
    }

    async fn locked(&self) -> bool {
        playspecs::holders(&self.store, self.playspec).await.unwrap() > 0
    }
}

/// A job-mode Playground on a Playspec, with a quota of one Playground, and
/// a lease on it held by `OWNER`.
async fn fixture() -> Fixture {
    let db = crate::testing::store().await;
    let store = db.store.clone();
    let (account, _) = accounts::create_account(&store, "acme").await.unwrap();
    let now = time::to_db(&time::now());
    sqlx::query(
        "INSERT INTO playrooms (account_id, name, host, port, ssh_user, docker_socket, created_at, updated_at) \
         VALUES ($1, 'box', 'h', 22, 'u', '/s', $2, $2)",
    )
    .bind(account.id)
    .bind(&now)
    .execute(store.pool())
    .await
    .unwrap();
    let fields = PlayspecFields {
        name: Some("job".into()),
        base_compose_yaml: Some("services:\n  run:\n    image: x\n".into()),
        ..PlayspecFields::default()
    };
    let playspec =
        playspecs::create(&store, Acting::system(account.id), fields, &QuotaLimits::default()).await.unwrap();
    let mut limits = QuotaLimits::default();
    limits.set(Resource::Playgrounds, 1);
    let mut f = Fixture { _db: db, store, account: account.id, playspec: playspec.id, id: 0, token: 0, limits };
    f.id = f.new_playground("first").await.unwrap().id;
    let lease = leases::claim(&f.store, "playground", f.id, OWNER, time::now(), Duration::from_secs(60)).await.unwrap();
    f.token = lease.unwrap().token;
    f
}

fn lines(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("line {i}")).collect()
}

/// Records a completion with exit code 3 and 1200 lines of `run` logs.
async fn complete(f: &Fixture, fence: Fence<'_>) -> bool {
    complete_one(&f.store, fence, f.id).await
}

/// [`complete`] of Playground `id`.
async fn complete_one(store: &Store, fence: Fence<'_>, id: i64) -> bool {
    let watched = BTreeMap::from([("run".to_owned(), 3)]);
    let logs = BTreeMap::from([("run".to_owned(), lines(1200)), ("db".to_owned(), Vec::new())]);
    let services = vec![ServiceStatus {
        name: "run".into(),
        status: ServiceState::Stopped,
        health: None,
        running: false,
        container: None,
    }];
    let done = Completion {
        exit_code: 3,
        completed_at: time::now(),
        tail_logs: "line 1200",
        watched: &watched,
        logs: &logs,
        services: &services,
        keep_until: time::now() + chrono::Duration::hours(24),
    };
    record_completion(store, fence, id, &done).await.unwrap().is_held()
}

#[tokio::test]
async fn completion_is_stored_once_with_its_events_and_logs() {
    let f = fixture().await;
    let stale = Fence { token: f.token - 1, ..f.fence() };
    assert!(!complete(&f, stale).await, "a stale lease writes nothing");
    assert_eq!(get(&f.store, f.id).await.unwrap(), None);

    assert!(complete(&f, f.fence()).await);
    let result = get(&f.store, f.id).await.unwrap().unwrap();
    assert_eq!((result.exit_code, result.tail_logs.as_str(), result.host_released_at), (3, "line 1200", None));
    let p = load(&f.store, f.id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.desired_state.as_str(), p.generation), ("complete", "complete", 2));
    assert!(p.expires_at.unwrap() > time::now() + chrono::Duration::hours(23), "{:?}", p.expires_at);
    assert_eq!(p.services[0].status.as_str(), "stopped");
    // The last 1000 lines are kept, oldest first.
    let cached = cached_logs(&f.store, f.id, "run").await.unwrap().unwrap();
    assert_eq!((cached.len(), cached[0].as_str(), cached[999].as_str()), (1000, "line 201", "line 1200"));
    assert_eq!(cached_logs(&f.store, f.id, "db").await.unwrap(), Some(Vec::new()));
    assert_eq!(cached_logs(&f.store, f.id, "ghost").await.unwrap(), None);
    assert_eq!(f.actions().await, ["created", "completed", "status.changed"]);

    // A second pass finds the result and changes nothing.
    assert!(complete(&f, f.fence()).await);
    assert_eq!(get(&f.store, f.id).await.unwrap(), Some(result));
    assert_eq!(load(&f.store, f.id).await.unwrap().unwrap().generation, 2);
    assert_eq!(f.actions().await.len(), 3);
}

#[tokio::test]
async fn a_released_job_neither_locks_its_playspec_nor_counts_against_the_quota() {
    let f = fixture().await;
    assert!(f.locked().await);
    let quota = f.new_playground("second").await.unwrap_err();
    assert!(matches!(quota, Error::QuotaExceeded { .. }), "{quota:?}");

    assert!(complete(&f, f.fence()).await);
    assert!(f.locked().await, "complete but its host objects may remain: still held");
    assert!(release_host(&f.store, Fence { token: 0, ..f.fence() }, f.id).await.is_ok_and(|w| w.is_lost()));
    assert!(f.locked().await, "a stale release writes nothing");

    assert!(release_host(&f.store, f.fence(), f.id).await.unwrap().is_held());
    let p = load(&f.store, f.id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.observed_generation), ("complete", p.generation));
    assert!(get(&f.store, f.id).await.unwrap().unwrap().host_released_at.is_some());
    assert!(!f.locked().await);
    assert_eq!(playspecs::holders(&f.store, f.playspec).await.unwrap(), 0);
    let second = f.new_playground("second").await.unwrap();
    assert!(f.locked().await, "the new Playground holds it");
    assert_eq!(second.status.as_str(), "in_progress");
    assert!(release_host(&f.store, f.fence(), f.id).await.unwrap().is_held(), "idempotent");
    assert_eq!(f.actions().await, ["created", "completed", "status.changed", "created"]);
}

#[tokio::test]
async fn deleting_a_complete_job_removes_its_result_and_logs() {
    let f = fixture().await;
    assert!(complete(&f, f.fence()).await);
    assert!(release_host(&f.store, f.fence(), f.id).await.unwrap().is_held());
    let p = request_destroy(&f).await;
    assert_eq!((p.status.as_str(), p.desired_state.as_str()), ("destroying", "destroyed"));
    assert_eq!(status_store::finish_destroy(&f.store, f.fence(), f.id).await.unwrap(), Fenced::Held(true));
    assert_eq!(load(&f.store, f.id).await.unwrap(), None);
    assert_eq!(get(&f.store, f.id).await.unwrap(), None);
    assert_eq!(cached_logs(&f.store, f.id, "run").await.unwrap(), None);
    let rows: i64 = sqlx::query("SELECT COUNT(*) AS n FROM playground_job_logs")
        .fetch_one(f.store.pool())
        .await
        .unwrap()
        .try_get("n")
        .unwrap();
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn a_job_deleted_before_it_completes_gets_no_result() {
    let f = fixture().await;
    request_destroy(&f).await;
    assert!(complete(&f, f.fence()).await, "the lease holds: the caller reloads and destroys");
    assert_eq!(get(&f.store, f.id).await.unwrap(), None);
    let p = load(&f.store, f.id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.desired_state.as_str()), ("destroying", "destroyed"));
    assert!(!f.actions().await.contains(&"completed".to_owned()));
}

#[tokio::test]
async fn the_retention_end_expires_a_complete_job() {
    let f = fixture().await;
    assert!(complete(&f, f.fence()).await);
    let now = time::now();
    assert_eq!(
        status_store::expire_if_due(&f.store, f.fence(), f.id, now).await.unwrap(),
        Fenced::Held(false),
        "kept for a day"
    );
    let later = now + chrono::Duration::hours(25);
    assert_eq!(status_store::expire_if_due(&f.store, f.fence(), f.id, later).await.unwrap(), Fenced::Held(true));
    let p = load(&f.store, f.id).await.unwrap().unwrap();
    assert_eq!((p.status.as_str(), p.desired_state.as_str()), ("destroying", "destroyed"));
    assert!(get(&f.store, f.id).await.unwrap().is_some(), "readable until the row goes");
}

/// A DELETE of a job as it finishes (PostgreSQL): the completion read the
/// Playground still running, the DELETE committed `destroying`, and the
/// completion wrote `complete` over it; the DELETE had answered that the
/// Playground was being destroyed, and it stayed until its result's
/// expiry. Whichever commits first, the Playground ends up destroyed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delete_racing_a_job_completion_is_never_undone() {
    let mut f = fixture().await;
    f.limits.set(Resource::Playgrounds, 100);
    for round in 0..25 {
        let id = f.new_playground(&format!("round-{round}")).await.unwrap().id;
        let lease = leases::claim(&f.store, "playground", id, OWNER, time::now(), Duration::from_secs(60));
        let fence = Fence { token: lease.await.unwrap().unwrap().token, ..f.fence() };
        let (store, account) = (f.store.clone(), f.account);
        let destroy = tokio::spawn(async move {
            let mut tx = store.write().await.unwrap();
            crate::playgrounds::request_destroy_in(&mut tx, account, id, Actor::System).await.unwrap();
            tx.commit().await.unwrap();
        });
        let store = f.store.clone();
        let completion = tokio::spawn(async move { complete_one(&store, fence, id).await });
        destroy.await.unwrap();
        assert!(completion.await.unwrap());
        let p = load(&f.store, id).await.unwrap().unwrap();
        assert_eq!(p.desired_state.as_str(), "destroyed", "round {round}: the completion undid the DELETE");
    }
}
