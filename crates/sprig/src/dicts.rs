//! Sprig's dict functions. Dicts are shared maps: `set`, `unset`, `merge`
//! and `mergeOverwrite` change their first argument in place (every holder
//! sees it) and return it; merging follows dario.cat/mergo's rules.

use gotmpl::{Func, FuncError, FuncMap, ListKind, Map, MapKind, MapRef, Ty, Value};

use super::conv::{is_empty, reg, s, strval};

/// A `map[string]interface {}` parameter: named map types arrive retyped,
/// as Go converts them on assignment; nil is Go's nil map (`None`).
fn dict_opt(v: &Value) -> Result<Option<MapRef>, FuncError> {
    match v {
        Value::Map(m) => Ok(Some(m.retyped(MapKind::Any))),
        Value::Nil | Value::Invalid => Ok(None),
        other => Err(FuncError::new(format!(
            "wrong type for value; expected map[string]interface {{}}; got {}",
            other.type_name()
        ))),
    }
}

/// A map parameter that is read only: a nil map reads as empty.
fn dict_arg(v: &Value) -> Result<MapRef, FuncError> {
    Ok(dict_opt(v)?.unwrap_or_else(|| MapRef::new(Map::new())))
}

/// mergo's `isEmptyValue` with interfaces dereferenced.
fn mergo_empty(v: &Value) -> bool {
    is_empty(v)
}

/// mergo's `deepMerge` of two `map[string]interface {}` values.
fn merge_maps(dst: &MapRef, src: &MapRef, overwrite: bool) {
    if dst.ptr_eq(src) {
        return;
    }
    for (key, sv) in src.entries() {
        let dv = dst.get(&key);
        if sv.is_nil() {
            if overwrite {
                dst.insert(key, Value::Nil);
            }
            continue;
        }
        match &sv {
            Value::Map(sm) => {
                // Only an existing map in dst is merged into; other values stay.
                if let Some(Value::Map(dm)) = &dv {
                    merge_maps(dm, sm, overwrite);
                }
            }
            Value::List(sl) => {
                let src_nonempty = !src.is_empty();
                let take_src = src_nonempty && (overwrite || dst.is_empty());
                let new = if take_src {
                    Value::List(sl.clone())
                } else {
                    match &dv {
                        None | Some(Value::Nil) | Some(Value::Invalid) => {
                            Value::List(gotmpl::List::with_kind(Vec::new(), sl.kind()))
                        }
                        Some(d) => d.clone(),
                    }
                };
                dst.insert(key.clone(), new);
            }
            _ => {}
        }
        if let Some(d) = &dv {
            // A non-empty dst keeps its slice, and a map merged into a map is done.
            let both_maps = matches!((&sv, d), (Value::Map(_), Value::Map(_)));
            if !mergo_empty(d) && (matches!(sv, Value::List(_)) || both_maps) {
                continue;
            }
        }
        let is_ptr = matches!(&sv, Value::Object(o) if o.kind() == gotmpl::Kind::Ptr);
        if (!is_ptr && overwrite) || dv.is_none() || dv.as_ref().is_some_and(mergo_empty) {
            dst.insert(key, sv);
        }
    }
}

fn merge_fn(a: &[Value], overwrite: bool) -> Result<Value, FuncError> {
    // mergo gives a nil dst a fresh map when there is something to merge.
    let dst = dict_arg(&a[0])?;
    for src in &a[1..] {
        if let Some(src) = dict_opt(src)? {
            merge_maps(&dst, &src, overwrite);
        }
    }
    Ok(Value::Map(dst))
}

/// Sprig's `dig`: keys..., default, dict. Only a plain `map[string]interface {}`
/// can be dug into (Go type-asserts it).
fn dig(a: &[Value]) -> Result<Value, FuncError> {
    if a.len() < 3 {
        return Err(FuncError::new("dig needs at least three arguments"));
    }
    let assert_map = |v: &Value| -> Result<MapRef, FuncError> {
        match v {
            Value::Map(m) if m.kind() == MapKind::Any => Ok(m.clone()),
            other => Err(FuncError::new(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                other.type_name()
            ))),
        }
    };
    let mut dict = assert_map(&a[a.len() - 1])?;
    let def = a[a.len() - 2].clone();
    let keys = &a[..a.len() - 2];
    let mut ks = Vec::with_capacity(keys.len());
    for k in keys {
        match k {
            Value::String(x) => ks.push(x.to_string()),
            other => {
                return Err(FuncError::new(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    other.type_name()
                )))
            }
        }
    }
    for (n, k) in ks.iter().enumerate() {
        let Some(step) = dict.get(k) else {
            return Ok(def);
        };
        if n + 1 == ks.len() {
            return Ok(step);
        }
        dict = assert_map(&step)?;
    }
    Ok(def)
}

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "dict",
        Func::variadic(&[], Ty::Any, |_, a| {
            let mut d = Map::new();
            for pair in a.chunks(2) {
                let key = strval(&pair[0]);
                let val = pair.get(1).cloned().unwrap_or_else(|| Value::str(""));
                d.insert(key, val);
            }
            Ok(Value::map(d))
        }),
    );
    m.insert(
        "get",
        Func::new(&[Ty::Map, Ty::String], |_, a| {
            let d = dict_arg(&a[0])?;
            Ok(d.get(s(&a[1])).unwrap_or_else(|| Value::str("")))
        }),
    );
    m.insert(
        "set",
        Func::new(&[Ty::Map, Ty::String, Ty::Any], |_, a| {
            let d =
                dict_opt(&a[0])?.ok_or_else(|| FuncError::new("assignment to entry in nil map"))?;
            d.insert(s(&a[1]), a[2].clone());
            Ok(Value::Map(d))
        }),
    );
    m.insert(
        "unset",
        Func::new(&[Ty::Map, Ty::String], |_, a| {
            let d = dict_arg(&a[0])?;
            d.borrow_mut().remove(s(&a[1]));
            Ok(Value::Map(d))
        }),
    );
    m.insert(
        "hasKey",
        Func::new(&[Ty::Map, Ty::String], |_, a| {
            let d = dict_arg(&a[0])?;
            let has = d.borrow().contains_key(s(&a[1]));
            Ok(Value::Bool(has))
        }),
    );
    m.insert(
        "pluck",
        Func::variadic(&[Ty::String], Ty::Map, |_, a| {
            let key = s(&a[0]);
            let mut out = Vec::new();
            for d in &a[1..] {
                if let Some(v) = dict_arg(d)?.get(key) {
                    out.push(v);
                }
            }
            Ok(Value::list(out))
        }),
    );
    m.insert(
        "keys",
        Func::variadic(&[], Ty::Map, |_, a| {
            let mut out = Vec::new();
            for d in &a {
                out.extend(dict_arg(d)?.borrow().keys().cloned());
            }
            Ok(Value::string_list(out))
        }),
    );
    m.insert(
        "pick",
        Func::variadic(&[Ty::Map], Ty::String, |_, a| {
            let d = dict_arg(&a[0])?;
            let mut out = Map::new();
            for k in &a[1..] {
                if let Some(v) = d.get(s(k)) {
                    out.insert(s(k).to_string(), v);
                }
            }
            Ok(Value::map(out))
        }),
    );
    m.insert(
        "omit",
        Func::variadic(&[Ty::Map], Ty::String, |_, a| {
            let d = dict_arg(&a[0])?;
            let omit: Vec<&str> = a[1..].iter().map(s).collect();
            let out = d
                .entries()
                .into_iter()
                .filter(|(k, _)| !omit.contains(&k.as_str()))
                .collect();
            Ok(Value::map(out))
        }),
    );
    m.insert(
        "values",
        Func::new(&[Ty::Map], |_, a| {
            let d = dict_arg(&a[0])?;
            let out = d.entries().into_iter().map(|(_, v)| v).collect();
            Ok(Value::List(gotmpl::List::with_kind(out, ListKind::Any)))
        }),
    );
    reg(
        m,
        &["merge", "mustMerge"],
        Func::variadic(&[Ty::Map], Ty::Map, |_, a| merge_fn(&a, false)),
    );
    reg(
        m,
        &["mergeOverwrite", "mustMergeOverwrite"],
        Func::variadic(&[Ty::Map], Ty::Map, |_, a| merge_fn(&a, true)),
    );
    m.insert("dig", Func::variadic(&[], Ty::Any, |_, a| dig(&a)));
    reg(
        m,
        &["deepCopy", "mustDeepCopy"],
        Func::new(&[Ty::Any], |_, a| {
            if a[0].is_nil() {
                return Err(FuncError::new(
                    "reflect: call of reflect.Value.Type on zero Value",
                ));
            }
            Ok(a[0].deep_copy())
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::fmt_v;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn out(name: &str, args: Vec<Value>) -> String {
        fmt_v(&call(name, args).expect("ok"))
    }

    fn d(kv: Vec<(&str, Value)>) -> Value {
        Value::map(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    fn n(x: i64) -> Value {
        Value::int(x)
    }

    #[test]
    fn dict_get_set() {
        assert_eq!(
            out("dict", vec!["a".into(), n(1), "b".into()]),
            "map[a:1 b:]"
        );
        assert_eq!(out("dict", vec![Value::Nil, n(1)]), "map[<nil>:1]");
        assert_eq!(
            out("dict", vec![Value::Float(1.5), "x".into()]),
            "map[1.5:x]"
        );
        let x = d(vec![("a", n(1))]);
        assert_eq!(out("get", vec![x.clone(), "z".into()]), "");
        call("set", vec![x.clone(), "b".into(), n(2)]).unwrap();
        assert_eq!(fmt_v(&x), "map[a:1 b:2]");
        call("unset", vec![x.clone(), "a".into()]).unwrap();
        assert_eq!(fmt_v(&x), "map[b:2]");
        assert_eq!(out("hasKey", vec![x.clone(), "b".into()]), "true");
        let named = Value::Map(MapRef::with_kind(
            Map::new(),
            MapKind::Named("common.Values"),
        ));
        assert_eq!(
            call("set", vec![named, "k".into(), n(1)])
                .unwrap()
                .type_name(),
            "map[string]interface {}"
        );
    }

    #[test]
    fn pluck_keys_pick_omit_values() {
        let a = d(vec![("a", n(1))]);
        let b = d(vec![("b", n(2))]);
        let c = d(vec![("a", n(3))]);
        assert_eq!(
            out("pluck", vec!["a".into(), a.clone(), b.clone(), c]),
            "[1 3]"
        );
        assert_eq!(out("keys", vec![a.clone(), b]), "[a b]");
        let abc = d(vec![("a", n(1)), ("b", n(2)), ("c", n(3))]);
        assert_eq!(
            out("pick", vec![abc.clone(), "a".into(), "c".into()]),
            "map[a:1 c:3]"
        );
        assert_eq!(
            out("omit", vec![abc.clone(), "a".into(), "c".into()]),
            "map[b:2]"
        );
        assert_eq!(out("values", vec![abc]), "[1 2 3]");
    }

    #[test]
    fn merging() {
        let r = out(
            "merge",
            vec![d(vec![("a", n(1))]), d(vec![("a", n(2)), ("b", n(3))])],
        );
        assert_eq!(r, "map[a:1 b:3]");
        let r = out(
            "mergeOverwrite",
            vec![d(vec![("a", n(1))]), d(vec![("a", n(2)), ("b", n(3))])],
        );
        assert_eq!(r, "map[a:2 b:3]");
        let r = out(
            "mergeOverwrite",
            vec![
                d(vec![("a", d(vec![("x", n(1))]))]),
                d(vec![("a", d(vec![("x", n(2)), ("y", n(2))]))]),
            ],
        );
        assert_eq!(r, "map[a:map[x:2 y:2]]");
        assert_eq!(
            out(
                "mergeOverwrite",
                vec![d(vec![("a", n(1))]), d(vec![("a", n(0))])]
            ),
            "map[a:0]"
        );
        assert_eq!(
            out(
                "mergeOverwrite",
                vec![d(vec![("a", n(1))]), d(vec![("a", Value::Nil)])]
            ),
            "map[a:<nil>]"
        );
        assert_eq!(
            out("merge", vec![d(vec![("a", n(0))]), d(vec![("a", n(5))])]),
            "map[a:5]"
        );
        let l1 = Value::list(vec![n(1)]);
        let l23 = Value::list(vec![n(2), n(3)]);
        assert_eq!(
            out(
                "merge",
                vec![d(vec![("l", l1.clone())]), d(vec![("l", l23)])]
            ),
            "map[l:[1]]"
        );
        assert_eq!(
            out(
                "mergeOverwrite",
                vec![
                    d(vec![("l", Value::list(vec![n(1), n(2)]))]),
                    d(vec![("l", Value::list(vec![n(3)]))])
                ]
            ),
            "map[l:[3]]"
        );
        // Scalars are copied, so later changes to the source do not show.
        let src = d(vec![("a", n(1))]);
        let dst = d(vec![]);
        call("merge", vec![dst.clone(), src.clone()]).unwrap();
        call("set", vec![src, "a".into(), n(2)]).unwrap();
        assert_eq!(fmt_v(&dst), "map[a:1]");
    }

    #[test]
    fn digging_and_copying() {
        let inner = d(vec![("b", "found".into())]);
        let root = d(vec![("a", inner)]);
        assert_eq!(
            out(
                "dig",
                vec!["a".into(), "b".into(), "def".into(), root.clone()]
            ),
            "found"
        );
        assert_eq!(
            out("dig", vec!["a".into(), "x".into(), "def".into(), root]),
            "def"
        );
        let bad = d(vec![("a", "str".into())]);
        assert!(call("dig", vec!["a".into(), "b".into(), "def".into(), bad]).is_err());
        let named = Value::Map(MapRef::with_kind(
            Map::new(),
            MapKind::Named("common.Values"),
        ));
        assert!(call("dig", vec!["a".into(), "def".into(), named]).is_err());
        assert!(call("deepCopy", vec![Value::Nil]).is_err());
        assert_eq!(out("hasKey", vec![Value::Nil, "a".into()]), "false");
        assert_eq!(
            call("set", vec![Value::Nil, "a".into(), n(1)])
                .unwrap_err()
                .0,
            "assignment to entry in nil map"
        );
        assert_eq!(
            out(
                "mergeOverwrite",
                vec![
                    d(vec![("a", "s".into())]),
                    d(vec![("a", d(vec![("y", n(2))]))])
                ]
            ),
            "map[a:map[y:2]]"
        );
        assert_eq!(
            out(
                "merge",
                vec![
                    d(vec![("a", "s".into())]),
                    d(vec![("a", d(vec![("y", n(2))]))])
                ]
            ),
            "map[a:s]"
        );
        let orig = d(vec![("a", Value::list(vec![n(1)]))]);
        let copy = call("deepCopy", vec![orig.clone()]).unwrap();
        call("set", vec![copy.clone(), "a".into(), n(2)]).unwrap();
        assert_eq!(fmt_v(&orig), "map[a:[1]]");
        assert_eq!(fmt_v(&copy), "map[a:2]");
    }
}
