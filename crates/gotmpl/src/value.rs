//! The dynamic value model templates evaluate over.
//!
//! It mirrors the handful of Go types that JSON/YAML data and template
//! functions produce (`interface{}`, `bool`, the integer kinds, `float64`,
//! `string`, `[]interface{}`, `map[string]interface{}`, `[]byte`) plus opaque
//! host objects (structs with fields and methods such as Helm's `.Files`).
//! Strings, lists and maps are reference counted, so field access and passing
//! values around never deep-copies data. Maps are shared and mutable, because
//! Sprig's `set`/`unset`/`merge` change a dict in place and every holder of it
//! sees the change, as in Go.

use std::any::Any;
use std::cell::{Ref, RefCell, RefMut};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// The ordered map behind a Go `map[string]...`. Go prints and ranges over
/// maps in sorted key order; a `BTreeMap` keeps that order for free.
pub type Map = BTreeMap<String, Value>;

/// Go's signed integer kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IntKind {
    Int,
    Int8,
    Int16,
    Int32,
    Int64,
}

/// Go's unsigned integer kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UintKind {
    Uint,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Uintptr,
}

impl IntKind {
    pub fn go_name(self) -> &'static str {
        match self {
            IntKind::Int => "int",
            IntKind::Int8 => "int8",
            IntKind::Int16 => "int16",
            IntKind::Int32 => "int32",
            IntKind::Int64 => "int64",
        }
    }
}

impl UintKind {
    pub fn go_name(self) -> &'static str {
        match self {
            UintKind::Uint => "uint",
            UintKind::Uint8 => "uint8",
            UintKind::Uint16 => "uint16",
            UintKind::Uint32 => "uint32",
            UintKind::Uint64 => "uint64",
            UintKind::Uintptr => "uintptr",
        }
    }
}

/// The element type of a Go slice, which shows in `%T`, `typeOf` and `%#v`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `[]interface {}` — what JSON/YAML data and most Sprig functions produce.
    Any,
    /// `[]string` — e.g. `splitList`, `keys`, `regexFindAll`.
    String,
    /// `[]int` — e.g. `until`.
    Int,
    /// `[]int64`.
    Int64,
    /// `[]float64`.
    Float64,
    /// `[][]interface {}` — Sprig's `chunk`.
    AnyList,
}

impl ListKind {
    pub fn go_name(self) -> &'static str {
        match self {
            ListKind::Any => "[]interface {}",
            ListKind::String => "[]string",
            ListKind::Int => "[]int",
            ListKind::Int64 => "[]int64",
            ListKind::Float64 => "[]float64",
            ListKind::AnyList => "[][]interface {}",
        }
    }
}

/// The Go type of a map value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapKind {
    /// `map[string]interface {}`.
    Any,
    /// `map[string]string`.
    String,
    /// A named type whose underlying type is `map[string]interface {}`
    /// (Helm's `chartutil.Values`, for example); the name shows in `%T`.
    Named(&'static str),
}

impl MapKind {
    pub fn go_name(self) -> &'static str {
        match self {
            MapKind::Any => "map[string]interface {}",
            MapKind::String => "map[string]string",
            MapKind::Named(n) => n,
        }
    }
}

/// A shared, mutable map. Cloning a `MapRef` clones the reference, not the data.
#[derive(Clone)]
pub struct MapRef {
    inner: Rc<RefCell<Map>>,
    kind: MapKind,
    /// A Go nil map: reads as empty, but `encoding/json` writes `null`.
    nil: bool,
}

impl MapRef {
    pub fn new(map: Map) -> Self {
        MapRef {
            inner: Rc::new(RefCell::new(map)),
            kind: MapKind::Any,
            nil: false,
        }
    }
    pub fn with_kind(map: Map, kind: MapKind) -> Self {
        MapRef {
            inner: Rc::new(RefCell::new(map)),
            kind,
            nil: false,
        }
    }
    /// A nil map of the given Go type, as a struct field that was never
    /// set (Helm's `.Chart.Annotations` without annotations).
    pub fn nil_of(kind: MapKind) -> Self {
        MapRef {
            nil: true,
            ..MapRef::with_kind(Map::new(), kind)
        }
    }
    /// The same shared map seen under another Go type (no copy).
    pub fn retyped(&self, kind: MapKind) -> Self {
        MapRef {
            inner: self.inner.clone(),
            kind,
            nil: self.nil,
        }
    }
    pub fn kind(&self) -> MapKind {
        self.kind
    }
    /// Whether this is a Go nil map (see [`MapRef::nil_of`]).
    pub fn is_nil_map(&self) -> bool {
        self.nil && self.inner.borrow().is_empty()
    }
    pub fn borrow(&self) -> Ref<'_, Map> {
        self.inner.borrow()
    }
    pub fn borrow_mut(&self) -> RefMut<'_, Map> {
        watch::writing(self);
        self.inner.borrow_mut()
    }
    pub fn get(&self, key: &str) -> Option<Value> {
        self.inner.borrow().get(key).cloned()
    }
    pub fn insert(&self, key: impl Into<String>, v: Value) {
        watch::writing(self);
        self.inner.borrow_mut().insert(key.into(), v);
    }
    pub fn len(&self) -> usize {
        self.inner.borrow().len()
    }
    pub fn is_empty(&self) -> bool {
        self.inner.borrow().is_empty()
    }
    /// True when both refer to the very same map.
    pub fn ptr_eq(&self, other: &MapRef) -> bool {
        Rc::ptr_eq(&self.inner, &other.inner)
    }
    /// A snapshot of the entries in key order; safe to hold while the map is mutated.
    pub fn entries(&self) -> Vec<(String, Value)> {
        self.inner
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl fmt::Debug for MapRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner.try_borrow() {
            Ok(m) => f.debug_map().entries(m.iter()).finish(),
            Err(_) => f.write_str("{<borrowed>}"),
        }
    }
}

/// An immutable list (Go slice). Sprig's list functions all return new slices.
#[derive(Clone)]
pub struct List {
    items: Rc<Vec<Value>>,
    kind: ListKind,
}

impl List {
    pub fn new(items: Vec<Value>) -> Self {
        List {
            items: Rc::new(items),
            kind: ListKind::Any,
        }
    }
    pub fn with_kind(items: Vec<Value>, kind: ListKind) -> Self {
        List {
            items: Rc::new(items),
            kind,
        }
    }
    pub fn kind(&self) -> ListKind {
        self.kind
    }
    pub fn items(&self) -> &[Value] {
        &self.items
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&Value> {
        self.items.get(i)
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Value> {
        self.items.iter()
    }
    pub fn to_vec(&self) -> Vec<Value> {
        self.items.as_ref().clone()
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}

/// Go's reflect kind of a value, as `kindOf` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Invalid,
    Bool,
    Int,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Uintptr,
    Float64,
    Complex128,
    String,
    Slice,
    Map,
    Struct,
    Ptr,
    Func,
    Interface,
}

impl Kind {
    pub fn go_name(self) -> &'static str {
        match self {
            Kind::Invalid => "invalid",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Int8 => "int8",
            Kind::Int16 => "int16",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Uint => "uint",
            Kind::Uint8 => "uint8",
            Kind::Uint16 => "uint16",
            Kind::Uint32 => "uint32",
            Kind::Uint64 => "uint64",
            Kind::Uintptr => "uintptr",
            Kind::Float64 => "float64",
            Kind::Complex128 => "complex128",
            Kind::String => "string",
            Kind::Slice => "slice",
            Kind::Map => "map",
            Kind::Struct => "struct",
            Kind::Ptr => "ptr",
            Kind::Func => "func",
            Kind::Interface => "interface",
        }
    }
}

/// A host object: a Go struct or pointer with fields and methods
/// (Helm's `.Files`, `.Capabilities`, a parsed semver, a `time.Time` …).
pub trait Object: fmt::Debug {
    /// The Go type name, as `%T` prints it (e.g. `*semver.Version`).
    fn type_name(&self) -> String;
    /// `Kind::Struct` or `Kind::Ptr` usually.
    fn kind(&self) -> Kind {
        Kind::Struct
    }
    /// A field by name. `None` means the type has no such field
    /// (a template error, as for Go structs).
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    /// A method by name, callable from templates (`.Files.Get "x"`).
    fn method(&self, _name: &str) -> Option<Func> {
        None
    }
    /// What `%v` (and plain printing) shows.
    fn format_v(&self) -> String;
    /// What `%+v` shows; defaults to `%v`.
    fn format_plus_v(&self) -> String {
        self.format_v()
    }
    /// What `%#v` shows; defaults to `%v`.
    fn format_sharp_v(&self) -> String {
        self.format_v()
    }
    /// Go truthiness: a non-nil pointer or any struct is true.
    fn truthy(&self) -> bool {
        true
    }
    /// A JSON form for `toJson`/`toYaml`; `None` means `{}`.
    fn to_json(&self) -> Option<serde_json::Value> {
        None
    }
    /// For Go structs: the JSON fields in declaration order, which is the
    /// order `encoding/json` writes them in (`to_json` maps are sorted).
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        None
    }
    /// Entries for `range` and `len`, for objects that are Go maps or
    /// slices with methods (Helm's `.Files` is a `map[string][]byte`).
    /// Keys are `Invalid` for slice-like objects.
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        None
    }
    /// For downcasting by the functions that know the concrete type.
    fn as_any(&self) -> &dyn Any;
}

/// A dynamically typed template value.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// No value at all (Go's invalid `reflect.Value`): a missing map key,
    /// an unset variable. Prints as `<no value>`.
    #[default]
    Invalid,
    /// A nil `interface{}` (JSON `null`). Prints as `<nil>`.
    Nil,
    Bool(bool),
    Int(i64, IntKind),
    Uint(u64, UintKind),
    Float(f64),
    Complex(f64, f64),
    String(Rc<str>),
    Bytes(Rc<[u8]>),
    List(List),
    Map(MapRef),
    Object(Rc<dyn Object>),
    Func(Func),
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::String(Rc::from(s))
    }
    pub fn string(s: String) -> Value {
        Value::String(Rc::from(s))
    }
    /// A Go `int`.
    pub fn int(i: i64) -> Value {
        Value::Int(i, IntKind::Int)
    }
    /// A Go `int64`.
    pub fn int64(i: i64) -> Value {
        Value::Int(i, IntKind::Int64)
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(List::new(items))
    }
    pub fn string_list(items: Vec<String>) -> Value {
        Value::List(List::with_kind(
            items.into_iter().map(Value::string).collect(),
            ListKind::String,
        ))
    }
    pub fn map(m: Map) -> Value {
        Value::Map(MapRef::new(m))
    }
    pub fn object<O: Object + 'static>(o: O) -> Value {
        Value::Object(Rc::new(o))
    }

    /// True for `Invalid` and `Nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Invalid | Value::Nil)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&MapRef> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&List> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    /// Go's reflect kind.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Invalid | Value::Nil => Kind::Invalid,
            Value::Bool(_) => Kind::Bool,
            Value::Int(_, k) => match k {
                IntKind::Int => Kind::Int,
                IntKind::Int8 => Kind::Int8,
                IntKind::Int16 => Kind::Int16,
                IntKind::Int32 => Kind::Int32,
                IntKind::Int64 => Kind::Int64,
            },
            Value::Uint(_, k) => match k {
                UintKind::Uint => Kind::Uint,
                UintKind::Uint8 => Kind::Uint8,
                UintKind::Uint16 => Kind::Uint16,
                UintKind::Uint32 => Kind::Uint32,
                UintKind::Uint64 => Kind::Uint64,
                UintKind::Uintptr => Kind::Uintptr,
            },
            Value::Float(_) => Kind::Float64,
            Value::Complex(..) => Kind::Complex128,
            Value::String(_) => Kind::String,
            Value::Bytes(_) | Value::List(_) => Kind::Slice,
            Value::Map(_) => Kind::Map,
            Value::Object(o) => o.kind(),
            Value::Func(_) => Kind::Func,
        }
    }

    /// Go's type name as `%T` prints it; `<nil>` for nil.
    pub fn type_name(&self) -> String {
        match self {
            Value::Invalid | Value::Nil => "<nil>".to_string(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_, k) => k.go_name().into(),
            Value::Uint(_, k) => k.go_name().into(),
            Value::Float(_) => "float64".into(),
            Value::Complex(..) => "complex128".into(),
            Value::String(_) => "string".into(),
            Value::Bytes(_) => "[]uint8".into(),
            Value::List(l) => l.kind().go_name().into(),
            Value::Map(m) => m.kind().go_name().into(),
            Value::Object(o) => o.type_name(),
            Value::Func(f) => f.type_name(),
        }
    }

    /// Go template truthiness (`if`, `with`, `and`, `or`, `not`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Invalid | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i, _) => *i != 0,
            Value::Uint(u, _) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::Complex(r, i) => *r != 0.0 || *i != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(o) => o.truthy(),
            Value::Func(_) => true,
        }
    }

    /// Converts JSON data (values, CR specs) into template values. Numbers
    /// become `float64` exactly as Go's `encoding/json` decodes them into
    /// `interface{}`; `int_numbers` keeps integral numbers as `int64`
    /// instead (Helm's `--set` path).
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => {
                Value::list(deep(|| a.iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(o) => Value::Map(Value::map_from_json(o)),
        }
    }

    /// The map a JSON object reads as (see [`Value::from_json`]).
    pub fn map_from_json(o: &serde_json::Map<String, serde_json::Value>) -> MapRef {
        MapRef::new(deep(|| {
            o.iter()
                .map(|(k, v)| (k.clone(), Value::from_json(v)))
                .collect()
        }))
    }

    /// A JSON form of this value, as Go's `encoding/json` would marshal it
    /// (bytes as base64, objects through [`Object::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::Invalid | Value::Nil => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i, _) => J::from(*i),
            Value::Uint(u, _) => J::from(*u),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or(J::Null),
            Value::Complex(..) => J::Null,
            Value::String(s) => J::String(s.to_string()),
            Value::Bytes(b) => {
                use base64::Engine as _;
                J::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            Value::List(l) => J::Array(deep(|| l.iter().map(|v| v.to_json()).collect())),
            Value::Map(m) if m.is_nil_map() => J::Null,
            Value::Map(m) => J::Object(deep(|| {
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect()
            })),
            Value::Object(o) => o.to_json().unwrap_or_else(|| J::Object(Default::default())),
            Value::Func(_) => J::Null,
        }
    }

    /// A deep copy: maps and lists are copied recursively (Sprig `deepCopy`).
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(l) => Value::List(List::with_kind(
                deep(|| l.iter().map(|v| v.deep_copy()).collect()),
                l.kind(),
            )),
            Value::Map(m) => Value::Map(MapRef::with_kind(
                deep(|| {
                    m.borrow()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.deep_copy()))
                        .collect()
                }),
                m.kind(),
            )),
            other => other.clone(),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::str(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::string(s)
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::map(m)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::list(v)
    }
}

/// A parameter type of a function, used to convert and check arguments the
/// way Go's `text/template` does through reflection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `interface {}`: anything; a missing value arrives as `Value::Nil`.
    Any,
    /// `reflect.Value`: anything, missing values arrive as `Value::Invalid`
    /// (Go's builtins such as `len`, `index`, `eq` take these).
    Reflect,
    Bool,
    String,
    Int(IntKind),
    Uint(UintKind),
    Float64,
    Complex128,
    /// `[]interface {}` or, with another kind, that slice type.
    List(ListKind),
    /// `map[string]interface {}`; values of a named map type are assignable.
    Map,
    /// `[]byte`.
    Bytes,
}

impl Ty {
    pub fn go_name(self) -> &'static str {
        match self {
            Ty::Any => "interface {}",
            Ty::Reflect => "reflect.Value",
            Ty::Bool => "bool",
            Ty::String => "string",
            Ty::Int(k) => k.go_name(),
            Ty::Uint(k) => k.go_name(),
            Ty::Float64 => "float64",
            Ty::Complex128 => "complex128",
            Ty::List(k) => k.go_name(),
            Ty::Map => "map[string]interface {}",
            Ty::Bytes => "[]uint8",
        }
    }
}

/// An error a function returns; the engine reports it as
/// `error calling NAME: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncError(pub String);

impl FuncError {
    pub fn new(msg: impl Into<String>) -> Self {
        FuncError(msg.into())
    }
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for FuncError {
    fn from(s: String) -> Self {
        FuncError(s)
    }
}
impl From<&str> for FuncError {
    fn from(s: &str) -> Self {
        FuncError(s.to_string())
    }
}

/// The implementation of a function: arguments already converted to the
/// declared parameter types.
pub(crate) type FuncImpl =
    dyn Fn(&mut crate::func::CallCtx<'_>, Vec<Value>) -> Result<Value, FuncError>;

/// A callable: a template function or a host object's method.
#[derive(Clone)]
pub struct Func {
    pub params: Rc<[Ty]>,
    /// Type of the `...` parameter, if the function is variadic.
    pub variadic: Option<Ty>,
    /// The Go result type, shown by `%T` of the function value itself.
    pub result: &'static str,
    pub imp: Rc<FuncImpl>,
}

impl Func {
    /// This method with its receiver (the first parameter) fixed, as a Go
    /// method value.
    pub fn bind(&self, recv: Value) -> Func {
        let imp = self.imp.clone();
        Func {
            params: self.params.get(1..).unwrap_or_default().into(),
            variadic: self.variadic,
            result: self.result,
            imp: Rc::new(move |ctx, mut args| {
                args.insert(0, recv.clone());
                imp(ctx, args)
            }),
        }
    }

    /// A function with fixed parameters.
    pub fn new(
        params: &[Ty],
        imp: impl Fn(&mut crate::func::CallCtx<'_>, Vec<Value>) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func {
            params: params.into(),
            variadic: None,
            result: "interface {}",
            imp: Rc::new(imp),
        }
    }
    /// A function of fixed parameters that needs nothing from the render
    /// (most of Sprig's and Helm's), with its Go result type as `%T` of the
    /// function value shows it.
    pub fn pure(
        params: &[Ty],
        result: &'static str,
        imp: impl Fn(&[Value]) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func {
            params: params.into(),
            variadic: None,
            result,
            imp: Rc::new(move |_, args| imp(&args)),
        }
    }
    /// A function whose last parameter is `...variadic`.
    pub fn variadic(
        params: &[Ty],
        variadic: Ty,
        imp: impl Fn(&mut crate::func::CallCtx<'_>, Vec<Value>) -> Result<Value, FuncError> + 'static,
    ) -> Func {
        Func {
            params: params.into(),
            variadic: Some(variadic),
            result: "interface {}",
            imp: Rc::new(imp),
        }
    }
    pub fn type_name(&self) -> String {
        let mut s = String::from("func(");
        for (i, p) in self.params.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(p.go_name());
        }
        if let Some(v) = self.variadic {
            if !self.params.is_empty() {
                s.push_str(", ");
            }
            s.push_str("...");
            s.push_str(v.go_name());
        }
        s.push_str(") ");
        s.push_str(self.result);
        s
    }
}

impl fmt::Debug for Func {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.type_name())
    }
}

/// Runs one level of a recursive walk over nested data (JSON conversion,
/// deep copies), moving to a fresh stack segment when this one runs low:
/// values may nest as deep as Go's readers allow (10,000 levels).
fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Noticing writes to the maps a thread's templates share: Helm runs a
/// chart's templates one after another over the same `.Values` (and the
/// rest of each chart's context), so a template that changes one of those
/// maps (Sprig's `set`, `unset`, `merge`…) changes what the later ones
/// see. A host that runs templates on two threads, each over its own copy
/// of the contexts, watches the maps reachable from them and keeps the
/// split only when none was written.
pub mod watch {
    use std::cell::RefCell;
    use std::collections::HashSet;

    use super::{MapRef, Value};

    struct Watch {
        maps: HashSet<usize>,
        written: bool,
    }

    thread_local! {
        static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
    }

    fn key(m: &MapRef) -> usize {
        std::rc::Rc::as_ptr(&m.inner) as usize
    }

    /// Starts watching, on this thread, every map reachable from `roots`
    /// (values nested in maps and lists), as they are now.
    pub fn start(roots: &[Value]) {
        let mut maps = HashSet::new();
        let mut stack: Vec<Value> = roots.to_vec();
        while let Some(v) = stack.pop() {
            match v {
                Value::Map(m) if maps.insert(key(&m)) => {
                    stack.extend(m.borrow().values().cloned());
                }
                Value::List(l) => stack.extend(l.iter().cloned()),
                _ => {}
            }
        }
        WATCH.with(|w| {
            *w.borrow_mut() = Some(Watch {
                maps,
                written: false,
            })
        });
    }

    /// Stops watching on this thread; whether a watched map was written
    /// since [`start`].
    pub fn stop() -> bool {
        WATCH.with(|w| w.borrow_mut().take().is_some_and(|w| w.written))
    }

    /// Whether a watched map was written since [`start`] (watching goes on).
    pub fn written() -> bool {
        WATCH.with(|w| w.borrow().as_ref().is_some_and(|w| w.written))
    }

    /// Runs `f` with this thread's watch (if any) looking away: for the
    /// host's own writes, which are no template's doing.
    pub fn ignoring<R>(f: impl FnOnce() -> R) -> R {
        let watch = WATCH.with(|w| w.borrow_mut().take());
        let r = f();
        WATCH.with(|w| *w.borrow_mut() = watch);
        r
    }

    /// Notes a write to `m` (called before every change of a map).
    pub(super) fn writing(m: &MapRef) {
        WATCH.with(|w| {
            if let Some(w) = w.borrow_mut().as_mut() {
                if !w.written && w.maps.contains(&key(m)) {
                    w.written = true;
                }
            }
        });
    }

    #[cfg(test)]
    mod tests {
        use super::super::Map;
        use super::*;

        #[test]
        fn notices_writes_to_the_watched_maps_only() {
            let mut inner = Map::new();
            inner.insert("a".into(), Value::int(1));
            let inner = MapRef::new(inner);
            let mut top = Map::new();
            top.insert("list".into(), Value::list(vec![Value::Map(inner.clone())]));
            let top = Value::map(top);
            start(std::slice::from_ref(&top));
            let fresh = MapRef::new(Map::new());
            fresh.insert("x", Value::int(1));
            drop(fresh.borrow_mut());
            assert!(!stop(), "a map made after the start is not watched");
            start(std::slice::from_ref(&top));
            inner.insert("b", Value::int(2));
            assert!(stop(), "a map nested in a list is watched");
            inner.insert("c", Value::int(3));
            start(&[]);
            assert!(!stop(), "nothing is watched once stopped");
        }
    }
}
