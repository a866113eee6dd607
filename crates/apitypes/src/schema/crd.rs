//! Compiles a CRD version's structural `openAPIV3Schema` into a [`Schema`]:
//! the types structured-merge-diff uses, plus the value constraints the
//! apiextensions validator checks (see `validation::crd`).

use super::{Field, ListKind, Obj, Scalar, Schema, Ty};
use serde_json::Value;
use std::sync::Arc;

/// Value constraints of one schema node.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Checks {
    /// The declared `type` (`object`, `string`…), for type errors.
    pub(crate) type_name: Option<String>,
    pub(crate) nullable: bool,
    pub(crate) enumeration: Option<Vec<Value>>,
    pub(crate) minimum: Option<f64>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) exclusive_maximum: bool,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
    pub(crate) pattern: Option<String>,
    pub(crate) min_items: Option<u64>,
    pub(crate) max_items: Option<u64>,
    pub(crate) min_properties: Option<u64>,
    pub(crate) max_properties: Option<u64>,
    pub(crate) int_or_string: bool,
}

impl Checks {
    fn from(node: &Value) -> Option<Box<Checks>> {
        let f = |k: &str| node.get(k).and_then(Value::as_f64);
        let u = |k: &str| node.get(k).and_then(Value::as_u64);
        let c = Checks {
            type_name: node.get("type").and_then(Value::as_str).map(str::to_string),
            nullable: node.get("nullable").and_then(Value::as_bool) == Some(true),
            enumeration: node.get("enum").and_then(Value::as_array).cloned(),
            minimum: f("minimum"),
            maximum: f("maximum"),
            exclusive_minimum: node.get("exclusiveMinimum").and_then(Value::as_bool) == Some(true),
            exclusive_maximum: node.get("exclusiveMaximum").and_then(Value::as_bool) == Some(true),
            min_length: u("minLength"),
            max_length: u("maxLength"),
            pattern: node
                .get("pattern")
                .and_then(Value::as_str)
                .map(str::to_string),
            min_items: u("minItems"),
            max_items: u("maxItems"),
            min_properties: u("minProperties"),
            max_properties: u("maxProperties"),
            int_or_string: node
                .get("x-kubernetes-int-or-string")
                .and_then(Value::as_bool)
                == Some(true),
        };
        (c != Checks::default()).then(|| Box::new(c))
    }
}

/// The schema of one CRD version; `None` when the version has none.
pub(crate) fn compile(open_api_v3: &Value, kind: &str) -> Schema {
    let mut objs = Vec::new();
    let root = compile_node(open_api_v3, kind, &mut objs, true);
    let root_idx = match root {
        Ty::Obj(i) => Some(i),
        _ => None,
    };
    Schema {
        objs: Arc::new(objs),
        root: root_idx,
        root_checks: Checks::from(open_api_v3),
    }
}

fn flag(node: &Value, k: &str) -> bool {
    node.get(k).and_then(Value::as_bool) == Some(true)
}

fn compile_node(node: &Value, name: &str, objs: &mut Vec<Obj>, is_root: bool) -> Ty {
    let ty = node.get("type").and_then(Value::as_str).unwrap_or("");
    if flag(node, "x-kubernetes-int-or-string") {
        return Ty::Scalar(Scalar::IntOrString);
    }
    let embedded = flag(node, "x-kubernetes-embedded-resource");
    let preserve = flag(node, "x-kubernetes-preserve-unknown-fields");
    match ty {
        // An object that keeps unknown fields is still an object: the type is checked
        // (`spec: "x"` is refused) and what it holds is deduced.
        "object" | ""
            if node.get("properties").is_some()
                || embedded
                || is_root
                || (preserve && ty == "object") =>
        {
            let idx = objs.len();
            objs.push(Obj::default());
            let mut o = Obj {
                name: name.to_string(),
                package: String::new(),
                atomic: node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
                preserve_unknown: preserve,
                embedded,
                required: crate::strings(node.get("required")),
                ..Obj::default()
            };
            if let Some(props) = node.get("properties").and_then(Value::as_object) {
                for (k, child) in props {
                    let t = compile_node(child, k, objs, false);
                    o.fields.insert(
                        k.clone(),
                        Field {
                            ty: t,
                            required: false,
                            checks: Checks::from(child),
                        },
                    );
                }
            }
            if is_root || embedded {
                // apiVersion, kind and metadata are implicit in every
                // object (and every embedded resource).
                for k in ["apiVersion", "kind"] {
                    o.fields.entry(k.into()).or_insert(Field {
                        ty: Ty::Scalar(Scalar::String),
                        required: false,
                        checks: None,
                    });
                }
                if is_root {
                    let meta = super::builtin_type("apimachinery::pkg::apis::meta::v1::ObjectMeta");
                    o.fields.insert(
                        "metadata".into(),
                        Field {
                            ty: meta.map(|m| embed_builtin(m, objs)).unwrap_or(Ty::Deduced),
                            required: false,
                            checks: None,
                        },
                    );
                } else {
                    o.fields.entry("metadata".into()).or_insert(Field {
                        ty: Ty::Deduced,
                        required: false,
                        checks: None,
                    });
                }
            }
            if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
                o.additional = Some(Box::new(compile_node(ap, name, objs, false)));
            }
            objs[idx] = o;
            Ty::Obj(idx)
        }
        "object" | "" => {
            if let Some(ap) = node.get("additionalProperties").filter(|a| a.is_object()) {
                Ty::Map {
                    elem: Box::new(compile_node(ap, name, objs, false)),
                    atomic: node.get("x-kubernetes-map-type").and_then(Value::as_str)
                        == Some("atomic"),
                }
            } else if preserve || ty.is_empty() {
                Ty::Deduced
            } else {
                // An object with neither properties nor additionalProperties
                // keeps nothing (structural pruning); model it as a struct
                // without fields.
                let idx = objs.len();
                objs.push(Obj {
                    name: name.to_string(),
                    ..Obj::default()
                });
                Ty::Obj(idx)
            }
        }
        "array" => {
            let elem = node
                .get("items")
                .map(|i| compile_node(i, name, objs, false))
                .unwrap_or(Ty::Deduced);
            let kind = match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListKind::Set,
                Some("map") => {
                    ListKind::Map(crate::strings(node.get("x-kubernetes-list-map-keys")))
                }
                _ => ListKind::Atomic,
            };
            Ty::List {
                elem: Box::new(elem),
                kind,
            }
        }
        "string" => Ty::Scalar(Scalar::String),
        "integer" => Ty::Scalar(Scalar::Int64),
        "number" => Ty::Scalar(Scalar::Number),
        "boolean" => Ty::Scalar(Scalar::Bool),
        _ => Ty::Deduced,
    }
}

/// Copies a built-in struct type (and what it references) into a CRD's
/// own type list, so one index space serves the whole CR.
fn embed_builtin(root: (Arc<Vec<Obj>>, usize), objs: &mut Vec<Obj>) -> Ty {
    let (table, start) = root;
    let mut map = std::collections::HashMap::new();
    fn copy(
        table: &[Obj],
        i: usize,
        objs: &mut Vec<Obj>,
        map: &mut std::collections::HashMap<usize, usize>,
    ) -> usize {
        if let Some(j) = map.get(&i) {
            return *j;
        }
        let j = objs.len();
        map.insert(i, j);
        objs.push(Obj::default());
        let mut o = table[i].clone();
        for f in o.fields.values_mut() {
            f.ty = remap(&f.ty, table, objs, map);
        }
        objs[j] = o;
        j
    }
    fn remap(
        ty: &Ty,
        table: &[Obj],
        objs: &mut Vec<Obj>,
        map: &mut std::collections::HashMap<usize, usize>,
    ) -> Ty {
        match ty {
            Ty::Obj(i) => Ty::Obj(copy(table, *i, objs, map)),
            Ty::Map { elem, atomic } => Ty::Map {
                elem: Box::new(remap(elem, table, objs, map)),
                atomic: *atomic,
            },
            Ty::List { elem, kind } => Ty::List {
                elem: Box::new(remap(elem, table, objs, map)),
                kind: kind.clone(),
            },
            other => other.clone(),
        }
    }
    Ty::Obj(copy(&table, start, objs, &mut map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_structural_schemas() {
        let s = compile(
            &json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["size"], "properties": {
                "size": {"type": "integer", "minimum": 1},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true}
            }}}}),
            "Widget",
        );
        let root = s.root_ty();
        let (spec, _) = s.field_ty(&root, "spec").unwrap();
        let Ty::Obj(i) = spec else { panic!() };
        assert_eq!(s.obj(i).required, vec!["size".to_string()]);
        assert!(matches!(
            s.field_ty(&spec, "ports").unwrap().0,
            Ty::List {
                kind: ListKind::Map(_),
                ..
            }
        ));
        assert!(matches!(
            s.field_ty(&spec, "labels").unwrap().0,
            Ty::Map { .. }
        ));
        // An object keeping unknown fields: checked as an object, its fields deduced.
        let (free, _) = s.field_ty(&spec, "free").unwrap();
        assert!(matches!(free, Ty::Obj(_)), "{free:?}");
        assert_eq!(s.field_ty(&free, "anything").unwrap(), (Ty::Deduced, false));
        assert_eq!(
            s.field_ty(&spec, "port").unwrap().0,
            Ty::Scalar(Scalar::IntOrString)
        );
        let (meta, _) = s.field_ty(&root, "metadata").unwrap();
        assert!(matches!(
            s.field_ty(&meta, "labels").unwrap().0,
            Ty::Map { .. }
        ));
    }
}
