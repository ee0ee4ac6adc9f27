//! Template validation and compile on arbitrary text.
//! Invariants: no panic; a template that compiles produces Compose that
//! validates under the same policy.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use play_model::compose::svc::validate_template;
use play_model::compose::{compile, Policy, validate_compose};
use rand::SeedableRng;
use rand::rngs::StdRng;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(info) = validate_template(text) else { return };
    let provided: BTreeMap<String, serde_json::Value> =
        info.variables.keys().map(|name| (name.clone(), serde_json::Value::String(format!("{name}$1")))).collect();
    for policy in [Policy::UNTRUSTED, Policy::TRUSTED] {
        for vars in [&provided, &BTreeMap::new()] {
            if let Ok(compiled) = compile(text, vars, &mut StdRng::seed_from_u64(0), &policy) {
                let report = validate_compose(&compiled.compose_yaml, &policy);
                assert!(report.valid, "compiled output is invalid: {:?}", report.errors);
            }
        }
    }
});
