//! Field paths and sets as structured-merge-diff defines them, with their
//! `fieldsV1` encoding (`f:name`, `k:{"name":"x"}`, `v:"x"`, `i:0`, `.`)
//! and the display form used in conflict messages
//! (`.spec.containers[name="x"].image`).

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One path: its elements in `fieldsV1` form (`f:spec`, `k:{…}`, `v:…`).
pub type Path = Vec<String>;

/// A set of paths; a member is owned, its children are separate members.
pub type Set = BTreeSet<Path>;

pub fn field(name: &str) -> String {
    format!("f:{name}")
}

/// The element of an associative list, keyed by `keys` (sorted by name).
pub fn key(keys: &Map<String, Value>) -> String {
    // serde_json's map is ordered by key, as structured-merge-diff orders
    // key fields.
    format!("k:{}", Value::Object(keys.clone()))
}

/// The element of a set.
pub fn value(v: &Value) -> String {
    format!("v:{v}")
}

/// Renders a set as a `fieldsV1` tree: a member with children carries `.`.
pub fn to_fields_v1(set: &Set) -> Value {
    #[derive(Default)]
    struct Node {
        member: bool,
        children: std::collections::BTreeMap<String, Node>,
    }
    fn render(n: &Node) -> Value {
        let mut m = Map::new();
        if n.member && !n.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, c) in &n.children {
            m.insert(k.clone(), render(c));
        }
        Value::Object(m)
    }
    let mut root = Node::default();
    for p in set {
        let mut cur = &mut root;
        for seg in p {
            cur = cur.children.entry(seg.clone()).or_default();
        }
        cur.member = true;
    }
    render(&root)
}

/// Reads a `fieldsV1` tree back into a set.
pub fn from_fields_v1(v: &Value) -> Set {
    fn rec(v: &Value, path: &mut Path, out: &mut Set) {
        let Value::Object(m) = v else { return };
        if (m.is_empty() || m.contains_key(".")) && !path.is_empty() {
            out.insert(path.clone());
        }
        for (k, c) in m {
            if k == "." {
                continue;
            }
            path.push(k.clone());
            rec(c, path, out);
            path.pop();
        }
    }
    let mut out = Set::new();
    rec(v, &mut Vec::new(), &mut out);
    out
}

/// The display form of a path (`.spec.ports[port=80,protocol="TCP"]`).
pub fn display(path: &[String]) -> String {
    let mut s = String::new();
    for seg in path {
        if let Some(f) = seg.strip_prefix("f:") {
            s.push('.');
            s.push_str(f);
        } else if let Some(k) = seg.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            s.push('[');
            s.push_str(&parts.join(","));
            s.push(']');
        } else if let Some(v) = seg.strip_prefix("v:") {
            s.push_str("[=");
            s.push_str(v);
            s.push(']');
        } else if let Some(i) = seg.strip_prefix("i:") {
            s.push('[');
            s.push_str(i);
            s.push(']');
        }
    }
    s
}

/// Whether `prefix` is a (not necessarily proper) prefix of `path`.
pub fn has_prefix(path: &[String], prefix: &[String]) -> bool {
    path.len() >= prefix.len() && path[..prefix.len()] == *prefix
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_roundtrip_with_members_that_have_children() {
        let mut set = Set::new();
        let item = vec![
            field("spec"),
            field("containers"),
            key(json!({"name": "c"}).as_object().unwrap()),
        ];
        set.insert(item.clone());
        let mut image = item.clone();
        image.push(field("image"));
        set.insert(image.clone());
        set.insert(vec![field("spec"), field("hostIPC")]);
        let v = to_fields_v1(&set);
        assert_eq!(
            v,
            json!({"f:spec": {"f:hostIPC": {}, "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}}})
        );
        assert_eq!(from_fields_v1(&v), set);
        assert_eq!(display(&image), ".spec.containers[name=\"c\"].image");
        let ports = vec![
            field("ports"),
            key(json!({"protocol": "TCP", "containerPort": 80})
                .as_object()
                .unwrap()),
        ];
        assert_eq!(display(&ports), ".ports[containerPort=80,protocol=\"TCP\"]");
        assert_eq!(
            display(&[field("finalizers"), value(&json!("a"))]),
            ".finalizers[=\"a\"]"
        );
    }
}
