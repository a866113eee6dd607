//! HTTP routing: parses Kubernetes API paths and query parameters and maps
//! each request onto the object operations, watch, discovery or OpenAPI.

use crate::error::ApiError;
use crate::http::metrics::RequestLabels;
use crate::http::table::{Printer, TableOpts};
use crate::http::{discovery, events, openapi, watch};
use crate::object::admission::FieldValidation;
use crate::object::meta::{FieldSelector, LabelSelector};
use crate::object::patch;
use crate::object::{self, DeleteOpts, Propagation, Target, WriteOpts};
use crate::App;
use apitypes::ResourceType;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Request bodies above this are refused before parsing
/// (kube-apiserver's `--max-request-body-bytes` default).
const MAX_BODY: usize = 3 * 1024 * 1024;

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .fallback(dispatch)
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
}

pub(crate) fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [("content-type", "application/json")],
        crate::http::body::to_string(v),
    )
        .into_response()
}

fn ok(v: &Value) -> Response {
    json_response(StatusCode::OK, v)
}

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

/// `path.IsValidPathSegmentName`: what a name in a URL may not be.
fn check_path_name(name: &str) -> Result<(), ApiError> {
    let msg = match name {
        "." => Some("may not be '.'".to_string()),
        ".." => Some("may not be '..'".to_string()),
        n if n.contains('/') => Some("may not contain '/'".to_string()),
        n if n.contains('%') => Some("may not contain '%'".to_string()),
        _ => None,
    };
    match msg {
        Some(m) => Err(ApiError::bad_request(format!(
            "invalid resource name {name:?}: [{m}]"
        ))),
        None => Ok(()),
    }
}

/// A request for a resource endpoint after path parsing.
struct ResourceReq {
    rt: Arc<ResourceType>,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
    watch_path: bool,
}

async fn dispatch(State(app): State<Arc<App>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let params = Params(
        axum::extract::Query::<HashMap<String, String>>::try_from_uri(&parts.uri)
            .map(|q| q.0)
            .unwrap_or_default(),
    );
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::new(
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728",
            )
            .into_response()
        }
    };
    let (response, labels) = if crate::http::body::depth_bound(&body) > crate::http::body::SHALLOW {
        deep(app.clone(), parts.method, path, params, parts.headers, body).await
    } else {
        let mut labels = RequestLabels::default();
        let result = route(
            &app,
            &parts.method,
            &path,
            &params,
            &parts.headers,
            body,
            &mut labels,
        )
        .await;
        let response = match result {
            Ok(r) => r,
            Err(e) => e.into_response(),
        };
        (response, labels)
    };
    app.requests.record(labels, response.status().as_u16());
    response
}

/// Stack for requests whose bodies nest deeply (up to Go's 10,000 levels).
const DEEP_STACK: usize = 512 * 1024 * 1024;

/// Handles a deeply nested body on a thread of its own with a large stack:
/// decoding, validation and merging recurse once per level.
async fn deep(
    app: Arc<App>,
    method: Method,
    path: String,
    params: Params,
    headers: HeaderMap,
    body: Bytes,
) -> (Response, RequestLabels) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("apiserver-deep-request".into())
        .stack_size(DEEP_STACK)
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let response = ApiError::internal(e.to_string()).into_response();
                    let _ = tx.send((response, RequestLabels::default()));
                    return;
                }
            };
            let mut labels = RequestLabels::default();
            let res = rt.block_on(route(
                &app,
                &method,
                &path,
                &params,
                &headers,
                body,
                &mut labels,
            ));
            let response = match res {
                Ok(r) => r,
                Err(e) => e.into_response(),
            };
            let _ = tx.send((response, labels));
        });
    if let Err(e) = spawned {
        let response =
            ApiError::internal(format!("cannot start a request thread: {e}")).into_response();
        return (response, RequestLabels::default());
    }
    rx.await.unwrap_or_else(|_| {
        let response =
            ApiError::internal("the request thread ended without an answer").into_response();
        (response, RequestLabels::default())
    })
}

async fn route(
    app: &Arc<App>,
    method: &Method,
    path: &str,
    params: &Params,
    headers: &HeaderMap,
    body: Bytes,
    labels: &mut RequestLabels,
) -> Result<Response, ApiError> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    // Resource requests are authorized once their resource is known;
    // everything else (discovery, health, OpenAPI) by path.
    let resource_request = match segs.first() {
        Some(&"api") => segs.len() > 2,
        Some(&"apis") => segs.len() > 3,
        _ => false,
    };
    if !resource_request {
        let attrs = crate::http::auth::Attributes::non_resource(method.as_str(), path);
        app.auth.authorize(app, headers, &attrs)?;
    }
    match segs.as_slice() {
        ["version"] => return Ok(ok(&discovery::version())),
        ["metrics"] => {
            let text = crate::http::metrics::render(&app.requests, &app.store.object_counts());
            return Ok((
                StatusCode::OK,
                [("content-type", "text/plain; version=0.0.4")],
                text,
            )
                .into_response());
        }
        ["healthz" | "livez" | "readyz", ..] => {
            return Ok((StatusCode::OK, [("content-type", "text/plain")], "ok").into_response())
        }
        ["api"] => return Ok(ok(&discovery::api_versions())),
        ["apis"] => return Ok(ok(&discovery::api_groups(&app.registry))),
        ["api", "v1"] => return discovery::resource_list(&app.registry, "", "v1").map(|v| ok(&v)),
        ["apis", g] => return discovery::api_group(&app.registry, g).map(|v| ok(&v)),
        ["apis", g, v] => return discovery::resource_list(&app.registry, g, v).map(|v| ok(&v)),
        ["openapi", "v2"] => return Ok(openapi::v2(headers)),
        ["openapi", "v3"] => return Ok(ok(&openapi::v3_root(&app.registry))),
        ["openapi", "v3", rest @ ..] => {
            return openapi::v3_group_version(&app.registry, &rest.join("/")).map(|v| ok(&v))
        }
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => {
            return Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ))
        }
    };
    let rr = parse_resource(app, group, version, rest)?;
    let watch = rr.watch_path || params.flag("watch");
    *labels = RequestLabels::resource(
        method,
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next()),
        rr.name.is_some(),
        watch,
        &rr.rt,
        rr.sub.as_deref(),
    );
    if let Some(verb) = crate::faults::Verb::of(method, rr.name.is_some(), watch) {
        let attrs = crate::http::auth::Attributes::resource(
            verb,
            &rr.rt.group,
            &rr.rt.plural,
            rr.sub.as_deref(),
            rr.ns.as_deref(),
            rr.name.as_deref(),
        );
        app.auth.authorize(app, headers, &attrs)?;
    }
    let fault = app.faults.on_request(
        method,
        &rr.rt.group,
        &rr.rt.plural,
        rr.ns.as_deref(),
        rr.name.as_deref(),
        watch,
    );
    if let Some(f) = fault.as_ref().filter(|f| f.is_before()) {
        return Err(f.error());
    }
    let res = resource(app, method, rr, params, headers, body).await;
    match fault {
        Some(f) => res.and(Err(f.error())),
        None => res,
    }
}

fn parse_resource(
    app: &App,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<ResourceReq, ApiError> {
    let (watch_path, rest) = match rest {
        ["watch", r @ ..] => (true, r),
        r => (false, r),
    };
    let (ns, resource, name, sub) = match rest {
        ["namespaces", n, s @ ("status" | "finalize")] => (None, "namespaces", Some(*n), Some(*s)),
        ["namespaces", ns, res, tail @ ..] => {
            (Some(*ns), *res, tail.first().copied(), tail.get(1).copied())
        }
        [res, tail @ ..] => (None, *res, tail.first().copied(), tail.get(1).copied()),
        [] => {
            return Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ))
        }
    };
    let not_found = || {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let rt = app
        .registry
        .find(group, version, resource)
        .ok_or_else(not_found)?;
    if let Some(n) = name {
        check_path_name(n)?;
    }
    if ns.is_some() && !rt.namespaced {
        return Err(not_found());
    }
    if let Some(s) = sub {
        let allowed = (s == "status" && rt.status_subresource)
            || (s == "scale" && rt.scale_subresource)
            || (s == "finalize" && rt.kind == "Namespace")
            || (s == "token" && rt.kind == "ServiceAccount" && rt.group.is_empty());
        if !allowed {
            return Err(not_found());
        }
    }
    Ok(ResourceReq {
        rt,
        ns: ns.map(str::to_string),
        name: name.map(str::to_string),
        sub: sub.map(str::to_string),
        watch_path,
    })
}

/// Decodes a create or update body for `rt`.
fn decode_object(rt: &ResourceType, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    crate::http::body::decode(headers, body, rt.crd.is_some())
}

fn manager(params: &Params, headers: &HeaderMap) -> String {
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

/// Rewrites apiVersion to the requested version (CRDs serve several) and
/// converts stored core Events to the `events.k8s.io` shape when asked.
pub(crate) fn present(rt: &ResourceType, mut obj: Value) -> Value {
    if events::is_events_api(&rt.group, &rt.plural) {
        obj = events::from_core(obj);
    }
    if let Some(o) = obj.as_object_mut() {
        o.insert("apiVersion".into(), json!(rt.api_version()));
    }
    obj
}

/// Warnings a write collected, as `Warning` headers (`299 - "…"`).
fn with_warnings(mut resp: Response, warnings: &Mutex<Vec<String>>) -> Response {
    let list = match warnings.lock() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    };
    for w in list {
        let quoted = Value::String(w).to_string();
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("299 - {quoted}")) {
            resp.headers_mut().append("warning", v);
        }
    }
    resp
}

async fn resource(
    app: &Arc<App>,
    method: &Method,
    rr: ResourceReq,
    params: &Params,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let rt = rr.rt.clone();
    let ns = rr.ns.clone().unwrap_or_default();
    let wopts = WriteOpts {
        dry_run: params.dry_run(),
        manager: manager(params, headers),
        force: false,
        field_validation: FieldValidation::parse(params.get("fieldValidation"))?,
        warnings: Default::default(),
    };
    let is_watch = rr.watch_path || params.flag("watch");
    let table = TableOpts::from_request(headers, params.get("includeObject"));
    // Writes through events.k8s.io go to the stored core Events; responses
    // are presented back in the events.k8s.io shape.
    let events_api = events::is_events_api(&rt.group, &rt.plural);
    let core_events = if events_api && *method != Method::GET {
        app.registry.find("", "v1", "events")
    } else {
        None
    };
    if let Some(core) = core_events {
        let body = if body.is_empty() || *method == Method::DELETE {
            body
        } else {
            let v = decode_object(&rt, headers, &body)?;
            Bytes::from(events::to_core(v).to_string())
        };
        let mut h = headers.clone();
        if *method != Method::PATCH && *method != Method::DELETE {
            h.insert(
                "content-type",
                axum::http::HeaderValue::from_static("application/json"),
            );
        }
        let inner = ResourceReq {
            rt: core,
            ns: rr.ns.clone(),
            name: rr.name.clone(),
            sub: rr.sub.clone(),
            watch_path: rr.watch_path,
        };
        let resp = Box::pin(resource(app, method, inner, params, &h, body)).await?;
        return represent_events(resp, &rt).await;
    }
    let warnings = wopts.warnings.clone();
    let res = match (method.clone(), rr.name.as_deref()) {
        (Method::GET, None) if is_watch => {
            watch::serve(app.clone(), rt, rr.ns, params, table).await
        }
        (Method::GET, None) => {
            let v = list(app, &rt, rr.ns.as_deref(), params)?;
            match table {
                Some(t) => {
                    let items = v
                        .get("items")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let md = v.get("metadata").cloned().unwrap_or_else(|| json!({}));
                    Ok(ok(&Printer::for_type(app, &rt).table(&items, md, t, true)))
                }
                None => Ok(ok(&v)),
            }
        }
        (Method::GET, Some(name)) if rr.sub.is_none() && table.is_some() => {
            let key = rt.key(&ns, name);
            let obj = app
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
            let md = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))});
            let t = table.unwrap_or(TableOpts {
                v1: true,
                include: crate::http::table::Include::Metadata,
            });
            Ok(ok(&Printer::for_type(app, &rt).table(
                &[present(&rt, obj)],
                md,
                t,
                true,
            )))
        }
        (Method::GET, Some(name)) => {
            let key = rt.key(&ns, name);
            let obj = app
                .store
                .get(&key)
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
            if rr.sub.as_deref() == Some("scale") {
                return Ok(ok(&scale_of(&rt, &obj)));
            }
            Ok(ok(&present(&rt, obj)))
        }
        (Method::POST, None) => {
            if rt.namespaced && rr.ns.is_none() {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ));
            }
            let mut obj = decode_object(&rt, headers, &body)?;
            if matches!(
                rt.group.as_str(),
                "authorization.k8s.io" | "authentication.k8s.io"
            ) {
                if !obj.is_object() {
                    return Err(ApiError::bad_request("the request body must be an object"));
                }
                obj["status"] = review(app, &rt, &obj, headers);
                return Ok(json_response(StatusCode::CREATED, &present(&rt, obj)));
            }
            let created = object::create(app, &rt, &ns, obj, &wopts)?;
            Ok(json_response(StatusCode::CREATED, &present(&rt, created)))
        }
        (Method::POST, Some(name)) if rr.sub.as_deref() == Some("token") => {
            let mut req = decode_object(&rt, headers, &body)?;
            let sa = app
                .store
                .get(&rt.key(&ns, name))
                .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
            let uid = sa
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let token = app.auth.issue(&ns, name, uid);
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
        (Method::PUT, Some(name)) => {
            let obj = decode_object(&rt, headers, &body)?;
            if let Some(n) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                if n != name && rr.sub.as_deref() != Some("scale") {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({n}) does not match the name on the URL ({name})"
                    )));
                }
            }
            let key = rt.key(&ns, name);
            let target = if rr.sub.as_deref() == Some("status") {
                Target::Status
            } else {
                Target::Main
            };
            if rr.sub.as_deref() == Some("scale") {
                let replicas = obj.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
                let updated = object::modify(app, &rt, &key, Target::Main, &wopts, true, |cur| {
                    let mut n = cur.clone();
                    set_replicas(&rt, app, &mut n, replicas);
                    Ok(n)
                })?;
                return Ok(ok(&scale_of(&rt, &updated)));
            }
            let updated = object::modify(app, &rt, &key, target, &wopts, true, move |_| Ok(obj))?;
            Ok(ok(&present(&rt, updated)))
        }
        (Method::PATCH, Some(name)) => patch_object(
            app,
            &rt,
            &ns,
            name,
            rr.sub.as_deref(),
            params,
            headers,
            &body,
            &wopts,
        ),
        (Method::DELETE, Some(name)) => {
            let dopts = delete_opts(params, headers, &body)?;
            let key = rt.key(&ns, name);
            let res = object::delete(app, &rt, &key, name, &dopts)?;
            Ok(ok(&present(&rt, res)))
        }
        (Method::DELETE, None) => {
            let dopts = delete_opts(params, headers, &body)?;
            let (l, f) = params.selectors(&rt)?;
            let prefix = list_prefix(&rt, rr.ns.as_deref());
            let (items, _) = app.store.list(&prefix, None);
            let mut deleted = Vec::new();
            for item in items
                .into_iter()
                .filter(|o| l.matches_stored(o) && f.matches_stored(o))
            {
                let name = item.name().to_string();
                let ins = item.namespace().to_string();
                match object::delete(app, &rt, &rt.key(&ins, &name), &name, &dopts) {
                    Ok(v) => deleted.push(present(&rt, v)),
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(ok(
                &json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(),
                "metadata": {"resourceVersion": app.store.current_rv().to_string()}, "items": deleted}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    };
    res.map(|r| with_warnings(r, &warnings))
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

/// Converts a core Event in a response body to the events.k8s.io shape.
async fn represent_events(resp: Response, rt: &ResourceType) -> Result<Response, ApiError> {
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::internal(format!("cannot read the response: {e}")))?;
    let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    if v.get("kind").and_then(Value::as_str) == Some("Event") {
        v = present(rt, v);
    } else if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for it in items.iter_mut() {
            *it = present(rt, std::mem::take(it));
        }
        v["apiVersion"] = json!(rt.api_version());
    }
    Ok(json_response(parts.status, &v))
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

fn scale_of(_rt: &ResourceType, obj: &Value) -> Value {
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

#[allow(clippy::too_many_arguments)]
fn patch_object(
    app: &Arc<App>,
    rt: &Arc<ResourceType>,
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

pub(crate) fn list_prefix(rt: &ResourceType, ns: Option<&str>) -> String {
    match ns {
        Some(ns) if rt.namespaced => format!("{}{ns}/", rt.key_prefix()),
        _ => rt.key_prefix(),
    }
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if s.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn list(
    app: &App,
    rt: &ResourceType,
    ns: Option<&str>,
    params: &Params,
) -> Result<Value, ApiError> {
    let (l, f) = params.selectors(rt)?;
    let prefix = list_prefix(rt, ns);
    let limit: usize = params
        .get("limit")
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(usize::MAX);
    let (after, token_rv) = match params.get("continue").filter(|c| !c.is_empty()) {
        Some(tok) => {
            let decoded =
                unhex(tok).ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
            let (rv, key) = decoded
                .split_once('|')
                .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
            (Some(key.to_string()), rv.parse::<u64>().ok())
        }
        None => (None, None),
    };
    let (all, rv) = app.store.list(&prefix, after.as_deref());
    let rv = token_rv.unwrap_or(rv);
    let mut items = Vec::new();
    let mut last_key = None;
    let mut remaining = 0usize;
    for obj in all {
        if !(l.matches_stored(&obj) && f.matches_stored(&obj)) {
            continue;
        }
        if items.len() >= limit {
            remaining += 1;
            continue;
        }
        let ons = obj.namespace();
        last_key = Some(rt.key(if rt.namespaced { ons } else { "" }, obj.name()));
        items.push(present(rt, obj.value()));
    }
    let mut md = json!({"resourceVersion": rv.to_string()});
    if remaining > 0 {
        if let Some(k) = last_key {
            md["continue"] = json!(hex(&format!("{rv}|{k}")));
            md["remainingItemCount"] = json!(remaining);
        }
    }
    Ok(
        json!({"kind": format!("{}List", rt.kind), "apiVersion": rt.api_version(), "metadata": md, "items": items}),
    )
}

/// Used by watch streams to stop when the client goes away.
pub(crate) fn stream_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
    });
    Body::from_stream(stream)
}
