//! Garbage collection: deletes dependents whose owners are gone
//! (background), drives foreground and orphan deletion finalizers,
//! finishes terminating namespaces once they are empty and deleted CRDs
//! once their custom resources are gone. A sweep follows every deletion,
//! every object newly marked for deletion and every APIService change on
//! the change stream, and runs every few seconds as a safety net.
//!
//! Like kube-controller-manager's namespace controller, it finishes no
//! namespace while the discovery of some API group fails (an APIService
//! whose service is down): it deletes what it can and keeps the namespace
//! `Terminating` with the `NamespaceDeletionDiscoveryFailure` condition.

use super::{Change, Changes};
use crate::object::{self, DeleteOpts, Target, WriteOpts};
use crate::storage::{Event, EventType, Mutation, Stored};
use crate::App;
use apitypes::ResourceType;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// A slow safety net for owners that never existed.
const SAFETY_NET: Duration = Duration::from_secs(5);

/// How long a burst of deletions may settle into one sweep.
const SETTLE: Duration = Duration::from_millis(20);

/// Runs until shutdown, sweeping after deletions and every 5 seconds.
pub(super) async fn run(app: Arc<App>, mut changes: Changes) {
    let mut safety_net = Instant::now() + SAFETY_NET;
    loop {
        let wake = tokio::select! {
            change = changes.next() => match change {
                None => return,
                Some(Change::Event(ev)) => wakes(&ev),
                Some(Change::Listed(_)) => true,
            },
            _ = tokio::time::sleep_until(safety_net) => true,
        };
        if !wake {
            continue;
        }
        if !changes.idle(SETTLE).await {
            return;
        }
        // The sweep looks at every object: what waits on the stream until
        // now is in it.
        changes.skip_waiting();
        sweep(&app);
        safety_net = Instant::now() + SAFETY_NET;
    }
}

/// A deletion, an object newly marked for deletion (a namespace
/// terminating, an owner waiting for its dependents), or an APIService
/// change (a namespace may wait for its discovery).
fn wakes(ev: &Event) -> bool {
    ev.kind == EventType::Deleted
        || (ev.object.deleting() && !ev.old.as_ref().is_some_and(|o| o.deleting()))
        || ev.key.starts_with(crate::aggregation::PREFIX)
}

fn split_key(key: &str) -> Option<(&str, &str, &str, &str)> {
    let mut it = key.splitn(4, '/');
    Some((it.next()?, it.next()?, it.next()?, it.next()?))
}

fn type_of(app: &App, key: &str) -> Option<Arc<ResourceType>> {
    let (g, p) = super::resource_of(key)?;
    app.registry.find_any_version(g, p)
}

fn owner_uids(obj: &Stored) -> impl Iterator<Item = &str> {
    obj.owners().iter().map(|r| r.uid.as_ref())
}

fn gc_opts() -> WriteOpts {
    WriteOpts {
        dry_run: false,
        manager: "garbage-collector".into(),
        ..Default::default()
    }
}

fn remove_finalizer(app: &App, rt: &ResourceType, key: &str, finalizer: &str) {
    let res = object::modify(app, rt, key, Target::Main, &gc_opts(), false, |cur| {
        let mut n = cur.clone();
        let fins: Vec<String> = object::finalizers(cur)
            .into_iter()
            .filter(|f| f != finalizer)
            .collect();
        if let Some(m) = n.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("finalizers".into(), json!(fins));
        }
        Ok(n)
    });
    if let Err(e) = res {
        tracing::debug!("gc: cannot remove finalizer from {key}: {e}");
    }
}

/// One pass over all objects.
fn sweep(app: &App) {
    let all = app.store.entries("");
    // Objects index their uid as "" when they have none; no owner
    // reference names that.
    let uids: HashSet<&str> = all
        .iter()
        .map(|(_, o)| o.uid())
        .filter(|u| !u.is_empty())
        .collect();
    let mut dependents: HashMap<&str, Vec<String>> = HashMap::new();
    for (key, obj) in &all {
        for u in owner_uids(obj) {
            dependents.entry(u).or_default().push(key.clone());
        }
    }
    let bg = DeleteOpts::default();
    for (key, obj) in &all {
        let Some(rt) = type_of(app, key) else {
            continue;
        };
        let name = obj.name().to_string();
        if !obj.owners().is_empty() && owner_uids(obj).all(|u| !uids.contains(u)) {
            let _ = object::delete(app, &rt, key, &name, &bg);
            continue;
        }
        if !obj.deleting() {
            continue;
        }
        let uid = obj.uid();
        let fins: Vec<&str> = obj.finalizers().collect();
        let deps = dependents.get(uid).cloned().unwrap_or_default();
        if fins.contains(&"orphan") {
            for d in &deps {
                let Some(drt) = type_of(app, d) else { continue };
                let uid = uid.to_string();
                let _ = object::modify(app, &drt, d, Target::Main, &gc_opts(), false, move |cur| {
                    let mut n = cur.clone();
                    if let Some(refs) = n
                        .pointer_mut("/metadata/ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                    }
                    Ok(n)
                });
            }
            remove_finalizer(app, &rt, key, "orphan");
        } else if fins.contains(&"foregroundDeletion") {
            if deps.is_empty() {
                remove_finalizer(app, &rt, key, "foregroundDeletion");
            } else {
                let fg = DeleteOpts {
                    propagation: object::Propagation::Foreground,
                    ..Default::default()
                };
                for d in &deps {
                    let Some(drt) = type_of(app, d) else { continue };
                    let dname = d.rsplit('/').next().unwrap_or_default().to_string();
                    let _ = object::delete(app, &drt, d, &dname, &fg);
                }
            }
        }
        if rt.group.is_empty() && rt.kind == "Namespace" {
            purge_namespace(app, &name);
        }
        if rt.group == "apiextensions.k8s.io"
            && rt.kind == "CustomResourceDefinition"
            && fins.contains(&object::CRD_CLEANUP)
        {
            cleanup_crd(app, &rt, key, &name);
        }
    }
}

/// Deletes a terminating namespace's contents; removes the namespace once
/// nothing is left in it.
fn purge_namespace(app: &App, ns: &str) {
    let mut remaining = 0;
    for (key, obj) in app.store.entries("") {
        let Some((_, _, ons, name)) = split_key(&key) else {
            continue;
        };
        if ons != ns {
            continue;
        }
        let Some(rt) = type_of(app, &key) else {
            continue;
        };
        if !rt.namespaced {
            continue;
        }
        remaining += 1;
        if !obj.deleting() {
            let _ = object::delete(app, &rt, &key, name, &DeleteOpts::default());
        }
    }
    let left: Vec<(String, Arc<Stored>)> = app
        .store
        .entries("")
        .into_iter()
        .filter(|(k, _)| split_key(k).is_some_and(|(_, _, ons, _)| ons == ns))
        .collect();
    let failing = crate::aggregation::unavailable(app);
    if !failing.is_empty() {
        discovery_failed(app, ns, &failing, &left);
        return;
    }
    if remaining == 0 || left.is_empty() {
        let key = format!("/namespaces//{ns}");
        let _ = app.store.transact(&key, |cur| match cur {
            Some(n)
                if object::finalizers(n).is_empty()
                    && n.pointer("/metadata/deletionTimestamp")
                        .is_some_and(|v| !v.is_null()) =>
            {
                Ok(Mutation::Delete)
            }
            Some(n) => Ok(Mutation::Keep(n.clone())),
            None => Ok(Mutation::Keep(Value::Null)),
        });
    }
}

/// A deleted CRD deletes its custom resources, each through its own
/// finalizers, and goes once none is left.
fn cleanup_crd(app: &App, crd_rt: &ResourceType, key: &str, name: &str) {
    let Some(t) = app
        .registry
        .all()
        .into_iter()
        .find(|t| t.crd.as_deref() == Some(name))
    else {
        remove_finalizer(app, crd_rt, key, object::CRD_CLEANUP);
        return;
    };
    let remaining = app.store.entries(&t.key_prefix());
    if remaining.is_empty() {
        remove_finalizer(app, crd_rt, key, object::CRD_CLEANUP);
        return;
    }
    for (k, cr) in remaining {
        if !cr.deleting() {
            let n = cr.name().to_string();
            let _ = object::delete(app, &t, &k, &n, &DeleteOpts::default());
        }
    }
}

/// kube-controller-manager's namespace conditions for a namespace it cannot
/// finish because the discovery of `failing` group versions fails, with
/// what is `left` in it; written when they change.
fn discovery_failed(app: &App, ns: &str, failing: &[String], left: &[(String, Arc<Stored>)]) {
    let wanted = namespace_conditions(failing, left);
    let key = format!("/namespaces//{ns}");
    let Some(current) = app.store.get(&key) else {
        return;
    };
    let now = crate::object::meta::now_rfc3339();
    if with_conditions(&current, &wanted, &now).is_none() {
        return;
    }
    let Some(rt) = app.registry.find("", "v1", "namespaces") else {
        return;
    };
    let opts = WriteOpts {
        manager: "kube-controller-manager".into(),
        ..Default::default()
    };
    let res = object::modify(app, &rt, &key, Target::Status, &opts, true, move |cur| {
        Ok(with_conditions(cur, &wanted, &now).unwrap_or_else(|| cur.clone()))
    });
    if let Err(e) = res {
        tracing::debug!("gc: cannot write the conditions of namespace {ns}: {e}");
    }
}

/// The five deletion conditions (type, status, reason, message) in
/// kube-controller-manager's order.
fn namespace_conditions(failing: &[String], left: &[(String, Arc<Stored>)]) -> Vec<[String; 4]> {
    let cond = |t: &str, status: &str, reason: &str, message: String| {
        [
            t.to_string(),
            status.to_string(),
            reason.to_string(),
            message,
        ]
    };
    let mut stale: Vec<String> = failing
        .iter()
        .map(|gv| format!("{gv}: stale GroupVersion discovery: {gv}"))
        .collect();
    stale.sort();
    let mut resources: std::collections::BTreeMap<String, usize> = Default::default();
    let mut finalizers: std::collections::BTreeMap<String, usize> = Default::default();
    for (key, obj) in left {
        if let Some((group, plural, _, _)) = split_key(key) {
            *resources.entry(format!("{plural}.{group}")).or_default() += 1;
        }
        for f in obj.finalizers() {
            *finalizers.entry(f.to_string()).or_default() += 1;
        }
    }
    let resources: Vec<String> = resources
        .iter()
        .map(|(r, n)| format!("{r} has {n} resource instances"))
        .collect();
    let finalizers: Vec<String> = finalizers
        .iter()
        .map(|(f, n)| format!("{f} in {n} resource instances"))
        .collect();
    vec![
        cond(
            "NamespaceDeletionDiscoveryFailure",
            "True",
            "DiscoveryFailed",
            format!(
                "Discovery failed for some groups, {} failing: unable to retrieve the complete list of server APIs: {}",
                failing.len(),
                stale.join(", ")
            ),
        ),
        cond(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        cond(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        ),
        if resources.is_empty() {
            cond(
                "NamespaceContentRemaining",
                "False",
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            cond(
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", resources.join(", ")),
            )
        },
        if finalizers.is_empty() {
            cond(
                "NamespaceFinalizersRemaining",
                "False",
                "ContentRemoved",
                "All content successfully removed".into(),
            )
        } else {
            cond(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizerRemain",
                format!("Some finalizers are remaining: {}", finalizers.join(", ")),
            )
        },
    ]
}

/// The namespace with `wanted` conditions, or `None` when it has them
/// already; a condition's transition time moves only when its status does.
fn with_conditions(ns: &Value, wanted: &[[String; 4]], now: &str) -> Option<Value> {
    let mut list: Vec<Value> = ns
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    for [t, status, reason, message] in wanted {
        let fresh = json!({"type": t, "status": status, "lastTransitionTime": now,
            "reason": reason, "message": message});
        match list.iter_mut().find(|c| c["type"] == t.as_str()) {
            None => {
                list.push(fresh);
                changed = true;
            }
            Some(c)
                if c["status"] == status.as_str()
                    && c["reason"] == reason.as_str()
                    && c["message"] == message.as_str() => {}
            Some(c) => {
                let since = if c["status"] == status.as_str() {
                    c.get("lastTransitionTime").cloned().unwrap_or(json!(now))
                } else {
                    json!(now)
                };
                *c = fresh;
                c["lastTransitionTime"] = since;
                changed = true;
            }
        }
    }
    if !changed {
        return None;
    }
    let mut out = ns.clone();
    if !out.get("status").is_some_and(Value::is_object) {
        out["status"] = json!({});
    }
    out["status"]["conditions"] = json!(list);
    Some(out)
}
