//! Object semantics shared by every verb: validation, defaulting, create,
//! update (with status-subresource rules, generation, no-op detection and
//! managedFields), server-side apply and deletion with finalizers.

use crate::error::ApiError;
use crate::meta;
use crate::patch;
use crate::registry::ResourceType;
use crate::store::Mutation;
use crate::App;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// etcd's default request limit; larger objects are refused like etcd does.
pub const MAX_OBJECT_BYTES: usize = 1_572_864;

pub fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let meta = &mut obj["metadata"];
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        // Just made an object above.
        _ => unreachable!("metadata was set to an object"),
    }
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Everything but metadata and status: changes here bump `generation`.
fn spec_part(obj: &Value) -> Value {
    match obj {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn without_volatile(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    o
}

pub fn check_size(obj: &Value) -> Result<(), ApiError> {
    let n = serde_json::to_vec(obj).map(|v| v.len()).unwrap_or(0);
    if n > MAX_OBJECT_BYTES {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "etcdserver: request is too large ({n} bytes; the limit is {MAX_OBJECT_BYTES})"
            ),
        ));
    }
    Ok(())
}

/// Checks apiVersion/kind against the endpoint and the name's syntax.
pub fn validate(rt: &ResourceType, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON or YAML object",
        ));
    }
    let name = name_of(obj).to_string();
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            obj["apiVersion"] = json!(rt.api_version());
        }
        Some(v) if v == rt.api_version() => {}
        Some(v) => {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                "apiVersion",
                &format!(
                    "Invalid value: {v:?}: must be {:?} for this endpoint",
                    rt.api_version()
                ),
            ));
        }
    }
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            obj["kind"] = json!(rt.kind);
        }
        Some(k) if k == rt.kind => {}
        Some(k) => {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.kind,
                &name,
                "kind",
                &format!(
                    "Invalid value: {k:?}: must be {:?} for this endpoint",
                    rt.kind
                ),
            ));
        }
    }
    if name.is_empty() {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            &name,
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    }
    let res = if matches!(rt.kind.as_str(), "Namespace" | "Service") && rt.group.is_empty() {
        meta::validate_label(&name)
    } else {
        meta::validate_subdomain(&name)
    };
    if let Err(msg) = res {
        return Err(ApiError::invalid(
            &rt.group,
            &rt.kind,
            &name,
            "metadata.name",
            &format!("Invalid value: {name:?}: {msg}"),
        ));
    }
    for field in ["labels", "annotations"] {
        if let Some(m) = obj.pointer(&format!("/metadata/{field}")) {
            let ok = m.is_null()
                || m.as_object()
                    .is_some_and(|m| m.values().all(Value::is_string));
            if !ok {
                return Err(ApiError::bad_request(format!(
                    "metadata.{field} must be a map of strings"
                )));
            }
        }
    }
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        crate::registry::crd_types(obj)
            .map_err(|e| ApiError::invalid(&rt.group, &rt.kind, &name, "spec", &e))?;
    }
    Ok(())
}

/// Folds a Secret's write-only `stringData` into base64 `data`.
fn normalize(rt: &ResourceType, obj: &mut Value) {
    use base64::Engine;
    if !(rt.group.is_empty() && rt.kind == "Secret") {
        return;
    }
    let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) else {
        return;
    };
    if !obj.get("data").is_some_and(Value::is_object) {
        obj["data"] = json!({});
    }
    for (k, v) in sd {
        let text = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        obj["data"][k.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// Built-in defaulting that clients commonly rely on.
fn default_fields(app: &App, rt: &ResourceType, obj: &mut Value) {
    let name = name_of(obj).to_string();
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Secret")
            if obj
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            obj["type"] = json!("Opaque");
        }
        ("", "Namespace") => {
            meta_mut(obj)
                .entry("labels")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .map(|l| l.insert("kubernetes.io/metadata.name".into(), json!(name)));
            if obj.pointer("/spec/finalizers").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            obj["status"] = json!({"phase": "Active"});
        }
        ("", "Service") => {
            if !obj.get("spec").is_some_and(Value::is_object) {
                obj["spec"] = json!({});
            }
            let spec = &mut obj["spec"];
            if spec.get("type").is_none() {
                spec["type"] = json!("ClusterIP");
            }
            if spec.get("sessionAffinity").is_none() {
                spec["sessionAffinity"] = json!("None");
            }
            let external = spec.get("type").and_then(Value::as_str) == Some("ExternalName");
            if !external
                && spec
                    .get("clusterIP")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                let n = app.next_ip();
                spec["clusterIP"] = json!(format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff));
            }
            if let Some(ip) = spec.get("clusterIP").cloned() {
                if spec.get("clusterIPs").is_none() && !external {
                    spec["clusterIPs"] = json!([ip]);
                }
            }
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter(|p| p.is_object()) {
                    if p.get("protocol").is_none() {
                        p["protocol"] = json!("TCP");
                    }
                    if p.get("targetPort").is_none() {
                        if let Some(port) = p.get("port").cloned() {
                            p["targetPort"] = port;
                        }
                    }
                }
            }
        }
        ("", "Pod") if obj.get("status").is_none() => {
            obj["status"] = json!({"phase": "Pending"});
        }
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet")
            if obj.pointer("/spec/replicas").is_none() =>
        {
            if let Some(s) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                s.insert("replicas".into(), json!(1));
            }
        }
        _ => {}
    }
}

fn crd_status(obj: &mut Value) {
    let now = meta::now_rfc3339();
    let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["singular"] = json!(k.to_lowercase());
        }
    }
    if accepted.get("listKind").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["listKind"] = json!(format!("{k}List"));
        }
    }
    let storage: Vec<Value> = obj
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    obj["status"] = json!({
        "acceptedNames": accepted,
        "storedVersions": storage,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ]
    });
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    /// Server-side apply takes over conflicting fields.
    pub force: bool,
}

fn managed_entry(
    manager: &str,
    operation: &str,
    api_version: &str,
    paths: &BTreeSet<patch::FieldPath>,
    sub: Option<&str>,
) -> Value {
    let mut e = json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": meta::now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": patch::to_fields_v1(paths),
    });
    if let Some(s) = sub {
        e["subresource"] = json!(s);
    }
    e
}

fn managed_fields(obj: &Value) -> Vec<Value> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn entry_paths(e: &Value) -> BTreeSet<patch::FieldPath> {
    e.get("fieldsV1")
        .map(patch::from_fields_v1)
        .unwrap_or_default()
}

fn set_managed(obj: &mut Value, entries: Vec<Value>) {
    let entries: Vec<Value> = entries
        .into_iter()
        .filter(|e| {
            e.get("fieldsV1")
                .is_some_and(|f| f.as_object().is_some_and(|m| !m.is_empty()))
        })
        .collect();
    meta_mut(obj).insert("managedFields".into(), Value::Array(entries));
}

/// Records an Update-operation manager owning the fields it changed.
fn track_update(
    rt: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    sub: Option<&str>,
) {
    let builtin = rt.crd.is_none();
    let new_paths = patch::field_paths(new, builtin);
    let changed: BTreeSet<patch::FieldPath> = new_paths
        .iter()
        .filter(|p| match old {
            None => true,
            Some(o) => patch::value_at(o, p) != patch::value_at(new, p),
        })
        .cloned()
        .collect();
    let mut entries = old
        .map(managed_fields)
        .unwrap_or_else(|| managed_fields(new));
    if old.is_none() {
        entries.clear();
    }
    if changed.is_empty() && old.is_some() {
        set_managed(new, entries);
        return;
    }
    let mut mine: BTreeSet<patch::FieldPath> = BTreeSet::new();
    let mut rest = Vec::new();
    for mut e in entries {
        let mut paths = entry_paths(&e);
        let same = e.get("manager").and_then(Value::as_str) == Some(manager)
            && e.get("operation").and_then(Value::as_str) == Some("Update")
            && e.get("subresource").and_then(Value::as_str) == sub;
        if same {
            mine = paths.intersection(&new_paths).cloned().collect();
            continue;
        }
        paths.retain(|p| !changed.contains(p) && new_paths.contains(p));
        e["fieldsV1"] = patch::to_fields_v1(&paths);
        rest.push(e);
    }
    mine.extend(changed);
    rest.push(managed_entry(
        manager,
        "Update",
        &rt.api_version(),
        &mine,
        sub,
    ));
    set_managed(new, rest);
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
    normalize(rt, obj);
    default_fields(app, rt, obj);
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        crd_status(obj);
    } else if rt.status_subresource && rt.crd.is_some() {
        // Custom resources ignore status on create when /status exists.
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
    }
    if obj.pointer("/metadata/managedFields").is_none() {
        track_update(rt, None, obj, &opts.manager, None);
    }
    check_size(obj)?;
    Ok(name_of(obj).to_string())
}

fn namespace_check(app: &App, rt: &ResourceType, ns: &str) -> Result<(), ApiError> {
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
pub fn create(
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

fn after_write(app: &App, rt: &ResourceType, obj: &Value) {
    if rt.group == "apiextensions.k8s.io" && rt.kind == "CustomResourceDefinition" {
        if let Err(e) = app.registry.install_crd(obj) {
            tracing::warn!("stored CRD could not be served: {e}");
        }
    }
    crate::readiness::maybe_simulate(app, rt, obj);
}

/// How an update treats the status stanza.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Main,
    Status,
}

/// Read-modify-write of one object. `f` computes the desired object from
/// the current one; the common update rules are applied to its result.
pub fn modify<F>(
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
        normalize(rt, &mut new);
        if target == Target::Status {
            let status = new.get("status").cloned();
            let mut merged = cur.clone();
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
            let spec_changed = spec_part(cur) != spec_part(&new);
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
            if target == Target::Status || !track {
                if !track {
                    // Apply computed managedFields already.
                } else if let Some(mf) = cm.get("managedFields") {
                    m.insert("managedFields".into(), mf.clone());
                }
            }
        }
        if rt.kind == "CustomResourceDefinition" && rt.group == "apiextensions.k8s.io" {
            crd_status(&mut new);
        }
        if track {
            let sub = (target == Target::Status).then_some("status");
            let before = without_volatile(cur);
            let mut probe = new.clone();
            if let Some(mf) = cur.pointer("/metadata/managedFields") {
                meta_mut(&mut probe).insert("managedFields".into(), mf.clone());
            }
            if without_volatile(&probe) != before {
                track_update(rt, Some(cur), &mut new, &opts.manager, sub);
            } else {
                new = probe;
            }
        }
        check_size(&new)?;
        if without_volatile(&new) == without_volatile(cur) {
            return Ok(Mutation::Keep(cur.clone()));
        }
        if is_deleting(&new) && finalizers(&new).is_empty() {
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
pub fn apply(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    mut applied: Value,
    opts: &WriteOpts,
    target: Target,
) -> Result<Value, ApiError> {
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
    let key = rt.key(if rt.namespaced { ns } else { "" }, name);
    let builtin = rt.crd.is_none();
    let applied_paths = patch::field_paths(&applied, builtin);
    if app.store.get(&key).is_none() {
        let mut obj = applied.clone();
        set_managed(
            &mut obj,
            vec![managed_entry(
                &opts.manager,
                "Apply",
                &rt.api_version(),
                &applied_paths,
                None,
            )],
        );
        match create(app, rt, ns, obj, opts) {
            Err(e) if e.reason == "AlreadyExists" => {}
            other => return other,
        }
    }
    let sub = (target == Target::Status).then_some("status");
    modify(app, rt, &key, target, opts, false, |cur| {
        let mut entries = managed_fields(cur);
        let mut previous: BTreeSet<patch::FieldPath> = BTreeSet::new();
        let mut conflicts = Vec::new();
        let mut others_owned: BTreeSet<patch::FieldPath> = BTreeSet::new();
        for e in entries.iter_mut() {
            let mgr = e
                .get("manager")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let op = e
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let esub = e.get("subresource").and_then(Value::as_str);
            if mgr == opts.manager && op == "Apply" && esub == sub {
                previous = entry_paths(e);
                continue;
            }
            let mut paths = entry_paths(e);
            let clashing: Vec<patch::FieldPath> = paths
                .iter()
                .filter(|p| applied_paths.contains(*p) && p.last().map(String::as_str) != Some("."))
                .filter(|p| patch::value_at(cur, p) != patch::value_at(&applied, p))
                .cloned()
                .collect();
            if !clashing.is_empty() {
                if opts.force {
                    paths.retain(|p| !clashing.contains(p));
                    e["fieldsV1"] = patch::to_fields_v1(&paths);
                } else {
                    for p in clashing {
                        conflicts.push(format!(
                            "conflict with \"{mgr}\"{}: {}",
                            if op == "Update" {
                                format!(
                                    " using {}",
                                    e.get("apiVersion")
                                        .and_then(Value::as_str)
                                        .unwrap_or_default()
                                )
                            } else {
                                String::new()
                            },
                            patch::display_path(&p)
                        ));
                    }
                }
            }
            others_owned.extend(paths);
        }
        if !conflicts.is_empty() {
            let n = conflicts.len();
            let mut err = ApiError::new(
                409,
                "Conflict",
                format!(
                    "Apply failed with {n} conflict{}: {}",
                    if n == 1 { "" } else { "s" },
                    conflicts.join("\n")
                ),
            );
            err.details = Some(json!({"name": name, "group": rt.group, "kind": rt.plural,
                "causes": conflicts.iter().map(|c| json!({"reason": "FieldManagerConflict", "message": c})).collect::<Vec<_>>()}));
            return Err(err);
        }
        let mut live = cur.clone();
        for p in previous.difference(&applied_paths) {
            if !others_owned.contains(p) {
                patch::remove_at(&mut live, p);
            }
        }
        let mut to_merge = applied.clone();
        if let Some(m) = to_merge.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
            m.remove("resourceVersion");
        }
        patch::apply_merge(&mut live, &to_merge, builtin);
        entries.retain(|e| {
            !(e.get("manager").and_then(Value::as_str) == Some(opts.manager.as_str())
                && e.get("operation").and_then(Value::as_str) == Some("Apply")
                && e.get("subresource").and_then(Value::as_str) == sub)
        });
        entries.push(managed_entry(
            &opts.manager,
            "Apply",
            &rt.api_version(),
            &applied_paths,
            sub,
        ));
        set_managed(&mut live, entries);
        Ok(live)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub dry_run: bool,
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// Deletes (or, with finalizers, marks for deletion) one object.
pub fn delete(
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
    } else {
        app.store.gc_wake.notify_one();
        if is_ns {
            crate::gc::purge_namespace(app, name);
        }
    }
    Ok(result)
}

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
    app.store.gc_wake.notify_one();
}
