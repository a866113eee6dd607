//! The function registry a template set calls into.

use std::collections::HashMap;
use std::rc::Rc;

use crate::value::Func;

/// Named functions available to templates, in addition to Go's builtins.
/// Layers are cheap to stack: a render can add closures (`include`, `tpl`)
/// over a shared base map without copying it.
#[derive(Clone, Default)]
pub struct FuncMap {
    own: HashMap<String, Func>,
    base: Option<Rc<FuncMap>>,
}

impl FuncMap {
    pub fn new() -> Self {
        FuncMap::default()
    }

    /// A new layer over `base`; entries added to it shadow the base.
    pub fn layered(base: Rc<FuncMap>) -> Self {
        FuncMap {
            own: HashMap::new(),
            base: Some(base),
        }
    }

    pub fn insert(&mut self, name: impl Into<String>, f: Func) {
        self.own.insert(name.into(), f);
    }

    pub fn get(&self, name: &str) -> Option<&Func> {
        match self.own.get(name) {
            Some(f) => Some(f),
            None => self.base.as_ref().and_then(|b| b.get(name)),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}
