//! Two `play serve` replicas on one PostgreSQL (issue #16, item 4), on two
//! simulated Docker hosts (`play-simhost`, in-process): the real binary
//! twice, as replicas `A` and `B` sharing the database and the master key.
//! - Playgrounds created concurrently through both replicas all converge:
//!   exactly as many as were created, one container per (Compose project,
//!   service) across the hosts, each on its own Playroom's host, one lease
//!   row per Playground owned by `A` or `B`;
//! - when `A` is killed (SIGKILL: no lease released), `B` repairs drift on
//!   a Playground `A` reconciled and claims every Playground, within the
//!   lease time plus a generous margin, without a duplicate container.
//!
//! Runs on PostgreSQL only (SQLite runs one replica): on SQLite it returns
//! at once, saying so.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::support::serve::{Play, Server};
use crate::support::simhost::SimHost;
use play_store::Backend;
use serde_json::{Value, json};
use sqlx::Connection;

const PLAYGROUNDS: usize = 40;
/// Short, so that the takeover is quick; passes renew every third of it.
const LEASE: Duration = Duration::from_secs(4);
const RESYNC: Duration = Duration::from_secs(2);
/// Generous slack on every bound: the test machine may be busy.
const MARGIN: Duration = Duration::from_secs(60);

const COMPOSE: &str = r#"
services:
  db:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    volumes: ["data:/data"]
  web:
    image: play-test/busybox:1
    command: ["sleep", "3600"]
    depends_on: [db]
volumes:
  data: {}
"#;

/// Replica `A` of an installation on a fresh database, with the test's
/// lease and resync times, local Playrooms and no rate limit or quota in
/// the way; `A.replica("B")` is the second.
async fn installation() -> Play {
    Play::new()
        .await
        .env("PLAY_REPLICA_ID", "A")
        .env("PLAY_LEASE_DURATION", format!("{}s", LEASE.as_secs()))
        .env("PLAY_RESYNC_INTERVAL", format!("{}s", RESYNC.as_secs()))
        .env("PLAY_ALLOW_LOCAL_PLAYROOMS", "true")
        .env("PLAY_RATE_LIMIT_PER_SECOND", "100000")
        .env("PLAY_RATE_LIMIT_BURST", "100000")
        .env("PLAY_QUOTAS", "playgrounds=1000")
}

/// Every Playground, as `server` lists them.
async fn listed(server: &Server) -> Vec<Value> {
    let (status, body) = server.get("/api/playgrounds").await;
    assert_eq!(status, 200, "{body}");
    body.as_array().expect("a list").clone()
}

/// Polls `ok` every 200 ms until it holds or `within` has passed.
async fn eventually<F: std::future::Future<Output = bool>>(within: Duration, what: &str, mut ok: impl FnMut() -> F) {
    let deadline = Instant::now() + within;
    while !ok().await {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every host holds exactly one container per (project, service), both
/// services of every Playground run, and each on its own Playroom's host.
fn assert_hosts(hosts: &[SimHost], playgrounds: &[Playground], room_host: &HashMap<i64, usize>, when: &str) {
    let mut seen: HashMap<(String, String), Vec<(usize, bool)>> = HashMap::new();
    for (h, host) in hosts.iter().enumerate() {
        for c in host.engine.containers() {
            let labels = c.labels();
            if !labels.contains_key("dev.play.playground") {
                continue;
            }
            let key = (
                labels.get("com.docker.compose.project").cloned().unwrap_or_default(),
                labels.get("com.docker.compose.service").cloned().unwrap_or_default(),
            );
            seen.entry(key).or_default().push((h, c.is_running()));
        }
    }
    let duplicated: Vec<_> = seen.iter().filter(|(_, v)| v.len() > 1).collect();
    assert!(duplicated.is_empty(), "{when}: duplicate containers: {duplicated:?}");
    assert_eq!(seen.len(), 2 * playgrounds.len(), "{when}: containers per Playground: {seen:?}");
    for p in playgrounds {
        let (project, host) = (&p.project, room_host[&p.playroom]);
        for service in ["db", "web"] {
            let found = seen.get(&(project.clone(), service.to_owned()));
            assert_eq!(found, Some(&vec![(host, true)]), "{when}: {project} {service} runs on host {host} only");
        }
    }
}

/// A Playground as the database has it.
struct Playground {
    id: i64,
    project: String,
    playroom: i64,
}

/// What `query` selects from the test database, a value per row.
async fn select<T>(database_url: &str, query: &str, row: impl Fn(&sqlx::postgres::PgRow) -> T) -> Vec<T> {
    let mut conn = sqlx::PgConnection::connect(database_url).await.expect("connect to the test database");
    sqlx::query(query).fetch_all(&mut conn).await.unwrap_or_else(|e| panic!("{query}: {e}")).iter().map(row).collect()
}

/// Every Playground, by id.
async fn stored_playgrounds(database_url: &str) -> Vec<Playground> {
    use sqlx::Row as _;
    select(database_url, "SELECT id, compose_project, playroom_id FROM playgrounds ORDER BY id", |r| Playground {
        id: r.get("id"),
        project: r.get("compose_project"),
        playroom: r.get("playroom_id"),
    })
    .await
}

/// (Playground id, owner) of every Playground lease row.
async fn lease_owners(database_url: &str) -> Vec<(i64, String)> {
    use sqlx::Row as _;
    let query = "SELECT object_id, owner FROM reconcile_leases WHERE reconciler = 'playground' ORDER BY object_id";
    select(database_url, query, |r| (r.get("object_id"), r.get("owner"))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_the_playgrounds_and_one_takes_over_when_the_other_is_killed() {
    if play_store::testing::backend() != Backend::Postgres {
        eprintln!("skipped: two replicas need PostgreSQL (PLAY_TEST_BACKEND=postgres)");
        return;
    }
    let hosts = [SimHost::start(), SimHost::start()];
    // A first: it migrates and mints the admin key; B finds a key and mints none.
    let play_a = installation().await;
    let play_b = play_a.replica("B");
    let mut a = play_a.serve().await;
    let mut b = play_b.serve().await;
    assert!(!play_b.path("admin.token").exists(), "B minted a second admin key");
    b.token.clone_from(&a.token);
    let database_url = play_a.database_url();

    let mut room_host = HashMap::new();
    let mut rooms = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        let through = if h % 2 == 0 { &a } else { &b };
        let room =
            through.create("/api/playrooms", host.playroom_body(&format!("sim-{h}"))).await["id"].as_i64().unwrap();
        room_host.insert(room, h);
        rooms.push(room);
    }
    let spec =
        b.create("/api/playspecs", json!({"playspec": {"name": "replicas", "base_compose_yaml": COMPOSE}})).await["id"]
            .as_i64()
            .unwrap();

    // Every create at once, alternately through A and B.
    let creates = (0..PLAYGROUNDS).map(|i| {
        let through = if i % 2 == 0 { &a } else { &b };
        let body = json!({"playground": {"name": format!("pg-{i}"), "playspec_id": spec, "playroom_id": rooms[i % rooms.len()]}});
        through.post("/api/playgrounds", body)
    });
    let answers = futures::future::join_all(creates).await;
    let refused: Vec<_> = answers.iter().filter(|(status, _)| *status != 201).collect();
    assert!(refused.is_empty(), "creates not answered 201: {refused:?}");

    eventually(Duration::from_secs(120), "every Playground running", || async {
        let items = listed(&b).await;
        items.len() == PLAYGROUNDS && items.iter().all(|p| p["status"] == "running")
    })
    .await;
    assert_eq!(listed(&a).await.len(), PLAYGROUNDS);
    let playgrounds = stored_playgrounds(database_url).await;
    assert_eq!(playgrounds.len(), PLAYGROUNDS);
    assert_hosts(&hosts, &playgrounds, &room_host, "after the creates");
    let owners = lease_owners(database_url).await;
    let ids: Vec<i64> = playgrounds.iter().map(|p| p.id).collect();
    assert_eq!(owners.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids, "one lease row per Playground");
    assert!(owners.iter().all(|(_, owner)| owner == "A" || owner == "B"), "{owners:?}");
    let target = owners.iter().find(|(_, owner)| owner == "A").map(|(id, _)| *id);
    let target = target.expect("A reconciled none of the Playgrounds it was asked to create");

    // A dies without releasing anything; B must take over, drift included.
    a.kill();
    let killed = Instant::now();
    let playground = playgrounds.iter().find(|p| p.id == target).unwrap();
    let project = playground.project.clone();
    let host = &hosts[room_host[&playground.playroom]];
    let is_db = |c: &play_simhost::Container| {
        let labels = c.labels();
        labels.get("com.docker.compose.project") == Some(&project)
            && labels.get("com.docker.compose.service").map(String::as_str) == Some("db")
    };
    let old = host.engine.containers().into_iter().find(|c| is_db(c)).expect("the target's db container").id;
    host.engine.remove_container(&old, true).expect("remove the db container behind play's back");

    eventually(LEASE + RESYNC + MARGIN, "B replaces the removed container", || async {
        host.engine.containers().iter().any(|c| is_db(c) && c.is_running() && c.id != old)
    })
    .await;
    let repaired = killed.elapsed();
    eventually(LEASE + 3 * RESYNC + MARGIN, "B has claimed every Playground", || async {
        lease_owners(database_url).await.iter().all(|(_, owner)| owner == "B")
    })
    .await;
    eprintln!("drift repaired {repaired:?} and every lease held by B {:?} after A was killed", killed.elapsed());
    eventually(MARGIN, "every Playground running again", || async {
        listed(&b).await.iter().all(|p| p["status"] == "running")
    })
    .await;
    assert_hosts(&hosts, &playgrounds, &room_host, "after A was killed");
}
