//! Stored values are read strictly: a JSON column that does not parse as
//! what play writes there (or an enum column with a value play never
//! writes) is `Error::Corrupt` naming the table, the row and the column,
//! never a default. A corrupt Playspec read as "no services" or a corrupt
//! Playground read as "no overrides" would have the reconciler converge a
//! host to something nobody asked for.
//!
//! Runs on SQLite by default and on PostgreSQL with
//! `PLAY_TEST_BACKEND=postgres`.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use play_model::model::event::{Acting, NewEvent};
use play_model::model::playspec::PlayspecFields;
use play_model::model::quota::QuotaLimits;
use play_model::playground::CreationStep;
use play_model::time;
use play_store::Error;
use play_store::events;
use play_store::playground_status;
use play_store::playspecs;
use play_store::testing;
use play_store::{Store, accounts, job_results, playgrounds, playrooms, playspec_files, templates};
use sqlx::Row;

/// One row of every table with a JSON column, all valid.
struct Rows {
    account: i64,
    room: i64,
    playspec: i64,
    playground: i64,
    file: i64,
    template: i64,
    version: i64,
    event: i64,
}

/// A value bound to a query: ids as integers, everything else as text.
enum Bind<'a> {
    Id(i64),
    Text(&'a str),
}

async fn insert(store: &Store, sql: &str, binds: &[Bind<'_>]) -> i64 {
    let mut query = sqlx::query(sql);
    for b in binds {
        query = match b {
            Bind::Id(id) => query.bind(*id),
            Bind::Text(text) => query.bind(*text),
        };
    }
    query.fetch_one(store.pool()).await.unwrap().try_get("id").unwrap()
}

async fn rows(store: &Store) -> Rows {
    let (account, _) = accounts::create_account(store, "acme").await.unwrap();
    let now = time::to_db(&time::now());
    let room = insert(
        store,
        "INSERT INTO playrooms (account_id, name, host, port, ssh_user, docker_socket, domains, created_at, updated_at) \
         VALUES ($1, 'box', 'h', 22, 'u', '/s', '[\"apps.example.com\"]', $2, $2) RETURNING id",
        &[Bind::Id(account.id), Bind::Text(&now)],
    )
    .await;
    let fields = PlayspecFields {
        name: Some("shop".into()),
        base_compose_yaml: Some("services:\n  web:\n    image: busybox\n".into()),
        services: Some(play_model::compose::classify(
            &play_model::compose::parse_compose(
                "services:\n  web:\n    image: busybox\n",
                &play_model::compose::Policy::UNTRUSTED,
            )
            .1
            .unwrap(),
        )),
        ..PlayspecFields::default()
    };
    let playspec =
        playspecs::create(store, Acting::system(account.id), fields, &QuotaLimits::default()).await.unwrap().id;
    let playground = insert(
        store,
        "INSERT INTO playgrounds (account_id, playroom_id, playspec_id, name, status, env_overrides, created_at, updated_at) \
         VALUES ($1, $2, $3, 'pg', 'running', '{\"A\":\"1\"}', $4, $4) \
         RETURNING id",
        &[Bind::Id(account.id), Bind::Id(room), Bind::Id(playspec), Bind::Text(&now)],
    )
    .await;
    let file: i64 = sqlx::query(
        "INSERT INTO playspec_mounted_files (playspec_id, name, mount_path, target_services, content, size, sha256, \
         created_at, updated_at) VALUES ($1, 'f', '/f', '[\"web\"]', $2, 1, 'x', $3, $3) RETURNING id",
    )
    .bind(playspec)
    .bind(vec![b'x'])
    .bind(&now)
    .fetch_one(store.pool())
    .await
    .unwrap()
    .try_get("id")
    .unwrap();
    let template = insert(
        store,
        "INSERT INTO import_templates (account_id, name, category_id, created_at, updated_at) \
         VALUES ($1, 'tpl', 1, $2, $2) RETURNING id",
        &[Bind::Id(account.id), Bind::Text(&now)],
    )
    .await;
    let version = insert(
        store,
        "INSERT INTO import_template_versions (account_id, template_id, version, template_body, variables, created_at) \
         VALUES ($1, $2, 1, 'services: {}', '{\"v\":{}}', $3) RETURNING id",
        &[Bind::Id(account.id), Bind::Id(template), Bind::Text(&now)],
    )
    .await;
    let mut conn = store.conn().await.unwrap();
    let event = events::record(
        &mut conn,
        NewEvent::new(account.id, "playground", playground, "error").metadata(serde_json::json!({"x": 1})),
    )
    .await
    .unwrap();
    drop(conn);
    sqlx::query("INSERT INTO playground_job_logs (playground_id, service, lines) VALUES ($1, 'web', '[\"hi\"]')")
        .bind(playground)
        .execute(store.pool())
        .await
        .unwrap();
    Rows { account: account.id, room, playspec, playground, file, template, version, event }
}

/// Sets `table.column` of row `id` (by `key`) to `value`.
async fn set(store: &Store, table: &str, column: &str, key: &str, id: i64, value: &str) {
    let sql = format!("UPDATE {table} SET {column} = $1 WHERE {key} = $2");
    let done = sqlx::query(&sql).bind(value).bind(id).execute(store.pool()).await.unwrap();
    assert_eq!(done.rows_affected(), 1, "{sql}");
}

#[track_caller]
fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, Error>, table: &str, column: &str, id: i64) {
    match result {
        Err(Error::Corrupt { table: t, column: c, id: i, reason }) => {
            assert_eq!((t, c, i), (table, column, id), "{reason}");
            assert!(!reason.is_empty());
        }
        other => panic!("expected {table}.{column} of {id} to be corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn every_json_column_that_does_not_parse_is_an_error_naming_it() {
    let t = testing::store().await;
    let store = &t.store;
    let r = rows(store).await;

    // Valid rows read as written.
    assert_eq!(playspecs::get(store, r.account, r.playspec).await.unwrap().definitions().unwrap().len(), 1);
    let p = playgrounds::get(store, r.account, r.playground).await.unwrap();
    assert_eq!(p.env_overrides["A"], "1");
    assert_eq!(playrooms::get(store, r.account, r.room).await.unwrap().domains, ["apps.example.com"]);
    assert_eq!(playspec_files::list_files(store, r.playspec).await.unwrap()[0].target_services, ["web"]);
    assert!(templates::versions(store, r.account, r.template).await.unwrap()[0].variables.get("v").is_some());
    assert_eq!(job_results::cached_logs(store, r.playground, "web").await.unwrap(), Some(vec!["hi".to_owned()]));

    // The Playspec's services: not JSON, and JSON that is not definitions.
    for bad in ["{not json", r#"{"web": 1}"#, r#"[{"name": "web"}]"#] {
        set(store, "playspecs", "services", "id", r.playspec, bad).await;
        assert_corrupt(playspecs::get(store, r.account, r.playspec).await, "playspecs", "services", r.playspec);
        assert_corrupt(playspecs::list(store, r.account).await, "playspecs", "services", r.playspec);
    }
    set(store, "playspecs", "services", "id", r.playspec, "[]").await;
    assert!(playspecs::get(store, r.account, r.playspec).await.unwrap().definitions().unwrap().is_empty());

    // Every JSON column of a Playground, through every read of it.
    for (column, valid) in [
        ("watched_services", "[]"),
        ("env_overrides", "{}"),
        ("service_subdomains", "{}"),
        ("service_settings", "{}"),
        ("services_status", "[]"),
    ] {
        set(store, "playgrounds", column, "id", r.playground, "[1, {").await;
        assert_corrupt(playgrounds::get(store, r.account, r.playground).await, "playgrounds", column, r.playground);
        assert_corrupt(playground_status::load(store, r.playground).await, "playgrounds", column, r.playground);
        set(store, "playgrounds", column, "id", r.playground, "\"a string\"").await;
        assert_corrupt(playgrounds::get(store, r.account, r.playground).await, "playgrounds", column, r.playground);
        set(store, "playgrounds", column, "id", r.playground, valid).await;
    }
    playgrounds::get(store, r.account, r.playground).await.unwrap();

    // Its states: a word play never writes is not read as any state.
    for (column, valid) in
        [("status", "in_progress"), ("desired_state", "running"), ("creation_step", "queued"), ("error_step", "ready")]
    {
        for bad in ["paused", "Running", ""] {
            set(store, "playgrounds", column, "id", r.playground, bad).await;
            assert_corrupt(playgrounds::get(store, r.account, r.playground).await, "playgrounds", column, r.playground);
            assert_corrupt(playground_status::load(store, r.playground).await, "playgrounds", column, r.playground);
        }
        set(store, "playgrounds", column, "id", r.playground, valid).await;
    }
    playgrounds::get(store, r.account, r.playground).await.unwrap();

    // A Playroom's domains, and values play never writes in its plain
    // columns.
    set(store, "playrooms", "domains", "id", r.room, "apps.example.com").await;
    assert_corrupt(playrooms::get(store, r.account, r.room).await, "playrooms", "domains", r.room);
    set(store, "playrooms", "domains", "id", r.room, "[]").await;
    set(store, "playrooms", "connection", "id", r.room, "telnet").await;
    assert_corrupt(playrooms::list(store, r.account).await, "playrooms", "connection", r.room);
    set(store, "playrooms", "connection", "id", r.room, "ssh").await;
    sqlx::query("UPDATE playrooms SET port = 70000 WHERE id = $1").bind(r.room).execute(store.pool()).await.unwrap();
    assert_corrupt(playrooms::get(store, r.account, r.room).await, "playrooms", "port", r.room);

    // Mounted files, template versions, events, cached job logs.
    set(store, "playspec_mounted_files", "target_services", "id", r.file, "web").await;
    assert_corrupt(
        playspec_files::list_files(store, r.playspec).await,
        "playspec_mounted_files",
        "target_services",
        r.file,
    );
    set(store, "import_template_versions", "variables", "id", r.version, "{").await;
    assert_corrupt(
        templates::versions(store, r.account, r.template).await,
        "import_template_versions",
        "variables",
        r.version,
    );
    set(store, "events", "metadata", "id", r.event, "").await;
    assert_corrupt(events::list_for_account(store, r.account).await, "events", "metadata", r.event);
    set(store, "playground_job_logs", "lines", "playground_id", r.playground, "[\"hi\"").await;
    assert_corrupt(
        job_results::cached_logs(store, r.playground, "web").await,
        "playground_job_logs",
        "lines",
        r.playground,
    );
}

#[tokio::test]
async fn a_corrupt_playground_row_can_still_be_failed_with_the_reason() {
    let t = testing::store().await;
    let store = &t.store;
    let r = rows(store).await;
    let lease = play_store::leases::claim(
        store,
        "playground",
        r.playground,
        "replica-a",
        time::now(),
        std::time::Duration::from_secs(60),
    )
    .await
    .unwrap()
    .unwrap();
    let fence = playground_status::Fence { reconciler: "playground", owner: "replica-a", token: lease.token };
    set(store, "playgrounds", "env_overrides", "id", r.playground, "{oops").await;
    let error = playground_status::load(store, r.playground).await.unwrap_err();
    assert!(
        playground_status::record_error(store, fence, r.playground, CreationStep::Ready, &error.to_string(), true)
            .await
            .unwrap()
            .is_held()
    );
    let row = sqlx::query("SELECT status, error_message FROM playgrounds WHERE id = $1")
        .bind(r.playground)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(row.try_get::<String, _>("status").unwrap(), "failed");
    let message: String = row.try_get("error_message").unwrap();
    assert!(message.contains("playgrounds.env_overrides"), "{message}");
}
