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
pub fn guarded<R>(f: impl FnOnce() -> R) -> R {
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

/// Stack reserved by [`on_deep_stack`] (and by threads that do the same
/// work, such as the helper threads of `chart::oneshot`): address space
/// only, touched (and so counted in RSS) as deep as the work actually goes. Values nested
/// [`MAX_DEPTH`] levels take about 13 MiB to clone or drop in a debug
/// build (about 3 MiB optimised); rendering adds its own frames.
pub const DEEP_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a [`DEEP_STACK_BYTES`] stack of its own, on the calling
/// thread. Code that holds parsed values (merging, rendering, dropping
/// them) uses the compiler's recursive `Clone` and `Drop`, which need stack
/// in proportion to the depth; a command that may meet input nested up to
/// [`MAX_DEPTH`] levels runs its work here. The calling thread switches
/// stacks rather than handing the work to a new thread: a new thread's
/// first allocation takes a fresh region from the allocator, and zeroing
/// its first huge page cost `rudder template` ~0.35 ms on every run. A
/// panic in `f` goes on in the caller; being refused the address space
/// panics, as running out of memory does.
pub fn on_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::grow(DEEP_STACK_BYTES, f)
}

/// Runs `f` with at least `levels * per_level` bytes of stack (plus a
/// margin) left, on a fresh segment when the current one has less: for
/// code outside our control (serde, the schema validator) that recurses
/// once per level of data whose depth is known.
pub fn with_stack_for<R>(levels: usize, per_level: usize, f: impl FnOnce() -> R) -> R {
    let need = (256 << 10) + levels.saturating_mul(per_level);
    stacker::maybe_grow(need, need, f)
}

/// How deep a JSON tree nests (a scalar is 0, `[]` is 1), walked without
/// recursion.
pub fn json_depth(v: &serde_json::Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &serde_json::Value>> = match v {
            serde_json::Value::Array(items) => Box::new(items.iter()),
            serde_json::Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(d + 1);
        stack.extend(children.map(|c| (c, d + 1)));
    }
    deepest
}

/// How deep `{` and `[` nest in JSON text, strings skipped, counted only up
/// to one past [`MAX_DEPTH`]: a check that costs no recursion before
/// handing the text to a recursive parser.
pub fn json_text_depth(text: &[u8]) -> usize {
    gostd::json::nesting_depth(text, MAX_DEPTH)
}

/// Parses JSON text with serde_json as deep as Go's `encoding/json` reads
/// (serde_json alone stops at 128 levels), on the stack that takes.
pub fn parse_json_text(text: &[u8]) -> Result<serde_json::Value, String> {
    let depth = json_text_depth(text);
    if depth > MAX_DEPTH {
        return Err(format!("exceeded max depth of {MAX_DEPTH}"));
    }
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    with_stack_for(depth, 2048, || {
        let v = <serde_json::Value as serde::Deserialize>::deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v));
        v.map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recurses `left` levels with ~1 KiB frames; sums `left as u8` over them.
    fn burn(left: usize) -> usize {
        let frame = std::hint::black_box([left as u8; 1024]);
        if left == 0 {
            return 0;
        }
        burn(left - 1) + std::hint::black_box(frame)[1] as usize
    }

    #[test]
    fn the_deep_stack_holds_far_more_than_a_test_thread() {
        // 16 MiB of frames or more: many times a test thread's 2 MiB.
        let levels = 16 * 1024;
        let expected: usize = (1..=levels).map(|l| l as u8 as usize).sum();
        assert_eq!(on_deep_stack(|| burn(levels)), expected);
    }
}
