//! HTTP routing: parses Kubernetes API paths and query parameters and maps
//! each request onto the resource handlers, discovery, OpenAPI, health and
//! metrics, after authorization and fault injection.

use crate::error::ApiError;
use crate::http::body::MAX_BODY;
use crate::http::metrics::RequestLabels;
use crate::http::params::Params;
use crate::http::resource::{self, ResourceReq};
use crate::http::response::ok;
use crate::http::{aggregator, discovery, openapi};
use crate::App;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) fn router(app: Arc<App>) -> Router {
    Router::new()
        .fallback(dispatch)
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
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
        ["apis"] => return Ok(ok(&aggregator::api_groups(app))),
        ["api", "v1"] => return discovery::resource_list(&app.registry, "", "v1").map(|v| ok(&v)),
        ["apis", g] => return aggregator::api_group(app, g).map(|v| ok(&v)),
        ["apis", g, v, rest @ ..] if crate::aggregation::is_remote(app, g, v) => {
            return aggregator::proxy(app, method, path, g, rest, params, headers)
        }
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
    let res = resource::serve(app, method, rr, params, headers, body).await;
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
