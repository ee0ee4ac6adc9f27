//! Import templates: versioned template bodies, the public catalog and the
//! read-only categories.
//!
//! Invariants:
//! - Visibility is computed per viewer, never stored: a template is visible
//!   to its owner, and to every other account while at least one of its
//!   versions is public. Of another account's template only the public
//!   versions are visible. Anything not visible is `NotFound`, exactly like a
//!   missing row.
//! - Only the owner changes a template or its versions; every write query is
//!   scoped by the owner's `account_id`.
//! - Versions are immutable: after insertion only `public` changes. Their
//!   numbers come from `import_templates.next_version`, bumped by an `UPDATE`
//!   in the inserting transaction: PostgreSQL's row lock and SQLite's
//!   `BEGIN IMMEDIATE` serialise concurrent writers, so numbers are 1, 2, 3...
//!   without gaps or duplicates, and a deleted version's number is never
//!   reused (a version number always means one body).
//! - Playspecs launched from a template hold their own compiled Compose text,
//!   so deleting a template or a version never touches them.

mod search;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::events;
use super::quotas;
use super::shapes::{all, delete_owned, one};
use super::write_shapes::{insert_returning_id, update_unique, write_locked};
use super::{Conn, Store, flag};
use crate::{Error, Result};
use play_model::model::event::{Acting, Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::model::template::{Category, ListFilter, NewVersion, Template, TemplateFields, Version};
use play_model::time;

pub use search::{MAX_RESULTS, score};

/// Viewer-dependent columns; `$1` is the viewer's account id.
const COLUMNS: &str = "t.id, t.account_id, t.name, t.description, t.category_id, t.created_at, t.updated_at, \
    (SELECT MAX(v.version) FROM import_template_versions v \
     WHERE v.template_id = t.id AND (t.account_id = $1 OR v.public = 1)) AS latest_version, \
    (SELECT COUNT(*) FROM import_template_versions v WHERE v.template_id = t.id AND v.public = 1) AS public_count";

/// The visibility condition; `$1` is the viewer's account id.
const VISIBLE: &str = "(t.account_id = $1 OR EXISTS \
    (SELECT 1 FROM import_template_versions v WHERE v.template_id = t.id AND v.public = 1))";

const VERSION_COLUMNS: &str = "v.id, v.template_id, v.version, v.public, v.template_body, v.variables, v.created_at";

fn from_row(row: &AnyRow) -> Result<Template> {
    Ok(columns!(
        row,
        Template {
            id,
            account_id,
            name,
            description,
            category_id,
            latest_version,
            public: row.try_get::<i64, _>("public_count")? > 0,
            created_at => time,
            updated_at => time,
        }
    ))
}

fn version_from_row(row: &AnyRow) -> Result<Version> {
    Ok(columns!(
        row,
        "import_template_versions",
        Version {
            id,
            template_id,
            version,
            public => flag,
            template_body,
            variables => json,
            created_at => time,
        }
    ))
}

fn name_taken(name: &str) -> Error {
    Error::field("import_template.name", format!("a template named {name:?} already exists"))
}

pub async fn categories(store: &Store) -> Result<Vec<Category>> {
    let query = sqlx::query("SELECT id, name, slug FROM template_categories ORDER BY id");
    all(store, query, |row| {
        Ok(Category { id: row.try_get("id")?, name: row.try_get("name")?, slug: row.try_get("slug")? })
    })
    .await
}

async fn ensure_category(conn: &mut Conn, id: i64) -> Result<()> {
    let found = sqlx::query("SELECT id FROM template_categories WHERE id = $1").bind(id).fetch_optional(conn).await?;
    match found {
        Some(_) => Ok(()),
        None => Err(Error::field("import_template.category_id", format!("there is no category {id}"))),
    }
}

/// The templates `viewer` can see, by id.
pub async fn list(store: &Store, viewer: i64, filter: ListFilter) -> Result<Vec<Template>> {
    let mine = match filter.mine {
        Some(true) => " AND t.account_id = $1",
        Some(false) => " AND t.account_id <> $1",
        None => "",
    };
    let category = if filter.category_id.is_some() { " AND t.category_id = $2" } else { "" };
    let sql = format!("SELECT {COLUMNS} FROM import_templates t WHERE {VISIBLE}{mine}{category} ORDER BY t.id");
    let mut query = sqlx::query(&sql).bind(viewer);
    if let Some(category_id) = filter.category_id {
        query = query.bind(category_id);
    }
    all(store, query, from_row).await
}

pub async fn get(on: impl Into<On<'_>>, viewer: i64, id: i64) -> Result<Template> {
    let sql = format!("SELECT {COLUMNS} FROM import_templates t WHERE {VISIBLE} AND t.id = $2");
    one(on, sqlx::query(&sql).bind(viewer).bind(id), "import template", from_row).await
}

pub async fn owned(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Template> {
    let template = get(on, account_id, id).await?;
    if template.account_id != account_id {
        return Err(Error::NotFound("import template"));
    }
    Ok(template)
}

pub async fn create(on: impl Into<On<'_>>, by: Acting, new: TemplateFields, limits: &QuotaLimits) -> Result<Template> {
    let Acting { account_id, actor } = by;
    on.into()
        .write(async |conn| {
            let missing = || Error::Internal("import template create without a required field".into());
            let name = new.name.ok_or_else(missing)?;
            let category_id = new.category_id.ok_or_else(missing)?;
            ensure_category(conn, category_id).await?;
            quotas::check(conn, account_id, Resource::ImportTemplates, limits).await?;
            let insert = sqlx::query(
                "INSERT INTO import_templates (account_id, name, description, category_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
            )
            .bind(account_id)
            .bind(&name)
            .bind(new.description.unwrap_or_default())
            .bind(category_id)
            .bind(time::to_db(&time::now()));
            let id = insert_returning_id(conn, insert, || name_taken(&name)).await?;
            events::record(conn, NewEvent::new(account_id, "template", id, "created").actor(actor)).await?;
            get(&mut *conn, account_id, id).await
        })
        .await
}

/// Marks the template changed and writes its `template.updated` event.
async fn touch_in(conn: &mut Conn, account_id: i64, id: i64, actor: Actor, metadata: serde_json::Value) -> Result<()> {
    sqlx::query("UPDATE import_templates SET updated_at = $1 WHERE id = $2 AND account_id = $3")
        .bind(time::to_db(&time::now()))
        .bind(id)
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
    let event = NewEvent::new(account_id, "template", id, "updated").actor(actor).metadata(metadata);
    events::record(conn, event).await?;
    Ok(())
}

pub async fn update(on: impl Into<On<'_>>, by: Acting, id: i64, fields: TemplateFields) -> Result<Template> {
    let Acting { account_id, actor } = by;
    write_locked(on, "import_templates", id, async |conn| {
        let current = owned(&mut *conn, account_id, id).await?;
        if let Some(category_id) = fields.category_id {
            ensure_category(conn, category_id).await?;
        }
        let name = fields.name.unwrap_or(current.name);
        let update = sqlx::query(
            "UPDATE import_templates SET name = $1, description = $2, category_id = $3, updated_at = $4 \
         WHERE id = $5 AND account_id = $6",
        )
        .bind(&name)
        .bind(fields.description.unwrap_or(current.description))
        .bind(fields.category_id.unwrap_or(current.category_id))
        .bind(time::to_db(&time::now()))
        .bind(id)
        .bind(account_id);
        update_unique(conn, update, || name_taken(&name)).await?;
        events::record(conn, NewEvent::new(account_id, "template", id, "updated").actor(actor)).await?;
        get(&mut *conn, account_id, id).await
    })
    .await
}

/// Deletes a template and its versions (its schedule and trigger with
/// them), and destroys its trigger's Playgrounds; their ids, to wake.
/// Playspecs launched from it keep their compiled Compose text.
pub async fn delete(on: impl Into<On<'_>>, account_id: i64, id: i64, actor: Actor) -> Result<Vec<i64>> {
    on.into()
        .write(async |conn| {
            owned(&mut *conn, account_id, id).await?;
            // Its trigger's Playgrounds go with it (the trigger and its
            // targets are deleted with the template).
            let destroyed = super::trigger_targets::destroy_for_template_in(conn, account_id, id).await?;
            sqlx::query("DELETE FROM import_template_versions WHERE template_id = $1 AND account_id = $2")
                .bind(id)
                .bind(account_id)
                .execute(&mut *conn)
                .await?;
            delete_owned(conn, "import_templates", id, account_id).await?;
            events::record(conn, NewEvent::new(account_id, "template", id, "destroyed").actor(actor)).await?;
            Ok(destroyed)
        })
        .await
}

/// The versions of a template `viewer` can see (all for the owner, the
/// public ones for others), oldest first.
pub async fn versions(store: &Store, viewer: i64, id: i64) -> Result<Vec<Version>> {
    let mut conn = store.conn().await?;
    get(&mut *conn, viewer, id).await?;
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM import_template_versions v \
         WHERE v.template_id = $1 AND (v.account_id = $2 OR v.public = 1) ORDER BY v.version"
    );
    all(&mut *conn, sqlx::query(&sql).bind(id).bind(viewer), version_from_row).await
}

/// One visible version by number, or the latest visible one.
pub async fn version_for_launch(
    store: &Store,
    viewer: i64,
    id: i64,
    number: Option<i64>,
) -> Result<(Template, Version)> {
    let mut conn = store.conn().await?;
    let template = get(&mut *conn, viewer, id).await?;
    let number = match number.or(template.latest_version) {
        Some(n) => n,
        None => return Err(Error::InvalidState("the template has no versions to launch".into())),
    };
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM import_template_versions v \
         WHERE v.template_id = $1 AND v.version = $2 AND (v.account_id = $3 OR v.public = 1)"
    );
    let query = sqlx::query(&sql).bind(id).bind(number).bind(viewer);
    let version = one(&mut *conn, query, "import template version", version_from_row).await?;
    Ok((template, version))
}

/// A new version of template `id`: its trigger and schedule follow it
/// (counted against the `triggers` and `schedules` quotas when it turns
/// one on).
pub async fn create_version(
    on: impl Into<On<'_>>,
    by: Acting,
    id: i64,
    new: NewVersion<'_>,
    limits: &QuotaLimits,
) -> Result<Version> {
    let Acting { account_id, actor } = by;
    let NewVersion { template_body, public, variables, author_may_read_playzones } = new;
    on.into()
        .write(async |conn| {
            owned(&mut *conn, account_id, id).await?;
            let previous = super::triggers::authored_in(conn, account_id, id, author_may_read_playzones).await?;
            // Takes the template's row lock on PostgreSQL: concurrent writers queue
            // here and each reads the number the previous one left.
            let number: i64 = sqlx::query(
                "UPDATE import_templates SET next_version = next_version + 1 WHERE id = $1 AND account_id = $2 \
         RETURNING next_version",
            )
            .bind(id)
            .bind(account_id)
            .fetch_one(&mut *conn)
            .await?
            .try_get::<i64, _>("next_version")?
                - 1;
            let row = sqlx::query(
        "INSERT INTO import_template_versions (account_id, template_id, version, template_body, variables, public, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
    )
    .bind(account_id)
    .bind(id)
    .bind(number)
    .bind(template_body)
    .bind(variables.to_string())
    .bind(flag(public))
    .bind(time::to_db(&time::now()))
    .fetch_one(&mut *conn)
    .await?;
            let version_id: i64 = row.try_get("id")?;
            touch_in(conn, account_id, id, actor, serde_json::json!({"version": number, "change": "version_created"}))
                .await?;
            super::schedules::sync_in(conn, account_id, id, limits).await?;
            super::triggers::sync_in(conn, account_id, id, limits, Some(previous)).await?;
            owned_version_in(conn, account_id, id, version_id).await
        })
        .await
}

async fn owned_version_in(conn: &mut Conn, account_id: i64, id: i64, version_id: i64) -> Result<Version> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM import_template_versions v \
         WHERE v.id = $1 AND v.template_id = $2 AND v.account_id = $3"
    );
    let query = sqlx::query(&sql).bind(version_id).bind(id).bind(account_id);
    one(conn, query, "import template version", version_from_row).await
}

/// Deletes one version (by its id). Its number is not reused. When that
/// makes an older version the latest, its trigger or schedule counts
/// against the quota like a new version's, and a trigger it redirects
/// needs a start by a key that may read Playzones unless `by` may
/// (`author_may_read_playzones`).
pub async fn destroy_version(
    store: &Store,
    by: Acting,
    id: i64,
    version_id: i64,
    limits: &QuotaLimits,
    author_may_read_playzones: bool,
) -> Result<()> {
    let Acting { account_id, actor } = by;
    store
        .in_write(async |tx| {
            owned(&mut *tx, account_id, id).await?;
            let previous = super::triggers::authored_in(tx, account_id, id, author_may_read_playzones).await?;
            let version = owned_version_in(tx, account_id, id, version_id).await?;
            delete_owned(tx, "import_template_versions", version_id, account_id).await?;
            let metadata = serde_json::json!({"version": version.version, "change": "version_destroyed"});
            touch_in(tx, account_id, id, actor, metadata).await?;
            super::schedules::sync_in(tx, account_id, id, limits).await?;
            super::triggers::sync_in(tx, account_id, id, limits, Some(previous)).await.map(|_| ())
        })
        .await
}

/// The newest version of the account's own template `id`, if any.
pub async fn latest_version_in(conn: &mut Conn, account_id: i64, id: i64) -> Result<Option<Version>> {
    let row = sqlx::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM import_template_versions v \
         WHERE v.template_id = $1 AND v.account_id = $2 ORDER BY v.version DESC LIMIT 1"
    ))
    .bind(id)
    .bind(account_id)
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(version_from_row).transpose()
}

/// Sets a version's public flag: to `public` when given, else to the
/// opposite of what it is.
pub async fn set_public(
    on: impl Into<On<'_>>,
    account_id: i64,
    id: i64,
    version_id: i64,
    public: Option<bool>,
    actor: Actor,
) -> Result<Version> {
    on.into()
        .write(async |conn| {
            owned(&mut *conn, account_id, id).await?;
            let current = owned_version_in(conn, account_id, id, version_id).await?;
            let public = public.unwrap_or(!current.public);
            sqlx::query("UPDATE import_template_versions SET public = $1 WHERE id = $2 AND account_id = $3")
                .bind(flag(public))
                .bind(version_id)
                .bind(account_id)
                .execute(&mut *conn)
                .await?;
            let metadata = serde_json::json!({"version": current.version, "change": "public", "public": public});
            touch_in(conn, account_id, id, actor, metadata).await?;
            owned_version_in(conn, account_id, id, version_id).await
        })
        .await
}

/// Fuzzy search over the names and descriptions of the templates `viewer`
/// can see: best first, at most [`MAX_RESULTS`].
pub async fn search(store: &Store, viewer: i64, query: &str) -> Result<Vec<Template>> {
    let all = list(store, viewer, ListFilter::default()).await?;
    let mut scored: Vec<(f64, Template)> =
        all.into_iter().filter_map(|t| score(query, &t.name, &t.description).map(|s| (s, t))).collect();
    scored.sort_by(|(a, ta), (b, tb)| b.total_cmp(a).then(ta.name.len().cmp(&tb.name.len())).then(ta.id.cmp(&tb.id)));
    Ok(scored.into_iter().take(MAX_RESULTS).map(|(_, t)| t).collect())
}
