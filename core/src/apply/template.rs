//! Applying an import template: `POST /api/import_templates` (without
//! `name`, which is `metadata.name`) plus its body. Versions are
//! append-only, so they are the template's revisions: a changed
//! `template_body` creates the next version (public as `public` says); a
//! change of `public` alone sets the latest version's flag; description
//! and category are updated in place. Earlier versions stay (Playspecs
//! launched from them name them).

use crate::Error;
use play_model::apply::Action;
use play_model::compose::svc;
use play_model::model::template::{NewVersion, Template};
use play_store::templates;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, found, rekeyed};
use crate::input::templates::{TemplateInput, fields};
use play_model::json::parse_value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    description: Option<String>,
    category_id: i64,
    template_body: String,
    public: Option<bool>,
}

async fn live(cx: &mut Cx<'_>, template: &Template) -> Result<Value, Error> {
    let latest = templates::latest_version_in(cx.conn, cx.account(), template.id).await?;
    Ok(json!({
        "description": template.description,
        "category_id": template.category_id,
        "template_body": latest.as_ref().map(|v| v.template_body.clone()),
        "public": latest.as_ref().map(|v| v.public),
    }))
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let input = TemplateInput {
        name: Some(object.name.clone()),
        description: Some(spec.description.clone().unwrap_or_default()),
        category_id: Some(spec.category_id),
    };
    let fields = fields(input, true).map_err(|e| rekeyed(e, "import_template", object))?;
    if spec.template_body.len() > play_model::compose::MAX_COMPOSE_BYTES {
        let limit = play_model::compose::MAX_COMPOSE_BYTES;
        return Err(Error::field(object.field("spec.template_body"), format!("must be at most {limit} bytes")));
    }
    let body = spec.template_body.clone();
    // Validated before the transaction opened (`super::prepare`).
    let checked = match cx.prepared.template(&body) {
        Some(checked) => checked,
        None => cx.env.cpu.run(move || svc::validate_template(&body)).await?,
    };
    let minimum = cx.env.schedule_min_interval;
    let info = checked.and_then(|info| crate::input::templates::check_schedule(&info, minimum).map(|()| info));
    let info = info.map_err(|errors| {
        Error::Validation(errors.into_iter().map(|(k, m)| (object.field(&format!("spec.{k}")), m)).collect())
    })?;
    let variables = serde_json::to_value(&info.variables)
        .map_err(|e| crate::Error::Internal(format!("variables do not serialise: {e}")))?;
    let public = spec.public.unwrap_or(false);
    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(templates::owned(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let before = match &current {
        Some(t) => Some(live(cx, t).await?),
        None => None,
    };
    let decision = decide(cx, object, &object.spec, before.as_ref());
    let actor = cx.principal.actor();
    let id = match (decision.action, &current) {
        (Action::Unchanged, Some(t)) => t.id,
        (Action::Configured, Some(t)) => {
            let changed = |key: &str| before.as_ref().map(|b| &b[key]);
            if changed("description") != Some(&json!(fields.description))
                || changed("category_id") != Some(&json!(fields.category_id))
            {
                templates::update(&mut *cx.conn, cx.principal.acting(), t.id, fields)
                    .await
                    .map_err(|e| rekeyed(e, "import_template", object))?;
            }
            if changed("template_body") != Some(&json!(spec.template_body)) {
                let new = NewVersion {
                    template_body: &spec.template_body,
                    public,
                    variables: &variables,
                    author_may_read_playzones: cx.principal.scopes.grants(play_model::scopes::Scope::PlayzonesRead),
                };
                templates::create_version(&mut *cx.conn, cx.principal.acting(), t.id, new, cx.env.limits.quotas)
                    .await?;
            } else if changed("public") != Some(&json!(public))
                && let Some(latest) = templates::latest_version_in(cx.conn, account, t.id).await?
            {
                templates::set_public(&mut *cx.conn, account, t.id, latest.id, Some(public), actor).await?;
            }
            t.id
        }
        _ => {
            let created = templates::create(&mut *cx.conn, cx.principal.acting(), fields, cx.env.limits.quotas)
                .await
                .map_err(|e| rekeyed(e, "import_template", object))?;
            let new = NewVersion {
                template_body: &spec.template_body,
                public,
                variables: &variables,
                author_may_read_playzones: cx.principal.scopes.grants(play_model::scopes::Scope::PlayzonesRead),
            };
            templates::create_version(&mut *cx.conn, cx.principal.acting(), created.id, new, cx.env.limits.quotas)
                .await?;
            created.id
        }
    };
    if decision.action != Action::Unchanged {
        let template = templates::owned(&mut *cx.conn, account, id).await?;
        let after = live(cx, &template).await?;
        cx.record(object, object.spec.clone(), after, id, None).await?;
    }
    Ok(Outcome::of(id, decision, None))
}
