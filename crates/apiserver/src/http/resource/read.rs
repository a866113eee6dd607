//! Reading: get one object (or its `scale` or `status`), list a
//! resource with selectors and pages, both also as Tables for `kubectl
//! get`.

use crate::error::ApiError;
use crate::http::params::{list_prefix, Params};
use crate::http::response::{ok, present};
use crate::http::table::{Printer, TableOpts};
use crate::App;
use apitypes::ResourceType;
use axum::response::Response;
use serde_json::{json, Value};

/// GET of one object: as stored, as a Table row, or its Scale.
pub(super) fn get(
    app: &App,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    table: Option<TableOpts>,
) -> Result<Response, ApiError> {
    let key = rt.key(ns, name);
    let obj = app
        .store
        .get(&key)
        .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))?;
    if let (None, Some(t)) = (sub, table) {
        let md = json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))});
        return Ok(ok(&Printer::for_type(app, rt).table(
            &[present(rt, obj)],
            md,
            t,
            true,
        )));
    }
    if sub == Some("scale") {
        return Ok(ok(&super::write::scale_of(rt, &obj)));
    }
    Ok(ok(&present(rt, obj)))
}

/// GET of a collection: a List, or a Table of it.
pub(super) fn list(
    app: &App,
    rt: &ResourceType,
    ns: Option<&str>,
    params: &Params,
    table: Option<TableOpts>,
) -> Result<Response, ApiError> {
    let v = list_objects(app, rt, ns, params)?;
    match table {
        Some(t) => {
            let items = v
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let md = v.get("metadata").cloned().unwrap_or_else(|| json!({}));
            Ok(ok(&Printer::for_type(app, rt).table(&items, md, t, true)))
        }
        None => Ok(ok(&v)),
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

fn list_objects(
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
    let read = all.len();
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
    // Selectors filter what was read; they do not narrow the read.
    app.requests.list_read(&rt.plural, read, items.len());
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
