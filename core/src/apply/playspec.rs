//! Applying a Playspec: immutable revisions named by content.
//!
//! A Playspec in use is locked (`store::playspecs`), yet editing the
//! Compose file in Git and applying again must roll the running
//! Playgrounds to it. So a manifest Playspec `web` is a series of API
//! Playspecs, each named `web-<first 8 hex digits of its spec's digest>`
//! and never changed: a changed spec creates the next revision, the
//! Playgrounds of the set move to it (their apply sees a new
//! `playspec_id` and rolls them out, recreating only the services whose
//! config changed), and the old revision is retired, deleted by the end
//! of this or a later apply once no Playground holds it ([`super::prune`]).
//!
//! Dynamic services name their Playzone (`playzoneRef`): apply never
//! creates Playzones on the side.

use crate::Error;
use crate::Result as CoreResult;
use base64::Engine;
use play_model::FieldErrors;
use play_model::apply::{Action, Kind, revision_name};
use play_model::compose::ServiceType;
use play_model::error::push_field_error;
use play_model::model::playspec::Playspec;
use play_model::model::playspec::{NewMountedFile, NewRegistryCredential};
use play_model::scopes::Scope;
use play_store::applied as rows;
use play_store::names::{self, Named};
use play_store::playspec_files;
use play_store::playspec_files::MAX_FILES_PER_PLAYSPEC;
use play_store::playspecs;
use play_store::playzones;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Object;
use super::context::{Cx, Outcome, decide, digest, found, rekeyed, resolve};
use crate::input::playspec_files::{
    MAX_MOUNTED_FILE_BYTES, REGISTRY_TYPES, check_mount_path, file_name, project_path, registry_host,
};
use crate::input::playspecs::{ExposureInput, PlayspecInput, ServiceInput, fields, fields_classified};
use play_model::json::parse_value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    description: Option<String>,
    base_compose_yaml: Option<String>,
    persist_volumes: Option<bool>,
    #[serde(default)]
    services: Vec<ServiceSpec>,
    #[serde(rename = "playzoneRef")]
    playzone_ref: Option<String>,
    #[serde(default)]
    mounted_files: Vec<FileSpec>,
    #[serde(default)]
    registry_credentials: Vec<CredentialSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceSpec {
    name: String,
    #[serde(rename = "type")]
    service_type: Option<String>,
    #[serde(rename = "playzoneRef")]
    playzone_ref: Option<String>,
    dockerfile_path: Option<String>,
    env_file_path: Option<String>,
    workdir: Option<String>,
    exposure: Option<ExposureInput>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: String,
    mount_path: String,
    path: Option<String>,
    #[serde(default)]
    target_services: Vec<String>,
    readonly: Option<bool>,
    content: Option<String>,
    content_base64: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CredentialSpec {
    registry_type: Option<String>,
    registry_url: String,
    username: String,
    secret: String,
}

/// The revision as stored: what a change outside apply would alter.
async fn live(cx: &mut Cx<'_>, playspec: &Playspec) -> CoreResult<Value> {
    let files = playspec_files::list_files(&mut *cx.conn, playspec.id).await?;
    let mut credentials = playspec_files::list_credentials(&mut *cx.conn, playspec.id).await?;
    credentials.sort_by(|a, b| a.registry_url.cmp(&b.registry_url));
    let credentials: Vec<Value> = credentials
        .iter()
        .map(|c| json!({"registry_type": c.registry_type, "registry_url": c.registry_url, "username": c.username}))
        .collect();
    let files: Vec<Value> = files
        .iter()
        .map(|f| {
            json!({"name": f.name, "mount_path": f.mount_path, "path": f.path, "target_services": f.target_services,
                   "readonly": f.readonly, "sha256": f.sha256})
        })
        .collect();
    Ok(json!({
        "name": playspec.name,
        "description": playspec.description,
        "base_compose_yaml": playspec.base_compose_yaml,
        "persist_volumes": playspec.persist_volumes,
        "playzone_id": playspec.playzone_id,
        "services": playspec.services,
        "mounted_files": files,
        "registry_credentials": credentials,
    }))
}

/// The mounted files of the spec, checked (`objects[i].spec.mounted_files[j].…`).
fn files(object: &Object, specs: Vec<FileSpec>, services: &[String], errors: &mut FieldErrors) -> Vec<NewMountedFile> {
    let mut out = Vec::new();
    if specs.len() > usize::try_from(MAX_FILES_PER_PLAYSPEC).unwrap_or(usize::MAX) {
        push_field_error(errors, object.field("spec.mounted_files"), format!("at most {MAX_FILES_PER_PLAYSPEC}"));
        return out;
    }
    for (j, file) in specs.into_iter().enumerate() {
        let field = |p: &str| object.field(&format!("spec.mounted_files[{j}].{p}"));
        let content = match (file.content, file.content_base64) {
            (Some(text), None) => Some(text.into_bytes()),
            (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| push_field_error(errors, field("content_base64"), format!("is not base64: {e}")))
                .ok(),
            _ => {
                push_field_error(errors, field("content"), "give exactly one of content, content_base64 (or file)");
                None
            }
        };
        if content.as_ref().is_some_and(|c| c.len() > MAX_MOUNTED_FILE_BYTES) {
            push_field_error(errors, field("content"), format!("is larger than {MAX_MOUNTED_FILE_BYTES} bytes"));
        }
        let name = file_name(Some(&file.name)).map_err(|m| push_field_error(errors, field("name"), m)).ok();
        if let Err(m) = check_mount_path(&file.mount_path) {
            push_field_error(errors, field("mount_path"), m);
        }
        let mut path_errors = FieldErrors::new();
        let path = file.path.as_deref().and_then(|p| project_path(p, &mut path_errors));
        for (_, messages) in path_errors {
            for m in messages {
                push_field_error(errors, field("path"), m);
            }
        }
        for (k, t) in file.target_services.iter().enumerate() {
            if !services.contains(t) {
                push_field_error(errors, field(&format!("target_services[{k}]")), format!("no service {t:?}"));
            }
        }
        if let (Some(name), Some(content)) = (name, content) {
            out.push(NewMountedFile {
                name,
                mount_path: file.mount_path,
                path,
                target_services: file.target_services,
                readonly: file.readonly.unwrap_or(true),
                content,
            });
        }
    }
    out
}

/// The credentials of the spec, checked: `(type, host, username, secret)`.
fn credentials(object: &Object, specs: Vec<CredentialSpec>, errors: &mut FieldErrors) -> Vec<NewRegistryCredential> {
    let mut out = Vec::new();
    for (j, c) in specs.into_iter().enumerate() {
        let field = |p: &str| object.field(&format!("spec.registry_credentials[{j}].{p}"));
        let kind = c.registry_type.unwrap_or_else(|| "generic".to_owned());
        if !REGISTRY_TYPES.contains(&kind.as_str()) {
            push_field_error(errors, field("registry_type"), format!("must be one of {}", REGISTRY_TYPES.join(", ")));
        }
        let host = registry_host(&c.registry_url);
        if host.is_none() {
            push_field_error(errors, field("registry_url"), "must be a registry host with an optional port");
        }
        if c.username.trim().is_empty() || c.username.len() > 255 {
            push_field_error(errors, field("username"), "must be 1-255 characters");
        }
        if c.secret.is_empty() || c.secret.len() > 8192 {
            push_field_error(errors, field("secret"), "must be 1-8192 characters");
        }
        if let Some(host) = host {
            out.push(NewRegistryCredential {
                registry_type: kind,
                registry_url: host,
                username: c.username.trim().to_owned(),
                secret: c.secret,
            });
        }
    }
    out
}

pub async fn apply(cx: &mut Cx<'_>, object: &Object) -> Result<Outcome, Error> {
    let spec: Spec = parse_value(&object.spec, &object.field("spec")).map_err(Error::Validation)?;
    let redacted = cx.redact(&object.spec, &[play_model::apply::path("registry_credentials.*.secret")]);
    let revision = revision_name(&object.name, &digest(&redacted));
    let mut errors = FieldErrors::new();
    let playzone_id = match &spec.playzone_ref {
        Some(name) => resolve(cx, Kind::Playzone, name, object.field("spec.playzoneRef"), &mut errors).await?,
        None => None,
    };
    let mut overrides = Vec::new();
    for (j, s) in spec.services.into_iter().enumerate() {
        let zone = match &s.playzone_ref {
            Some(name) => {
                let field = object.field(&format!("spec.services[{j}].playzoneRef"));
                resolve(cx, Kind::Playzone, name, field, &mut errors).await?
            }
            None => None,
        };
        overrides.push(ServiceInput {
            name: s.name,
            service_type: s.service_type,
            playzone_id: zone,
            dockerfile_path: s.dockerfile_path,
            env_file_path: s.env_file_path,
            workdir: s.workdir,
            exposure: s.exposure,
        });
    }
    let linked: Vec<(String, i64)> = std::iter::once((object.field("spec.playzoneRef"), playzone_id))
        .chain(
            overrides
                .iter()
                .enumerate()
                .map(|(j, o)| (object.field(&format!("spec.services[{j}].playzoneRef")), o.playzone_id)),
        )
        .filter_map(|(field, id)| Some((field, id?)))
        .collect();
    check_token_links(cx, &linked, &mut errors).await?;
    let input = PlayspecInput {
        name: Some(revision.clone()),
        description: spec.description,
        base_compose_yaml: spec.base_compose_yaml,
        persist_volumes: spec.persist_volumes,
        services: Some(overrides),
        playzone_id: Some(playzone_id),
        sleep_after: None,
    };
    // Classified before the transaction opened (`super::prepare`).
    let classified = input.base_compose_yaml.as_deref().and_then(|yaml| cx.prepared.compose(yaml));
    let checked = match classified {
        Some(classified) => fields_classified(input, true, None, Some(classified)),
        None => cx.env.cpu.run(move || fields(input, true, None)).await?,
    };
    let fields = match checked {
        Ok(fields) => Some(fields),
        Err(e) => match rekeyed(e, "playspec", object) {
            crate::Error::Validation(found) => {
                errors.extend(found);
                None
            }
            other => return Err(other),
        },
    };
    let names: Vec<String> = fields
        .as_ref()
        .and_then(|f| f.services.as_ref())
        .map(|s| s.iter().map(|d| d.name.clone()).collect())
        .unwrap_or_default();
    for def in fields.as_ref().and_then(|f| f.services.as_ref()).into_iter().flatten() {
        if def.service_type == ServiceType::Dynamic && def.playzone_id.is_none() {
            push_field_error(
                &mut errors,
                object.field("spec.services"),
                format!(
                    "service {:?} is built from source: name its Playzone with services: [{{name: {}, playzoneRef: \
                     NAME}}] (apply does not create Playzones)",
                    def.name, def.name
                ),
            );
        }
    }
    let new_files = files(object, spec.mounted_files, &names, &mut errors);
    let new_credentials = credentials(object, spec.registry_credentials, &mut errors);
    let (Some(fields), true) = (fields, errors.is_empty()) else {
        return Err(Error::Validation(errors));
    };

    let account = cx.account();
    let current = match cx.last(object).map(|row| row.object_id) {
        Some(id) => found(playspecs::get(&mut *cx.conn, account, id).await)?,
        None => None,
    };
    let before = match &current {
        Some(p) => Some(live(cx, p).await?),
        None => None,
    };
    let decision = decide(cx, object, &redacted, before.as_ref());
    let id = match (&decision.action, &current) {
        (Action::Unchanged, Some(p)) => p.id,
        (Action::Configured, Some(p))
            if p.name == revision && decision.diff.is_empty() && decision.drift.is_empty() =>
        {
            p.id
        }
        _ => {
            let actor = cx.principal.actor();
            if let Some(p) = current.as_ref().filter(|p| p.name == revision) {
                // The same content, changed outside apply (only possible
                // while unused): made again as the spec says.
                playspecs::delete(&mut *cx.conn, account, p.id, actor)
                    .await
                    .map_err(|e| rekeyed(e, "playspec", object))?;
            }
            let id = create_revision(cx, object, fields, new_files, new_credentials).await?;
            if let Some(old) = current.as_ref().filter(|p| p.id != id && p.name != revision) {
                rows::retire_in(cx.conn, account, old.id).await?;
            }
            id
        }
    };
    if decision.action != Action::Unchanged {
        let playspec = playspecs::get(&mut *cx.conn, account, id).await?;
        let after = live(cx, &playspec).await?;
        cx.record(object, redacted, after, id, Some(revision.clone())).await?;
    }
    Ok(Outcome::of(id, decision, Some(revision)))
}

/// Creates the revision, or takes back a retired one with the same
/// content (its name is its digest).
async fn create_revision(
    cx: &mut Cx<'_>,
    object: &Object,
    fields: play_model::model::playspec::PlayspecFields,
    new_files: Vec<NewMountedFile>,
    new_credentials: Vec<NewRegistryCredential>,
) -> Result<i64, Error> {
    let account = cx.account();
    let name = fields.name.clone().unwrap_or_default();
    let existing = names::id_of(&mut *cx.conn, Named::Playspec, account, &name).await?;
    if let Some(id) = existing {
        if rows::retired_in(cx.conn, account).await?.contains(&id) {
            rows::forget_retired_in(cx.conn, id).await?;
            return Ok(id);
        }
        return Err(Error::field(
            object.field("metadata.name"),
            format!("a Playspec named {name:?} exists and was not made by apply; rename or delete it"),
        ));
    }
    let actor = cx.principal.actor();
    let created = match playspecs::create(&mut *cx.conn, cx.principal.acting(), fields, cx.env.limits.quotas).await {
        Ok(created) => created,
        // The name was free when looked up above: another apply made the
        // same revision meanwhile.
        Err(crate::Error::Validation(e)) if e.contains_key("playspec.name") => {
            return Err(crate::Error::Conflict(format!(
                "the revision {name} was made by another apply at the same time; nothing of this apply was written, \
                 apply again"
            )));
        }
        Err(e) => return Err(rekeyed(e, "playspec", object)),
    };
    for (j, file) in new_files.into_iter().enumerate() {
        playspec_files::add_file(&mut *cx.conn, cx.principal.acting(), created.id, file)
            .await
            .map_err(|e| under(object, &format!("spec.mounted_files[{j}]"), e))?;
    }
    for (j, credential) in new_credentials.into_iter().enumerate() {
        playspec_files::add_credential(&mut *cx.conn, cx.env.secrets, account, created.id, credential, actor)
            .await
            .map_err(|e| under(object, &format!("spec.registry_credentials[{j}]"), e))?;
    }
    Ok(created.id)
}

/// A store error about one item of the spec: its field errors under
/// `objects[i].<prefix>.`.
fn under(object: &Object, prefix: &str, error: crate::Error) -> Error {
    match error {
        crate::Error::Validation(found) => Error::Validation(
            found.into_iter().map(|(k, m)| (object.field(&format!("{prefix}.{k}")), m)).collect::<FieldErrors>(),
        ),
        other => other,
    }
}

/// A Playzone that holds an access token is linked only by a key that may
/// read Playzones (`crate::playzone::link`, issue #27 item 2): a
/// `playzoneRef` to one, from a key without `playzones:read`, is refused.
async fn check_token_links(cx: &mut Cx<'_>, linked: &[(String, i64)], errors: &mut FieldErrors) -> Result<(), Error> {
    if cx.principal.scopes.grants(Scope::PlayzonesRead) {
        return Ok(());
    }
    let account = cx.account();
    for (field, id) in linked {
        // A Playzone of this set not written yet (dry run) holds no token
        // of the store's; one written by this set is the caller's own.
        let Some(zone) = found(playzones::get(&mut *cx.conn, account, *id).await)? else { continue };
        if zone.reads_privately() {
            push_field_error(
                errors,
                field.clone(),
                format!(
                    "Playzone {:?} reads its repository with an access token or an installation: linking it needs a key with playzones:read",
                    zone.name
                ),
            );
        }
    }
    Ok(())
}
