//! Template execution. (Being written; `CallCtx` is the stable surface
//! functions see.)

use crate::value::Value;

/// What a function sees of the running template besides its arguments.
pub struct CallCtx<'a> {
    _p: std::marker::PhantomData<&'a ()>,
}

impl CallCtx<'static> {
    /// A context with no template set behind it, for calling functions
    /// directly (unit tests, host code).
    pub fn detached() -> CallCtx<'static> {
        CallCtx { _p: std::marker::PhantomData }
    }
}

#[allow(dead_code)]
fn _unused(_: Value) {}
