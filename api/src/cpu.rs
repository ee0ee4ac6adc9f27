//! CPU-heavy request work (Compose parsing, validation, template compile,
//! desired-state rendering) off the async threads.
//!
//! A 512 KiB Compose document takes long enough to parse and check that
//! running it on a runtime thread would stall every other request that
//! thread serves (health checks included). [`CpuPool::run`] moves the work
//! to tokio's blocking threads, and a semaphore bounds how many such jobs
//! run at once, so a burst of large documents queues instead of growing
//! the blocking pool without bound.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::error::{ApiError, ApiResult};

/// See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct CpuPool {
    permits: Arc<Semaphore>,
}

impl CpuPool {
    /// At most `concurrency` jobs at a time (at least one).
    pub fn new(concurrency: usize) -> Self {
        CpuPool { permits: Arc::new(Semaphore::new(concurrency.max(1))) }
    }

    /// One job per available core.
    pub fn per_core() -> Self {
        CpuPool::new(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
    }

    /// Runs `job` on a blocking thread once a permit is free.
    pub async fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> ApiResult<T> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.map_err(|_| internal("the CPU pool is closed"))?;
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await;
        joined.map_err(|e| internal(&format!("a CPU job failed: {e}")))
    }
}

fn internal(message: &str) -> ApiError {
    ApiError::Core(play_core::Error::Internal(message.to_owned()))
}
