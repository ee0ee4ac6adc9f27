//! `GET /api/playgrounds` in SQL (issue #52, item 7): an account's
//! Playgrounds that are not destroyed, filtered by a
//! [`ListQuery`](play_model::playground::list::ListQuery), in id order, one
//! page at a time, with the number that match.
//!
//! Every filter is a bound parameter; the SQL text only says which filters
//! are present, so no value reaches it. A name prefix is compared as
//! written on both backends (SQLite's `LIKE` ignores case, PostgreSQL's
//! text order follows its locale): `starts_with` on PostgreSQL, `substr`
//! on SQLite.

use play_model::playground::list::ListQuery;
use play_model::playground::model::Playground;
use play_model::playground::state::PlaygroundStatus;
use sqlx::Row;

use super::playgrounds::{COLUMNS, FROM, from_row};
use super::shapes::all;
use super::{Backend, Store};
use crate::Result;

/// A value bound to the query, in order.
enum Arg {
    Int(i64),
    Text(String),
}

/// The `WHERE` clause of `query` for `account_id`, and its arguments.
fn condition(backend: Backend, account_id: i64, query: &ListQuery) -> (String, Vec<Arg>) {
    let mut args = vec![Arg::Int(account_id), Arg::Text(PlaygroundStatus::Destroyed.as_str().to_owned())];
    let mut sql = String::from("g.account_id = $1 AND g.status <> $2");
    let mut push = |clause: &str, arg: Arg| {
        args.push(arg);
        sql.push_str(" AND ");
        sql.push_str(&clause.replace('?', &format!("${}", args.len())));
    };
    if let Some(status) = query.status {
        push("g.status = ?", Arg::Text(status.as_str().to_owned()));
    }
    if let Some(id) = query.playspec_id {
        push("g.playspec_id = ?", Arg::Int(id));
    }
    if let Some(id) = query.playroom_id {
        push("g.playroom_id = ?", Arg::Int(id));
    }
    if let Some(prefix) = &query.name_prefix {
        // On SQLite the prefix's one number stands twice in the text.
        let clause = match backend {
            Backend::Postgres => "starts_with(g.name, ?)",
            Backend::Sqlite => "substr(g.name, 1, length(?)) = ?",
        };
        push(clause, Arg::Text(prefix.clone()));
    }
    if let Some(word) = &query.name_contains {
        // `%`, `_` and the escape itself are characters here, not patterns.
        let escaped: String = word
            .to_lowercase()
            .chars()
            .flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] })
            .collect();
        push("lower(g.name) LIKE ? ESCAPE '\\'", Arg::Text(format!("%{escaped}%")));
    }
    if let Some(id) = query.trigger_id {
        // The trigger must be the account's too ($1).
        let clause = "g.id IN (SELECT t.playground_id FROM trigger_targets t JOIN triggers r ON r.id = t.trigger_id \
                      WHERE t.trigger_id = ? AND r.account_id = $1)";
        push(clause, Arg::Int(id));
    }
    (sql, args)
}

fn bind<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    args: &[Arg],
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    for arg in args {
        query = match arg {
            Arg::Int(n) => query.bind(*n),
            Arg::Text(t) => query.bind(t.clone()),
        };
    }
    query
}

/// The page of `account_id`'s Playgrounds `query` asks for (all of them
/// without a page), and how many match in all.
pub async fn list(store: &Store, account_id: i64, query: &ListQuery) -> Result<(Vec<Playground>, i64)> {
    let (condition, args) = condition(store.backend(), account_id, query);
    let order = if query.newest_first { "g.id DESC" } else { "g.id" };
    let mut sql = format!("SELECT {COLUMNS} FROM {FROM} WHERE {condition} ORDER BY {order}");
    if let Some(page) = query.page {
        sql.push_str(&format!(" LIMIT {} OFFSET {}", page.per_page, page.offset()));
    }
    let items = all(store, bind(sqlx::query(&sql), &args), from_row).await?;
    let total = match query.page {
        // The whole list: its length is the count.
        None => i64::try_from(items.len()).unwrap_or(i64::MAX),
        Some(_) => {
            let sql = format!("SELECT COUNT(*) AS n FROM {FROM} WHERE {condition}");
            let rows = all(store, bind(sqlx::query(&sql), &args), |row| Ok(row.try_get::<i64, _>("n")?)).await?;
            rows.first().copied().unwrap_or(0)
        }
    };
    Ok((items, total))
}

#[cfg(test)]
mod tests {

    use super::*;
    use play_model::playground::list::Page;

    /// Names and statuses of the account's Playgrounds `query` lists, and
    /// the total.
    async fn listed(store: &Store, account: i64, query: ListQuery) -> (Vec<String>, i64) {
        let (items, total) = list(store, account, &query).await.unwrap();
        (items.into_iter().map(|p| p.name).collect(), total)
    }

    #[tokio::test]
    async fn filters_pages_and_prefixes_are_applied_in_sql_within_the_account() {
        let db = crate::testing::store().await;
        let store = &db.store;
        let trigger = crate::triggers::tests::trigger(store).await;
        let account = trigger.account_id;
        let room = crate::testing::insert_playroom(store, account, "box").await;
        let other_room = crate::testing::insert_playroom(store, account, "other").await;
        let mut ids = Vec::new();
        for (name, room, status) in [
            ("pr-1", room, "running"),
            ("pr-2", room, "failed"),
            ("PR-3", room, "running"),
            ("50%-off", other_room, "running"),
            ("main", other_room, "sleeping"),
        ] {
            let id = crate::testing::insert_playground(store, account, room).await;
            let sql = "UPDATE playgrounds SET name = $1, status = $2 WHERE id = $3";
            crate::write_shapes::set_pair_by_id(store.pool(), sql, (name, status), id).await.unwrap();
            ids.push(id);
        }
        let (stranger, _) = crate::accounts::create_account(store, "stranger").await.unwrap();
        let theirs = crate::testing::insert_playroom(store, stranger.id, "box").await;
        crate::testing::insert_playground(store, stranger.id, theirs).await;

        let all = listed(store, account, ListQuery::default()).await;
        assert_eq!(all, (vec!["pr-1".into(), "pr-2".into(), "PR-3".into(), "50%-off".into(), "main".into()], 5));
        let q = |f: fn(&mut ListQuery)| {
            let mut query = ListQuery::default();
            f(&mut query);
            query
        };
        let running = listed(store, account, q(|q| q.status = Some(PlaygroundStatus::Running))).await;
        assert_eq!(running.0, ["pr-1", "PR-3", "50%-off"]);
        let mut in_room = ListQuery { playroom_id: Some(other_room), ..ListQuery::default() };
        assert_eq!(listed(store, account, in_room.clone()).await.0, ["50%-off", "main"]);
        in_room.status = Some(PlaygroundStatus::Sleeping);
        assert_eq!(listed(store, account, in_room).await.0, ["main"], "filters combine");
        let prefix = |p: &str| ListQuery { name_prefix: Some(p.to_owned()), ..ListQuery::default() };
        assert_eq!(listed(store, account, prefix("pr-")).await.0, ["pr-1", "pr-2"], "case matters");
        assert_eq!(listed(store, account, prefix("50%")).await.0, ["50%-off"], "% is a character");
        assert!(listed(store, account, prefix("%")).await.0.is_empty(), "no wildcard");
        assert!(listed(store, account, prefix("_r")).await.0.is_empty(), "no wildcard");
        let word =
            |w: &str| ListQuery { name_contains: Some(w.to_owned()), newest_first: true, ..ListQuery::default() };
        assert_eq!(listed(store, account, word("PR")).await.0, ["PR-3", "pr-2", "pr-1"], "any case, newest first");
        assert_eq!(listed(store, account, word("%")).await.0, ["50%-off"], "% is a character");
        assert!(listed(store, account, word("_")).await.0.is_empty(), "_ is a character");

        // Pages in id order, with the total of all that match.
        let page = |number, per_page| ListQuery { page: Some(Page { number, per_page }), ..ListQuery::default() };
        assert_eq!(listed(store, account, page(1, 2)).await, (vec!["pr-1".into(), "pr-2".into()], 5));
        assert_eq!(listed(store, account, page(3, 2)).await, (vec!["main".into()], 5));
        assert_eq!(listed(store, account, page(4, 2)).await, (vec![], 5));

        // A trigger's Playgrounds: those its targets claimed.
        let target = crate::trigger_targets::begin_launch(store, trigger.id, "branch", "main", "a").await.unwrap();
        let mut tx = store.write().await.unwrap();
        assert!(crate::trigger_targets::claim_in(&mut tx, target.id, target.generation, ids[4]).await.unwrap());
        tx.commit().await.unwrap();
        let kept = ListQuery { trigger_id: Some(trigger.id), ..ListQuery::default() };
        assert_eq!(listed(store, account, kept.clone()).await.0, ["main"]);
        assert!(listed(store, stranger.id, kept).await.0.is_empty(), "another account's trigger lists nothing");
        assert_eq!(listed(store, stranger.id, ListQuery::default()).await.1, 1);
    }
}
