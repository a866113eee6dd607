//! Query parameters of a resource request: flags, dry run, the field
//! manager, label and field selectors (with the field labels each kind
//! supports), and the storage prefix a list or watch reads.

use crate::error::ApiError;
use crate::http::events;
use crate::object::meta::{FieldSelector, LabelSelector};
use apitypes::ResourceType;
use axum::http::HeaderMap;
use std::collections::HashMap;

/// Query parameters of a resource request.
pub(crate) struct Params(pub HashMap<String, String>);

impl Params {
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    pub(crate) fn flag(&self, k: &str) -> bool {
        matches!(self.get(k), Some("true" | "1"))
    }
    pub(crate) fn dry_run(&self) -> bool {
        self.get("dryRun") == Some("All")
    }
    /// Label and field selectors; field keys are those of `rt`'s API, mapped
    /// to the stored fields.
    pub(crate) fn selectors(
        &self,
        rt: &ResourceType,
    ) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let l = LabelSelector::parse(self.get("labelSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
        let mut f = FieldSelector::parse(self.get("fieldSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let events = events::is_events_api(&rt.group, &rt.plural)
            || (rt.group.is_empty() && rt.plural == "events");
        if let Some(k) = f.keys().find(|k| !events && !field_label_supported(rt, k)) {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {k}"
            )));
        }
        if events::is_events_api(&rt.group, &rt.plural) {
            f = f.map_keys(events::core_field);
        } else if rt.group.is_empty() && rt.plural == "events" {
            f = f.map_keys(events::core_only_field);
        }
        Ok((l, f))
    }
}

/// The field labels a kind can be selected by (its field label
/// conversion functions on a real server; CRDs: name and namespace).
fn field_label_supported(rt: &ResourceType, key: &str) -> bool {
    if matches!(key, "metadata.name" | "metadata.namespace") {
        return true;
    }
    let extra: &[&str] = match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        ("", "secrets") => &["type"],
        ("", "namespaces") => &["status.phase"],
        ("", "nodes") => &["spec.unschedulable"],
        ("", "replicationcontrollers") => &["status.replicas"],
        ("apps", "replicasets") => &["status.replicas"],
        ("batch", "jobs") => &["status.successful"],
        _ => &[],
    };
    extra.contains(&key)
}

/// The field manager of a write: `fieldManager`, else the user agent's
/// program name, as kube-apiserver defaults it.
pub(crate) fn manager(params: &Params, headers: &HeaderMap) -> String {
    if let Some(m) = params.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    headers
        .get("user-agent")
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split('/').next())
        .filter(|s| !s.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

pub(crate) fn list_prefix(rt: &ResourceType, ns: Option<&str>) -> String {
    match ns {
        Some(ns) if rt.namespaced => format!("{}{ns}/", rt.key_prefix()),
        _ => rt.key_prefix(),
    }
}
