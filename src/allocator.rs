//! The process's allocator, and giving back to the system the pages that
//! start-up used and freed.

use std::time::Duration;

/// mimalloc instead of the system allocator: the Compose engine and the API
/// allocate many small, short-lived objects (YAML trees, JSON bodies), and
/// glibc's malloc was a third of the engine's time (issue #16; the figures
/// are in BENCHMARKS.md, "Compose and template engine"). Built without
/// transparent huge pages (the `no_thp` feature, workspace Cargo.toml):
/// they more than doubled an idle process's resident memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long after `play serve` listens its start-up is over: the routes
/// and the OpenAPI text are built and the reconcile loops' first passes
/// (a resync of every object) have been taken, at the startup resync rate,
/// for an installation with no backlog.
pub const START_UP_SETTLES: Duration = Duration::from_secs(2);

/// Returns to the system the memory mimalloc holds with nothing allocated
/// in it: the pages the calling thread freed, and every page freed to the
/// process's arenas whose return was still delayed.
///
/// Why: mimalloc gives a freed page back only after a delay (1 s), and only
/// when a later free looks at the pending ones. Start-up allocates a few
/// MiB that it frees at once (the OpenAPI document, the migrations, the
/// routes); an idle process frees nothing later, so without this call they
/// stayed resident for as long as it was idle (2 MiB of a 35 MB idle
/// `play serve`, BENCHMARKS.md, "Idle memory"). Called once, when start-up
/// settles: on every free it would cost a system call in the hot paths,
/// which is what `MIMALLOC_PURGE_DELAY=0` would do.
#[expect(unsafe_code, reason = "mi_collect is a C function; this is the crate's only unsafe call")]
pub fn return_freed_pages() {
    // SAFETY: `mi_collect` takes no pointer and keeps no reference: it only
    // frees memory in which mimalloc holds no live allocation, and mimalloc
    // documents it as callable from any thread at any time (its heaps and
    // arenas are locked or thread-owned, as for every allocation).
    unsafe { libmimalloc_sys::mi_collect(true) }
}
