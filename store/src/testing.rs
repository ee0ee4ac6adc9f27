#![allow(clippy::expect_used, reason = "test fixtures: a panic is the failure report")]

//! Test fixtures: a fresh, migrated store per test on the backend the test
//! run selects.
//!
//! `PLAY_TEST_BACKEND=sqlite` (the default) uses a SQLite file in a temporary
//! directory; `PLAY_TEST_BACKEND=postgres` creates a new database on the
//! server named by `PLAY_TEST_POSTGRES_URL` (an admin URL). The test command
//! (`scripts/test`) runs the whole suite once per backend.

use rand::Rng;
use sqlx::Connection;

use crate::{Backend, Store};

/// A store that lives as long as this value.
#[derive(Debug)]
pub struct TestStore {
    pub store: Store,
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

/// The backend this test run uses.
pub fn backend() -> Backend {
    match std::env::var("PLAY_TEST_BACKEND").as_deref() {
        Ok("postgres") => Backend::Postgres,
        Ok("sqlite") | Err(_) => Backend::Sqlite,
        Ok(other) => panic!("PLAY_TEST_BACKEND={other:?}: expected sqlite or postgres"),
    }
}

/// A database URL for a fresh, empty database (not yet migrated), and the
/// directory that must outlive it for SQLite.
pub async fn fresh_database_url() -> (String, Option<tempfile::TempDir>) {
    match backend() {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("play.db").display());
            (url, Some(dir))
        }
        Backend::Postgres => {
            let admin = std::env::var("PLAY_TEST_POSTGRES_URL")
                .expect("PLAY_TEST_BACKEND=postgres needs PLAY_TEST_POSTGRES_URL (scripts/test sets it)");
            let name = format!("play_test_{:016x}", rand::thread_rng().r#gen::<u64>());
            let mut conn = sqlx::PgConnection::connect(&admin).await.expect("connect to the test PostgreSQL");
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create test database");
            let base = admin.rsplit_once('/').map(|(base, _)| base).unwrap_or(&admin);
            (format!("{base}/{name}"), None)
        }
    }
}

/// A fresh, migrated store.
pub async fn store() -> TestStore {
    let (url, dir) = fresh_database_url().await;
    let store = Store::connect(&url).await.expect("connect to the test store");
    store.migrate().await.expect("migrate the test store");
    TestStore { store, url, _dir: dir }
}

/// New accounts named `names`, in order, for a test that checks what one
/// account sees against what the others do.
pub async fn accounts<const N: usize>(store: &Store, names: [&str; N]) -> [play_model::model::account::Account; N] {
    let mut made = Vec::with_capacity(N);
    for name in names {
        made.push(crate::accounts::create_account(store, name).await.expect("an account").0);
    }
    made.try_into().expect("one account per name")
}

/// A new account (`acme`) with a Playroom row (`box`), as store tests
/// need for foreign keys: (account id, Playroom id).
pub async fn playroom_row(store: &Store) -> (i64, i64) {
    let (account, _) = crate::accounts::create_account(store, "acme").await.expect("an account");
    (account.id, insert_playroom(store, account.id, "box").await)
}

/// [`playroom_row`] and an `in_progress` Playground row on it: (account
/// id, Playground id).
pub async fn playground_row(store: &Store) -> (i64, i64) {
    let (account, room) = playroom_row(store).await;
    (account, insert_playground(store, account, room).await)
}

/// A bare Playroom row named `name` of account `account`: its id.
pub async fn insert_playroom(store: &Store, account: i64, name: &str) -> i64 {
    use sqlx::Row as _;
    let now = play_model::time::to_db(&play_model::time::now());
    sqlx::query(
        "INSERT INTO playrooms (account_id, name, host, port, ssh_user, docker_socket, created_at, updated_at) \
         VALUES ($1, $2, 'h', 22, 'u', '/s', $3, $3) RETURNING id",
    )
    .bind(account)
    .bind(name)
    .bind(&now)
    .fetch_one(store.pool())
    .await
    .and_then(|r| r.try_get("id"))
    .expect("a Playroom row")
}

/// A bare `in_progress` Playground row (`pg`) of account `account` on
/// Playroom `room`: its id.
pub async fn insert_playground(store: &Store, account: i64, room: i64) -> i64 {
    use sqlx::Row as _;
    let now = play_model::time::to_db(&play_model::time::now());
    sqlx::query(
        "INSERT INTO playgrounds (account_id, playroom_id, name, status, expires_at, created_at, updated_at) \
         VALUES ($1, $2, 'pg', $3, $4, $4, $4) RETURNING id",
    )
    .bind(account)
    .bind(room)
    .bind(play_model::playground::state::PlaygroundStatus::InProgress.as_str())
    .bind(&now)
    .fetch_one(store.pool())
    .await
    .and_then(|r| r.try_get("id"))
    .expect("a Playground row")
}

/// Marks Playground `id` converged (`observed_generation = generation`),
/// as a pass that finished would.
pub async fn mark_converged(store: &Store, id: i64) {
    sqlx::query("UPDATE playgrounds SET observed_generation = generation WHERE id = $1")
        .bind(id)
        .execute(store.pool())
        .await
        .expect("mark a Playground converged");
}

/// A template version with `body`, private, without variables, by an
/// author without `playzones:read`.
pub fn version(body: &str) -> play_model::model::template::NewVersion<'_> {
    static NONE: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| serde_json::json!({}));
    play_model::model::template::NewVersion {
        template_body: body,
        public: false,
        variables: &NONE,
        author_may_read_playzones: false,
    }
}

/// A template `name` of account `account` in the first category, with one
/// version of `body` ([`version`]): its id.
pub async fn template(store: &Store, account: i64, name: &str, body: &str) -> i64 {
    use play_model::model::event::Acting;
    use play_model::model::quota::QuotaLimits;
    use sqlx::Row as _;
    let category: i64 = sqlx::query("SELECT id FROM template_categories ORDER BY id LIMIT 1")
        .fetch_one(store.pool())
        .await
        .and_then(|r| r.try_get("id"))
        .expect("a template category");
    let fields = play_model::model::template::TemplateFields {
        name: Some(name.into()),
        description: None,
        category_id: Some(category),
    };
    let limits = QuotaLimits::default();
    let made = crate::templates::create(store, Acting::system(account), fields, &limits).await.expect("a template");
    crate::templates::create_version(store, Acting::system(account), made.id, version(body), &limits)
        .await
        .expect("a template version");
    made.id
}

/// What a launch of Playspec `playspec` onto Playroom `room` inserts: a
/// Playground `name` with an hour to live and nothing else set.
pub fn new_playground(name: &str, room: i64, playspec: i64) -> play_model::playground::model::NewPlayground {
    play_model::playground::model::NewPlayground {
        agent: None,
        name: name.into(),
        playspec_id: playspec,
        playroom_id: room,
        job_mode: false,
        watched_services: Vec::new(),
        env_overrides: Default::default(),
        service_subdomains: Default::default(),
        service_settings: Default::default(),
        ttl: chrono::Duration::hours(1),
        sleep_after: Default::default(),
        origin: None,
    }
}

/// Records migration `version` as applied, as a newer play's migration
/// would have (the schema-safety tests).
pub async fn record_applied_migration(store: &Store, version: i64) {
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
         VALUES ($1, 'from a newer play', CURRENT_TIMESTAMP, TRUE, $2, 0)",
    )
    .bind(version)
    .bind(vec![0u8; 48])
    .execute(store.pool())
    .await
    .expect("record a migration");
}

/// Applies this binary's migrations up to `version` only: a database as
/// an older play left it, for the tests of what a newer binary does with
/// one (an upgrade).
pub async fn migrate_up_to(store: &Store, version: i64) {
    let all = crate::schema::migrator(store.backend());
    let migrations: Vec<_> = all.iter().filter(|m| m.version <= version).cloned().collect();
    let older =
        sqlx::migrate::Migrator { migrations: std::borrow::Cow::Owned(migrations), ..sqlx::migrate::Migrator::DEFAULT };
    older.run(store.pool()).await.expect("migrate up to a version");
}
