//! The manifest schema, `docs/manifest.schema.json` (JSON Schema draft
//! 2020-12), embedded in the binary so the CLI checks exactly what the
//! documentation publishes. Its messages are rewritten for the common
//! cases (an unknown or missing field, a bad name) so they read as play's,
//! each with the path of the field it is about.

use anyhow::Context as _;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::lines::FieldPath;

pub const SCHEMA_TEXT: &str = include_str!("../../../docs/manifest.schema.json");

const NAME_RULE: &str =
    "must be 1 to 63 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit";

/// The compiled schema.
#[derive(Debug)]
pub struct Schema(jsonschema::Validator);

impl Schema {
    pub fn load() -> anyhow::Result<Schema> {
        let schema: Value = serde_json::from_str(SCHEMA_TEXT).context("the embedded manifest schema is not JSON")?;
        let validator = jsonschema::draft202012::new(&schema)
            .map_err(|e| anyhow::anyhow!("the embedded manifest schema does not compile: {e}"))?;
        Ok(Schema(validator))
    }

    /// Every violation in `document`: `(field path, message)`, in document
    /// order of the paths.
    pub fn check(&self, document: &Value) -> Vec<(FieldPath, String)> {
        let mut out: Vec<(FieldPath, String)> = Vec::new();
        for error in self.0.iter_errors(document) {
            let path = FieldPath::from_pointer(error.instance_path().as_str());
            match error.kind() {
                ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for key in unexpected {
                        out.push((path.child(key), "unknown field".to_owned()));
                    }
                }
                ValidationErrorKind::Required { property } => {
                    let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
                    out.push((path, format!("missing required field {name:?}")));
                }
                ValidationErrorKind::Enum { options } => {
                    let words: Vec<String> = options
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
                        .collect();
                    out.push((path, format!("must be one of {}", words.join(", "))));
                }
                ValidationErrorKind::Pattern { .. } if path.to_string().ends_with("name") => {
                    out.push((path, NAME_RULE.to_owned()));
                }
                ValidationErrorKind::AnyOf { .. }
                    if document.pointer(error.instance_path().as_str()).is_some_and(Value::is_object)
                        && path.to_string() != "spec" =>
                {
                    out.push((
                        path,
                        "must be a string, {valueFrom: {env: NAME}} or {valueFrom: {file: PATH}}".to_owned(),
                    ));
                }
                ValidationErrorKind::AnyOf { .. } if path.to_string() == "spec" => {
                    out.push((path, "needs base_compose_yaml or composeFile".to_owned()));
                }
                ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::OneOfMultipleValid { .. }
                    if path.to_string() == "spec" =>
                {
                    out.push((path, "needs exactly one of scm_url and repositoryRef".to_owned()));
                }
                ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::OneOfMultipleValid { .. } => {
                    out.push((path, "needs exactly one of content, content_base64 and file".to_owned()));
                }
                ValidationErrorKind::Not { .. } if path.to_string() == "spec" => {
                    out.push((path, "give either files or filesFrom, not both".to_owned()));
                }
                _ => out.push((path, error.to_string())),
            }
        }
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn problems(document: Value) -> Vec<String> {
        Schema::load().unwrap().check(&document).into_iter().map(|(p, m)| format!("{p}: {m}")).collect()
    }

    fn playspec(spec: Value) -> Value {
        json!({"apiVersion": "play/v1", "kind": "Playspec", "metadata": {"name": "web"}, "spec": spec})
    }

    #[test]
    fn the_embedded_schema_compiles_and_accepts_every_kind() {
        let ok = [
            json!({"apiVersion": "play/v1", "kind": "Playroom", "metadata": {"name": "r1", "labels": {"team": "a"}},
                   "spec": {"host": "10.0.0.5", "port": 22, "user": "deploy",
                            "ssh_private_key": {"valueFrom": {"file": "./id"}}, "edge": {"tls": "internal"}}}),
            json!({"apiVersion": "play/v1", "kind": "Playzone", "metadata": {"name": "app"},
                   "spec": {"scm_url": "https://git.example.com/a.git", "credentials": {"valueFrom": {"env": "TOKEN"}}}}),
            playspec(json!({"composeFile": "./compose.yaml", "playzoneRef": "app",
                            "services": [{"name": "web", "playzoneRef": "app", "exposure": {"enabled": true, "port": 80}}],
                            "mounted_files": [{"name": "conf", "mount_path": "/etc/x", "file": "./x"}],
                            "registry_credentials": [{"registry_url": "r.io", "username": "u", "secret": {"valueFrom": {"env": "P"}}}]})),
            json!({"apiVersion": "play/v1", "kind": "Playground", "metadata": {"name": "demo"},
                   "spec": {"playspecRef": "web", "playroomRef": "r1", "ttl": "8h",
                            "env_overrides": {"A": "1", "B": {"valueFrom": {"env": "B"}}},
                            "services": {"web": {"git_config": {"branch_name": "main"}, "env_vars": {"X": "y"}}}}}),
            json!({"apiVersion": "play/v1", "kind": "ImportTemplate", "metadata": {"name": "t"},
                   "spec": {"composeFile": "./t.yaml", "category_id": 1, "public": true}}),
            json!({"apiVersion": "play/v1", "kind": "WebhookEndpoint", "metadata": {"name": "hook"},
                   "spec": {"url": "https://h.example.com", "events": ["playground.created"], "secret": {"valueFrom": {"env": "S"}}}}),
        ];
        for document in ok {
            assert_eq!(problems(document.clone()), Vec::<String>::new(), "{document}");
        }
    }

    #[test]
    fn violations_name_the_field_with_a_message_of_ours() {
        let unknown_kind =
            json!({"apiVersion": "play/v1", "kind": "Deployment", "metadata": {"name": "x"}, "spec": {}});
        let found = problems(unknown_kind);
        assert_eq!(
            found,
            [
                "kind: must be one of Playroom, Repository, Playzone, Playspec, Playground, ImportTemplate, WebhookEndpoint"
            ]
        );

        assert_eq!(problems(playspec(json!({"composeFile": "c", "bogus": 1}))), ["spec.bogus: unknown field"]);
        let bad_name = json!({"apiVersion": "play/v1", "kind": "Playspec", "metadata": {"name": "Web_1"}, "spec": {"composeFile": "c"}});
        assert_eq!(problems(bad_name), [format!("metadata.name: {NAME_RULE}")]);
        let no_name =
            json!({"apiVersion": "play/v1", "kind": "Playspec", "metadata": {}, "spec": {"composeFile": "c"}});
        assert_eq!(problems(no_name), ["metadata: missing required field \"name\""]);
        assert_eq!(problems(playspec(json!({}))), ["spec: needs base_compose_yaml or composeFile"]);
        assert_eq!(
            problems(playspec(json!({"composeFile": "c", "description": {"valueFrom": {"env": "A", "file": "b"}}}))),
            ["spec.description: must be a string, {valueFrom: {env: NAME}} or {valueFrom: {file: PATH}}"]
        );
        assert_eq!(
            problems(playspec(json!({"composeFile": "c", "mounted_files": [{"name": "a", "mount_path": "/a"}]}))),
            ["spec.mounted_files[0]: needs exactly one of content, content_base64 and file"]
        );
        let wrong_version =
            json!({"apiVersion": "v2", "kind": "Playspec", "metadata": {"name": "x"}, "spec": {"composeFile": "c"}});
        assert_eq!(problems(wrong_version).len(), 1);
    }
}
