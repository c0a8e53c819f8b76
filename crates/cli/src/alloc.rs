//! The `satquic` binary's global allocator: mimalloc.
//!
//! The simulator allocates per packet (datagrams, frames, ACK bookkeeping); with mimalloc a
//! 200 MB `satquic sim` run is 4-7 % faster than with the system allocator, at ~25 MB more
//! peak memory (BENCHMARKS.md, "Simulator speed, side by side"). The `mimalloc` crate's
//! wrapper asks for an aligned block on every allocation (`mi_malloc_aligned`), and
//! mimalloc 3 serves blocks above its small size (1 KiB; every datagram buffer) that way
//! through a slower, over-allocating path. This wrapper asks for a plain block whenever
//! mimalloc's own alignment already satisfies the request, as the standard library's
//! `System` allocator does with `malloc`, and for an aligned one otherwise.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};

/// The alignment every mimalloc block of at least this size has (`MI_MAX_ALIGN_SIZE`, 16
/// bytes on 64-bit targets; smaller blocks are aligned to their size rounded down to a
/// power of two).
const PLAIN_ALIGN: usize = 16;

/// Whether a plain `mi_malloc` block of `size` bytes is aligned to `align`.
fn plain(size: usize, align: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

unsafe extern "C" {
    /// Frees what this thread's mimalloc heap holds unused and returns the pages to the
    /// system (`force`: now, not after mimalloc's purge delay). Declared here rather
    /// than through libmimalloc-sys's `extended` feature, which would add a dependency.
    fn mi_collect(force: bool);
}

/// After the server released memory ([`satquic_net::server::release_memory`]: its last
/// connection ended, or many did), a parking worker gives its free pages back for
/// [`COLLECT_WINDOW`], at most every [`COLLECT_EVERY`]: quinn frees a connection's state
/// only when it has drained, a while after the server let the connection go.
pub const COLLECT_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// See [`COLLECT_WINDOW`]: a collection walks the thread's heap, so not on every park.
pub const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Gives the calling thread's free mimalloc pages back to the system after the server
/// released memory ([`COLLECT_WINDOW`]). A server's tokio workers call it when they
/// park: mimalloc keeps freed pages per thread until that thread allocates again, so
/// workers idle after a burst of dead connections kept their send buffers' pages (23 MB
/// fresh, 108-171 MB after rounds of 120 clients killed mid-download); `malloc_trim`
/// only reaches glibc's heap.
pub fn collect_after_release() {
    use std::cell::Cell;
    use std::time::Instant;
    thread_local! {
        /// The release last seen, until when to collect, and when this thread last did.
        static STATE: Cell<(u64, Option<Instant>, Option<Instant>)> =
            const { Cell::new((0, None, None)) };
    }
    let releases = satquic_net::server::memory_releases();
    let (seen, mut until, last) = STATE.get();
    let now = Instant::now();
    if releases != seen {
        until = Some(now + COLLECT_WINDOW);
    }
    let due = until.is_some_and(|u| now < u)
        && (releases != seen || last.is_none_or(|l| now.duration_since(l) >= COLLECT_EVERY));
    if due {
        // SAFETY: mi_collect has no preconditions; it only touches this thread's heap.
        unsafe { mi_collect(true) }
    }
    STATE.set((releases, until, if due { Some(now) } else { last }));
}

/// Wakes the runtime's `workers` every [`COLLECT_EVERY`] during a [`COLLECT_WINDOW`]
/// after each release, so that each parks again and collects
/// ([`collect_after_release`]): a worker that allocated a connection's buffers holds
/// their pages even when another thread freed them, and an idle worker may not wake by
/// itself for a long time.
pub async fn wake_workers_to_collect(workers: usize) {
    let mut tick = tokio::time::interval(COLLECT_EVERY);
    let mut seen = satquic_net::server::memory_releases();
    let mut until = None;
    loop {
        tick.tick().await;
        let releases = satquic_net::server::memory_releases();
        if releases != seen {
            seen = releases;
            until = Some(tokio::time::Instant::now() + COLLECT_WINDOW);
        }
        if until.is_some_and(|u| tokio::time::Instant::now() < u) {
            for _ in 0..workers {
                tokio::spawn(std::future::ready(()));
            }
        }
    }
}

/// mimalloc as a Rust global allocator.
pub struct Mimalloc;

// SAFETY: every method hands mimalloc's blocks out and back unchanged; a block from any
// of its allocation functions may be freed with `mi_free` and resized with `mi_realloc`
// or `mi_realloc_aligned`, and the plain functions are used only where their guaranteed
// alignment meets the layout's.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions accept any size and alignment.
        unsafe {
            if plain(layout.size(), layout.align()) {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(layout.size(), layout.align()) {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from mimalloc.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from mimalloc; the new block keeps `layout`'s alignment.
        unsafe {
            if plain(new_size, layout.align()) {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size and alignment a program asks for comes back aligned, writable, and
    /// survives growing and shrinking with its contents.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let a = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1, 3, 8, 15, 16, 17, 100, 1024, 1452, 1500, 70_000, 5 << 20] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; the block is used within its size and freed
                // once, with the layout it was allocated with.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size}, align {align}");
                    p.write_bytes(0xab, size);
                    let q = a.realloc(p, layout, size * 3);
                    assert_eq!(q as usize % align, 0, "grown: size {size}, align {align}");
                    assert!((0..size).all(|i| *q.add(i) == 0xab));
                    let r = a.realloc(q, Layout::from_size_align(size * 3, align).unwrap(), 1);
                    assert_eq!(r as usize % align, 0, "shrunk: size {size}, align {align}");
                    assert_eq!(*r, 0xab);
                    a.dealloc(r, Layout::from_size_align(1, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
