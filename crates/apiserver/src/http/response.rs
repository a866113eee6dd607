//! What a resource request answers: JSON bodies, objects presented in the
//! requested version, `Warning` headers and streamed bodies.

use crate::http::events;
use apitypes::ResourceType;
use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::sync::Mutex;

pub(crate) fn json_response(code: StatusCode, v: &Value) -> Response {
    (
        code,
        [("content-type", "application/json")],
        crate::storage::json::to_string(v),
    )
        .into_response()
}

/// A 200 with `v` as JSON.
pub(crate) fn ok(v: &Value) -> Response {
    json_response(StatusCode::OK, v)
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
pub(crate) fn with_warnings(mut resp: Response, warnings: &Mutex<Vec<String>>) -> Response {
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

/// A body streamed from `rx`; used by watch streams to stop when the
/// client goes away.
pub(crate) fn stream_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
    });
    Body::from_stream(stream)
}
