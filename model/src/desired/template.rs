//! `augmented_compose_template` of `/debug`: the Playspec's Compose as this
//! Playground reads it, before play adds anything.
//!
//! The user's own document (their keys, `svc/` labels, `x-` keys and the
//! keys play does not model) with merge keys resolved and every `${V}`
//! interpolated from the Playground's `env_overrides` (an unset variable is
//! an empty string, as for the running Playground). Every `$` left in a
//! value is written `$$`, so Compose reads the document back unchanged
//! without any environment. Set beside `generated_compose_yaml`, it shows
//! what play added: names, environment layers, labels, routing.

use serde_yaml::Value;

use crate::compose::interpolate::interpolate;
use crate::playground::model::Playground;

/// The interpolated document, or why it cannot be made (a YAML error, a
/// `${V:?message}` left unset).
pub fn interpolated_template(yaml: &str, playground: &Playground) -> Result<String, String> {
    let mut doc: Value = serde_yaml::from_str(yaml).map_err(|e| format!("the Playspec's Compose is not YAML: {e}"))?;
    doc.apply_merge().map_err(|e| format!("the Playspec's Compose has a bad merge key: {e}"))?;
    let lookup = |name: &str| playground.env_overrides.get(name).cloned();
    resolve(&mut doc, &lookup)?;
    serde_yaml::to_string(&doc).map_err(|e| format!("cannot write the document: {e}"))
}

fn resolve(value: &mut Value, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
    match value {
        Value::String(s) => {
            let interpolated = interpolate(s, lookup).map_err(|e| e.to_string())?;
            *s = interpolated.value.replace('$', "$$");
        }
        Value::Sequence(items) => {
            for item in items {
                resolve(item, lookup)?;
            }
        }
        // Keys are never interpolated, as in Compose.
        Value::Mapping(map) => {
            for (_, v) in map.iter_mut() {
                resolve(v, lookup)?;
            }
        }
        Value::Tagged(tagged) => resolve(&mut tagged.value, lookup)?,
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compose::{Policy, parse_compose};
    use crate::desired::tests::playground;

    #[test]
    fn variables_are_resolved_and_dollars_stay_literal() {
        let yaml = "x-base: &base\n  image: \"busybox:${TAG:-1}\"\nservices:\n  web:\n    <<: *base\n    command: [\"echo\", \"$$HOME\", \"${GREETING}\"]\n    labels:\n      svc/expose: \"80\"\n      svc/subdomain: shop\n";
        let text = interpolated_template(yaml, &playground(&[("GREETING", "hi $you")])).unwrap();
        assert!(text.contains("busybox:1"), "{text}");
        assert!(text.contains("svc/subdomain: shop"), "{text}");
        assert!(!text.contains("<<"), "merge keys are resolved: {text}");
        // Compose reads it back to the same values, without variables.
        let (report, model) = parse_compose(&text, &Policy::UNTRUSTED);
        assert!(report.valid, "{:?}", report.errors);
        let web = &model.unwrap().services["web"];
        assert_eq!(web.image.as_deref(), Some("busybox:1"));
        assert_eq!(
            web.command,
            Some(crate::compose::model::Command::Exec(vec!["echo".into(), "$HOME".into(), "hi $you".into()]))
        );
    }

    #[test]
    fn a_required_variable_left_unset_is_an_error() {
        let yaml = "services:\n  web:\n    image: \"busybox:${TAG:?set TAG}\"\n";
        assert!(interpolated_template(yaml, &playground(&[])).unwrap_err().contains("set TAG"));
    }
}
