//! Compose loading, interpolation and validation on arbitrary text.
//! Invariants: no panic; `valid` is exactly "no errors"; interpolation of
//! a string either fails or yields a string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use play_model::compose::interpolate::interpolate;
use play_model::compose::{Policy, validate_compose, validate_compose_with};

fn lookup(name: &str) -> Option<String> {
    match name.len() % 3 {
        0 => None,
        1 => Some(String::new()),
        _ => Some(format!("v${name}")),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = interpolate(text, &lookup);
    let report = validate_compose(text, &Policy::UNTRUSTED);
    assert_eq!(report.valid, report.errors.is_empty());
    let trusted = validate_compose_with(text, &Policy::TRUSTED, &lookup);
    assert_eq!(trusted.valid, trusted.errors.is_empty());
});
