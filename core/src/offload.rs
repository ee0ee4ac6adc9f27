//! Where the domain runs its CPU-heavy steps (parsing and validating a
//! Compose document, compiling a template): the caller decides.
//!
//! A large Compose document takes long enough to check that running it on
//! an async thread would stall every other task that thread serves. The
//! domain's request flows (`crate::playground::launch`, `ops`) therefore
//! hand each such step to an [`Offload`]: the API passes its bounded CPU
//! pool, a test or a tool may pass [`Inline`].
//!
//! Owns only the seam; it must not know about any particular pool.

use std::future::Future;

use crate::Result;

/// Runs a CPU-bound job somewhere and returns its output.
pub trait Offload: Send + Sync {
    /// Runs `job` and answers its output; an `Err` is a job that could not
    /// run (the pool closed, the job panicked), never the job's own
    /// failure, which is in `T`.
    fn run<T, F>(&self, job: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static;
}

/// Runs every job on the calling thread, at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline;

impl Offload for Inline {
    fn run<T, F>(&self, job: F) -> impl Future<Output = Result<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        std::future::ready(Ok(job()))
    }
}
