//! Writing: create (and the review kinds, answered without storing),
//! update, the four patch types and server-side apply, the `status` and
//! `scale` subresources, and ServiceAccount token requests.

use super::decode_object;
use crate::error::ApiError;
use crate::http::params::Params;
use crate::http::response::{json_response, ok, present};
use crate::object::{self, patch, Target, WriteOpts};
use crate::App;
use apitypes::ResourceType;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// POST of a new object; TokenReview and the access reviews are answered,
/// not stored.
pub(super) fn create(
    app: &Arc<App>,
    rt: &ResourceType,
    ns: &str,
    headers: &HeaderMap,
    body: &[u8],
    wopts: &WriteOpts,
) -> Result<Response, ApiError> {
    let mut obj = decode_object(rt, headers, body)?;
    if matches!(
        rt.group.as_str(),
        "authorization.k8s.io" | "authentication.k8s.io"
    ) {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the request body must be an object"));
        }
        obj["status"] = review(app, rt, &obj, headers);
        return Ok(json_response(StatusCode::CREATED, &present(rt, obj)));
    }
    let created = object::create(app, rt, ns, obj, wopts)?;
    Ok(json_response(StatusCode::CREATED, &present(rt, created)))
}

/// POST of a ServiceAccount's `token` subresource: a TokenRequest answered
/// with a fresh token.
pub(super) fn token_request(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let mut req = decode_object(rt, headers, body)?;
    let sa = app
        .store
        .get(&rt.key(ns, name))
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    let uid = sa
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let token = app.auth.issue(ns, name, uid);
    let secs = req
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(3600);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if !req.is_object() {
        req = json!({});
    }
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    req["metadata"] = json!({"name": name, "namespace": ns});
    req["status"] = json!({"token": token,
        "expirationTimestamp": crate::object::meta::format_rfc3339(now + secs)});
    Ok(json_response(StatusCode::CREATED, &req))
}

/// PUT of an object, its status or its scale.
#[allow(clippy::too_many_arguments)]
pub(super) fn update(
    app: &Arc<App>,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
    wopts: &WriteOpts,
) -> Result<Response, ApiError> {
    let obj = decode_object(rt, headers, body)?;
    if let Some(n) = obj.pointer("/metadata/name").and_then(Value::as_str) {
        if n != name && sub != Some("scale") {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
    }
    let key = rt.key(ns, name);
    let target = if sub == Some("status") {
        Target::Status
    } else {
        Target::Main
    };
    if sub == Some("scale") {
        // The answer is a Scale, not the object: warnings about the
        // object's own fields are not this client's.
        let wopts = WriteOpts {
            warnings: Default::default(),
            ..wopts.clone()
        };
        let replicas = obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
        let updated = object::modify(app, rt, &key, Target::Main, &wopts, true, |cur| {
            let mut n = cur.clone();
            set_replicas(rt, app, &mut n, replicas);
            Ok(n)
        })?;
        return Ok(ok(&scale_of(rt, &updated)));
    }
    let updated = object::modify(app, rt, &key, target, wopts, true, move |_| Ok(obj))?;
    Ok(ok(&present(rt, updated)))
}

/// PATCH of an object, its status or its scale: JSON, merge and strategic
/// merge patches, or server-side apply.
#[allow(clippy::too_many_arguments)]
pub(super) fn patch(
    app: &Arc<App>,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    params: &Params,
    headers: &HeaderMap,
    body: &[u8],
    wopts: &WriteOpts,
) -> Result<Response, ApiError> {
    let ct = crate::http::body::media_type(headers);
    let accepted = if rt.crd.is_some() {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    };
    let format = match ct.as_str() {
        "application/json-patch+json" | "application/merge-patch+json" => {
            crate::http::body::Format::Json
        }
        "application/strategic-merge-patch+json" if rt.crd.is_none() => {
            crate::http::body::Format::Json
        }
        "application/apply-patch+yaml" => crate::http::body::Format::Yaml,
        _ => return Err(crate::http::body::unsupported(accepted)),
    };
    let target = if sub == Some("status") {
        Target::Status
    } else {
        Target::Main
    };
    let key = rt.key(ns, name);
    let patch_body = crate::http::body::decode_as(format, body)?;
    let scale = sub == Some("scale");
    let apply_to = |cur: &Value| -> Result<Value, ApiError> {
        let mut doc = if scale {
            scale_of(rt, cur)
        } else {
            present(rt, cur.clone())
        };
        match ct.as_str() {
            "application/json-patch+json" => {
                let ops: json_patch::Patch = serde_json::from_value(patch_body.clone())
                    .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
                json_patch::patch(&mut doc, &ops).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!("the JSON patch could not be applied: {e}"),
                    )
                })?;
            }
            "application/merge-patch+json" => json_patch::merge(&mut doc, &patch_body),
            "application/strategic-merge-patch+json" => {
                patch::strategic_merge(&mut doc, &patch_body).map_err(ApiError::bad_request)?;
            }
            _ => return Err(crate::http::body::unsupported(accepted)),
        }
        if scale {
            let replicas = doc.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
            let mut n = cur.clone();
            set_replicas(rt, app, &mut n, replicas);
            return Ok(n);
        }
        Ok(doc)
    };
    if ct == "application/apply-patch+yaml" {
        if params.get("fieldManager").is_none_or(str::is_empty) {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requires fieldManager to be set",
            ));
        }
        let opts = WriteOpts {
            force: params.flag("force"),
            ..wopts.clone()
        };
        let (res, created) = object::apply(app, rt, ns, name, patch_body, &opts, target)?;
        let code = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return Ok(json_response(code, &present(rt, res)));
    }
    let target = if scale { Target::Main } else { target };
    let updated = object::modify(app, rt, &key, target, wopts, true, apply_to)?;
    if scale {
        return Ok(ok(&scale_of(rt, &updated)));
    }
    Ok(ok(&present(rt, updated)))
}

/// Answers TokenReview, SubjectAccessReview and the self reviews.
fn review(app: &App, rt: &ResourceType, obj: &Value, headers: &HeaderMap) -> Value {
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    match rt.kind.as_str() {
        "TokenReview" => {
            let token = spec
                .get("token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match app.auth.authenticate_token(app, token) {
                Some(u) => json!({"authenticated": true, "user": u.to_json(),
                    "audiences": spec.get("audiences").cloned().unwrap_or_else(|| json!([]))}),
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            }
        }
        "SelfSubjectRulesReview" => {
            json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": false})
        }
        "SelfSubjectAccessReview" => {
            let me = app.auth.whoami(app, headers);
            crate::http::auth::review(app, &me, &spec)
        }
        _ => crate::http::auth::review(app, &crate::http::auth::spec_user(&spec), &spec),
    }
}

fn replicas_path(app: &App, rt: &ResourceType) -> (String, String) {
    if let Some(crd) = &rt.crd {
        if let Some(c) = app.store.get(&format!(
            "apiextensions.k8s.io/customresourcedefinitions//{crd}"
        )) {
            let versions = c
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(s) = versions
                .iter()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(&rt.version))
                .and_then(|v| v.pointer("/subresources/scale"))
            {
                let sp = s
                    .get("specReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".spec.replicas");
                let st = s
                    .get("statusReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".status.replicas");
                return (sp.replace('.', "/"), st.replace('.', "/"));
            }
        }
    }
    ("/spec/replicas".into(), "/status/replicas".into())
}

fn set_replicas(rt: &ResourceType, app: &App, obj: &mut Value, replicas: Value) {
    let (sp, _) = replicas_path(app, rt);
    let parts: Vec<&str> = sp.trim_start_matches('/').split('/').collect();
    let mut cur = obj;
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i + 1 == parts.len() {
            cur[*p] = replicas.clone();
            return;
        }
        cur = &mut cur[*p];
    }
}

pub(super) fn scale_of(_rt: &ResourceType, obj: &Value) -> Value {
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": obj.pointer("/metadata/name"), "namespace": obj.pointer("/metadata/namespace"),
            "uid": obj.pointer("/metadata/uid"), "resourceVersion": obj.pointer("/metadata/resourceVersion"),
            "creationTimestamp": obj.pointer("/metadata/creationTimestamp")},
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {"replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": rt_selector(obj)}
    })
}

fn rt_selector(obj: &Value) -> String {
    obj.pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}
