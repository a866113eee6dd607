//! The methods of Helm's `common.Values` (chartutil's `Values`) that
//! templates call on `.Values`: `.Values.AsMap`, `.Values.YAML`,
//! `.Values.Table "a.b"` and `.Values.PathValue "a.b"`.

use gocodec::yaml;
use gotmpl::{Func, FuncError, FuncMap, Map, MapKind, MapRef, Ty, Value};

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The Go type of `.Values` (and `.Template`), whose methods templates may
/// call: `.Values.AsMap`, `.Values.YAML`, `.Values.Table "a.b"`,
/// `.Values.PathValue "a.b"`.
pub(crate) const VALUES_TYPE: &str = "common.Values";

/// Helm's `istable`: a `map[string]interface {}` (or `Values`).
fn is_table(v: &Value) -> bool {
    matches!(v, Value::Map(m) if m.kind() != MapKind::String)
}

/// Helm's `Values.Table`: the table at a dotted path, still a `Values`.
fn values_table(recv: &Value, path: &str) -> Result<MapRef, FuncError> {
    let mut cur = match recv {
        Value::Map(m) => m.clone(),
        _ => MapRef::new(Map::new()),
    };
    for part in path.split('.') {
        match cur.get(part) {
            Some(Value::Map(m)) if m.kind() != MapKind::String => cur = m,
            _ => return Err(FuncError::new(format!("{part:?} is not a table"))),
        }
    }
    Ok(cur.retyped(MapKind::Named(VALUES_TYPE)))
}

/// The methods of Helm's `common.Values` (`Encode` needs an `io.Writer`,
/// which templates cannot make, so it is left out).
pub fn register(m: &mut FuncMap) {
    m.insert_method(
        VALUES_TYPE,
        "AsMap",
        Func::new(&[Ty::Any], |_, a| match &a[0] {
            Value::Map(m) => Ok(Value::Map(m.retyped(MapKind::Any))),
            _ => Ok(Value::map(Map::new())),
        }),
    );
    m.insert_method(
        VALUES_TYPE,
        "YAML",
        Func::new(&[Ty::Any], |_, a| {
            // `yaml.Marshal` keeps the final newline that `toYaml` trims.
            yaml::to_yaml(&a[0])
                .map(|y| Value::string(format!("{y}\n")))
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    m.insert_method(
        VALUES_TYPE,
        "Table",
        Func::new(&[Ty::Any, Ty::String], |_, a| {
            values_table(&a[0], s(&a[1])).map(Value::Map)
        }),
    );
    m.insert_method(
        VALUES_TYPE,
        "PathValue",
        Func::new(&[Ty::Any, Ty::String], |_, a| {
            let path = s(&a[1]);
            if path.is_empty() {
                return Err(FuncError::new("YAML path cannot be empty"));
            }
            let (parent, key) = match path.rsplit_once('.') {
                Some((p, k)) => match values_table(&a[0], p) {
                    Ok(t) => (t, k),
                    Err(_) => return Err(FuncError::new(format!("{k:?} is not a value"))),
                },
                None => match &a[0] {
                    Value::Map(m) => (m.clone(), path),
                    _ => (MapRef::new(Map::new()), path),
                },
            };
            match parent.get(key) {
                Some(v) if !is_table(&v) => Ok(v),
                _ => Err(FuncError::new(format!("{key:?} is not a value"))),
            }
        }),
    );
}
