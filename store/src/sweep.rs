//! What the Playroom sweep and the Docker event watchers read: which
//! Playrooms exist, which Playground ids still have a row, and which
//! Playgrounds live on a Playroom.
//!
//! Read-only, across all accounts: these callers are the reconcilers, not a
//! tenant, and never show what they read to anyone.
//!
//! The sweep's safety rests on two facts about `playgrounds.id`, kept by the
//! migrations (`AUTOINCREMENT` on SQLite, an identity column on PostgreSQL):
//! an id is never reused, and a row is committed before any host object is
//! labelled with its id (the reconciler only acts on committed rows). So an
//! id found on a host whose row is missing *now* belonged to a Playground
//! that is gone for good.

use std::collections::BTreeSet;

use sqlx::Row;

use super::Store;
use super::shapes::{all, column};
use crate::Result;
use play_model::model::playroom::WatchedPlayroom;

/// How many ids go into one `IN (...)` list: well under SQLite's smallest
/// parameter limit (999).
const CHUNK: usize = 500;

/// Every Playroom's id, all accounts, in id order.
pub async fn playroom_ids(store: &Store) -> Result<Vec<i64>> {
    column(store, sqlx::query("SELECT id FROM playrooms ORDER BY id"), "id").await
}

/// The account of Playroom `id`, or `None` once it is deleted.
pub async fn playroom_account(store: &Store, id: i64) -> Result<Option<i64>> {
    let row =
        sqlx::query("SELECT account_id FROM playrooms WHERE id = $1").bind(id).fetch_optional(store.pool()).await?;
    row.map(|r| r.try_get("account_id")).transpose().map_err(Into::into)
}

/// Which of `ids` have a Playground row, whatever its account, Playroom or
/// status (a Playground being destroyed still has its row).
pub async fn existing_playgrounds(store: &Store, ids: &[i64]) -> Result<BTreeSet<i64>> {
    ids_matching(store, "SELECT id FROM playgrounds WHERE", ids).await
}

/// Which of `ids` are Playrooms that exist and are not being deleted: an
/// edge object labelled with any other id is left over (its Playroom's
/// delete pass was cut short, or the row was purged meanwhile).
pub async fn live_playrooms(store: &Store, ids: &[i64]) -> Result<BTreeSet<i64>> {
    ids_matching(store, "SELECT id FROM playrooms WHERE deleted_at IS NULL AND", ids).await
}

/// The ids among `ids` that `select` (`SELECT id FROM ... WHERE [...
/// AND]`, completed with `id IN (...)`) returns, in chunks.
async fn ids_matching(store: &Store, select: &str, ids: &[i64]) -> Result<BTreeSet<i64>> {
    let mut found = BTreeSet::new();
    for chunk in ids.chunks(CHUNK) {
        let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
        let sql = format!("{select} id IN ({})", placeholders.join(", "));
        let mut query = sqlx::query(&sql);
        for id in chunk {
            query = query.bind(*id);
        }
        for row in query.fetch_all(store.pool()).await? {
            found.insert(row.try_get::<i64, _>("id")?);
        }
    }
    Ok(found)
}

/// Playrooms with at least one Playground row, in id order.
pub async fn watched_playrooms(store: &Store) -> Result<Vec<WatchedPlayroom>> {
    let query = sqlx::query(
        "SELECT r.id, r.account_id, r.updated_at, r.host_key FROM playrooms r \
         WHERE EXISTS (SELECT 1 FROM playgrounds g WHERE g.playroom_id = r.id) ORDER BY r.id",
    );
    all(store, query, |r| Ok(columns!(r, WatchedPlayroom { id, account_id, updated_at => time, host_key }))).await
}

/// The ids of the Playgrounds on Playroom `playroom_id`, in id order.
pub async fn playgrounds_in(store: &Store, playroom_id: i64) -> Result<Vec<i64>> {
    let query = sqlx::query("SELECT id FROM playgrounds WHERE playroom_id = $1 ORDER BY id").bind(playroom_id);
    column(store, query, "id").await
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::testing::{insert_playground as playground, insert_playroom as room};

    #[tokio::test]
    async fn rows_found_across_accounts_and_rooms_and_watched_rooms_listed() {
        let db = crate::testing::store().await;
        let store = &db.store;
        let [a, b] = crate::testing::accounts(store, ["a", "b"]).await;
        let room_a = room(store, a.id, "box").await;
        let room_b = room(store, b.id, "box").await;
        let idle = room(store, b.id, "idle").await;
        let pa = playground(store, a.id, room_a).await;
        let pb = playground(store, b.id, room_b).await;
        let gone = playground(store, b.id, room_b).await;
        sqlx::query("DELETE FROM playgrounds WHERE id = $1").bind(gone).execute(store.pool()).await.unwrap();

        let mut asked: Vec<i64> = (1..=1200).collect();
        asked.extend([pa, pb, gone]);
        let found = existing_playgrounds(store, &asked).await.unwrap();
        assert_eq!(found, BTreeSet::from([pa, pb]), "every chunk is read; a deleted row is missing");
        assert!(existing_playgrounds(store, &[]).await.unwrap().is_empty());

        assert_eq!(playroom_ids(store).await.unwrap(), vec![room_a, room_b, idle]);
        assert_eq!(playroom_account(store, room_b).await.unwrap(), Some(b.id));
        assert_eq!(playroom_account(store, 999_999).await.unwrap(), None);
        let watched: Vec<(i64, i64)> =
            watched_playrooms(store).await.unwrap().iter().map(|w| (w.id, w.account_id)).collect();
        assert_eq!(watched, vec![(room_a, a.id), (room_b, b.id)], "a room without Playgrounds is not watched");
        assert_eq!(playgrounds_in(store, room_b).await.unwrap(), vec![pb]);
        assert_eq!(store.installation().await.unwrap().len(), 16);
    }

    /// The edge's three reads of a Playroom: its running Playgrounds,
    /// their Playspecs and their mounted files, across accounts, and
    /// nothing of another Playroom or of a Playground that is stopped.
    #[tokio::test]
    async fn the_edge_reads_a_rooms_running_playgrounds_with_their_playspecs_and_files() {
        use crate::{playgrounds, playspec_files, playspecs};
        use play_model::model::event::Acting;
        use play_model::model::playspec::{NewMountedFile, PlayspecFields};
        use play_model::model::quota::QuotaLimits;

        let db = crate::testing::store().await;
        let store = &db.store;
        let [a, b] = crate::testing::accounts(store, ["a", "b"]).await;
        let limits = QuotaLimits::default();
        let spec = |account: i64, name: &str| {
            let fields = PlayspecFields {
                name: Some(name.into()),
                base_compose_yaml: Some("services:\n  web:\n    image: x\n".into()),
                ..PlayspecFields::default()
            };
            playspecs::create(store, Acting::system(account), fields, &limits)
        };
        let (spec_a, spec_b, spec_other) =
            (spec(a.id, "a").await.unwrap(), spec(b.id, "b").await.unwrap(), spec(b.id, "o").await.unwrap());
        let file = |name: &str| NewMountedFile {
            name: name.into(),
            mount_path: format!("/etc/{name}"),
            path: None,
            target_services: vec!["web".into()],
            readonly: true,
            content: b"x".to_vec(),
        };
        playspec_files::add_file(store, Acting::system(a.id), spec_a.id, file("one")).await.unwrap();
        playspec_files::add_file(store, Acting::system(b.id), spec_other.id, file("two")).await.unwrap();
        let (shared, other) = (room(store, a.id, "shared").await, room(store, b.id, "other").await);
        let with_spec = async |account: i64, room: i64, spec: i64, desired: &str| {
            let id = playground(store, account, room).await;
            let sql = "UPDATE playgrounds SET playspec_id = $1, desired_state = $2 WHERE id = $3";
            crate::write_shapes::set_pair_by_id(store.pool(), sql, (spec, desired), id).await.unwrap();
            id
        };
        let pa = with_spec(a.id, shared, spec_a.id, "running").await;
        let pb = with_spec(b.id, shared, spec_b.id, "running").await;
        with_spec(b.id, shared, spec_other.id, "stopped").await;
        with_spec(b.id, other, spec_other.id, "running").await;

        let running: Vec<i64> = playgrounds::running_in(store, shared).await.unwrap().iter().map(|p| p.id).collect();
        assert_eq!(running, vec![pa, pb]);
        let specs: Vec<i64> = playspecs::of_running_in(store, shared).await.unwrap().iter().map(|s| s.id).collect();
        assert_eq!(specs, vec![spec_a.id, spec_b.id], "not the stopped Playground's");
        let files = playspec_files::of_running_in(store, shared).await.unwrap();
        assert_eq!(
            files.iter().map(|(spec, f)| (*spec, f.name.as_str())).collect::<Vec<_>>(),
            vec![(spec_a.id, "one")]
        );
        assert!(playgrounds::running_in(store, 999_999).await.unwrap().is_empty());
    }
}
