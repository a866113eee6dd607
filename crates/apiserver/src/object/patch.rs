//! Strategic merge patch for the built-in kinds (with a small table of list
//! merge keys and the `$patch`, `$retainKeys`, `$deleteFromPrimitiveList`
//! directives). Server-side apply lives in `typed` and `managed`.

use serde_json::{Map, Value};

/// The merge key of a list field in built-in kinds; `None` means atomic.
fn merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets" => Some("name"),
        // The Go types' `patchMergeKey` tags: mounts are keyed by where they mount.
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
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
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), String> {
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
        if let (Some(field), Value::Array(order)) = (k.strip_prefix("$setElementOrder/"), v) {
            // An order without the list: only the order changes.
            if !p.get(field).is_some_and(Value::is_array) {
                if let Some(mut list) = t.get(field).cloned() {
                    set_element_order(field, t.get(field), &mut list, order);
                    t.insert(field.to_string(), list);
                }
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
                let mut merged = merge_list(k, t.get(k), pa)?;
                if let Some(Value::Array(order)) = p.get(&format!("$setElementOrder/{k}")) {
                    set_element_order(k, t.get(k), &mut merged, order);
                }
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

/// Orders a merged list as the patch's `$setElementOrder/<field>` says: the items it
/// names in its order, the items only the server had kept where they stood relative
/// to those (Go's `normalizeElementOrder`: both runs merged by their index in the
/// server's list; an item new to the server follows the one named before it).
fn set_element_order(field: &str, server: Option<&Value>, merged: &mut Value, order: &[Value]) {
    let Value::Array(items) = merged else {
        return;
    };
    let server = server
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let all: Vec<Value> = server.iter().chain(items.iter()).cloned().collect();
    let key = merge_key(field, &all);
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let wanted: Vec<Value> = order.iter().map(&id).collect();
    let server_at = |v: &Value| server.iter().position(|s| id(s) == id(v));
    let mut named: Vec<(f64, Value)> = Vec::new();
    let mut before = -1.0;
    for w in &wanted {
        if let Some(item) = items.iter().find(|i| id(i) == *w) {
            let at = server_at(item).map_or(before + 0.5, |i| i as f64);
            before = at;
            named.push((at, item.clone()));
        }
    }
    let rest: Vec<(f64, Value)> = items
        .iter()
        .filter(|i| !wanted.contains(&id(i)))
        .map(|i| (server_at(i).map_or(f64::MAX, |i| i as f64), i.clone()))
        .collect();
    let (mut a, mut b) = (named.into_iter().peekable(), rest.into_iter().peekable());
    let mut out = Vec::with_capacity(items.len());
    loop {
        let take_rest = match (a.peek(), b.peek()) {
            (Some((x, _)), Some((y, _))) => y < x,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (None, None) => break,
        };
        let next = if take_rest { b.next() } else { a.next() };
        out.extend(next.map(|(_, v)| v));
    }
    *items = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn set_element_order_orders_the_merged_list() {
        // A mount replaced at the front stays at the front; one only the server
        // had keeps its place.
        let mut t = json!({"volumeMounts": [
            {"name": "a", "mountPath": "/var/a"},
            {"name": "s", "mountPath": "/server-only"},
            {"name": "c", "mountPath": "/c"}]});
        let p = json!({
            "$setElementOrder/volumeMounts": [{"mountPath": "/a"}, {"mountPath": "/c"}],
            "volumeMounts": [{"name": "a", "mountPath": "/a"}, {"mountPath": "/var/a", "$patch": "delete"}]});
        strategic_merge(&mut t, &p).unwrap();
        let paths: Vec<&str> = t["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["/a", "/server-only", "/c"]);
    }

    #[test]
    fn volume_mounts_merge_by_mount_path() {
        // Two mounts of one volume differ only by path; deleting one keeps the other.
        let mut t = json!({"volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "data", "mountPath": "/cache"}]});
        let p = json!({"volumeMounts": [{"mountPath": "/cache", "$patch": "delete"}]});
        strategic_merge(&mut t, &p).unwrap();
        assert_eq!(
            t,
            json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}]})
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
}
