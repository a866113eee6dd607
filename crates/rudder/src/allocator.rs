//! The allocator of the whole `rudder` binary (mimalloc), and when it gives freed
//! memory back to the OS.
//!
//! A render makes and frees millions of small values (template trees, values,
//! output strings): with mimalloc `rudder template` on a real chart runs ~12% fewer
//! instructions and takes a quarter of the page faults of the system allocator.
//! It is mimalloc v2: v3 (the crate's default) took 4–9% more CPU time for
//! `rudder template` of kafka, postgresql, grafana, keycloak and prometheus
//! (25 alternating runs each), while the operator's peak RSS at 2,000 and
//! 10,000 CRs was the same with either (45.6/45.9 and ~102/104 MiB).
//!
//! A long-running operator frees most of what each reconcile allocates. With
//! mimalloc's defaults on Linux (arenas committed eagerly, freed pages purged after
//! a delay) a good part of its RSS was memory already freed: 10,000 CRs of the
//! example chart peaked at 141 MiB. Committing arena memory on demand and purging
//! freed pages at once brought that to 105 MiB. A render, a process of a few
//! milliseconds, keeps the defaults: purging at once took a real chart's
//! `rudder template` from ~450 to ~2,000 page faults and ~9% more time. So the
//! long-running commands (`run`, `apiserver`, `up`) purge at once, the others do
//! not; `MIMALLOC_ARENA_EAGER_COMMIT` and `MIMALLOC_PURGE_DELAY` in the environment
//! still win.
//!
//! mimalloc is built with 16 KiB slices instead of its 64 KiB (`.cargo/config.toml`
//! passes the define to its C build). Each thread allocates from segments of its
//! own, a page (one slice) per size class, and the arena is marked for transparent
//! huge pages, so every 2 MiB a thread's pages reach is a fresh huge page the kernel
//! zeroes; on a VM that was 15% of the CPU of `rudder template` on real charts.
//! With 64 KiB pages, `rudder template` of wordpress touched 10 MiB in 14–16 huge
//! pages over its 5 threads; with 16 KiB pages it touches 7–9 (kafka 10 → 5,
//! keycloak 14 → 7), and runs 4–11% faster (wordpress 12.40 → 11.73 ms, prometheus
//! 9.73 → 8.83, thanos 31.75 → 28.18, 31 alternating runs each). 8 KiB slices
//! were within 1–2% of 16 KiB. The operator is unchanged by it: at 2,000 CRs (the
//! `scale` bench) its peak RSS was 38.6 MiB against 39.8, with 10.4 s of CPU either
//! way.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod tuning {
    use std::ffi::CStr;
    use std::os::raw::{c_char, c_int, c_long};

    use libmimalloc_sys::{mi_option_set, mi_option_t};

    // Indices in mimalloc's `mi_option_t` (include/mimalloc.h; the same in v2
    // and v3), which libmimalloc-sys declares but does not name; a test checks
    // them against its named neighbours and mimalloc's defaults.
    pub(super) const MI_OPTION_ARENA_EAGER_COMMIT: mi_option_t = 4;
    pub(super) const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

    /// The subcommands that run until stopped.
    const LONG_RUNNING: [&[u8]; 3] = [b"run", b"apiserver", b"up"];

    /// Whether the process is one of the long-running commands, by its first
    /// argument.
    pub(super) fn long_running(command: &[u8]) -> bool {
        LONG_RUNNING.contains(&command)
    }

    /// Runs before `main`, as an ELF constructor: the first allocation reserves
    /// mimalloc's first arena (1 GiB of address space) with the commit mode in force
    /// then, and the Rust runtime may allocate before `main` (set from `main`, the
    /// commit mode did not take effect). mimalloc's own constructor runs earlier
    /// still (priority 101) and allocates nothing. glibc passes constructors the
    /// program's arguments, as Rust's std relies on to read them there.
    #[used]
    #[link_section = ".init_array"]
    static SET_BEFORE_MAIN: extern "C" fn(c_int, *const *const c_char, *const *const c_char) =
        before_main;

    extern "C" fn before_main(
        argc: c_int,
        argv: *const *const c_char,
        _envp: *const *const c_char,
    ) {
        if argc < 2 || argv.is_null() {
            return;
        }
        // SAFETY: glibc hands constructors `argc` valid NUL-terminated
        // arguments, which live as long as the process.
        let command = unsafe {
            let first = *argv.add(1);
            if first.is_null() {
                return;
            }
            CStr::from_ptr(first).to_bytes()
        };
        if long_running(command) {
            return_freed_memory_promptly();
        }
    }

    /// Makes mimalloc commit arena memory as it is used and purge freed pages at
    /// once, unless the environment says otherwise. Allocates nothing (it runs
    /// before `main`), so it reads the environment with `getenv` rather than
    /// `std::env`.
    pub(super) fn return_freed_memory_promptly() {
        let settings: [(&CStr, mi_option_t, c_long); 2] = [
            (
                c"MIMALLOC_ARENA_EAGER_COMMIT",
                MI_OPTION_ARENA_EAGER_COMMIT,
                0,
            ),
            (c"MIMALLOC_PURGE_DELAY", MI_OPTION_PURGE_DELAY, 0),
        ];
        for (env, option, value) in settings {
            // SAFETY: getenv reads the environment with a NUL-terminated name;
            // nothing modifies the environment before `main`, and a test that
            // calls this sets no variable. mi_option_set only stores the value
            // of a valid option index.
            unsafe {
                if libc::getenv(env.as_ptr()).is_null() {
                    mi_option_set(option, value);
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::tuning::*;
    use libmimalloc_sys::{
        mi_heap_area_t, mi_heap_destroy, mi_heap_malloc, mi_heap_new, mi_heap_t,
        mi_heap_visit_blocks, mi_option_eager_commit_delay, mi_option_get,
        mi_option_use_numa_nodes, mi_option_verbose,
    };
    use std::os::raw::c_void;

    unsafe extern "C" fn area_size(
        _heap: *const mi_heap_t,
        area: *const mi_heap_area_t,
        _block: *mut c_void,
        _size: usize,
        arg: *mut c_void,
    ) -> bool {
        // SAFETY: mimalloc passes a valid area, and `arg` is the `usize` the test
        // handed to `mi_heap_visit_blocks`.
        unsafe { *arg.cast::<usize>() = (*area).reserved };
        false
    }

    #[test]
    fn small_objects_share_16_kib_pages() {
        let mut reserved = 0usize;
        // SAFETY: a heap of the test's own, holding one block, destroyed whole.
        unsafe {
            let heap = mi_heap_new();
            assert!(!heap.is_null());
            assert!(!mi_heap_malloc(heap, 64).is_null());
            mi_heap_visit_blocks(heap, false, Some(area_size), (&raw mut reserved).cast());
            mi_heap_destroy(heap);
        }
        assert!(
            reserved > 0 && reserved <= 16 << 10,
            "a page of 64-byte blocks spans {reserved} bytes: mimalloc was built \
             without the 16 KiB slices of .cargo/config.toml (is CFLAGS set?)"
        );
    }

    #[test]
    fn only_long_running_commands_purge_at_once() {
        for command in ["run", "apiserver", "up"] {
            assert!(long_running(command.as_bytes()), "{command}");
        }
        for command in ["template", "install", "version", "--help", "runner", ""] {
            assert!(!long_running(command.as_bytes()), "{command}");
        }
    }

    #[test]
    fn the_option_indices_are_mimallocs() {
        // Between the options libmimalloc-sys names (mimalloc.h's order).
        assert_eq!(MI_OPTION_ARENA_EAGER_COMMIT, mi_option_verbose + 2);
        assert_eq!(MI_OPTION_PURGE_DELAY, mi_option_eager_commit_delay + 1);
        assert_eq!(MI_OPTION_PURGE_DELAY, mi_option_use_numa_nodes - 1);
    }

    #[test]
    fn the_tuning_sets_both_options() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some()
            || std::env::var_os("MIMALLOC_ARENA_EAGER_COMMIT").is_some()
        {
            eprintln!("skipped: a MIMALLOC_ option is set in the environment");
            return;
        }
        // SAFETY: reading an option has no preconditions.
        let get = |option| unsafe { mi_option_get(option) };
        let first = std::env::args().nth(1).unwrap_or_default();
        if !long_running(first.as_bytes()) {
            // The constructor left mimalloc's defaults (options.c).
            assert_eq!(get(MI_OPTION_PURGE_DELAY), 10, "mimalloc's default delay");
            assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 2, "mimalloc's default");
        }
        return_freed_memory_promptly();
        assert_eq!(get(MI_OPTION_PURGE_DELAY), 0);
        assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 0);
    }
}
