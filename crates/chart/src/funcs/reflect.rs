//! reflect functions (being written).

use gotmpl::FuncMap;

pub fn register(_m: &mut FuncMap) {}
