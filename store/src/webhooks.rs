//! Webhook endpoints: where an account's events are sent.
//!
//! The signing secret is stored sealed (`SecretBox`, bound to
//! `webhook_endpoint:<id>:secret`); [`Endpoint`] has no field for it, and
//! only [`secret`] opens it (show, and later the dispatcher that signs).
//! The subscription (`events`, `event_filters`) is merged by
//! [`Subscription::apply`] inside the write, so its invariant holds
//! whatever two concurrent updates change.

use std::collections::BTreeMap;

use sqlx::Row;
use sqlx::any::AnyRow;

use super::On;
use super::events;
use super::quotas;
use super::shapes::{all_of, delete_owned, one_in, set_by_id};
use super::write_shapes::write_locked;
use super::{Conn, Store, flag};
use crate::{Error, Result};
use play_model::model::event::{Actor, NewEvent};
use play_model::model::quota::{QuotaLimits, Resource};
use play_model::secrets::SecretBox;
use play_model::time;
use play_model::webhook::model::Endpoint;
use play_model::webhook::{self, Changes, Subscription};

pub(super) const COLUMNS: &str = "id, account_id, url, events, event_filters, description, enabled, failure_count, \
    disabled_reason, created_at, updated_at";

fn from_row(row: &AnyRow) -> Result<Endpoint> {
    let id: i64 = row.try_get("id")?;
    let events: Vec<String> = super::json_column(row, "webhook_endpoints", id, "events")?;
    let event_filters: BTreeMap<String, Vec<i64>> = super::json_column(row, "webhook_endpoints", id, "event_filters")?;
    Ok(columns!(
        row,
        Endpoint {
            id,
            account_id,
            url,
            subscription: Subscription { events, event_filters },
            description,
            enabled => flag,
            failure_count,
            disabled_reason,
            created_at => time,
            updated_at => time,
        }
    ))
}

pub(super) fn secret_context(id: i64) -> String {
    format!("webhook_endpoint:{id}:secret")
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("webhook subscription: {e}")))
}

/// Creates an endpoint (enabled, no failures) from validated changes,
/// which must carry `url` and `events`. Returns it with its secret: the
/// caller's, or a generated one.
pub async fn create(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    account_id: i64,
    changes: Changes,
    limits: &QuotaLimits,
) -> Result<(Endpoint, String)> {
    on.into()
        .write(async |conn| {
            let missing = || Error::Internal("webhook endpoint create without url or events".into());
            let url = changes.url.ok_or_else(missing)?;
            let subscription = Subscription::default()
                .apply(Some(changes.events.ok_or_else(missing)?), changes.event_filters)
                .map_err(Error::Validation)?;
            let secret = changes.secret.unwrap_or_else(webhook::generate_secret);
            quotas::check(conn, account_id, Resource::WebhookEndpoints, limits).await?;
            let now = time::to_db(&time::now());
            let id: i64 = sqlx::query(
                "INSERT INTO webhook_endpoints (account_id, url, events, event_filters, description, enabled, \
         failure_count, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 1, 0, $6, $6) RETURNING id",
            )
            .bind(account_id)
            .bind(&url)
            .bind(to_json(&subscription.events)?)
            .bind(to_json(&subscription.event_filters)?)
            .bind(changes.description.unwrap_or_default())
            .bind(&now)
            .fetch_one(&mut *conn)
            .await?
            .try_get("id")?;
            set_secret(conn, secrets, id, &secret).await?;
            let endpoint = get(&mut *conn, account_id, id).await?;
            Ok((endpoint, secret))
        })
        .await
}

pub(super) fn endpoint_from_row(row: &AnyRow) -> Result<Endpoint> {
    from_row(row)
}

/// Seals `secret` and stores it as endpoint `id`'s.
async fn set_secret(conn: &mut Conn, secrets: &SecretBox, id: i64, secret: &str) -> Result<()> {
    let sealed = secrets.seal(secret, &secret_context(id))?;
    set_by_id(conn, "UPDATE webhook_endpoints SET secret = $1 WHERE id = $2", sealed, id).await
}

pub async fn get(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<Endpoint> {
    let sql = format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE id = $1 AND account_id = $2");
    one_in(on, &sql, id, account_id, "webhook endpoint", from_row).await
}

pub async fn list(store: &Store, account_id: i64) -> Result<Vec<Endpoint>> {
    let sql = format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE account_id = $1 ORDER BY id");
    all_of(store, &sql, account_id, from_row).await
}

/// The endpoint's signing secret, opened.
pub async fn secret(store: &Store, secrets: &SecretBox, account_id: i64, id: i64) -> Result<String> {
    let sql = "SELECT secret FROM webhook_endpoints WHERE id = $1 AND account_id = $2";
    let sealed: Option<String> =
        one_in(store, sql, id, account_id, "webhook endpoint", |row| Ok(row.try_get("secret")?)).await?;
    let sealed = sealed.ok_or_else(|| Error::Corrupt {
        table: "webhook_endpoints",
        id,
        column: "secret",
        reason: "no secret stored".into(),
    })?;
    Ok(secrets.open(&sealed, &secret_context(id))?)
}

/// Applies validated changes. Setting `enabled: true` on a disabled
/// endpoint resets `failure_count` and `disabled_reason`: the operator
/// says the receiver is back.
pub async fn update(
    on: impl Into<On<'_>>,
    secrets: &SecretBox,
    account_id: i64,
    id: i64,
    changes: Changes,
) -> Result<Endpoint> {
    write_locked(on, "webhook_endpoints", id, async |conn| {
        let current = get(&mut *conn, account_id, id).await?;
        let subscription =
            current.subscription.apply(changes.events, changes.event_filters).map_err(Error::Validation)?;
        let enabled = changes.enabled.unwrap_or(current.enabled);
        let reenabled = enabled && !current.enabled;
        let (failure_count, disabled_reason) =
            if reenabled { (0, None) } else { (current.failure_count, current.disabled_reason.clone()) };
        sqlx::query(
            "UPDATE webhook_endpoints SET url = $1, events = $2, event_filters = $3, description = $4, enabled = $5, \
         failure_count = $6, disabled_reason = $7, updated_at = $8 WHERE id = $9 AND account_id = $10",
        )
        .bind(changes.url.unwrap_or(current.url))
        .bind(to_json(&subscription.events)?)
        .bind(to_json(&subscription.event_filters)?)
        .bind(changes.description.unwrap_or(current.description))
        .bind(flag(enabled))
        .bind(failure_count)
        .bind(disabled_reason)
        .bind(time::to_db(&time::now()))
        .bind(id)
        .bind(account_id)
        .execute(&mut *conn)
        .await?;
        if enabled != current.enabled {
            // Fan-out gives a disabled endpoint the events recorded
            // before this moment (`fan_out`); enabled, it gets all.
            let sql = if enabled {
                "UPDATE webhook_endpoints SET disabled_after_event = NULL WHERE id = $1"
            } else {
                "UPDATE webhook_endpoints SET disabled_after_event = (SELECT COALESCE(MAX(id), 0) FROM events) \
                     WHERE id = $1"
            };
            sqlx::query(sql).bind(id).execute(&mut *conn).await?;
        }
        if let Some(secret) = &changes.secret {
            set_secret(conn, secrets, id, secret).await?;
        }
        get(&mut *conn, account_id, id).await
    })
    .await
}

/// Deletes an endpoint and its delivery history.
pub async fn delete(on: impl Into<On<'_>>, account_id: i64, id: i64) -> Result<()> {
    on.into()
        .write(async |conn| {
            get(&mut *conn, account_id, id).await?;
            // Explicit, for backends that do not enforce the cascade.
            sqlx::query("DELETE FROM webhook_deliveries WHERE endpoint_id = $1").bind(id).execute(&mut *conn).await?;
            delete_owned(conn, "webhook_endpoints", id, account_id).await?;
            Ok(())
        })
        .await
}

/// Records a `webhook.test` event for endpoint `id` only: its metadata
/// names the endpoint (`webhook_endpoint_id`), and the dispatcher delivers
/// a test event to that endpoint alone, subscribed or not. Returns the
/// event id.
pub async fn record_test(store: &Store, account_id: i64, id: i64, actor: Actor) -> Result<i64> {
    store
        .in_write(async |tx| {
            get(&mut *tx, account_id, id).await?;
            let metadata = serde_json::json!({ "webhook_endpoint_id": id });
            let event =
                events::record(tx, NewEvent::new(account_id, "webhook", id, "test").actor(actor).metadata(metadata))
                    .await?;
            // The dispatcher delivers it now rather than at its next pass.
            super::wakes::note(tx, play_model::wake::Wake::Webhooks(event.into())).await?;
            Ok(event)
        })
        .await
}
