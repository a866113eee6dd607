//! The async runtime every long-running command uses.

/// A multi-threaded runtime whose threads (workers and the blocking pool) have
/// deep stacks: what a chart renders from a CR's values or a values file may nest
/// as deep as Go's YAML reader accepts (10,000 levels), and walking, converting and
/// dropping such data recurses once per level. The stack is address space; only
/// what a walk really touches becomes resident.
pub(crate) fn deep_stack_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(gocodec::depth::DEEP_STACK_BYTES)
        .build()
}
