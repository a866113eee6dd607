//! Schema-aware operations on objects, after structured-merge-diff's typed
//! values: the field set an applied configuration owns, the comparison of
//! two objects (added, removed, modified paths), the merge of an applied
//! configuration into a live object, removal of paths, and the shape an
//! object takes after a round trip through the Go types (omitted empty
//! values), which is what makes unchanged empty values conflict.

use crate::fieldset::{self, Path, Set};
use crate::schema::{key_default, ListKind, Schema, Ty};
use serde_json::{Map, Value};

/// What changed between two objects.
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: Set,
    pub removed: Set,
    pub modified: Set,
}

impl Comparison {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.modified.is_empty()
    }
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

/// How a value of type `ty` is walked.
enum Shape<'a> {
    Leaf,
    Fields(&'a Ty),
    Items(&'a Ty, &'a ListKind),
}

fn shape<'a>(s: &'a Schema, ty: &'a Ty, sample: Option<&Value>) -> Shape<'a> {
    match ty {
        Ty::Obj(i) if !s.obj(*i).atomic => Shape::Fields(ty),
        Ty::Map { atomic: false, .. } => Shape::Fields(ty),
        Ty::Deduced if sample.is_some_and(Value::is_object) => Shape::Fields(ty),
        Ty::List { elem, kind } if *kind != ListKind::Atomic => Shape::Items(elem, kind),
        _ => Shape::Leaf,
    }
}

/// The path element of a list item, or why there is none.
pub(crate) fn item_element(kind: &ListKind, item: &Value, index: usize) -> Result<String, String> {
    match kind {
        ListKind::Map(keys) => {
            let mut k = Map::new();
            for name in keys {
                match item.get(name).filter(|v| !v.is_null()).cloned().or_else(|| key_default(name)) {
                    Some(v) => {
                        k.insert(name.clone(), v);
                    }
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {name:?} (and doesn't have default value)"
                        ))
                    }
                }
            }
            Ok(fieldset::key(&k))
        }
        ListKind::Set => Ok(fieldset::value(item)),
        ListKind::Atomic => Ok(format!("i:{index}")),
    }
}

/// The fields an applied configuration sets, with explicit empty values
/// (`false`, `[]`, `null`, `{}`) owned as leaves.
pub fn field_set(s: &Schema, obj: &Value) -> Set {
    let mut out = Set::new();
    walk_set(s, &s.root_ty(), obj, &mut Vec::new(), &mut out);
    out
}

fn walk_set(s: &Schema, ty: &Ty, v: &Value, path: &mut Path, out: &mut Set) {
    match shape(s, ty, Some(v)) {
        Shape::Leaf => {
            if !path.is_empty() {
                out.insert(path.clone());
            }
        }
        _ if !path.is_empty() && is_empty_container(Some(v)) => {
            out.insert(path.clone());
        }
        Shape::Fields(t) => {
            let Value::Object(m) = v else {
                out.insert(path.clone());
                return;
            };
            for (k, c) in m {
                let Some((ct, declared)) = s.field_ty(t, k) else {
                    // Unknown field: pruned, owned by nobody.
                    continue;
                };
                path.push(fieldset::field(k));
                if !declared {
                    out.insert(path.clone());
                }
                walk_set(s, &ct, c, path, out);
                path.pop();
            }
        }
        Shape::Items(elem, kind) => {
            let Value::Array(items) = v else {
                out.insert(path.clone());
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let Ok(pe) = item_element(kind, item, i) else {
                    continue;
                };
                path.push(pe);
                out.insert(path.clone());
                walk_set(s, elem, item, path, out);
                path.pop();
            }
        }
    }
}

/// Whether both sides are present, non-null and of different JSON kinds
/// (an object against a list or scalar): compared as a leaf.
fn kinds_differ(lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
    match (lhs, rhs) {
        (Some(l), Some(r)) if !l.is_null() && !r.is_null() => {
            (l.is_object() != r.is_object()) || (l.is_array() != r.is_array())
        }
        _ => false,
    }
}

/// Compares two objects of the same kind.
pub fn compare(s: &Schema, lhs: &Value, rhs: &Value) -> Comparison {
    let mut c = Comparison::default();
    walk_cmp(
        s,
        &s.root_ty(),
        Some(lhs),
        Some(rhs),
        &mut Vec::new(),
        &mut c,
        false,
    );
    c
}

fn walk_cmp(
    s: &Schema,
    ty: &Ty,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &mut Path,
    c: &mut Comparison,
    hook: bool,
) {
    if lhs.is_none() && rhs.is_none() {
        return;
    }
    let sample = rhs.or(lhs);
    let sh = shape(s, ty, sample);
    let both_empty = is_empty_container(lhs) && is_empty_container(rhs);
    let leaf = matches!(sh, Shape::Leaf) || both_empty || kinds_differ(lhs, rhs);
    if leaf && !path.is_empty() {
        match (lhs, rhs) {
            (None, Some(_)) => {
                c.added.insert(path.clone());
            }
            (Some(_), None) => {
                c.removed.insert(path.clone());
            }
            (Some(l), Some(r)) if l != r => {
                c.modified.insert(path.clone());
            }
            _ => {}
        }
        return;
    }
    match sh {
        Shape::Leaf => {}
        Shape::Fields(t) => {
            let empty = Map::new();
            let lm = lhs.and_then(Value::as_object).unwrap_or(&empty);
            let rm = rhs.and_then(Value::as_object).unwrap_or(&empty);
            let keys: std::collections::BTreeSet<&String> = lm.keys().chain(rm.keys()).collect();
            for k in keys {
                let Some((ct, _)) = s.field_ty(t, k) else {
                    continue;
                };
                // Maps are nil in Go's zero value, so one appearing or
                // going is itself a change; structs always exist.
                let sample = rm.get(k).or(lm.get(k));
                let node_hook = match &ct {
                    Ty::Map { atomic: false, .. } => true,
                    Ty::Deduced => sample.is_some_and(Value::is_object),
                    _ => false,
                };
                path.push(fieldset::field(k));
                walk_cmp(s, &ct, lm.get(k), rm.get(k), path, c, node_hook);
                path.pop();
            }
        }
        Shape::Items(elem, kind) => {
            let index = |v: Option<&Value>| -> Vec<(String, Value)> {
                let mut out: Vec<(String, Value)> = Vec::new();
                for (i, item) in v
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    if let Ok(pe) = item_element(kind, item, i) {
                        if !out.iter().any(|(p, _)| *p == pe) {
                            out.push((pe, item.clone()));
                        }
                    }
                }
                out
            };
            let l = index(lhs);
            let r = index(rhs);
            let mut pes: Vec<&String> = l.iter().map(|(p, _)| p).collect();
            for (p, _) in &r {
                if !pes.contains(&p) {
                    pes.push(p);
                }
            }
            for pe in pes {
                let lv = l.iter().find(|(p, _)| p == pe).map(|(_, v)| v);
                let rv = r.iter().find(|(p, _)| p == pe).map(|(_, v)| v);
                path.push(pe.clone());
                walk_cmp(s, elem, lv, rv, path, c, true);
                path.pop();
            }
        }
    }
    if hook && !path.is_empty() {
        match (lhs, rhs) {
            (None, Some(_)) => {
                c.added.insert(path.clone());
            }
            (Some(_), None) => {
                c.removed.insert(path.clone());
            }
            _ => {}
        }
    }
}

/// Merges an applied configuration into the live object: declared and
/// granular maps key by key, associative lists and sets element by element
/// (in structured-merge-diff's order), atomic values replaced.
pub fn merge(s: &Schema, live: &Value, config: &Value) -> Value {
    merge_at(s, &s.root_ty(), Some(live), Some(config)).unwrap_or(Value::Null)
}

fn merge_at(s: &Schema, ty: &Ty, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
    let (l, r) = match (lhs, rhs) {
        (l, None) => return l.cloned(),
        (None, r) => return r.cloned(),
        (Some(l), Some(r)) => (l, r),
    };
    if is_empty_container(Some(l)) && is_empty_container(Some(r)) {
        return Some(r.clone());
    }
    match shape(s, ty, Some(r)) {
        Shape::Leaf => Some(r.clone()),
        Shape::Fields(t) => {
            let (Value::Object(lm), Value::Object(rm)) = (l, r) else {
                return Some(r.clone());
            };
            let mut out = lm.clone();
            for (k, rv) in rm {
                let ct = s.field_ty(t, k).map(|(t, _)| t).unwrap_or(Ty::Deduced);
                if let Some(v) = merge_at(s, &ct, lm.get(k), Some(rv)) {
                    out.insert(k.clone(), v);
                }
            }
            Some(Value::Object(out))
        }
        Shape::Items(elem, kind) => {
            let (Value::Array(la), Value::Array(ra)) = (l, r) else {
                return Some(r.clone());
            };
            Some(Value::Array(merge_items(s, elem, kind, la, ra)))
        }
    }
}

type Indexed<'a> = Vec<(String, &'a Value)>;

fn index_items<'a>(kind: &ListKind, items: &'a [Value]) -> Indexed<'a> {
    let mut out: Indexed<'a> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Ok(pe) = item_element(kind, item, i) {
            if !out.iter().any(|(p, _)| *p == pe) {
                out.push((pe, item));
            }
        }
    }
    out
}

fn merge_items(s: &Schema, elem: &Ty, kind: &ListKind, la: &[Value], ra: &[Value]) -> Vec<Value> {
    let lhs = index_items(kind, la);
    let rhs = index_items(kind, ra);
    fn get<'a>(v: &Indexed<'a>, pe: &str) -> Option<&'a Value> {
        v.iter().find(|(p, _)| p == pe).map(|(_, x)| *x)
    }
    let mut shared: std::collections::VecDeque<&String> = rhs
        .iter()
        .map(|(p, _)| p)
        .filter(|p| get(&lhs, p).is_some())
        .collect();
    let mut next_shared = shared.pop_front();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                out.extend(merge_at(s, elem, Some(lhs[li].1), Some(rhs[ri].1)));
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if get(&rhs, pe).is_some() && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if get(&rhs, pe).is_none() {
                out.push(lhs[li].1.clone());
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            out.extend(merge_at(s, elem, get(&lhs, pe), Some(rhs[ri].1)));
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// Removes one path (a field or a list element) from an object.
pub fn remove_path(s: &Schema, obj: &mut Value, path: &[String]) {
    fn rec(s: &Schema, ty: &Ty, v: &mut Value, path: &[String]) {
        let Some((seg, rest)) = path.split_first() else {
            return;
        };
        if let Some(name) = seg.strip_prefix("f:") {
            let Some(m) = v.as_object_mut() else { return };
            if rest.is_empty() {
                m.remove(name);
                return;
            }
            let ct = s.field_ty(ty, name).map(|(t, _)| t).unwrap_or(Ty::Deduced);
            if let Some(c) = m.get_mut(name) {
                rec(s, &ct, c, rest);
            }
            return;
        }
        let Ty::List { elem, kind } = ty else { return };
        let Some(items) = v.as_array_mut() else {
            return;
        };
        let pos = items
            .iter()
            .enumerate()
            .position(|(i, it)| item_element(kind, it, i).is_ok_and(|p| p == *seg));
        if let Some(i) = pos {
            if rest.is_empty() {
                items.remove(i);
            } else {
                rec(s, elem, &mut items[i], rest);
            }
        }
    }
    rec(s, &s.root_ty(), obj, path);
}

/// Duplicate keys of associative lists and sets, as structured-merge-diff
/// reports them (`.spec.env: duplicate entries for key [name="A"]`).
pub fn duplicates(s: &Schema, obj: &Value) -> Vec<String> {
    fn rec(s: &Schema, ty: &Ty, v: &Value, path: &mut Path, out: &mut Vec<String>) {
        match shape(s, ty, Some(v)) {
            Shape::Leaf => {}
            Shape::Fields(t) => {
                if let Value::Object(m) = v {
                    for (k, c) in m {
                        if let Some((ct, _)) = s.field_ty(t, k) {
                            path.push(fieldset::field(k));
                            rec(s, &ct, c, path, out);
                            path.pop();
                        }
                    }
                }
            }
            Shape::Items(elem, kind) => {
                let Value::Array(items) = v else { return };
                let mut seen: Vec<String> = Vec::new();
                let mut reported: Vec<String> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let pe = match item_element(kind, item, i) {
                        Ok(pe) => pe,
                        Err(e) => {
                            out.push(format!("{}: element {i}: {e}", fieldset::display(path)));
                            continue;
                        }
                    };
                    if seen.contains(&pe) {
                        if !reported.contains(&pe) {
                            let what = if matches!(kind, ListKind::Set) {
                                "value"
                            } else {
                                "key"
                            };
                            out.push(format!(
                                "{}: duplicate entries for {what} {}",
                                fieldset::display(path),
                                fieldset::display(std::slice::from_ref(&pe))
                            ));
                            reported.push(pe);
                        }
                        continue;
                    }
                    path.push(pe.clone());
                    rec(s, elem, item, path, out);
                    path.pop();
                    seen.push(pe);
                }
            }
        }
    }
    let mut out = Vec::new();
    rec(s, &s.root_ty(), obj, &mut Vec::new(), &mut out);
    out
}

/// Fields the schema does not declare, as structured-merge-diff reports
/// them when it types an applied configuration
/// (`.spec.containers[name="c"].bogus: field not declared in schema`).
pub fn undeclared(s: &Schema, obj: &Value) -> Vec<String> {
    fn rec(s: &Schema, ty: &Ty, v: &Value, path: &mut Path, out: &mut Vec<String>) {
        match shape(s, ty, Some(v)) {
            Shape::Leaf => {}
            Shape::Fields(t) => {
                let Value::Object(m) = v else { return };
                for (k, c) in m {
                    path.push(fieldset::field(k));
                    match s.field_ty(t, k) {
                        Some((ct, _)) => rec(s, &ct, c, path, out),
                        None => out.push(format!(
                            "{}: field not declared in schema",
                            fieldset::display(path)
                        )),
                    }
                    path.pop();
                }
            }
            Shape::Items(elem, kind) => {
                let Value::Array(items) = v else { return };
                for (i, item) in items.iter().enumerate() {
                    let Ok(pe) = item_element(kind, item, i) else {
                        continue;
                    };
                    path.push(pe);
                    rec(s, elem, item, path, out);
                    path.pop();
                }
            }
        }
    }
    let mut out = Vec::new();
    rec(s, &s.root_ty(), obj, &mut Vec::new(), &mut out);
    out
}

/// Go value-typed (non-pointer) `omitempty` fields whose zero value a round
/// trip through the Go types drops. k8s-openapi does not tell pointers from
/// values, so the ones charts commonly render are listed from the Go types.
const VALUE_SCALARS: &[(&str, &str)] = &[
    ("PodSpec", "hostIPC"),
    ("PodSpec", "hostNetwork"),
    ("PodSpec", "hostPID"),
    ("Container", "stdin"),
    ("Container", "stdinOnce"),
    ("Container", "tty"),
    ("VolumeMount", "readOnly"),
    ("ServiceSpec", "publishNotReadyAddresses"),
    ("ServiceSpec", "healthCheckNodePort"),
    ("ServicePort", "nodePort"),
    ("ContainerPort", "hostPort"),
    ("Probe", "initialDelaySeconds"),
    ("Probe", "timeoutSeconds"),
    ("Probe", "periodSeconds"),
    ("Probe", "successThreshold"),
    ("Probe", "failureThreshold"),
    ("DeploymentSpec", "minReadySeconds"),
    ("DeploymentSpec", "paused"),
    ("StatefulSetSpec", "minReadySeconds"),
    ("DaemonSetSpec", "minReadySeconds"),
];

/// Optional string fields that are pointers in Go, so `""` is kept.
const POINTER_STRINGS: &[&str] = &[
    "storageClassName",
    "ingressClassName",
    "runtimeClassName",
    "loadBalancerClass",
    "volumeAttributesClassName",
];

/// Shapes a built-in object as the Go types store it: unknown fields,
/// `null`s and empty optional lists, maps and zero values are dropped.
pub fn as_stored(s: &Schema, obj: &mut Value) {
    fn rec(s: &Schema, ty: &Ty, v: &mut Value) {
        match ty {
            Ty::Obj(i) => {
                let o = s.obj(*i);
                let Value::Object(m) = v else { return };
                m.retain(|k, c| {
                    let Some(f) = o.fields.get(k) else {
                        return o.additional.is_some() || o.preserve_unknown;
                    };
                    if c.is_null() {
                        return false;
                    }
                    if f.required {
                        return true;
                    }
                    match (&f.ty, &*c) {
                        (Ty::List { .. }, Value::Array(a)) => !a.is_empty(),
                        (Ty::Map { .. }, Value::Object(m)) => !m.is_empty(),
                        (Ty::Scalar(crate::schema::Scalar::String), Value::String(x)) => {
                            !x.is_empty() || POINTER_STRINGS.contains(&k.as_str())
                        }
                        (Ty::Scalar(_), Value::Bool(false)) => {
                            !VALUE_SCALARS.contains(&(o.name.as_str(), k.as_str()))
                        }
                        (Ty::Scalar(_), Value::Number(n)) if n.as_f64() == Some(0.0) => {
                            !VALUE_SCALARS.contains(&(o.name.as_str(), k.as_str()))
                        }
                        _ => true,
                    }
                });
                for (k, c) in m.iter_mut() {
                    if let Some(f) = o.fields.get(k) {
                        rec(s, &f.ty, c);
                    }
                }
            }
            Ty::Map { elem, .. } => {
                if let Value::Object(m) = v {
                    for c in m.values_mut() {
                        rec(s, elem, c);
                    }
                }
            }
            Ty::List { elem, .. } => {
                if let Value::Array(a) = v {
                    for c in a.iter_mut() {
                        rec(s, elem, c);
                    }
                }
            }
            _ => {}
        }
    }
    rec(s, &s.root_ty(), obj);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> std::sync::Arc<Schema> {
        crate::schema::builtin("apps/v1", "Deployment").unwrap()
    }

    #[test]
    fn explicit_empty_values_are_owned() {
        let s = deployment();
        let set = field_set(
            &s,
            &json!({"spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {
                "hostIPC": false, "affinity": {"nodeAffinity": null},
                "securityContext": {"sysctls": []},
                "containers": [{"name": "c", "envFrom": null, "ports": [{"containerPort": 80}]}]}}}}),
        );
        let shown: Vec<String> = set.iter().map(|p| fieldset::display(p)).collect();
        for want in [
            ".spec.selector",
            ".spec.template.spec.hostIPC",
            ".spec.template.spec.affinity.nodeAffinity",
            ".spec.template.spec.securityContext.sysctls",
            ".spec.template.spec.containers[name=\"c\"]",
            ".spec.template.spec.containers[name=\"c\"].envFrom",
            ".spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"]",
            ".spec.template.spec.containers[name=\"c\"].ports[containerPort=80,protocol=\"TCP\"].containerPort",
        ] {
            assert!(shown.contains(&want.to_string()), "{want} missing from {shown:?}");
        }
        assert!(!shown.iter().any(|p| p.contains("matchLabels")));
    }

    #[test]
    fn stored_shape_drops_go_zero_values() {
        let s = deployment();
        let mut o = json!({"spec": {"replicas": 0, "template": {"spec": {"hostIPC": false,
            "automountServiceAccountToken": false, "affinity": {"nodeAffinity": null},
            "securityContext": {"sysctls": []}, "nodeSelector": {},
            "containers": [{"name": "c", "image": "", "envFrom": null, "bogus": 1}]}}}});
        as_stored(&s, &mut o);
        assert_eq!(
            o,
            json!({"spec": {"replicas": 0, "template": {"spec": {"automountServiceAccountToken": false,
                "affinity": {}, "securityContext": {}, "containers": [{"name": "c"}]}}}})
        );
    }

    #[test]
    fn merge_keys_lists_and_replaces_atomics() {
        let s = deployment();
        let live = json!({"spec": {"selector": {"matchLabels": {"a": "1", "b": "2"}}, "template": {"spec": {
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}});
        let cfg = json!({"spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {"spec": {
            "containers": [{"name": "c", "image": "c:1"}, {"name": "a", "image": "a:2"}]}}}});
        let m = merge(&s, &live, &cfg);
        assert_eq!(m["spec"]["selector"], json!({"matchLabels": {"a": "1"}}));
        let names: Vec<&str> = m["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["c", "a", "b"]);
        assert_eq!(
            m["spec"]["template"]["spec"]["containers"][1]["image"],
            "a:2"
        );
        let c = compare(&s, &live, &m);
        let added: Vec<String> = c.added.iter().map(|p| fieldset::display(p)).collect();
        assert!(added.contains(&".spec.template.spec.containers[name=\"c\"]".to_string()));
        assert!(added.contains(&".spec.template.spec.containers[name=\"c\"].image".to_string()));
        let modified: Vec<String> = c.modified.iter().map(|p| fieldset::display(p)).collect();
        assert_eq!(
            modified,
            [
                ".spec.selector",
                ".spec.template.spec.containers[name=\"a\"].image"
            ]
        );
    }

    #[test]
    fn duplicate_list_map_keys_are_reported() {
        let s = deployment();
        let d = duplicates(
            &s,
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "env": [
                {"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]}}}}),
        );
        assert_eq!(
            d,
            [".spec.template.spec.containers[name=\"c\"].env: duplicate entries for key [name=\"A\"]"]
        );
    }

    #[test]
    fn removing_list_elements_uses_key_defaults() {
        let s = deployment();
        let mut o = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
            "ports": [{"containerPort": 80}, {"containerPort": 81}]}]}}}});
        let set = field_set(&s, &o);
        let p = set
            .iter()
            .find(|p| fieldset::display(p).ends_with("[containerPort=80,protocol=\"TCP\"]"))
            .unwrap()
            .clone();
        remove_path(&s, &mut o, &p);
        assert_eq!(
            o["spec"]["template"]["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 81}])
        );
    }
}
