//! Sprig v3's template functions as Helm ships them (Masterminds/sprig,
//! with Helm's removal of `env` and `expandenv`): strings, lists, dicts,
//! defaults, conversion, math, reflection, regex, semver, dates, encoding,
//! crypto (keys, certificates, bcrypt, AES), paths and URLs, random values,
//! and Sprig's JSON functions. Each follows the Go original's output and
//! error texts byte for byte.
//!
//! Start here: [`funcmap`] (or [`register`] to add to a map). Helm's own
//! functions (`toYaml`, `include`, `tpl` …) are in the `chart` crate.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod conv;
mod crypto;
mod dates;
mod defaults;
mod dicts;
mod encoding;
mod json;
mod lists;
mod math;
mod paths;
mod random;
mod reflect;
mod regex;
mod semver;
mod strings;

pub use semver::{constraint_matches, parse_version};

use gotmpl::FuncMap;
#[cfg(test)]
use gotmpl::{FuncError, Value};

/// Every Sprig function Helm keeps, in a new map.
pub fn funcmap() -> FuncMap {
    let mut m = FuncMap::new();
    register(&mut m);
    m
}

/// Adds every Sprig function Helm keeps to `m`.
pub fn register(m: &mut FuncMap) {
    strings::register(m);
    regex::register(m);
    lists::register(m);
    dicts::register(m);
    defaults::register(m);
    conv::register(m);
    math::register(m);
    reflect::register(m);
    semver::register(m);
    dates::register(m);
    encoding::register(m);
    crypto::register(m);
    paths::register(m);
    random::register(m);
    json::register(m);
}

/// Calls one function of a family directly, with arguments already of the
/// declared types (what the engine hands over), for unit tests.
#[cfg(test)]
pub(crate) fn call_registered(
    register: fn(&mut FuncMap),
    name: &str,
    args: Vec<Value>,
) -> Result<Value, FuncError> {
    let mut m = FuncMap::new();
    register(&mut m);
    let f = m
        .get(name)
        .unwrap_or_else(|| panic!("{name} is not registered"));
    (f.imp)(&mut gotmpl::CallCtx::detached(), args)
}
