//! Patch flavours: JSON patch, merge patch, strategic merge patch for the
//! built-in kinds (with a small table of list merge keys), and server-side
//! apply with per-manager field ownership recorded in `managedFields`.

use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The merge key of a list field in built-in kinds; `None` means atomic.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "volumeMounts"
        | "volumeDevices"
        | "imagePullSecrets" => Some("name"),
        "ports" => {
            let container = items.iter().any(|i| i.get("containerPort").is_some());
            Some(if container { "containerPort" } else { "port" })
        }
        "hostAliases" => Some("ip"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        "topologySpreadConstraints" => Some("topologyKey"),
        "resourceClaims" => Some("name"),
        _ => None,
    }
}

/// Lists of scalars whose strategic patches union instead of replace.
fn is_primitive_merge(field: &str) -> bool {
    matches!(field, "finalizers")
}

/// Applies a strategic merge patch (with `$patch`, `$retainKeys`,
/// `$deleteFromPrimitiveList` and `$setElementOrder` directives).
pub fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), String> {
    let Value::Object(p) = patch else {
        return Err("strategic merge patch must be a JSON object".into());
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        merge_map(t, p)?;
    }
    Ok(())
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

fn merge_map(t: &mut Map<String, Value>, p: &Map<String, Value>) -> Result<(), String> {
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *t = match strip_directives(&Value::Object(p.clone())) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            return Ok(());
        }
        Some("delete") => {
            t.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type {other:?} in $patch")),
    }
    for (k, v) in p {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(del)) = (t.get_mut(field), v) {
                list.retain(|x| !del.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(pm) => {
                if pm.get("$patch").and_then(Value::as_str) == Some("delete") {
                    t.remove(k);
                    continue;
                }
                match t.get_mut(k) {
                    Some(Value::Object(tm)) => merge_map(tm, pm)?,
                    _ => {
                        let mut fresh = Map::new();
                        merge_map(&mut fresh, pm)?;
                        t.insert(k.clone(), Value::Object(fresh));
                    }
                }
            }
            Value::Array(pa) => {
                let merged = merge_list(k, t.get(k), pa)?;
                t.insert(k.clone(), merged);
            }
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
    if let Some(Value::Array(keep)) = p.get("$retainKeys") {
        let keep: Vec<&str> = keep.iter().filter_map(Value::as_str).collect();
        t.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(())
}

fn merge_list(field: &str, current: Option<&Value>, patch: &[Value]) -> Result<Value, String> {
    let replace = patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"));
    let items: Vec<&Value> = patch
        .iter()
        .filter(|i| i.get("$patch").and_then(Value::as_str) != Some("replace"))
        .collect();
    let cur = current
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if replace || cur.is_empty() {
        return Ok(Value::Array(
            items
                .iter()
                .filter(|i| i.get("$patch").and_then(Value::as_str) != Some("delete"))
                .map(|i| strip_directives(i))
                .collect(),
        ));
    }
    if is_primitive_merge(field) {
        let mut out = cur;
        for i in items {
            if !out.contains(i) {
                out.push(i.clone());
            }
        }
        return Ok(Value::Array(out));
    }
    let all: Vec<Value> = cur.iter().chain(items.iter().copied()).cloned().collect();
    let Some(key) = merge_key(field, &all) else {
        return Ok(Value::Array(
            items.iter().map(|i| strip_directives(i)).collect(),
        ));
    };
    let mut out = cur;
    for item in items {
        let kv = item.get(key);
        let pos = kv.and_then(|kv| out.iter().position(|o| o.get(key) == Some(kv)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                if let (Value::Object(tm), Value::Object(pm)) = (&mut out[i], item) {
                    merge_map(tm, pm)?;
                } else {
                    out[i] = item.clone();
                }
            }
            (None, false) => out.push(strip_directives(item)),
        }
    }
    Ok(Value::Array(out))
}

/// One field path in managedFields form: `f:spec`, `k:{"name":"x"}`, `.`.
pub type FieldPath = Vec<String>;

/// Collects the field paths an object sets (leaves and keyed list items).
pub fn field_paths(obj: &Value, builtin: bool) -> BTreeSet<FieldPath> {
    let mut out = BTreeSet::new();
    if let Value::Object(m) = obj {
        for (k, v) in m {
            if k == "apiVersion" || k == "kind" {
                continue;
            }
            if k == "metadata" {
                if let Value::Object(meta) = v {
                    for (mk, mv) in meta {
                        if matches!(
                            mk.as_str(),
                            "labels" | "annotations" | "finalizers" | "ownerReferences"
                        ) {
                            walk(
                                mv,
                                mk,
                                &mut vec!["f:metadata".into(), format!("f:{mk}")],
                                &mut out,
                                builtin,
                            );
                        }
                    }
                }
                continue;
            }
            walk(v, k, &mut vec![format!("f:{k}")], &mut out, builtin);
        }
    }
    out
}

fn walk(
    v: &Value,
    field: &str,
    path: &mut FieldPath,
    out: &mut BTreeSet<FieldPath>,
    builtin: bool,
) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                path.push(format!("f:{k}"));
                walk(c, k, path, out, builtin);
                path.pop();
            }
        }
        Value::Array(items) if builtin => match merge_key(field, items) {
            Some(key) if items.iter().all(|i| i.get(key).is_some()) => {
                for item in items {
                    let Some(kv) = item.get(key) else { continue };
                    path.push(format!("k:{}", json!({ key: kv })));
                    let mut dot = path.clone();
                    dot.push(".".into());
                    out.insert(dot);
                    if let Value::Object(im) = item {
                        for (k, c) in im {
                            path.push(format!("f:{k}"));
                            walk(c, k, path, out, builtin);
                            path.pop();
                        }
                    }
                    path.pop();
                }
            }
            _ => {
                out.insert(path.clone());
            }
        },
        _ => {
            out.insert(path.clone());
        }
    }
}

/// Renders a path set as a `fieldsV1` tree.
pub fn to_fields_v1(paths: &BTreeSet<FieldPath>) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for seg in p {
            let next = cur
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(m) = next else { break };
            cur = m;
        }
    }
    Value::Object(root)
}

/// Reads a `fieldsV1` tree back into leaf paths.
pub fn from_fields_v1(v: &Value) -> BTreeSet<FieldPath> {
    fn rec(v: &Value, path: &mut FieldPath, out: &mut BTreeSet<FieldPath>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, c) in m {
                    path.push(k.clone());
                    rec(c, path, out);
                    path.pop();
                }
            }
            _ => {
                if !path.is_empty() {
                    out.insert(path.clone());
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    rec(v, &mut Vec::new(), &mut out);
    out
}

fn step<'a>(cur: &'a Value, seg: &str) -> Option<&'a Value> {
    if let Some(f) = seg.strip_prefix("f:") {
        cur.get(f)
    } else if let Some(k) = seg.strip_prefix("k:") {
        let key: Map<String, Value> = serde_json::from_str(k).ok()?;
        cur.as_array()?
            .iter()
            .find(|i| key.iter().all(|(kk, kv)| i.get(kk) == Some(kv)))
    } else {
        Some(cur)
    }
}

/// The value at a field path, if present.
pub fn value_at<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = obj;
    for seg in path {
        if seg == "." {
            return Some(cur);
        }
        cur = step(cur, seg)?;
    }
    Some(cur)
}

/// Removes the field (or keyed list item, for a `.` path) at a path.
pub fn remove_at(obj: &mut Value, path: &[String]) {
    let (target, parent): (&[String], &[String]) = match path.last().map(String::as_str) {
        Some(".") => {
            let item = &path[..path.len() - 1];
            match item.split_last() {
                Some((_, parent)) => (item, parent),
                None => return,
            }
        }
        _ => match path.split_last() {
            Some((_, parent)) => (path, parent),
            None => return,
        },
    };
    let Some(last) = target.last() else { return };
    let mut cur = obj;
    for seg in parent {
        let next = if let Some(f) = seg.strip_prefix("f:") {
            cur.get_mut(f)
        } else if let Some(k) = seg.strip_prefix("k:") {
            let Ok(key) = serde_json::from_str::<Map<String, Value>>(k) else {
                return;
            };
            cur.as_array_mut().and_then(|a| {
                a.iter_mut()
                    .find(|i| key.iter().all(|(kk, kv)| i.get(kk) == Some(kv)))
            })
        } else {
            None
        };
        match next {
            Some(n) => cur = n,
            None => return,
        }
    }
    if let Some(f) = last.strip_prefix("f:") {
        if let Some(m) = cur.as_object_mut() {
            m.remove(f);
        }
    } else if let Some(k) = last.strip_prefix("k:") {
        if let (Ok(key), Some(a)) = (
            serde_json::from_str::<Map<String, Value>>(k),
            cur.as_array_mut(),
        ) {
            a.retain(|i| !key.iter().all(|(kk, kv)| i.get(kk) == Some(kv)));
        }
    }
}

/// Merges an applied configuration into the live object: maps recursively,
/// keyed lists of built-in kinds by key, everything else replaced.
pub fn apply_merge(live: &mut Value, applied: &Value, builtin: bool) {
    if builtin {
        // Applied configurations carry no directives, so strategic merge is
        // exactly the structural merge we want; only objects reach here.
        let _ = strategic_merge(live, applied);
    } else {
        merge_plain(live, applied);
    }
}

fn merge_plain(live: &mut Value, applied: &Value) {
    match (live, applied) {
        (Value::Object(l), Value::Object(a)) => {
            for (k, v) in a {
                match l.get_mut(k) {
                    Some(lv) if lv.is_object() && v.is_object() => merge_plain(lv, v),
                    _ => {
                        l.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (l, a) => *l = a.clone(),
    }
}

/// Human-readable form of a path for conflict messages (`.spec.replicas`).
pub fn display_path(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path {
        if let Some(f) = seg.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = seg.strip_prefix("k:") {
            s.push('[');
            s.push_str(k);
            s.push(']');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategic_containers_by_name() {
        let mut t = json!({"spec": {"containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"}]}});
        let p = json!({"spec": {"containers": [
            {"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "2"}]},
            {"name": "b", "$patch": "delete"},
            {"name": "c", "image": "c:1"}],
            "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}]}});
        strategic_merge(&mut t, &p).unwrap();
        assert_eq!(
            t,
            json!({"spec": {"containers": [
                {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                {"name": "c", "image": "c:1"}]}})
        );
    }

    #[test]
    fn strategic_replace_and_null() {
        let mut t = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]}, "data": {"k": "v"}});
        let p = json!({"metadata": {"labels": {"a": null}, "finalizers": ["y"]},
            "data": {"$patch": "replace", "n": "m"}});
        strategic_merge(&mut t, &p).unwrap();
        assert_eq!(
            t,
            json!({"metadata": {"labels": {"b": "2"}, "finalizers": ["x", "y"]}, "data": {"n": "m"}})
        );
        let p = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}});
        strategic_merge(&mut t, &p).unwrap();
        assert_eq!(t["metadata"]["finalizers"], json!(["y"]));
    }

    #[test]
    fn field_sets_roundtrip() {
        let o = json!({"apiVersion": "v1", "metadata": {"name": "x", "labels": {"a": "1"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let paths = field_paths(&o, true);
        let fv = to_fields_v1(&paths);
        assert_eq!(
            fv["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:image"],
            json!({})
        );
        assert_eq!(from_fields_v1(&fv), paths);
        let p: FieldPath = vec![
            "f:spec".into(),
            "f:template".into(),
            "f:spec".into(),
            "f:containers".into(),
            "k:{\"name\":\"c\"}".into(),
            "f:image".into(),
        ];
        assert_eq!(value_at(&o, &p), Some(&json!("i")));
        let mut o2 = o.clone();
        let mut dot = p.clone();
        dot.pop();
        dot.push(".".into());
        remove_at(&mut o2, &dot);
        assert_eq!(o2["spec"]["template"]["spec"]["containers"], json!([]));
        assert_eq!(
            display_path(&p),
            ".spec.template.spec.containers[{\"name\":\"c\"}].image"
        );
    }
}
