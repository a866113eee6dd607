//! Go standard-library semantics that Helm, Sprig and Kubernetes tools
//! expose to users, ported once: what `strconv` prints for a float or a
//! quoted string, what `unicode` calls printable or upper case, how `time`
//! parses, formats and rounds, how `os.ExpandEnv` substitutes, what
//! `path.Clean` makes of a path, how deep `encoding/json` lets JSON nest, and what a
//! `google/uuid` v4 looks like. Every crate that must print or parse exactly
//! as Go does uses these, so there is one answer to "what would Go do".
//!
//! Start here: [`strconv::format_float`], [`strconv::quote`],
//! [`time::Duration::parse`], [`time::Time`].

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod json;
pub mod os;
pub mod path;
pub mod strconv;
pub mod time;
pub mod unicode;
pub mod utf8;
pub mod uuid;
