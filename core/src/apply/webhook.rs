//! Applying a webhook endpoint: the create body of `POST
//! /api/webhook_endpoints` plus `enabled`. The signing secret comes from
//! the spec (`valueFrom`), or is generated on create and kept; `enabled`
//! is only enforced when the spec says it (the dispatcher disables a
//! failing endpoint, and apply does not re-enable it behind the
//! operator's back unless asked).

use crate::Error;
use std::collections::BTreeMap;

use play_model::apply::Action;
use play_model::webhook::model::Endpoint;
use play_model::webhook::{Changes, Input};
use play_store::webhooks;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, found, rekeyed};
use play_model::json::parse_value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    url: String,
    events: Vec<String>,
    event_filters: Option<BTreeMap<String, Vec<i64>>>,
    description: Option<String>,
    secret: Option<String>,
    enabled: Option<bool>,
}

fn live(endpoint: &Endpoint, spec: &Spec) -> Value {
    let mut view = json!({
        "url": endpoint.url,
        "events": endpoint.subscription.events,
        "event_filters": endpoint.subscription.event_filters,
        "description": endpoint.description,
    });
    if spec.enabled.is_some() {
        view["enabled"] = json!(endpoint.enabled);
    }
    view
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let input = Input {
        url: Some(spec.url.clone()),
        events: Some(spec.events.clone()),
        event_filters: Some(spec.event_filters.clone().unwrap_or_default()),
        description: Some(spec.description.clone().unwrap_or_default()),
        secret: spec.secret.clone(),
        enabled: spec.enabled,
    };
    let changes = Changes::validate(input, true, cx.env.webhook_urls)
        .map_err(|e| rekeyed(Error::Validation(e), "webhook_endpoint", object))?;
    let redacted = cx.redact(&object.spec, &[play_model::apply::path("secret")]);
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(webhooks::get(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let before = current.as_ref().map(|e| live(e, &spec));
    let decision = decide(cx, object, &redacted, before.as_ref());
    let id = match (decision.action, &current) {
        (Action::Unchanged, Some(e)) => e.id,
        (Action::Configured, Some(e)) => {
            webhooks::update(&mut *cx.conn, cx.env.secrets, account, e.id, changes)
                .await
                .map_err(|err| rekeyed(err, "webhook_endpoint", object))?
                .id
        }
        _ => {
            let (created, _secret) =
                webhooks::create(&mut *cx.conn, cx.env.secrets, account, changes, cx.env.limits.quotas)
                    .await
                    .map_err(|err| rekeyed(err, "webhook_endpoint", object))?;
            created.id
        }
    };
    if decision.action != Action::Unchanged {
        let endpoint = webhooks::get(&mut *cx.conn, account, id).await?;
        cx.record(object, redacted, live(&endpoint, &spec), id, None).await?;
    }
    Ok(Outcome::of(id, decision, None))
}
