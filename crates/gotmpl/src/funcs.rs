//! The function registry a template set calls into.

// Names are looked up on every parse and call: a fast hasher.
use foldhash::HashMap;
use std::rc::Rc;

use crate::value::Func;

/// Named functions available to templates, in addition to Go's builtins.
/// Layers are cheap to stack: a render can add closures (`include`, `tpl`)
/// over a shared base map without copying it.
#[derive(Clone, Default)]
pub struct FuncMap {
    own: HashMap<String, Func>,
    /// Methods of named map types (`MapKind::Named`), by type, then by
    /// method name; each takes the receiver as its first parameter. Nested
    /// so that a lookup on every field access allocates no key.
    methods: HashMap<String, HashMap<String, Func>>,
    base: Option<Rc<FuncMap>>,
}

impl FuncMap {
    pub fn new() -> Self {
        FuncMap::default()
    }

    /// A new layer over `base`; entries added to it shadow the base.
    pub fn layered(base: Rc<FuncMap>) -> Self {
        FuncMap {
            own: HashMap::default(),
            methods: HashMap::default(),
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

    /// Adds a method to the named map type `type_name`: `f` receives the
    /// map itself first, then the template's arguments. Go calls a method
    /// in preference to reading the map key of the same name.
    pub fn insert_method(&mut self, type_name: &str, name: &str, f: Func) {
        self.methods
            .entry(type_name.to_string())
            .or_default()
            .insert(name.to_string(), f);
    }

    /// The method `name` of the named map type `type_name`, receiver unbound.
    pub fn method(&self, type_name: &str, name: &str) -> Option<&Func> {
        match self.methods.get(type_name).and_then(|m| m.get(name)) {
            Some(f) => Some(f),
            None => self.base.as_ref().and_then(|b| b.method(type_name, name)),
        }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}
