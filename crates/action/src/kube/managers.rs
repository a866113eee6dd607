//! Who owns the fields of a release object. rudder applies as field manager `helm`,
//! the manager Helm v4's server-side apply uses, so `rudder` and `helm` share
//! ownership of what they both render instead of conflicting (two appliers setting
//! the same value own it together; any other manager changing it is a conflict for
//! Helm, which does not force).
//!
//! Ownership other writers recorded for the release is taken over before an apply:
//! Helm's client-side apply (`helm`, operation Update: `--server-side=false`, and
//! Helm v3 records), earlier rudder versions (`rudder`) and operator-sdk's Go
//! helm-operator (`helm-operator`, Update) are folded into the `helm` Apply entry,
//! as `helm upgrade --server-side=true` folds its own client-side entry (client-go's
//! `csaupgrade`). Without this, a field the next render drops would stay owned by a
//! manager nobody applies as any more, and stay on the object forever.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
use serde_json::{Map, Value};

/// The field manager of every server-side apply rudder makes: Helm's.
pub const FIELD_MANAGER: &str = "helm";

/// Managers (and operations) whose ownership of release objects is taken over.
const FORMER_MANAGERS: &[(&str, &str)] = &[
    (FIELD_MANAGER, "Update"),
    ("rudder", "Apply"),
    ("rudder", "Update"),
    ("helm-operator", "Update"),
];

fn on_main_resource(e: &ManagedFieldsEntry) -> bool {
    e.subresource.as_deref().unwrap_or("").is_empty()
}

fn is_former(e: &ManagedFieldsEntry) -> bool {
    on_main_resource(e)
        && FORMER_MANAGERS.iter().any(|(manager, op)| {
            e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some(op)
        })
}

fn is_ours(e: &ManagedFieldsEntry) -> bool {
    on_main_resource(e)
        && e.manager.as_deref() == Some(FIELD_MANAGER)
        && e.operation.as_deref() == Some("Apply")
}

/// The entries with every former manager's fields folded into the `helm` Apply
/// entry (the first former entry becomes it when there is none); `None` when there
/// is nothing to take over.
pub(crate) fn taken_over(entries: &[ManagedFieldsEntry]) -> Option<Vec<ManagedFieldsEntry>> {
    if !entries.iter().any(is_former) {
        return None;
    }
    let mut out: Vec<ManagedFieldsEntry> = Vec::with_capacity(entries.len());
    let mut former: Vec<&ManagedFieldsEntry> = Vec::new();
    let mut ours: Option<usize> = None;
    // Where the first former entry stood among the entries kept.
    let mut first_at: Option<usize> = None;
    for e in entries {
        if is_ours(e) && ours.is_none() {
            ours = Some(out.len());
            out.push(e.clone());
        } else if is_former(e) {
            first_at.get_or_insert(out.len());
            former.push(e);
        } else {
            out.push(e.clone());
        }
    }
    let target = match ours {
        Some(i) => i,
        None => {
            // Converted in place of the first former entry, keeping its version.
            let first = former.first()?;
            let position = first_at.unwrap_or(0).min(out.len());
            let converted = ManagedFieldsEntry {
                manager: Some(FIELD_MANAGER.to_string()),
                operation: Some("Apply".to_string()),
                fields_v1: None,
                ..(*first).clone()
            };
            out.insert(position, converted);
            position
        }
    };
    let mut fields = out[target]
        .fields_v1
        .as_ref()
        .map(|f| f.0.clone())
        .unwrap_or_else(|| Value::Object(Map::new()));
    for e in &former {
        if let Some(f) = &e.fields_v1 {
            union_into(&mut fields, &f.0);
        }
    }
    out[target].fields_v1 = Some(FieldsV1(fields));
    out[target].fields_type = Some("FieldsV1".to_string());
    Some(out)
}

/// Adds the field set `other` to `set` (both in the FieldsV1 trie format: every key is
/// a path element, `{}` a leaf).
fn union_into(set: &mut Value, other: &Value) {
    let (Value::Object(into), Value::Object(from)) = (set, other) else {
        return;
    };
    for (k, v) in from {
        match into.get_mut(k) {
            Some(existing) => union_into(existing, v),
            None => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manager: &str, op: &str, sub: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(op.into()),
            api_version: Some("apps/v1".into()),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1(fields)),
            subresource: sub.map(str::to_string),
            time: None,
        }
    }

    fn who(entries: &[ManagedFieldsEntry]) -> Vec<(String, String)> {
        entries
            .iter()
            .map(|e| {
                (
                    e.manager.clone().unwrap_or_default(),
                    e.operation.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn nothing_to_take_over_changes_nothing() {
        let entries = [
            entry("helm", "Apply", None, json!({"f:spec": {"f:replicas": {}}})),
            entry(
                "kube-controller-manager",
                "Update",
                Some("status"),
                json!({}),
            ),
            entry("kubectl-edit", "Update", None, json!({"f:spec": {}})),
        ];
        assert_eq!(taken_over(&entries), None);
    }

    #[test]
    fn client_side_ownership_folds_into_the_apply_entry() {
        let entries = [
            entry(
                "helm",
                "Update",
                None,
                json!({"f:spec": {"f:minReadySeconds": {},
                "f:template": {"f:spec": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}}),
            ),
            entry(
                "helm",
                "Apply",
                None,
                json!({"f:spec": {"f:replicas": {},
                "f:template": {"f:spec": {"k:{\"name\":\"web\"}": {"f:env": {}}}}}}),
            ),
            entry(
                "rudder-readiness",
                "Update",
                Some("status"),
                json!({"f:status": {}}),
            ),
            entry("helm", "Update", Some("status"), json!({"f:status": {}})),
        ];
        let out = taken_over(&entries).expect("something to take over");
        assert_eq!(
            who(&out),
            [
                ("helm".into(), "Apply".into()),
                ("rudder-readiness".into(), "Update".into()),
                ("helm".into(), "Update".into()),
            ],
            "status entries are not the release's to take"
        );
        assert_eq!(
            out[0].fields_v1.as_ref().map(|f| f.0.clone()),
            Some(json!({"f:spec": {"f:replicas": {}, "f:minReadySeconds": {},
                "f:template": {"f:spec": {"k:{\"name\":\"web\"}": {
                    ".": {}, "f:image": {}, "f:env": {}}}}}}))
        );
        assert_eq!(taken_over(&out), None, "taking over is idempotent");
    }

    #[test]
    fn without_an_apply_entry_the_first_former_one_becomes_it() {
        let entries = [
            entry(
                "kubectl-edit",
                "Update",
                None,
                json!({"f:data": {"f:x": {}}}),
            ),
            entry("rudder", "Apply", None, json!({"f:data": {"f:a": {}}})),
            entry(
                "helm-operator",
                "Update",
                None,
                json!({"f:data": {"f:b": {}}}),
            ),
        ];
        let out = taken_over(&entries).expect("something to take over");
        assert_eq!(
            who(&out),
            [
                ("kubectl-edit".into(), "Update".into()),
                ("helm".into(), "Apply".into()),
            ]
        );
        assert_eq!(out[1].api_version.as_deref(), Some("apps/v1"));
        assert_eq!(
            out[1].fields_v1.as_ref().map(|f| f.0.clone()),
            Some(json!({"f:data": {"f:a": {}, "f:b": {}}}))
        );
    }
}
