//! `play backup` and `play restore` on either store (`PLAY_TEST_BACKEND`),
//! through the crate's API: what a backup holds comes back whole, and each
//! refusal of a restore (issue #53, item 3) with its message.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code: a panic is the failure report")]

mod refusals;
mod round_trip;
mod support;
