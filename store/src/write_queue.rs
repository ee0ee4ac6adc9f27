//! Who waits for SQLite's one write lock, so that a write that can wait
//! goes after those who cannot (issue #49, item 13).
//!
//! A dry run of a large apply needs read scopes only, yet it writes its
//! rows and rolls them back, so it holds the write lock while it does. A
//! key looping such dry runs kept other tenants' writes waiting: SQLite's
//! busy handler polls with growing sleeps, so a writer that has waited a
//! while polls seldom, and the loop, starting its next transaction at once,
//! took the lock again before it. Now [`Store::write`](super::Store::write)
//! counts itself as waiting until its `BEGIN IMMEDIATE` returned, and
//! [`Store::write_after_others`](super::Store::write_after_others) (dry
//! runs) starts only when no writer waits: a tenant's write waits for at
//! most the one dry run that holds the lock, never for a loop of them.
//!
//! Invariants: the count is exact (a guard decrements it however the wait
//! ends, cancellation included), and a low-priority writer is woken when it
//! drops to zero; one that then loses the race to a new writer waits again
//! in SQLite's busy handler on equal terms, so nobody waits forever.

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// See the [module documentation](self).
#[derive(Debug, Default)]
pub(crate) struct WriteQueue {
    waiting: AtomicUsize,
    clear: Notify,
}

/// A writer counted as waiting until dropped.
#[derive(Debug)]
pub(crate) struct Waiting<'q> {
    queue: &'q WriteQueue,
}

impl WriteQueue {
    /// Counts a writer as waiting until the guard is dropped.
    pub(crate) fn enter(&self) -> Waiting<'_> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting { queue: self }
    }

    /// Returns once no writer waits.
    pub(crate) async fn until_clear(&self) {
        loop {
            let cleared = self.clear.notified();
            tokio::pin!(cleared);
            // Registered before the count is read: a drop to zero between
            // the read and the await still wakes this one.
            cleared.as_mut().enable();
            if self.waiting.load(Ordering::SeqCst) == 0 {
                return;
            }
            cleared.await;
        }
    }

    /// How many writers wait now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.queue.waiting.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.queue.clear.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "test code: a panic is the failure report")]

    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_low_priority_writer_starts_only_once_no_writer_waits() {
        let queue = Arc::new(WriteQueue::default());
        let first = queue.enter();
        let second = queue.enter();
        let low = tokio::spawn({
            let queue = queue.clone();
            async move { queue.until_clear().await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!low.is_finished(), "two writers wait");
        drop(first);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!low.is_finished(), "one writer waits");
        drop(second);
        tokio::time::timeout(Duration::from_secs(1), low).await.expect("woken").expect("joined");
        assert_eq!(queue.waiting(), 0);
        tokio::time::timeout(Duration::from_secs(1), queue.until_clear()).await.expect("clear at once");
    }
}
