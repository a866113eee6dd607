//! Minimal OpenAPI documents. v2 is an empty but valid document (kubectl
//! parses it before validating and then skips kinds it has no schema for);
//! v3 lists every group-version with PATCH operations that declare the
//! `fieldValidation` parameter, which makes kubectl and Helm leave
//! validation to the server instead of validating client-side.

use crate::error::ApiError;
use apitypes::Registry;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn info() -> Value {
    json!({"title": "Kubernetes", "version": format!("v{}.{}.0", crate::KUBE_MAJOR, crate::KUBE_MINOR)})
}

/// `/openapi/v2`, as protobuf when asked for (client-go only reads that).
pub(crate) fn v2(headers: &HeaderMap) -> Response {
    let accept = headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        // openapi_v2.Document { swagger: "2.0" (field 1) }.
        let body: Vec<u8> = vec![0x0a, 0x03, b'2', b'.', b'0'];
        return (StatusCode::OK, [("content-type", PROTO_V2)], body).into_response();
    }
    let doc = json!({"swagger": "2.0", "info": info(), "paths": {}, "definitions": {}});
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        doc.to_string(),
    )
        .into_response()
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub(crate) fn v3_root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    let hash = format!("{:016X}", reg.generation());
    for g in reg.groups() {
        for v in &g.versions {
            let p = gv_path(&g.name, v);
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

pub(crate) fn v3_group_version(reg: &Registry, path: &str) -> Result<Value, ApiError> {
    let types: Vec<_> = reg
        .all()
        .into_iter()
        .filter(|t| gv_path(&t.group, &t.version) == path)
        .collect();
    if types.is_empty() {
        return Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let mut paths = Map::new();
    for t in types {
        let base = if t.namespaced {
            format!(
                "/{}/namespaces/{{namespace}}/{}/{{name}}",
                gv_path(&t.group, &t.version),
                t.plural
            )
        } else {
            format!("/{}/{}/{{name}}", gv_path(&t.group, &t.version), t.plural)
        };
        let op = json!({
            "operationId": format!("patch{}", t.kind),
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
            "parameters": [
                {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                {"name": "force", "in": "query", "schema": {"type": "boolean"}}
            ],
            "responses": {"200": {"description": "OK"}}
        });
        paths.insert(base, json!({"patch": op}));
    }
    Ok(json!({"openapi": "3.0.0", "info": info(), "paths": paths, "components": {"schemas": {}}}))
}
