//! Docker helpers shared by every loop that talks to an engine (the
//! Playground reconciler, the Playroom sweep, the event watchers, the API's
//! live reads through the gateway). One home per idea, so a bound or a
//! policy (a log byte cap, an ownership check) is written once.

pub mod logs;
