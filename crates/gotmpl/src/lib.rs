//! Go's `text/template` language in pure Rust: lexer, parser, evaluator and
//! Go `fmt` semantics. It knows nothing of Helm; hosts add functions through
//! a [`FuncMap`] and objects through the [`Object`] trait.

pub mod escape;
pub mod exec;
pub mod funcs;
pub mod gofmt;
pub mod value;

pub use exec::CallCtx;
pub use funcs::FuncMap;
pub use value::{
    Func, FuncError, IntKind, Kind, List, ListKind, Map, MapKind, MapRef, Object, Ty, UintKind,
    Value,
};
