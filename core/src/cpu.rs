//! CPU-heavy request work (Compose parsing, validation, template compile,
//! desired-state rendering) off the async threads: the handlers' own
//! ([`CpuPool::run`]) and the domain flows' (`crate::offload::Offload`).
//!
//! A 512 KiB Compose document takes long enough to parse and check that
//! running it on a runtime thread would stall every other request that
//! thread serves (health checks included). [`CpuPool::run`] moves the work
//! to tokio's blocking threads, and a semaphore bounds how many such jobs
//! run at once, so a burst of large documents queues instead of growing
//! the blocking pool without bound.

use std::future::Future;
use std::sync::Arc;

use crate::offload::Offload;
use tokio::sync::Semaphore;

/// See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct CpuPool {
    permits: Arc<Semaphore>,
    /// Jobs waiting for a permit (tests wait on it to know that a request
    /// reached its CPU work).
    #[cfg(feature = "testing")]
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl CpuPool {
    /// At most `concurrency` jobs at a time (at least one).
    pub fn new(concurrency: usize) -> Self {
        CpuPool {
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            #[cfg(feature = "testing")]
            waiting: Arc::default(),
        }
    }

    /// One job per available core.
    pub fn per_core() -> Self {
        CpuPool::new(std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get))
    }

    /// Runs `job` on a blocking thread once a permit is free.
    pub async fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> crate::Result<T> {
        self.spawn(job).await
    }

    async fn spawn<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> crate::Result<T> {
        #[cfg(feature = "testing")]
        self.waiting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let permit = Arc::clone(&self.permits).acquire_owned().await;
        #[cfg(feature = "testing")]
        self.waiting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        let permit = permit.map_err(|_| internal("the CPU pool is closed"))?;
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await;
        joined.map_err(|e| internal(&format!("a CPU job failed: {e}")))
    }
}

#[cfg(feature = "testing")]
impl CpuPool {
    /// Takes every permit: CPU jobs wait until the guard is dropped.
    pub async fn hold_all(&self) -> tokio::sync::OwnedSemaphorePermit {
        let all = u32::try_from(self.permits.available_permits()).unwrap_or(u32::MAX);
        match Arc::clone(&self.permits).acquire_many_owned(all).await {
            Ok(permit) => permit,
            Err(_) => unreachable!("the pool's semaphore is never closed"),
        }
    }

    /// How many jobs wait for a permit.
    pub fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// The domain's flows (`crate::playground::launch`, `ops`) run their
/// Compose work on this pool.
impl Offload for CpuPool {
    fn run<T, F>(&self, job: F) -> impl Future<Output = crate::Result<T>> + Send
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        self.spawn(job)
    }
}

fn internal(message: &str) -> crate::Error {
    crate::Error::Internal(message.to_owned())
}
