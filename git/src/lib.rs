//! play's [`RepositoryGateway`](play_model::repository::RepositoryGateway):
//! libgit2 (the `git2` crate, vendored, built without its own network
//! stacks) speaking git's smart HTTP protocol through play's own
//! subtransport, so every request obeys the operator's address policy,
//! carries the token only in an `Authorization` header, follows no
//! redirect and is bounded in time and bytes.
//!
//! - [`gateway`]: [`GitGateway`] and [`GitConfig`], the public API.
//! - `transport`: the subtransport registered with libgit2.
//! - `call`: the per-call context (token, policy, bounds) that reaches it.
//! - `client`: the HTTP client (play-outbound's) and its failures.
//! - `cache`: the commit cache (bare repositories keyed by URL hash).
//! - `archive`: files and tar archives out of a cached commit.
//! - `tree_walk`: the walk under them, bounded in entries and time.
//! - `names`: argument checks done before any network call.
//! - [`builtin`]: play's own Git host behind the `SourceHost` seam.
//! - `smart_http`: Git's smart HTTP for those repositories (`git
//!   http-backend`), held to [`limits`] (`body`: inflated, bounded request
//!   bodies; `receive`: a push's commands counted before Git sees them).
//! - [`hosted`]: play's own Git host, its storage side: bare repositories
//!   created and written (one atomic commit per push) with libgit2.
//!
//! The `testing` feature adds [`testing::GitServer`], a real git
//! smart-HTTP server on loopback (`git http-backend` from the Debian
//! package `git`), for this crate's and other crates' tests.

mod archive;
mod body;
pub mod builtin;
mod cache;
mod call;
mod client;
mod error;
pub mod gateway;
pub mod hosted;
pub mod limits;
mod names;
mod receive;
mod smart_http;
mod ssh;
mod transport;
mod tree_walk;

#[cfg(feature = "testing")]
pub mod testing;

pub use gateway::{GitConfig, GitGateway};
pub use limits::GitHostLimits;
pub use tree_walk::DEFAULT_MAX_TREE_ENTRIES;
