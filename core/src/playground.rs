//! Playgrounds, the flows: the checks of what a request asks of a
//! Playground ([`validate`]), the flows that create it ([`launch`]),
//! change what it should be ([`ops`]) and put it to sleep or wake it
//! ([`power`]). What a Playground is, and its rules, are
//! `play_model::playground`; its rows are `play_store`. The API's handlers
//! parse, authorise, call one of these flows and shape the response.

pub mod launch;
pub mod ops;
pub mod power;
pub mod validate;

pub use launch::{ComposeLaunch, Launched, Limits, TemplateLaunch, TemplateLaunched};
pub use validate::CreateRequest;
