//! Garbage collection: deletes dependents whose owners are gone
//! (background), drives foreground and orphan deletion finalizers,
//! finishes terminating namespaces once they are empty and deleted CRDs
//! once their custom resources are gone. A sweep follows every deletion
//! and every object newly marked for deletion on the change stream, and
//! runs every few seconds as a safety net.

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

/// A deletion, or an object newly marked for deletion (a namespace
/// terminating, an owner waiting for its dependents).
fn wakes(ev: &Event) -> bool {
    ev.kind == EventType::Deleted
        || (ev.object.deleting() && !ev.old.as_ref().is_some_and(|o| o.deleting()))
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
    let still = app
        .store
        .entries("")
        .iter()
        .filter(|(k, _)| split_key(k).is_some_and(|(_, _, ons, _)| ons == ns))
        .count();
    if remaining == 0 || still == 0 {
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
