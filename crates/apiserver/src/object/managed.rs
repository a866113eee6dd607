//! `metadata.managedFields`: which manager owns which fields, updated by
//! every write as kube-apiserver's field manager does. Apply operations
//! own what they apply and conflict with other owners of values they
//! change or add; Update operations (create, PUT, patches) take over what
//! they change; fields a manager stops applying are removed when nobody
//! else owns them.

use crate::error::ApiError;
use apitypes::fieldset::{self, Path, Set};
use apitypes::typed;
use apitypes::Schema;
use serde_json::{json, Value};

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) subresource: Option<String>,
    pub(crate) time: Option<String>,
    pub(crate) set: Set,
}

impl Entry {
    /// Entries are keyed by manager, operation and subresource, and for
    /// Update operations also by apiVersion.
    fn is(&self, manager: &str, operation: &str, api_version: &str, sub: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == sub
            && (operation != "Update" || self.api_version == api_version)
    }

    /// The manager as conflict messages name it.
    fn display(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// The entries recorded on an object.
pub(crate) fn read(obj: &Value) -> Vec<Entry> {
    let Some(entries) = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
            Some(Entry {
                manager: s("manager").unwrap_or_default(),
                operation: s("operation")?,
                api_version: s("apiVersion").unwrap_or_default(),
                subresource: s("subresource").filter(|s| !s.is_empty()),
                time: s("time"),
                set: e
                    .get("fieldsV1")
                    .map(fieldset::from_fields_v1)
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// Stores entries on an object; entries that own nothing are dropped.
pub(crate) fn write(obj: &mut Value, entries: &[Entry]) {
    let list: Vec<Value> = entries
        .iter()
        .filter(|e| !e.set.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": fieldset::to_fields_v1(&e.set),
            });
            if let Some(t) = &e.time {
                v["time"] = json!(t);
            }
            if let Some(s) = &e.subresource {
                v["subresource"] = json!(s);
            }
            v
        })
        .collect();
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            m.remove("managedFields");
        } else {
            m.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Where a write happens: which schema, version and endpoint.
pub(crate) struct Scope<'a> {
    pub(crate) schema: &'a Schema,
    pub(crate) api_version: &'a str,
    pub(crate) subresource: Option<&'a str>,
    /// The kind has a status subresource: the main endpoint owns no status
    /// and the status endpoint owns nothing else.
    pub(crate) status_subresource: bool,
}

/// Server-managed metadata nobody owns.
const UNOWNED_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "selfLink",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

impl Scope<'_> {
    fn owns(&self, p: &Path) -> bool {
        let first = p.first().map(String::as_str);
        if matches!(first, Some("f:apiVersion" | "f:kind")) {
            return false;
        }
        if first == Some("f:metadata") {
            match p.get(1).and_then(|s| s.strip_prefix("f:")) {
                None => return false,
                Some(f) if UNOWNED_META.contains(&f) => return false,
                _ => {}
            }
        }
        let status = first == Some("f:status");
        match self.subresource {
            Some("status") => status,
            _ => !(self.status_subresource && status),
        }
    }

    fn filter(&self, set: Set) -> Set {
        set.into_iter().filter(|p| self.owns(p)).collect()
    }

    fn compare(&self, live: &Value, new: &Value) -> typed::Comparison {
        let mut c = typed::compare(self.schema, live, new);
        c.added = self.filter(std::mem::take(&mut c.added));
        c.removed = self.filter(std::mem::take(&mut c.removed));
        c.modified = self.filter(std::mem::take(&mut c.modified));
        c
    }
}

fn without_managed(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    o
}

/// The order structured-merge-diff iterates a set in: at each level the
/// members first, then the children, each sorted by path element.
fn set_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    for i in 0..a.len().min(b.len()) {
        if a[i] == b[i] {
            continue;
        }
        let a_member = a.len() == i + 1;
        let b_member = b.len() == i + 1;
        return match (a_member, b_member) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => a[i].cmp(&b[i]),
        };
    }
    a.len().cmp(&b.len())
}

/// The 409 a real server answers for apply conflicts.
fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"),
                "field": fieldset::display(p)})
        })
        .collect();
    let message = if let [(m, p)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {m}: {}",
            fieldset::display(p)
        )
    } else {
        let mut lines = Vec::new();
        let mut last: Option<&str> = None;
        for (m, p) in conflicts {
            if last != Some(m.as_str()) {
                lines.push(format!("conflicts with {m}:"));
                last = Some(m);
            }
            lines.push(format!("- {}", fieldset::display(p)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(json!({ "causes": causes }));
    e
}

/// Server-side apply of `config` by `manager` onto `live` (`None` when the
/// object does not exist yet). Returns the object to store, before the Go
/// round trip, with its new managedFields.
pub(crate) fn apply(
    scope: &Scope<'_>,
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApiError> {
    let empty = json!({});
    let live_obj = live.map(without_managed).unwrap_or_else(|| empty.clone());
    let mut entries = live.map(read).unwrap_or_default();
    let mut config = config.clone();
    if let Some(m) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    let mut merged = typed::merge(scope.schema, &live_obj, &config);
    let applied = scope.filter(typed::field_set(scope.schema, &config));
    let sub = scope.subresource;
    let last = entries
        .iter()
        .position(|e| e.is(manager, "Apply", scope.api_version, sub));
    let previous = last.map(|i| entries[i].set.clone()).unwrap_or_default();
    let mine = Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: scope.api_version.to_string(),
        subresource: sub.map(str::to_string),
        time: last.and_then(|i| entries[i].time.clone()),
        set: applied.clone(),
    };
    let me = match last {
        Some(i) => {
            entries[i] = mine;
            i
        }
        None => {
            entries.push(mine);
            entries.len() - 1
        }
    };
    // Fields this manager stopped applying go, unless someone still owns
    // them (or something beneath them).
    let owned: Set = entries.iter().flat_map(|e| e.set.iter().cloned()).collect();
    let mut gone: Vec<&Path> = previous
        .iter()
        .filter(|p| !owned.iter().any(|o| fieldset::has_prefix(o, p)))
        .collect();
    // Parents first: removing an element takes its fields with it, and a
    // removed key field would leave the element unaddressable.
    gone.sort_by_key(|p| p.len());
    let mut removed: Vec<&Path> = Vec::new();
    for p in gone {
        if removed.iter().any(|r| fieldset::has_prefix(p, r)) {
            continue;
        }
        typed::remove_path(scope.schema, &mut merged, p);
        removed.push(p);
    }
    let cmp = scope.compare(&live_obj, &merged);
    let changed: Set = cmp.added.union(&cmp.modified).cloned().collect();
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for (i, e) in entries.iter_mut().enumerate() {
        if i == me {
            continue;
        }
        let clash: Vec<Path> = e.set.intersection(&changed).cloned().collect();
        if force {
            for p in &clash {
                e.set.remove(p);
            }
        } else {
            conflicts.extend(clash.into_iter().map(|p| (e.display(), p)));
        }
        for p in &cmp.removed {
            e.set.remove(p);
        }
    }
    if !conflicts.is_empty() {
        conflicts.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| set_order(&a.1, &b.1)));
        return Err(conflict_error(&conflicts));
    }
    if live.is_none() || !cmp.is_empty() || entries[me].time.is_none() {
        entries[me].time = Some(now.to_string());
    }
    write_to(&mut merged, &entries);
    Ok(merged)
}

fn write_to(obj: &mut Value, entries: &[Entry]) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    write(obj, entries);
}

/// The managedFields an Update-operation write (PUT or non-apply PATCH of the
/// main resource) starts from, as kube-apiserver chooses them: the request's own
/// entries when it sends valid ones that differ from the live ones (so a client
/// can hand ownership from one manager to another, as Helm and kubectl do when
/// they move an object to server-side apply), none for the reset marker `[{}]`,
/// and the live ones otherwise (an empty or invalid list never clears them).
/// `None` means the object has no entries.
pub(crate) fn update_base(live: Option<&Value>, sent: Option<&Value>) -> Option<Value> {
    let Some(Value::Array(entries)) = sent else {
        return live.cloned();
    };
    if let [Value::Object(only)] = entries.as_slice() {
        if only.is_empty() {
            return None;
        }
    }
    let valid = !entries.is_empty()
        && entries.iter().all(|e| {
            let op = e.get("operation").and_then(Value::as_str);
            let fields_type = e.get("fieldsType").and_then(Value::as_str);
            matches!(op, Some("Apply" | "Update"))
                && fields_type.is_none_or(|t| t == "FieldsV1")
                && e.get("fieldsV1").is_none_or(Value::is_object)
        });
    if valid {
        sent.cloned()
    } else {
        live.cloned()
    }
}

/// Records an Update-operation write (create, PUT or patch) by `manager`:
/// it owns what it changed, and others lose what it changed or removed.
pub(crate) fn update(
    scope: &Scope<'_>,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: &str,
) {
    let empty = json!({});
    let live_obj = live.map(without_managed).unwrap_or_else(|| empty.clone());
    // The caller left the entries to start from on `new` (see `update_base`);
    // a create may carry managedFields of its own, as apply does.
    let mut entries = read(new);
    let cmp = scope.compare(&live_obj, &without_managed(new));
    if cmp.is_empty() {
        write_to(new, &entries);
        return;
    }
    let changed: Set = cmp.added.union(&cmp.modified).cloned().collect();
    let sub = scope.subresource;
    let mut mine = None;
    for (i, e) in entries.iter_mut().enumerate() {
        if e.is(manager, "Update", scope.api_version, sub) {
            mine = Some(i);
            continue;
        }
        e.set
            .retain(|p| !changed.contains(p) && !cmp.removed.contains(p));
    }
    let i = match mine {
        Some(i) => i,
        None => {
            entries.push(Entry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version: scope.api_version.to_string(),
                subresource: sub.map(str::to_string),
                time: None,
                set: Set::new(),
            });
            entries.len() - 1
        }
    };
    let e = &mut entries[i];
    e.set.retain(|p| !cmp.removed.contains(p));
    e.set.extend(changed);
    e.time = Some(now.to_string());
    write_to(new, &entries);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(s: &Schema) -> Scope<'_> {
        Scope {
            schema: s,
            api_version: "apps/v1",
            subresource: None,
            status_subresource: true,
        }
    }

    fn manifest() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"hostIPC": false, "containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn a_second_manager_conflicts_on_values_the_store_dropped() {
        let s = apitypes::schema::builtin("apps/v1", "Deployment").unwrap();
        let sc = scope(&s);
        let mut first = apply(&sc, None, &manifest(), "first", false, "t0").unwrap();
        typed::as_stored(&s, &mut first);
        assert!(first.pointer("/spec/template/spec/hostIPC").is_none());
        let err = apply(&sc, Some(&first), &manifest(), "second", false, "t1").unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"first\": .spec.template.spec.hostIPC"
        );
        assert_eq!(
            err.details.unwrap()["causes"][0],
            json!({"reason": "FieldManagerConflict", "message": "conflict with \"first\"",
                "field": ".spec.template.spec.hostIPC"})
        );
        let forced = apply(&sc, Some(&first), &manifest(), "second", true, "t1").unwrap();
        let owners = read(&forced);
        assert!(!owners[0]
            .set
            .iter()
            .any(|p| fieldset::display(p) == ".spec.template.spec.hostIPC"));
        // Unchanged values are shared, not taken.
        assert!(owners[0]
            .set
            .iter()
            .any(|p| fieldset::display(p) == ".spec.template.spec.containers[name=\"c\"].image"));
    }

    #[test]
    fn fields_no_longer_applied_are_removed_unless_owned_elsewhere() {
        let s = apitypes::schema::builtin("apps/v1", "Deployment").unwrap();
        let sc = scope(&s);
        let mut m = manifest();
        m["spec"]["replicas"] = json!(3);
        m["spec"]["template"]["spec"]["hostIPC"] = json!(true);
        let live = apply(&sc, None, &m, "first", false, "t0").unwrap();
        let next = apply(&sc, Some(&live), &manifest(), "first", false, "t1").unwrap();
        assert!(next.pointer("/spec/replicas").is_none());
        assert_eq!(
            next.pointer("/spec/template/spec/hostIPC"),
            Some(&json!(false))
        );
        // An updater's change conflicts with a later apply of another value.
        let mut edited = next.clone();
        edited["spec"]["replicas"] = json!(5);
        update(&sc, Some(&next), &mut edited, "kubectl-edit", "t2");
        let mut m2 = manifest();
        m2["spec"]["replicas"] = json!(2);
        let err = apply(&sc, Some(&edited), &m2, "first", false, "t3").unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn updates_start_from_the_entries_they_send() {
        let live = json!([{"manager": "a", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        let moved = json!([{"manager": "b", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        assert_eq!(update_base(Some(&live), Some(&moved)), Some(moved.clone()));
        assert_eq!(update_base(Some(&live), None), Some(live.clone()));
        // An empty list keeps them; the reset marker clears them.
        assert_eq!(
            update_base(Some(&live), Some(&json!([]))),
            Some(live.clone())
        );
        assert_eq!(update_base(Some(&live), Some(&json!([{}]))), None);
        let bad = json!([{"manager": "b", "operation": "Merge"}]);
        assert_eq!(update_base(Some(&live), Some(&bad)), Some(live));
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let e = conflict_error(&[
            ("\"a\"".into(), vec![fieldset::field("x")]),
            ("\"a\"".into(), vec![fieldset::field("y")]),
            ("\"b\"".into(), vec![fieldset::field("z")]),
        ]);
        assert_eq!(
            e.message,
            "Apply failed with 3 conflicts: conflicts with \"a\":\n- .x\n- .y\nconflicts with \"b\":\n- .z"
        );
    }
}
