//! The routing-rule parser on arbitrary text.
//! Invariants: no panic; a parsed rule re-prints canonically and parses
//! back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use play_model::routing::PathRule;
use play_model::routing::rule::parse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(rule) = parse(text) {
        let printed = rule.to_string();
        assert_eq!(parse(&printed).as_ref(), Ok(&rule), "{printed}");
    }
    let _ = PathRule::check(text);
});
