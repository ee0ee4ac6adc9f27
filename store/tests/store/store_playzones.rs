//! Playzone store tests, on SQLite and (with `PLAY_TEST_BACKEND=postgres`)
//! PostgreSQL.

#![allow(clippy::unwrap_used, reason = "test code: a panic is the failure report")]

use std::time::Duration;

use play_model::model::account::Account;
use play_model::model::event::{Acting, Actor};
use play_model::model::quota::QuotaLimits;
use play_model::playzone::model::{Playzone, SyncResult};
use play_model::playzone::{Changes, Input, RepositoryPolicy, Status, Stored};
use play_model::repository::RemoteBranch;
use play_model::secrets::{MasterKey, SecretBox};
use play_model::time;
use play_store::Error;
use play_store::events;
use play_store::fence::{Fence, Fenced};
use play_store::testing;
use play_store::{Store, accounts, leases};
use play_store::{playzone_access, playzones};
use sqlx::Row;

const TOKEN: &str = "tok_0123456789_very_secret";
const SYNC: &str = "playzone_sync";

fn changes(name: &str, url: &str, token: Option<&str>) -> Changes {
    let input = Input {
        name: Some(name.into()),
        scm_url: Some(url.into()),
        private: Some(token.is_some()),
        credentials: token.map(str::to_owned),
        ..Input::default()
    };
    Changes::validate(input, None, &RepositoryPolicy::default()).unwrap()
}

fn branch(name: &str, commit: char) -> RemoteBranch {
    RemoteBranch { name: name.into(), commit: commit.to_string().repeat(40) }
}

/// What a first sync (generation 1, default branch `main`) that found
/// `branches` and no compose file reports.
fn first_sync(branches: Vec<RemoteBranch>) -> SyncResult {
    SyncResult { generation: 1, default_branch: "main".into(), branches, compose_file: None, compose_commit: None }
}

async fn lease(store: &Store, id: i64) -> i64 {
    leases::claim(store, SYNC, id, "me", time::now(), Duration::from_secs(60)).await.unwrap().unwrap().token
}

/// What a test of one public Playzone starts from: a fresh store, a
/// secret box, account `a` and its public Playzone `app`.
async fn public_zone() -> (testing::TestStore, SecretBox, Account, Playzone) {
    let t = testing::store().await;
    let secrets = MasterKey::generate().secret_box();
    let (a, _) = accounts::create_account(&t.store, "a").await.unwrap();
    let changes = changes("app", "https://git.example.org/app.git", None);
    let z = playzones::create(&t.store, Some(&secrets), Acting::system(a.id), changes, false, &QuotaLimits::default())
        .await
        .unwrap();
    (t, secrets, a, z)
}

fn fence(token: i64) -> Fence<'static> {
    Fence { reconciler: SYNC, owner: "me", token }
}

#[tokio::test]
async fn the_token_is_sealed_write_only_and_opened_only_for_access() {
    let t = testing::store().await;
    let secrets = MasterKey::generate().secret_box();
    let (a, _) = accounts::create_account(&t.store, "a").await.unwrap();
    let z = playzones::create(
        &t.store,
        Some(&secrets),
        Acting::system(a.id),
        changes("app", "https://git.example.org/app.git", Some(TOKEN)),
        false,
        &QuotaLimits::default(),
    )
    .await
    .unwrap();
    assert!(z.has_credentials && z.private);
    assert_eq!((z.status, z.generation, z.synced_generation), (Status::Pending, 1, 0));
    assert!(!format!("{z:?}").contains(TOKEN));
    // Nowhere in the database in clear: every text column of every table.
    let row = sqlx::query("SELECT credentials FROM playzones WHERE id = $1")
        .bind(z.id)
        .fetch_one(t.store.pool())
        .await
        .unwrap();
    let sealed: String = row.try_get("credentials").unwrap();
    assert!(!sealed.contains(TOKEN));
    let dumped: Vec<String> =
        events::list_for_account(&t.store, a.id).await.unwrap().into_iter().map(|e| format!("{e:?}")).collect();
    assert!(dumped.iter().all(|e| !e.contains(TOKEN)), "{dumped:?}");
    let access = playzone_access::access(&t.store, &secrets, z.id).await.unwrap();
    assert_eq!(access.token.as_deref(), Some(TOKEN));
    // Another master key cannot open it.
    let other = MasterKey::generate().secret_box();
    assert!(matches!(playzone_access::access(&t.store, &other, z.id).await, Err(Error::Crypto(_))));
}

#[tokio::test]
async fn names_are_unique_per_account_and_accounts_are_isolated() {
    let t = testing::store().await;
    let secrets = MasterKey::generate().secret_box();
    let (a, _) = accounts::create_account(&t.store, "a").await.unwrap();
    let (b, _) = accounts::create_account(&t.store, "b").await.unwrap();
    let limits = QuotaLimits::default();
    let make = |account: i64| {
        playzones::create(
            &t.store,
            Some(&secrets),
            Acting::system(account),
            changes("app", "https://git.example.org/app.git", None),
            false,
            &limits,
        )
    };
    let z = make(a.id).await.unwrap();
    assert!(matches!(make(a.id).await, Err(Error::Validation(_))));
    make(b.id).await.unwrap();
    assert!(matches!(playzones::get(&t.store, b.id, z.id).await, Err(Error::NotFound(_))));
    assert_eq!(playzones::list(&t.store, a.id, false).await.unwrap().len(), 1);
}

#[tokio::test]
async fn sync_records_only_what_moved_and_an_error_keeps_the_index() {
    let (t, _, a, z) = public_zone().await;
    let token = lease(&t.store, z.id).await;
    let first = SyncResult {
        compose_file: Some("compose.yaml".into()),
        compose_commit: Some("b".repeat(40)),
        ..first_sync(vec![branch("feature", 'a'), branch("main", 'b'), branch("old", 'c')])
    };
    let moved = playzones::record_sync(&t.store, fence(token), z.id, &first).await.unwrap().held().unwrap();
    assert_eq!(moved.added, ["feature", "main", "old"]);
    let z1 = playzones::get(&t.store, a.id, z.id).await.unwrap();
    assert_eq!((z1.status, z1.synced_generation), (Status::Active, 1));
    assert_eq!(z1.default_branch.as_deref(), Some("main"));
    assert_eq!(playzones::list(&t.store, a.id, true).await.unwrap().len(), 1);
    let main_before = playzones::branches(&t.store, z.id, Some("MAI"), None, 20).await.unwrap();
    assert_eq!(main_before.len(), 1);
    let ordered = playzones::branches(&t.store, z.id, None, Some("main"), 2).await.unwrap();
    assert_eq!(ordered.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), ["main", "feature"]);

    let second =
        SyncResult { branches: vec![branch("feature", 'd'), branch("main", 'b'), branch("new", 'e')], ..first.clone() };
    let moved = playzones::record_sync(&t.store, fence(token), z.id, &second).await.unwrap().held().unwrap();
    assert_eq!(
        (moved.added, moved.moved, moved.removed),
        (vec!["new".to_string()], vec!["feature".to_string()], vec!["old".to_string()])
    );
    // An unchanged branch's row was not rewritten.
    let main_after = playzones::branches(&t.store, z.id, Some("main"), None, 20).await.unwrap();
    assert_eq!(main_after[0].updated_at, main_before[0].updated_at);
    assert_eq!(playzones::branch_commit(&t.store, z.id, "feature").await.unwrap(), Some("d".repeat(40)));

    playzones::record_sync_error(&t.store, fence(token), z.id, 1, "unreachable: connection refused")
        .await
        .unwrap()
        .held()
        .unwrap();
    let z2 = playzones::get(&t.store, a.id, z.id).await.unwrap();
    assert_eq!(z2.status, Status::Error);
    assert_eq!(z2.status_message.as_deref(), Some("unreachable: connection refused"));
    assert_eq!(z2.last_synced_at, z1.last_synced_at.max(z2.last_synced_at));
    assert_eq!(playzones::branches(&t.store, z.id, None, None, 50).await.unwrap().len(), 3);
    assert_eq!(z2.compose_file.as_deref(), Some("compose.yaml"));

    // A lost lease writes nothing.
    let stale = fence(token - 1);
    assert_eq!(playzones::record_sync(&t.store, stale, z.id, &first).await.unwrap(), Fenced::Lost);
    assert_eq!(playzones::record_sync_error(&t.store, stale, z.id, 1, "x").await.unwrap(), Fenced::Lost);
    assert_eq!(playzones::branches(&t.store, z.id, None, None, 50).await.unwrap().len(), 3);
}

#[tokio::test]
async fn updates_bump_the_generation_only_when_a_sync_is_needed() {
    let (t, secrets, a, z) = public_zone().await;
    let token = lease(&t.store, z.id).await;
    let result = first_sync(vec![branch("main", 'b')]);
    playzones::record_sync(&t.store, fence(token), z.id, &result).await.unwrap().held().unwrap();
    let policy = RepositoryPolicy::default();
    let stored = Some(Stored { private: false, has_token: false, attached: false, scm_url: "" });
    let rename =
        Changes::validate(Input { name: Some("renamed".into()), ..Input::default() }, stored, &policy).unwrap();
    let z1 = playzones::update(&t.store, &secrets, Acting::system(a.id), z.id, rename).await.unwrap();
    assert_eq!((z1.name.as_str(), z1.generation, z1.status), ("renamed", 1, Status::Active));
    // Nothing changed: no row update, no event.
    let events_before = events::list_for_account(&t.store, a.id).await.unwrap().len();
    let same = Changes::validate(Input { name: Some("renamed".into()), ..Input::default() }, stored, &policy).unwrap();
    let z2 = playzones::update(&t.store, &secrets, Acting::system(a.id), z.id, same).await.unwrap();
    assert_eq!(z2.updated_at, z1.updated_at);
    assert_eq!(events::list_for_account(&t.store, a.id).await.unwrap().len(), events_before);
    // A new URL asks for a sync and forgets the other repository's index.
    let moved = Input { scm_url: Some("https://git.example.org/other.git".into()), ..Input::default() };
    let z3 = playzones::update(
        &t.store,
        &secrets,
        Acting::system(a.id),
        z.id,
        Changes::validate(moved, stored, &policy).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!((z3.generation, z3.status), (2, Status::Pending));
    assert!(playzones::branches(&t.store, z.id, None, None, 50).await.unwrap().is_empty());
    let z4 = playzones::request_sync(&t.store, a.id, z.id).await.unwrap();
    assert_eq!(z4.generation, 3);
}

#[tokio::test]
async fn a_playzone_used_by_a_playspec_cannot_be_deleted() {
    let (t, _, a, z) = public_zone().await;
    let services = serde_json::json!([{"name": "web", "type": "dynamic", "playzone_id": z.id}]).to_string();
    sqlx::query(
        "INSERT INTO playspecs (account_id, name, description, base_compose_yaml, services, created_at, updated_at) \
         VALUES ($1, 'spec', '', 'services: {}', $2, $3, $3)",
    )
    .bind(a.id)
    .bind(services)
    .bind(time::to_db(&time::now()))
    .execute(t.store.pool())
    .await
    .unwrap();
    let err = playzones::delete(&t.store, a.id, z.id, Actor::System).await.unwrap_err();
    assert!(matches!(&err, Error::Conflict(m) if m.contains("spec")), "{err:?}");
    sqlx::query("DELETE FROM playspecs").execute(t.store.pool()).await.unwrap();
    playzones::delete(&t.store, a.id, z.id, Actor::System).await.unwrap();
    assert!(matches!(playzones::get(&t.store, a.id, z.id).await, Err(Error::NotFound(_))));
}
