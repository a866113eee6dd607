//! How a template set executes: what a missing map key gives, and the
//! limits on nesting and output.

/// What a missing map key evaluates to (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// `missingkey=default`/`invalid`: no value, printed as `<no value>`.
    #[default]
    Default,
    /// `missingkey=zero`: the zero value of the map's element type.
    Zero,
    /// `missingkey=error`: execution stops with an error.
    Error,
}

/// Execution limits and options.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub missing_key: MissingKey,
    /// Maximum nesting of `template` calls (and host calls such as Helm's
    /// `include`) before execution fails instead of exhausting memory.
    pub max_depth: usize,
    /// Maximum bytes written by all executions of a template set together
    /// (including those of `template`, `include` and `tpl`, whose output is
    /// written again where it is used), so the memory a render takes to
    /// reach a refused size stays a small multiple of this.
    pub max_output: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            missing_key: MissingKey::Default,
            max_depth: 10_000,
            max_output: 256 << 20,
        }
    }
}
