//! Go's `text/template` language in pure Rust: lexer, parser, evaluator and
//! Go `fmt` semantics. It knows nothing of Helm; hosts add functions through
//! a [`FuncMap`] and objects through the [`Object`] trait.

pub mod builtins;
pub mod escape;
pub mod exec;
pub mod funcs;
pub mod gofmt;
pub mod gostr;
pub mod lex;
pub mod limits;
pub mod parse;
pub mod value;

pub use exec::{CallCtx, Error, MissingKey, Options, ParseCache, Templates};
pub use funcs::FuncMap;
pub use value::{
    Func, FuncError, IntKind, Kind, List, ListKind, Map, MapKind, MapRef, Object, Ty, UintKind,
    Value,
};
