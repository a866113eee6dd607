//! Deleting: one object or a collection (by selectors), with
//! DeleteOptions' propagation policy, preconditions and dry run.

use crate::error::ApiError;
use crate::http::params::{list_prefix, Params};
use crate::http::response::{ok, present};
use crate::object::{self, meta, DeleteOpts, Propagation};
use crate::App;
use apitypes::ResourceType;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

/// DELETE of one object.
pub(super) fn one(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let dopts = delete_opts(params, headers, body)?;
    let key = rt.key(ns, name);
    let res = object::delete(app, rt, &key, name, &dopts)?;
    // Held by finalizers (or a dry run): the object, marked for deletion. Gone at
    // once (answered unmarked: a held object always carries its deletion
    // timestamp): kube-apiserver's registry answers a `Status` naming what it
    // deleted, except for the kinds whose storage returns the deleted object (Pods).
    let gone = !dopts.dry_run && !meta::is_deleting(&res);
    if gone && !(rt.group.is_empty() && rt.plural == "pods") {
        let uid = res.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
        return Ok(ok(&json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": uid},
        })));
    }
    Ok(ok(&present(rt, res)))
}

/// DELETE of a collection: every object the selectors match, answered as
/// the list of what was deleted.
pub(super) fn collection(
    app: &App,
    rt: &ResourceType,
    ns: Option<&str>,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let dopts = delete_opts(params, headers, body)?;
    let (l, f) = params.selectors(rt)?;
    let prefix = list_prefix(rt, ns);
    let (items, _) = app.store.list(&prefix, None);
    let mut deleted = Vec::new();
    for item in items
        .into_iter()
        .filter(|o| l.matches_stored(o) && f.matches_stored(o))
    {
        let name = item.name().to_string();
        let ins = item.namespace().to_string();
        match object::delete(app, rt, &rt.key(&ins, &name), &name, &dopts) {
            Ok(v) => deleted.push(present(rt, v)),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ok(
        &json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(),
        "metadata": {"resourceVersion": app.store.current_rv().to_string()}, "items": deleted}),
    ))
}

fn delete_opts(params: &Params, headers: &HeaderMap, body: &[u8]) -> Result<DeleteOpts, ApiError> {
    let b: Value = if body.is_empty() {
        json!({})
    } else if body.starts_with(b"k8s\0") {
        crate::http::protobuf::decode_delete_options(body)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?
    } else {
        crate::http::body::decode(headers, body, false)
            .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {}", e.message)))?
    };
    let policy = b
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .or(params.get("propagationPolicy"));
    let orphan = b
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or(params.get("orphanDependents").map(|v| v == "true"));
    let propagation = match (policy, orphan) {
        (Some("Foreground"), _) => Propagation::Foreground,
        (Some("Orphan"), _) | (None, Some(true)) => Propagation::Orphan,
        (Some("Background") | None, _) => Propagation::Background,
        (Some(other), _) => {
            return Err(ApiError::bad_request(format!(
                "invalid propagationPolicy {other:?}: must be Foreground, Background or Orphan"
            )))
        }
    };
    let dry = b
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOpts {
        dry_run: dry || params.dry_run(),
        propagation,
        precondition_uid: b
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_rv: b
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}
