use serde_yaml::{Mapping, Value};

use super::to_yaml;
use crate::compose::load::load;

/// Writes `value` and reads it back with the bounded loader.
fn round_trip(value: &Value) -> Value {
    let text = to_yaml(value).unwrap_or_else(|| panic!("not written: {value:?}"));
    load(&text).unwrap_or_else(|e| panic!("{text}\ndoes not load: {}", e.message))
}

const TRICKY: &[&str] = &[
    "",
    " ",
    "  a",
    "a ",
    "a  b",
    "a #b",
    "a# b",
    "#x",
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "true",
    "False",
    "null",
    "NULL",
    "~",
    "inf",
    "Infinity",
    "nan",
    ".inf",
    "-.inf",
    ".NaN",
    "123",
    "-1",
    "+1",
    "0x1F",
    "0o17",
    "010",
    "1e3",
    "1_000",
    "1:20",
    ".5",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "a: b",
    "a:b",
    "a:",
    ":",
    "- x",
    "-",
    "?",
    "? a",
    "*a",
    "&a",
    "!t",
    "!!str",
    "%TAG",
    "@x",
    "`x`",
    "'x'",
    "\"x\"",
    "[a]",
    "{a}",
    "a]",
    "a,b",
    "a, b",
    "|",
    ">",
    "<<",
    "=",
    "x\ny",
    "x\n",
    "\n",
    "\t",
    "tab\there",
    "é ✓",
    "\u{2028}",
    "\u{85}",
    "\u{feff}x",
    "\u{7f}",
    "\0",
    "back\\slash",
    "http://api:8000/health",
    "postgres://shop:pw@db:5432/shop",
    "npm run worker -- --concurrency 4",
    "PathPrefix(`/api`) && !PathPrefix(`/api/admin`)",
    "CMD-SHELL",
    "unless-stopped",
    "busybox:1.36",
    "/data",
    "_under",
    "Yes please",
    "no way",
    "truex",
    "nullable",
    "information",
    "yesterday",
];

#[test]
fn every_tricky_string_reads_back_as_itself_as_a_value_and_as_a_key() {
    for s in TRICKY {
        let mut m = Mapping::new();
        m.insert(Value::String("k".into()), Value::String((*s).to_owned()));
        // A `<<` key is a merge however it is written, and a loaded tree
        // holds none (the loader applied them).
        if *s != "<<" {
            m.insert(Value::String((*s).to_owned()), Value::String("v".into()));
        }
        m.insert(Value::String("list".into()), Value::Sequence(vec![Value::String((*s).to_owned())]));
        let value = Value::Mapping(m);
        assert_eq!(round_trip(&value), value, "{s:?} in {}", to_yaml(&value).unwrap_or_default());
    }
}

#[test]
fn numbers_booleans_null_and_empty_collections_keep_their_types() {
    let text = "i: 42\nneg: -7\nbig: 18446744073709551615\nf: 0.5\nf2: 1.0\nsmall: 1.0e-7\nhuge: 1.0e300\n\
                inf: .inf\nninf: -.inf\nt: true\nf3: false\nn: null\nem: {}\nes: []\n";
    let value = load(text).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(round_trip(&value), value);
    let nan = load("x: .nan\n").unwrap_or_else(|e| panic!("{}", e.message));
    let back = round_trip(&nan);
    assert!(back.get("x").and_then(Value::as_f64).is_some_and(f64::is_nan), "{back:?}");
}

#[test]
fn nested_collections_keep_their_shape() {
    let text = r#"
services:
  web:
    command: [sh, -c, "echo hi"]
    ports:
      - target: 80
        published: "8080"
        protocol: tcp
      - "9000:9000"
    healthcheck: {test: [CMD, wget, -qO-, "http://localhost/"], interval: 10s}
    deploy: {resources: {limits: {cpus: "0.5", memory: 512M}}}
matrix:
  - [1, 2, [3, []]]
  - - {a: [{b: {}}]}
  - {}
"#;
    let value = load(text).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(round_trip(&value), value, "{}", to_yaml(&value).unwrap_or_default());
}

#[test]
fn the_compose_corpus_reads_back_as_loaded() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/compose");
    let mut read = 0;
    for entry in std::fs::read_dir(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display())) {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let Ok(value) = load(&text) else { continue };
        assert_eq!(round_trip(&value), value, "{}", path.display());
        read += 1;
    }
    assert!(read >= 20, "{read} files");
}

#[test]
fn what_it_does_not_write_is_left_to_serde_yaml() {
    let tagged = load("x: !custom 1\n").unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(to_yaml(&tagged), None);
    let mut complex = Mapping::new();
    complex.insert(Value::Sequence(vec![Value::Null]), Value::Null);
    assert_eq!(to_yaml(&Value::Mapping(complex)), None);
}
