//! How deep nested data may go, and running recursive code over it safely.
//!
//! Go's readers stop at 10,000 levels (go-yaml's `max_indents` and
//! `max_flow_level`, `encoding/json`'s `maxNestingDepth`, apimachinery's
//! `util/json`), so Helm and kube-apiserver accept exactly that much; so do
//! we. Go's stacks grow; ours do not, so every recursive walk over parsed
//! data runs through [`guarded`], which moves onto a fresh heap-allocated
//! stack segment when the current one runs low. Parsers check the limit
//! before a structure gets deeper, so input nested past it is refused
//! without building anything deep.

/// The deepest nesting accepted in YAML and JSON, as Go's readers accept.
pub const MAX_DEPTH: usize = 10_000;

/// Runs `f`, first moving to a new 1 MiB stack segment when less than
/// 64 KiB of the current one is left. Each level of a recursive walk calls
/// this, so depth costs heap rather than overflowing the thread's stack.
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Drops a JSON tree level by level, without the recursion of its own
/// `Drop` (which needs stack in proportion to the depth).
pub fn drop_json(v: serde_json::Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Array(items) => stack.extend(items),
            serde_json::Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Stack reserved by [`on_deep_stack`]: address space only, touched (and
/// so counted in RSS) as deep as the work actually goes. Values nested
/// [`MAX_DEPTH`] levels take about 13 MiB to clone or drop in a debug
/// build (about 3 MiB optimised); rendering adds its own frames.
pub const DEEP_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a thread with a [`DEEP_STACK_BYTES`] stack and waits for it.
/// Code that holds parsed values (merging, rendering, dropping them) uses
/// the compiler's recursive `Clone` and `Drop`, which need stack in
/// proportion to the depth; a command that may meet input nested up to
/// [`MAX_DEPTH`] levels runs its work here. Fails only when no thread can
/// be started; a panic in `f` goes on in the caller.
pub fn on_deep_stack<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> std::io::Result<R> {
    let handle = std::thread::Builder::new()
        .name("deep-stack".into())
        .stack_size(DEEP_STACK_BYTES)
        .spawn(f)?;
    match handle.join() {
        Ok(r) => Ok(r),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
