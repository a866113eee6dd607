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
mod lend;
mod lex;
pub mod limits;
mod literal;
mod parse;
mod parse_cache;
pub mod time;
pub mod value;

pub use exec::{CallCtx, Error, MissingKey, Options, Templates};
pub use funcs::FuncMap;
pub use lend::LentTrees;
pub use parse_cache::{parse_detached, DetachedParse, ParseCache};
pub use value::{
    Func, FuncError, IntKind, Kind, List, ListKind, Map, MapKind, MapRef, Object, Ty, UintKind,
    Value,
};
