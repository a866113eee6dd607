//! The template functions Helm registers: the Sprig v3 set and Helm's own.

pub mod conv;
pub mod crypto;
pub mod dates;
pub mod defaults;
pub mod dicts;
pub mod encoding;
pub mod lists;
pub mod math;
pub mod paths;
pub mod random;
pub mod reflect;
pub mod regex;
pub mod rsa_keygen;
pub mod semver;
pub mod serialization;
pub mod strings;

use gotmpl::FuncMap;
#[cfg(test)]
use gotmpl::{FuncError, Value};

/// Every Sprig function Helm keeps, plus Helm's serialization functions.
/// (`include`, `tpl`, `required`, `lookup` need the render and are added there.)
pub fn register_all(m: &mut FuncMap) {
    strings::register(m);
    regex::register(m);
    lists::register(m);
    dicts::register(m);
    dicts::register_values_methods(m);
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
    serialization::register(m);
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
