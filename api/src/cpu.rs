//! CPU-heavy request work (Compose parsing, validation, template compile,
//! desired-state rendering) off the async threads: the handlers' own
//! ([`CpuPool::run`]) and the domain flows' (`play_core::offload::Offload`).
//!
//! A 512 KiB Compose document takes long enough to parse and check that
//! running it on a runtime thread would stall every other request that
//! thread serves (health checks included). [`CpuPool::run`] moves the work
//! to tokio's blocking threads, and a semaphore bounds how many such jobs
//! run at once, so a burst of large documents queues instead of growing
//! the blocking pool without bound.

use std::future::Future;
use std::sync::Arc;

use play_core::offload::Offload;
use tokio::sync::Semaphore;

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
    pub async fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> play_core::Result<T> {
        self.spawn(job).await
    }

    async fn spawn<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> play_core::Result<T> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.map_err(|_| internal("the CPU pool is closed"))?;
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await;
        joined.map_err(|e| internal(&format!("a CPU job failed: {e}")))
    }
}

/// The domain's flows (`play_core::playground::launch`, `ops`) run their
/// Compose work on this pool.
impl Offload for CpuPool {
    fn run<T, F>(&self, job: F) -> impl Future<Output = play_core::Result<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn(job)
    }
}

fn internal(message: &str) -> play_core::Error {
    play_core::Error::Internal(message.to_owned())
}
