//! Simulated workload controllers (only with `simulate_readiness`): a
//! Deployment gets a ReplicaSet for its current pod template and the
//! ReplicaSet gets Pods, all linked by controller ownerReferences, so
//! `kubectl get pods` looks like a cluster's and deleting the Deployment
//! garbage-collects the rest. Nothing runs: Pods only report Running.
//!
//! Each Deployment and ReplicaSet is synced when it changes and its
//! simulated status has settled (see `readiness`), as the real controllers
//! act on what the cluster reports.

use super::{readiness, Change, Changes};
use crate::object::meta::random_suffix;
use crate::object::{self, DeleteOpts, WriteOpts};
use crate::storage::{EventType, Stored};
use crate::App;
use serde_json::{json, Value};
use std::sync::Arc;

/// Runs until shutdown, syncing Deployments and ReplicaSets as they change.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    while let Some(change) = changes.next().await {
        match change {
            Change::Event(ev) if ev.kind != EventType::Deleted => sync(&app, &ev.key, &ev.object),
            Change::Event(_) => {}
            Change::Listed(all) => {
                for (key, obj) in &all {
                    sync(&app, key, obj);
                }
            }
        }
    }
}

fn sync(app: &App, key: &str, stored: &Stored) {
    let kind = if key.starts_with("apps/deployments/") {
        "Deployment"
    } else if key.starts_with("apps/replicasets/") {
        "ReplicaSet"
    } else {
        return;
    };
    if stored.deleting() {
        return;
    }
    let obj = stored.value();
    if !readiness::settled(kind, &obj) {
        return;
    }
    match kind {
        "Deployment" => sync_deployment(app, &obj),
        _ => sync_replicaset(app, &obj),
    }
}

fn opts(manager: &str) -> WriteOpts {
    WriteOpts {
        dry_run: false,
        manager: manager.into(),
        ..Default::default()
    }
}

fn str_at<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    obj.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

/// `pod-template-hash`: a stable digest of the template, encoded with the
/// alphabet Kubernetes uses for generated names.
pub(super) fn template_hash(template: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in template.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..10)
        .map(|i| {
            let idx = ((h >> (i * 6)) % ALPHABET.len() as u64) as usize;
            char::from(ALPHABET[idx])
        })
        .collect()
}

fn owner_ref(obj: &Value, api_version: &str, kind: &str) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": str_at(obj, "/metadata/name"),
        "uid": str_at(obj, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true})
}

/// Objects of `plural` in `ns` whose controller is the object with `uid`.
fn owned(app: &App, group: &str, plural: &str, ns: &str, uid: &str) -> Vec<Value> {
    let (items, _) = app.store.list(&format!("{group}/{plural}/{ns}/"), None);
    items
        .into_iter()
        .filter(|o| {
            o.owners()
                .iter()
                .any(|r| r.controller && r.uid.as_ref() == uid)
        })
        .map(|o| o.value())
        .collect()
}

fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Makes the Deployment's current ReplicaSet exist with its replica count
/// and scales older ones to zero.
fn sync_deployment(app: &App, dep: &Value) {
    if deleting(dep) {
        return;
    }
    let (Some(rs_type), Some(template)) = (
        app.registry.find("apps", "v1", "replicasets"),
        dep.pointer("/spec/template"),
    ) else {
        return;
    };
    let ns = str_at(dep, "/metadata/namespace");
    let uid = str_at(dep, "/metadata/uid");
    let replicas = dep
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let hash = template_hash(template);
    let rs_name = format!("{}-{hash}", str_at(dep, "/metadata/name"));
    for rs in owned(app, "apps", "replicasets", ns, uid) {
        let name = object::name_of(&rs).to_string();
        let want = if name == rs_name { replicas } else { 0 };
        if rs.pointer("/spec/replicas").and_then(Value::as_i64) != Some(want) {
            let key = rs_type.key(ns, &name);
            let res = object::modify(
                app,
                &rs_type,
                &key,
                object::Target::Main,
                &opts("deployment-controller"),
                false,
                |cur| {
                    let mut n = cur.clone();
                    n["spec"]["replicas"] = json!(want);
                    Ok(n)
                },
            );
            if let Err(e) = res {
                tracing::debug!("simulated deployment controller: cannot scale {key}: {e}");
            }
        }
    }
    if app.store.get(&rs_type.key(ns, &rs_name)).is_some() {
        return;
    }
    let mut template = template.clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = dep
        .pointer("/spec/selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": rs_name, "namespace": ns, "labels": labels,
            "annotations": {"deployment.kubernetes.io/desired-replicas": replicas.to_string(),
                "deployment.kubernetes.io/revision": dep.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1).to_string()},
            "ownerReferences": [owner_ref(dep, "apps/v1", "Deployment")]},
        "spec": {"replicas": replicas, "selector": selector, "template": template},
    });
    if let Err(e) = object::create(app, &rs_type, ns, rs, &opts("deployment-controller")) {
        if e.code != 409 {
            tracing::debug!("simulated deployment controller: cannot create {rs_name}: {e}");
        }
    }
}

/// Creates or deletes the ReplicaSet's Pods to match its replica count.
fn sync_replicaset(app: &App, rs: &Value) {
    if deleting(rs) {
        return;
    }
    let Some(pod_type) = app.registry.find("", "v1", "pods") else {
        return;
    };
    let ns = str_at(rs, "/metadata/namespace");
    let uid = str_at(rs, "/metadata/uid");
    let name = str_at(rs, "/metadata/name");
    let replicas = rs
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    let pods: Vec<Value> = owned(app, "", "pods", ns, uid)
        .into_iter()
        .filter(|p| !deleting(p))
        .collect();
    for extra in pods.iter().skip(replicas) {
        let pname = object::name_of(extra).to_string();
        let key = pod_type.key(ns, &pname);
        if let Err(e) = object::delete(app, &pod_type, &key, &pname, &DeleteOpts::default()) {
            tracing::debug!("simulated replicaset controller: cannot delete {key}: {e}");
        }
    }
    let template = rs
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for _ in pods.len()..replicas {
        let mut md = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if !md.is_object() {
            md = json!({});
        }
        md["name"] = json!(format!("{name}-{}", random_suffix()));
        md["namespace"] = json!(ns);
        md["ownerReferences"] = json!([owner_ref(rs, "apps/v1", "ReplicaSet")]);
        let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
        spec["nodeName"] = json!("rudder");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec});
        if let Err(e) = object::create(app, &pod_type, ns, pod, &opts("replicaset-controller")) {
            tracing::debug!("simulated replicaset controller: cannot create a pod for {name}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_and_distinct() {
        let a = json!({"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}});
        let b = json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
        assert_eq!(template_hash(&a), template_hash(&a));
        assert_ne!(template_hash(&a), template_hash(&b));
        assert_eq!(template_hash(&a).len(), 10);
    }
}
