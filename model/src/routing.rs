//! Routing of exposed services, in one place: the grammar of routing rules
//! ([`rule`], Traefik's), the checks a `svc/path_rule` must pass
//! ([`path_rule`]), its translation into a Caddy matcher set
//! ([`caddy_matcher`]), the bounded cache of tenant regular expressions
//! ([`regex_cache`]) both use, and the [`Route`] the edge serves for a
//! routed service ([`route`]).
//!
//! The journey: Compose validation calls [`PathRule::check`] on the label
//! (the only call), the typed model keeps the [`PathRule`], the
//! desired-state builder makes a [`Route`] from it (`Desired::routes`
//! lists a Playground's), and the edge's config puts [`Route::matcher`] in
//! place as it is.
//!
//! Invariants:
//! - this module imports nothing else of `play_core` (the Compose engine,
//!   the desired-state builder and the edge import it, never the other way;
//!   `tests/e2e/module_cycles.rs` checks it), so the rule's journey from a
//!   label to Caddy can be read here alone;
//! - a rule is parsed and translated at validation, once, and what later
//!   steps carry is the checked result, never text to parse again.

pub mod caddy_matcher;
pub mod path_rule;
pub(crate) mod regex_cache;
pub mod route;
pub mod rule;

pub use path_rule::PathRule;
pub use route::Route;
