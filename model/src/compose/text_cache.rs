//! A bounded cache of values computed from a text, keyed by the text
//! itself: what the engine keeps of each template body it analysed
//! ([`super::svc::analyzed`]). A template version is immutable, so the YAML
//! parse, the namespace and the reference scan of its body are done once,
//! when the version is created (or the first time this process sees it),
//! and every launch compiles from that analysis (issue #33, item 3).
//!
//! Keyed by the text, not by a version id: two versions with one body
//! share an entry, nothing must be invalidated when a version is deleted,
//! and a caller cannot get the value of a text other than the one it passed
//! (the key is compared in full on a hit).
//!
//! Invariants:
//! - the value must be a pure function of the text, so a kept one is the
//!   one computing it now would give;
//! - only successful values are kept (a failure is computed again each
//!   time);
//! - bounded: texts over [`MAX_TEXT_BYTES`] are never kept, and the kept
//!   texts total at most [`MAX_TOTAL_BYTES`] and [`MAX_ENTRIES`]; the
//!   oldest entries go first. A parsed tree is about ten times its text,
//!   so a cache of trees holds a few tens of MiB at most, and nothing at
//!   start.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Larger texts are computed every time.
const MAX_TEXT_BYTES: usize = 64 * 1024;
/// The kept texts together.
const MAX_TOTAL_BYTES: usize = 2 * 1024 * 1024;
/// The most texts kept.
const MAX_ENTRIES: usize = 512;

struct Kept<T> {
    entries: HashMap<Arc<str>, Arc<T>>,
    /// Insertion order, oldest first.
    order: VecDeque<Arc<str>>,
    bytes: usize,
}

/// See the [module documentation](self); usable as a `static`.
pub(crate) struct TextCache<T> {
    /// `None` until the first value is kept.
    kept: Mutex<Option<Kept<T>>>,
}

impl<T> TextCache<T> {
    pub(crate) const fn new() -> Self {
        TextCache { kept: Mutex::new(None) }
    }

    /// The cache holds only finished values, so a panic elsewhere while it
    /// was locked cannot have left an entry half-written; `bytes` is
    /// updated with the maps in one critical section that does not panic.
    fn lock(&self) -> MutexGuard<'_, Option<Kept<T>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of `text`: the kept one, else `make()`, kept when it
    /// succeeds.
    pub(crate) fn get_or_try<E>(&self, text: &str, make: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        if let Some(hit) = self.lock().as_ref().and_then(|kept| kept.entries.get(text)) {
            return Ok(Arc::clone(hit));
        }
        let value = Arc::new(make()?);
        if text.len() <= MAX_TEXT_BYTES {
            // Evicted values are freed after the lock is released: freeing
            // a tree costs about as much as building its text.
            let mut evicted = Vec::new();
            let mut guard = self.lock();
            let kept = guard.get_or_insert_with(|| Kept { entries: HashMap::new(), order: VecDeque::new(), bytes: 0 });
            if !kept.entries.contains_key(text) {
                while kept.entries.len() >= MAX_ENTRIES || kept.bytes + text.len() > MAX_TOTAL_BYTES {
                    let Some(oldest) = kept.order.pop_front() else { break };
                    kept.bytes -= oldest.len();
                    evicted.extend(kept.entries.remove(&oldest));
                }
                let key: Arc<str> = Arc::from(text);
                kept.bytes += key.len();
                kept.order.push_back(Arc::clone(&key));
                kept.entries.insert(key, Arc::clone(&value));
            }
            drop(guard);
            drop(evicted);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn length(text: &str) -> Result<usize, ()> {
        if text.starts_with('!') { Err(()) } else { Ok(text.len()) }
    }

    #[test]
    fn one_text_is_computed_once_and_a_different_text_is_not_confused_with_it() {
        let cache = TextCache::new();
        let a = cache.get_or_try("abc", || length("abc")).unwrap();
        let again = cache.get_or_try("abc", || -> Result<usize, ()> { panic!("computed again") }).unwrap();
        assert!(Arc::ptr_eq(&a, &again), "the second call is the kept value");
        assert_eq!(*cache.get_or_try("abcd", || length("abcd")).unwrap(), 4);
    }

    #[test]
    fn failures_are_not_kept_and_large_texts_are_not_cached() {
        let cache = TextCache::new();
        assert!(cache.get_or_try("!x", || length("!x")).is_err());
        assert_eq!(*cache.get_or_try("!x", || Ok::<_, ()>(7)).unwrap(), 7, "computed again");
        let large = "x".repeat(MAX_TEXT_BYTES + 1);
        let first = cache.get_or_try(&large, || length(&large)).unwrap();
        let second = cache.get_or_try(&large, || length(&large)).unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "computed again");
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        let cache = TextCache::new();
        for n in 0..(MAX_ENTRIES + 50) {
            let text = format!("{n:0>5000}");
            cache.get_or_try(&text, || length(&text)).unwrap();
        }
        let guard = cache.lock();
        let kept = guard.as_ref().unwrap();
        assert!(kept.entries.len() <= MAX_ENTRIES && kept.bytes <= MAX_TOTAL_BYTES);
        assert_eq!(kept.entries.len(), kept.order.len());
        assert_eq!(kept.bytes, kept.order.iter().map(|k| k.len()).sum::<usize>());
    }
}
