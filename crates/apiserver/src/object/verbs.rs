//! The verbs every endpoint ends in: create, update (with status-
//! subresource rules, generation, no-op detection and managedFields),
//! server-side apply and deletion with finalizers, each one read-modify-
//! write of the store after admission.

use crate::error::ApiError;
use crate::object::admission::{self, admit, check_size, crd_status, validate, FieldValidation};
use crate::object::managed;
use crate::object::meta::{self, finalizers, is_deleting, meta_mut, name_of};
use crate::storage::Mutation;
use crate::App;
use apitypes::{ResourceType, Schema};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Everything but metadata (and status, where it is a subresource of its
/// own): changes here bump `generation`. A custom resource whose CRD has no
/// status subresource is one document to kube-apiserver, so a status write
/// bumps its generation like any other change.
fn spec_part(obj: &Value, status_counts: bool) -> Value {
    match obj {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| match k.as_str() {
                    "metadata" | "apiVersion" | "kind" => false,
                    "status" => status_counts,
                    _ => true,
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn without_rv(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    o
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOpts {
    pub(crate) dry_run: bool,
    pub(crate) manager: String,
    /// Server-side apply takes over conflicting fields.
    pub(crate) force: bool,
    /// What to do with unknown fields.
    pub(crate) field_validation: FieldValidation,
    /// Warnings for the response's `Warning` header.
    pub(crate) warnings: Arc<Mutex<Vec<String>>>,
}

impl WriteOpts {
    fn warn(&self, w: Vec<String>) {
        if w.is_empty() {
            return;
        }
        match self.warnings.lock() {
            Ok(mut g) => g.extend(w),
            Err(p) => p.into_inner().extend(w),
        }
    }
}

/// The schema a kind's objects are typed with.
pub(crate) fn schema_of(rt: &ResourceType) -> Arc<Schema> {
    rt.schema
        .clone()
        .or_else(|| apitypes::schema::builtin(&rt.api_version(), &rt.kind))
        .unwrap_or_default()
}

fn scope<'a>(
    rt: &ResourceType,
    schema: &'a Schema,
    api_version: &'a str,
    target: Target,
) -> managed::Scope<'a> {
    managed::Scope {
        schema,
        api_version,
        subresource: (target == Target::Status).then_some("status"),
        status_subresource: rt.status_subresource,
    }
}

/// Fills server-set metadata and defaults for a new object.
fn prepare_create(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    obj: &mut Value,
    opts: &WriteOpts,
) -> Result<String, ApiError> {
    let m = meta_mut(obj);
    if rt.namespaced {
        match m.get("namespace").and_then(Value::as_str) {
            Some(n) if !n.is_empty() && n != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            _ => {
                m.insert("namespace".into(), json!(ns));
            }
        }
    } else {
        m.remove("namespace");
    }
    let name_empty = m
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if name_empty {
        if let Some(g) = m
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty())
        {
            let n = format!("{g}{}", meta::random_suffix());
            m.insert("name".into(), json!(n));
        }
    }
    for k in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(k);
    }
    m.insert("uid".into(), json!(meta::new_uid()));
    m.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
    m.insert("generation".into(), json!(1));
    validate(rt, obj)?;
    let schema = schema_of(rt);
    opts.warn(admit(app, rt, &schema, obj, None, opts.field_validation)?);
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        crd_status(obj);
    } else if rt.status_subresource
        && (rt.crd.is_some() || (rt.group == "apiregistration.k8s.io" && rt.kind == "APIService"))
    {
        // Custom resources ignore status on create when /status exists, and
        // an APIService's is its availability controller's to write.
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
    }
    if obj.pointer("/metadata/managedFields").is_none() {
        let av = rt.api_version();
        let sc = scope(rt, &schema, &av, Target::Main);
        managed::update(&sc, None, obj, &opts.manager, &meta::now_rfc3339());
    }
    check_size(obj)?;
    Ok(name_of(obj).to_string())
}

fn crd_key(name: &str) -> String {
    format!("apiextensions.k8s.io/customresourcedefinitions//{name}")
}

fn namespace_check(app: &App, rt: &ResourceType, ns: &str) -> Result<(), ApiError> {
    if let Some(crd) = &rt.crd {
        if app
            .store
            .get(&crd_key(crd))
            .is_some_and(|c| is_deleting(&c))
        {
            return Err(ApiError::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
    }
    if !rt.namespaced {
        return Ok(());
    }
    match app.store.get(&format!("/namespaces//{ns}")) {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        Some(n) if is_deleting(&n) => Err(ApiError::new(
            403,
            "Forbidden",
            format!("{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                rt.qualified(), name_of(&n)),
        )),
        Some(_) => Ok(()),
    }
}

/// Creates an object; returns it as stored.
pub(crate) fn create(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    mut obj: Value,
    opts: &WriteOpts,
) -> Result<Value, ApiError> {
    let name = prepare_create(app, rt, ns, &mut obj, opts)?;
    namespace_check(app, rt, ns)?;
    let key = rt.key(if rt.namespaced { ns } else { "" }, &name);
    let stored = app.store.transact(&key, |cur| {
        if cur.is_some() {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        if opts.dry_run {
            return Ok(Mutation::Keep(obj));
        }
        Ok(Mutation::Put(obj))
    })?;
    if !opts.dry_run {
        after_write(app, rt, &stored);
    }
    Ok(stored)
}

/// What a stored CRD changes at once, before the write is answered: the
/// kinds it serves, once it is `Established` (clients that waited for that create
/// custom resources right after).
fn after_write(app: &App, rt: &ResourceType, obj: &Value) {
    if rt.group == "apiextensions.k8s.io"
        && rt.kind == "CustomResourceDefinition"
        && admission::crd_established(obj)
    {
        if let Err(e) = app.registry.install_crd(obj) {
            tracing::warn!("stored CRD could not be served: {e}");
        }
    }
}

/// How an update treats the status stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Main,
    Status,
}

/// Read-modify-write of one object. `f` computes the desired object from
/// the current one; the common update rules are applied to its result.
pub(crate) fn modify<F>(
    app: &App,
    rt: &ResourceType,
    key: &str,
    target: Target,
    opts: &WriteOpts,
    track: bool,
    f: F,
) -> Result<Value, ApiError>
where
    F: FnOnce(&Value) -> Result<Value, ApiError>,
{
    let name = key.rsplit('/').next().unwrap_or_default();
    let mut deleted = false;
    let schema = schema_of(rt);
    let api_version = rt.api_version();
    let result = app.store.transact(key, |cur| {
        let Some(cur) = cur else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let mut new = f(cur)?;
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the result of the update is not an object",
            ));
        }
        let cur_rv = cur
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(rv) = new
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        {
            if !rv.is_empty() && rv != cur_rv {
                return Err(ApiError::conflict(&rt.group, &rt.plural, name));
            }
        }
        if let Some(n) = new.pointer("/metadata/name").and_then(Value::as_str) {
            if n != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
        }
        validate(rt, &mut new)?;
        opts.warn(admit(
            app,
            rt,
            &schema,
            &mut new,
            Some(cur),
            opts.field_validation,
        )?);
        if target == Target::Status {
            let status = new.get("status").cloned();
            let mut merged = cur.clone();
            if !track {
                // Apply computed the entries, the status manager's included.
                if let Some(mf) = new.pointer("/metadata/managedFields").cloned() {
                    meta_mut(&mut merged).insert("managedFields".into(), mf);
                }
            }
            match status {
                Some(s) => merged["status"] = s,
                None => {
                    if let Some(o) = merged.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
            new = merged;
        } else if rt.status_subresource {
            match cur.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    if let Some(o) = new.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        }
        {
            let cm = cur.get("metadata").cloned().unwrap_or(json!({}));
            let status_counts = rt.crd.is_some() && !rt.status_subresource;
            let spec_changed = spec_part(cur, status_counts) != spec_part(&new, status_counts);
            let m = meta_mut(&mut new);
            for k in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
            ] {
                match cm.get(k) {
                    Some(v) => m.insert(k.into(), v.clone()),
                    None => m.remove(k),
                };
            }
            m.insert("resourceVersion".into(), json!(cur_rv));
            let mut gen = cm.get("generation").and_then(Value::as_i64).unwrap_or(1);
            if spec_changed {
                gen += 1;
            }
            m.insert("generation".into(), json!(gen));
            // Writers other than apply own what they change, starting from
            // the entries kube-apiserver would start from (the request's own
            // ones when it rewrites them, as a move to server-side apply does).
            if track {
                let sent = m
                    .get("managedFields")
                    .filter(|_| target == Target::Main)
                    .cloned();
                match managed::update_base(cm.get("managedFields"), sent.as_ref()) {
                    Some(mf) => m.insert("managedFields".into(), mf),
                    None => m.remove("managedFields"),
                };
            }
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut new);
        }
        if track {
            let sc = scope(rt, &schema, &api_version, target);
            managed::update(
                &sc,
                Some(cur),
                &mut new,
                &opts.manager,
                &meta::now_rfc3339(),
            );
        }
        check_size(&new)?;
        if without_rv(&new) == without_rv(cur) {
            return Ok(Mutation::Keep(cur.clone()));
        }
        // A namespace is also held by its `spec.finalizers` (the namespace
        // controller's): a write to a terminating one does not end it.
        let namespace_held = rt.group.is_empty()
            && rt.kind == "Namespace"
            && new
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| !f.is_empty());
        if is_deleting(&new) && finalizers(&new).is_empty() && !namespace_held {
            deleted = true;
            if opts.dry_run {
                return Ok(Mutation::Keep(new));
            }
            return Ok(Mutation::Delete);
        }
        if opts.dry_run {
            return Ok(Mutation::Keep(new));
        }
        Ok(Mutation::Put(new))
    })?;
    if !opts.dry_run {
        if deleted {
            after_delete(app, rt, &result);
        } else {
            after_write(app, rt, &result);
        }
    }
    Ok(result)
}

/// Server-side apply: create-or-merge, field ownership and conflicts.
pub(crate) fn apply(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut applied: Value,
    opts: &WriteOpts,
    target: Target,
) -> Result<(Value, bool), ApiError> {
    if opts.manager.is_empty() {
        return Err(ApiError::bad_request(
            "PATCH, application/apply-patch+yaml requires a non-empty fieldManager query parameter",
        ));
    }
    validate(rt, &mut applied)?;
    if name_of(&applied) != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            name_of(&applied)
        )));
    }
    let schema = schema_of(rt);
    admission::check_applied(rt, &schema, ns, &applied)?;
    let key = rt.key(if rt.namespaced { ns } else { "" }, name);
    let api_version = rt.api_version();
    let sc = scope(rt, &schema, &api_version, target);
    if app.store.get(&key).is_none() {
        let obj = managed::apply(
            &sc,
            None,
            &applied,
            &opts.manager,
            opts.force,
            &meta::now_rfc3339(),
        )?;
        match create(app, rt, ns, obj, opts) {
            Err(e) if e.reason == "AlreadyExists" => {}
            other => return other.map(|o| (o, true)),
        }
    }
    modify(app, rt, &key, target, opts, false, |cur| {
        managed::apply(
            &sc,
            Some(cur),
            &applied,
            &opts.manager,
            opts.force,
            &meta::now_rfc3339(),
        )
    })
    .map(|o| (o, false))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    pub(crate) dry_run: bool,
    pub(crate) propagation: Propagation,
    pub(crate) precondition_uid: Option<String>,
    pub(crate) precondition_rv: Option<String>,
}

/// Deletes (or, with finalizers, marks for deletion) one object.
pub(crate) fn delete(
    app: &App,
    rt: &ResourceType,
    key: &str,
    name: &str,
    opts: &DeleteOpts,
) -> Result<Value, ApiError> {
    let is_ns = rt.group.is_empty() && rt.kind == "Namespace";
    let mut removed = false;
    let result =
        app.store.transact(key, |cur| {
            let Some(cur) = cur else {
                return Err(ApiError::not_found(&rt.group, &rt.plural, name));
            };
            if let Some(uid) = &opts.precondition_uid {
                if cur.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid.as_str()) {
                    return Err(ApiError::new(
                        409,
                        "Conflict",
                        format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    cur.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default()),
                    ));
                }
            }
            if let Some(rv) = &opts.precondition_rv {
                if cur
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    != Some(rv.as_str())
                {
                    return Err(ApiError::conflict(&rt.group, &rt.plural, name));
                }
            }
            let mut obj = cur.clone();
            let mut fins = finalizers(&obj);
            let deleting = is_deleting(&obj);
            if !deleting {
                match opts.propagation {
                    Propagation::Foreground if !fins.iter().any(|f| f == "foregroundDeletion") => {
                        fins.push("foregroundDeletion".into())
                    }
                    Propagation::Orphan if !fins.iter().any(|f| f == "orphan") => {
                        fins.push("orphan".into())
                    }
                    _ => {}
                }
            }
            if fins.is_empty() && !is_ns {
                removed = true;
                return Ok(if opts.dry_run {
                    Mutation::Keep(obj)
                } else {
                    Mutation::Delete
                });
            }
            if deleting {
                return Ok(Mutation::Keep(obj));
            }
            let m = meta_mut(&mut obj);
            m.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            if !fins.is_empty() {
                m.insert("finalizers".into(), json!(fins));
            }
            if let Some(g) = m.get("generation").and_then(Value::as_i64) {
                m.insert("generation".into(), json!(g + 1));
            }
            if is_ns {
                obj["status"] = json!({"phase": "Terminating"});
            }
            Ok(if opts.dry_run {
                Mutation::Keep(obj)
            } else {
                Mutation::Put(obj)
            })
        })?;
    if opts.dry_run {
        return Ok(result);
    }
    if removed {
        after_delete(app, rt, &result);
    }
    Ok(result)
}

/// What a deleted CRD takes with it at once: the kinds it served and any
/// custom resources still stored.
fn after_delete(app: &App, rt: &ResourceType, obj: &Value) {
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        let name = name_of(obj).to_string();
        if let Some(t) = app
            .registry
            .all()
            .into_iter()
            .find(|t| t.crd.as_deref() == Some(name.as_str()))
        {
            for (key, _) in app.store.entries(&t.key_prefix()) {
                let _ = app.store.transact(&key, |cur| {
                    Ok(if cur.is_some() {
                        Mutation::Delete
                    } else {
                        Mutation::Keep(Value::Null)
                    })
                });
            }
        }
        app.registry.remove_crd(&name);
    }
}
