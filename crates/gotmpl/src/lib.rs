//! Go's `text/template` language in pure Rust: lexer, parser, evaluator and
//! Go `fmt` semantics. It knows nothing of Helm; hosts add functions through
//! a [`FuncMap`] and objects through the [`Object`] trait.

#![warn(unreachable_pub)]

mod builtins;
mod escape;
mod exec;
pub mod fmt;
mod funcs;
pub mod gostr;
mod lex;
pub mod limits;
mod literal;
mod parse;
pub mod time;
pub mod value;

pub use exec::{
    parse_detached, CallCtx, DetachedParse, Error, MissingKey, Options, ParseCache, Templates,
};
pub use funcs::FuncMap;
pub use value::{
    Func, FuncError, IntKind, Kind, List, ListKind, Map, MapKind, MapRef, Object, Ty, UintKind,
    Value,
};
