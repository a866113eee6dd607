//! The benches' global allocator: the system's, counting every allocation
//! and its bytes, so a bench can report allocations per pass. Shared by
//! gotmpl's `render` and `lex_parse` and sprig's `parse_corpus` benches (`#[path]`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes allocated so far.
pub static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
/// Allocations so far.
pub static ALLOCS: AtomicUsize = AtomicUsize::new(0);

struct Counting;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(l.size(), Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;
