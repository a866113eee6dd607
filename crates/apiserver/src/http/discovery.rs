//! Discovery documents: /version, /api, /apis and per-group-version
//! resource lists of the served kinds (`aggregator.rs` adds the groups of
//! APIServices). Aggregated discovery is not served; answering plain
//! `application/json` makes client-go fall back to these legacy documents.

use crate::error::ApiError;
use apitypes::{Registry, ResourceType};
use serde_json::{json, Value};

pub(crate) fn version() -> Value {
    json!({
        "major": crate::KUBE_MAJOR,
        "minor": crate::KUBE_MINOR,
        "emulationMajor": crate::KUBE_MAJOR,
        "emulationMinor": crate::KUBE_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": format!("v{}.{}.0", crate::KUBE_MAJOR, crate::KUBE_MINOR),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub(crate) fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
    })
}

pub(crate) fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(json!({})),
    })
}

pub(crate) fn api_groups(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .map(|g| group_doc(&g.name, &g.versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn resource_entry(t: &ResourceType) -> Value {
    let mut e = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": VERBS,
    });
    if !t.short_names.is_empty() {
        e["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        e["categories"] = json!(t.categories);
    }
    e
}

pub(crate) fn resource_list(reg: &Registry, group: &str, version: &str) -> Result<Value, ApiError> {
    let types: Vec<_> = reg
        .all()
        .into_iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if types.is_empty() {
        return Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let mut resources = Vec::new();
    for t in &types {
        resources.push(resource_entry(t));
        if t.status_subresource {
            resources.push(
                json!({"name": format!("{}/status", t.plural), "singularName": "",
                "namespaced": t.namespaced, "kind": t.kind, "verbs": ["get", "patch", "update"]}),
            );
        }
        if t.scale_subresource {
            resources.push(json!({"name": format!("{}/scale", t.plural), "singularName": "",
                "namespaced": t.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale",
                "verbs": ["get", "patch", "update"]}));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}
