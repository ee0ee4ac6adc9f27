//! The Compose corpus: realistic files that must validate under the
//! untrusted policy with zero errors, and templates that must validate and
//! compile with the variables in their `.vars.json` sidecar.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use play_model::compose::svc::validate_template;
use play_model::compose::{Policy, classify, compile, parse_compose, validate_compose};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn corpus(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yml"))
        .collect();
    files.sort();
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_compose_file_validates_untrusted_without_errors() {
    let files = corpus("compose");
    assert!(files.len() >= 20, "the corpus has {} files", files.len());
    for path in files {
        let report = validate_compose(&read(&path), &Policy::UNTRUSTED);
        assert!(report.errors.is_empty(), "{}: {:#?}", path.display(), report.errors);
        assert!(report.valid);
        assert!(!report.services.is_empty());
    }
}

#[test]
fn corpus_warnings_are_only_the_expected_ones() {
    for path in corpus("compose") {
        let report = validate_compose(&read(&path), &Policy::UNTRUSTED);
        for warning in &report.warnings {
            let expected = warning.message.contains("obsolete") || warning.message.contains("is not set");
            assert!(expected, "{}: unexpected warning {warning:?}", path.display());
        }
    }
}

#[test]
fn every_compose_file_classifies() {
    for path in corpus("compose") {
        let (report, model) = parse_compose(&read(&path), &Policy::UNTRUSTED);
        let model = model.unwrap_or_else(|| panic!("{}: {:?}", path.display(), report.errors));
        let definitions = classify(&model);
        assert_eq!(definitions.len(), model.services.len());
        for (definition, (name, service)) in definitions.iter().zip(&model.services) {
            assert_eq!(&definition.name, name);
            assert_eq!(definition.dockerfile_path.is_some(), service.build.is_some());
            assert_eq!(definition.exposure.enabled, definition.exposure.port.is_some());
        }
    }
}

#[test]
fn every_template_validates_and_compiles() {
    let files = corpus("templates");
    assert!(files.len() >= 3);
    for path in files {
        let body = read(&path);
        let info = validate_template(&body).unwrap_or_else(|e| panic!("{}: {e:#?}", path.display()));
        let vars: BTreeMap<String, serde_json::Value> = serde_json::from_str(&read(&path.with_extension("vars.json")))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let compiled = compile(&body, &vars, &mut StdRng::seed_from_u64(1), &Policy::UNTRUSTED)
            .unwrap_or_else(|e| panic!("{}: {e:#?}", path.display()));
        assert!(!compiled.compose_yaml.contains("$$var__"), "{}", path.display());
        assert!(!compiled.compose_yaml.contains("$$random__"), "{}", path.display());
        let report = validate_compose(&compiled.compose_yaml, &Policy::UNTRUSTED);
        assert!(report.valid, "{}: {:?}", path.display(), report.errors);
        assert_eq!(report.services.len(), info.services.len());
        for value in compiled.generated.values() {
            assert_eq!(value.len(), 16);
        }
    }
}
