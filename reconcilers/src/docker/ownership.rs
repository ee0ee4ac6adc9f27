//! Whether a host object is play's: this installation's, and which
//! Playground's.
//!
//! Two installations may share an engine, and an operator may create
//! objects by hand, so play acts only on objects whose labels it wrote. The
//! engine's label filters ([`super::labels`]) already narrow what a call
//! returns; checking again here keeps an engine that ignored a filter, or a
//! name taken by someone else, from ever reaching another installation's
//! objects. Owns that one reading of the ownership labels; what to do with
//! a foreign object (skip it, refuse the name) is the caller's.

use std::collections::HashMap;

use play_model::desired::{LABEL_INSTALLATION, LABEL_PLAYGROUND};

/// Whether `labels` are those of an object of `installation`.
pub fn is_installations(labels: &HashMap<String, String>, installation: &str) -> bool {
    labels.get(LABEL_INSTALLATION).map(String::as_str) == Some(installation)
}

/// The Playground id an object's labels name, if they are `installation`'s;
/// `None` for another installation's object, an installation-wide one (the
/// edge network), and a Playground label that is not an id.
pub fn playground_of(labels: &HashMap<String, String>, installation: &str) -> Option<i64> {
    if !is_installations(labels, installation) {
        return None;
    }
    labels.get(LABEL_PLAYGROUND)?.parse().ok()
}

/// Whether `labels` are those of an object of Playground `playground_id`
/// of `installation` (the check before adopting an object found by name).
pub fn is_playgrounds(labels: &HashMap<String, String>, installation: &str, playground_id: i64) -> bool {
    playground_of(labels, installation) == Some(playground_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn labels_must_name_this_installation_and_an_id() {
        let ours = labels(&[(LABEL_INSTALLATION, "abc"), (LABEL_PLAYGROUND, "42")]);
        assert_eq!(playground_of(&ours, "abc"), Some(42));
        assert_eq!(playground_of(&ours, "xyz"), None, "another installation's");
        assert_eq!(playground_of(&labels(&[(LABEL_INSTALLATION, "abc")]), "abc"), None, "installation-wide object");
        assert_eq!(playground_of(&labels(&[(LABEL_PLAYGROUND, "42")]), "abc"), None, "no installation label");
        assert_eq!(playground_of(&labels(&[(LABEL_INSTALLATION, "abc"), (LABEL_PLAYGROUND, "x")]), "abc"), None);
        assert_eq!(playground_of(&HashMap::new(), "abc"), None, "unlabelled");
    }

    #[test]
    fn an_object_is_a_playgrounds_only_with_both_labels_matching() {
        let ours = labels(&[(LABEL_INSTALLATION, "abc"), (LABEL_PLAYGROUND, "42")]);
        assert!(is_installations(&ours, "abc"));
        assert!(is_playgrounds(&ours, "abc", 42));
        assert!(!is_playgrounds(&ours, "abc", 43), "another Playground's");
        assert!(!is_playgrounds(&ours, "xyz", 42), "another installation's");
        assert!(!is_installations(&labels(&[(LABEL_PLAYGROUND, "42")]), "abc"));
    }
}
