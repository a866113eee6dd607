//! Go's `text/template` language in pure Rust: lexer, parser, evaluator and
//! Go `fmt` semantics. It knows nothing of Helm; hosts add functions through
//! a [`FuncMap`] and objects through the [`Object`] trait.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod builtins;
mod error;
mod escape;
mod exec;
pub mod fmt;
mod func;
mod funcs;
pub mod gostr;
mod lex;
pub mod limits;
mod literal;
mod options;
mod parse;
mod parse_cache;
mod shared;
pub mod time;
pub mod value;

pub use error::Error;
pub use exec::Templates;
pub use func::CallCtx;
pub use funcs::FuncMap;
pub use options::{MissingKey, Options};
pub use parse_cache::ParseCache;
pub use shared::SharedTemplates;
pub use value::{
    Func, FuncError, IntKind, Kind, List, ListKind, Map, MapKind, MapRef, Object, Ty, UintKind,
    Value,
};
