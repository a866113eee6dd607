//! Resource endpoints (`/api/v1/namespaces/ns/pods/name[/sub]`): one
//! request after routing and authorization, handed to the handler of its
//! verb — [`read`] (get, list), [`write`](mod@write) (create, update, patch, and the
//! token, scale and status subresources) and [`delete`] (one object or a
//! collection) — or to a watch. Writes through `events.k8s.io` go to the
//! stored core Events and are answered in the `events.k8s.io` shape.

mod delete;
mod read;
mod write;

use crate::error::ApiError;
use crate::http::body::MAX_BODY;
use crate::http::params::{manager, Params};
use crate::http::response::{json_response, present, with_warnings};
use crate::http::table::TableOpts;
use crate::http::{events, watch};
use crate::object::admission::FieldValidation;
use crate::object::WriteOpts;
use crate::App;
use apitypes::ResourceType;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// A request for a resource endpoint after path parsing.
pub(crate) struct ResourceReq {
    pub(crate) rt: Arc<ResourceType>,
    pub(crate) ns: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) sub: Option<String>,
    pub(crate) watch_path: bool,
}

/// Serves one resource request.
pub(crate) async fn serve(
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
        let resp = Box::pin(serve(app, method, inner, params, &h, body)).await?;
        return represent_events(resp, &rt).await;
    }
    let warnings = wopts.warnings.clone();
    let sub = rr.sub.as_deref();
    let res = match (method.clone(), rr.name.as_deref()) {
        (Method::GET, None) if is_watch => {
            watch::serve(app.clone(), rt, rr.ns, params, table).await
        }
        (Method::GET, None) => read::list(app, &rt, rr.ns.as_deref(), params, table),
        (Method::GET, Some(name)) => read::get(app, &rt, &ns, name, sub, table),
        (Method::POST, None) => {
            if rt.namespaced && rr.ns.is_none() {
                return Err(ApiError::method_not_allowed(
                    "the server does not allow this method on the requested resource",
                ));
            }
            write::create(app, &rt, &ns, headers, &body, &wopts)
        }
        (Method::POST, Some(name)) if sub == Some("token") => {
            write::token_request(app, &rt, &ns, name, headers, &body)
        }
        (Method::PUT, Some(name)) => {
            write::update(app, &rt, &ns, name, sub, headers, &body, &wopts)
        }
        (Method::PATCH, Some(name)) => {
            write::patch(app, &rt, &ns, name, sub, params, headers, &body, &wopts)
        }
        (Method::DELETE, Some(name)) => delete::one(app, &rt, &ns, name, params, headers, &body),
        (Method::DELETE, None) => {
            delete::collection(app, &rt, rr.ns.as_deref(), params, headers, &body)
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    };
    res.map(|r| with_warnings(r, &warnings))
}

/// Decodes a create or update body for `rt`.
fn decode_object(rt: &ResourceType, headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    crate::http::body::decode(headers, body, rt.crd.is_some())
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
