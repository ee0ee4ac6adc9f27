//! The dotenv parser (`play_model::playzone::env_file`, what `env_defaults`
//! reads from a Playzone's `.env.example`) on arbitrary text.
//!
//! Invariants:
//! - no panic, whatever the text;
//! - what parses holds at most `MAX_ENTRIES` entries, each under a valid
//!   key (a letter or `_`, then letters, digits, `_` and `.`, at most 255
//!   bytes);
//! - `sensitive_keys` is sorted, without duplicates, and is exactly the
//!   keys the sensitivity rule marks (a `$$secret(N)` placeholder always
//!   is one);
//! - round trip: the entries written back as an env file, each value in
//!   double quotes with `\\`, `"`, newline, carriage return and tab
//!   escaped, parse to the same entries; so do values written in single
//!   quotes or bare wherever that syntax can hold them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use play_model::playzone::env_file::{self, EnvDefaults, is_sensitive, MAX_ENTRIES, secret_placeholder};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for value in text.lines() {
        if let Some(n) = secret_placeholder(value) {
            assert!((env_file::MIN_SECRET_LENGTH..=env_file::MAX_SECRET_LENGTH).contains(&n), "{value:?}");
            assert!(is_sensitive("PLAIN", value), "{value:?}");
        }
    }
    let Ok(parsed) = env_file::parse(text) else { return };
    check(&parsed);
    for style in [Style::Double, Style::Single, Style::Bare] {
        let written = write(&parsed, style);
        let again = env_file::parse(&written).unwrap_or_else(|e| panic!("{style:?} {written:?}: {e}"));
        assert_eq!(again, parsed, "{style:?} {written:?}");
    }
});

fn check(parsed: &EnvDefaults) {
    assert!(parsed.defaults.len() <= MAX_ENTRIES);
    for key in parsed.defaults.keys() {
        let mut chars = key.chars();
        let first = chars.next().expect("a key is never empty");
        assert!(first.is_ascii_alphabetic() || first == '_', "{key:?}");
        assert!(chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'), "{key:?}");
        assert!(key.len() <= 255, "{key:?}");
    }
    assert!(parsed.sensitive_keys.windows(2).all(|w| w[0] < w[1]), "{:?}", parsed.sensitive_keys);
    let expected: Vec<&String> = parsed.defaults.iter().filter(|(k, v)| is_sensitive(k, v)).map(|(k, _)| k).collect();
    assert_eq!(parsed.sensitive_keys.iter().collect::<Vec<_>>(), expected);
}

#[derive(Clone, Copy, Debug)]
enum Style {
    /// Every value double-quoted and escaped.
    Double,
    /// Single quotes where the value has no quote or line break.
    Single,
    /// Bare where the value is what a bare value can be.
    Bare,
}

fn write(parsed: &EnvDefaults, style: Style) -> String {
    let mut out = String::new();
    for (key, value) in &parsed.defaults {
        let single = !value.contains(['\'', '\n', '\r']);
        let bare = value.trim() == value
            && !value.contains(['\n', '\r'])
            && !value.contains(" #")
            && !value.contains("\t#")
            && !value.starts_with(['\'', '"']);
        match style {
            Style::Single if single => out.push_str(&format!("{key}='{value}'\n")),
            Style::Bare if bare => out.push_str(&format!("export {key}={value}\n")),
            _ => out.push_str(&format!("{key}=\"{}\"\n", escape(value))),
        }
    }
    out
}

fn escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}
