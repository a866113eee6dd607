//! Entry points for the fuzz targets in `fuzz/` (not an API): the request
//! body path from bytes to the typed operations server-side apply runs.

use axum::http::{HeaderMap, HeaderValue};
use serde_json::Value;

/// Decodes `body` as `content_type` and, when it is an object, runs the
/// decode checks, apply field set, merge, comparison, duplicate-key check
/// and stored shape of `api_version`/`kind` on it.
pub fn request_body(content_type: &str, api_version: &str, kind: &str, body: &[u8]) {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        headers.insert("content-type", v);
    }
    let Ok(v) = crate::http::body::decode(&headers, body, false) else {
        return;
    };
    // Deep values recurse in every walk below, as on the server's own
    // big-stack request thread.
    let (api_version, kind) = (api_version.to_string(), kind.to_string());
    let run = move || {
        let api_version = api_version.as_str();
        let Some(schema) = apitypes::schema::builtin(api_version, &kind) else {
            return;
        };
        if !v.is_object() {
            return;
        }
        let _ = apitypes::typed::duplicates(&schema, &v);
        let set = apitypes::typed::field_set(&schema, &v);
        let mut stored = v.clone();
        apitypes::typed::as_stored(&schema, &mut stored);
        let merged = apitypes::typed::merge(&schema, &stored, &v);
        let _ = apitypes::typed::compare(&schema, &stored, &merged);
        let mut pruned = merged;
        for p in set.iter().take(16) {
            apitypes::typed::remove_path(&schema, &mut pruned, p);
        }
        let _ = apitypes::fieldset::from_fields_v1(&apitypes::fieldset::to_fields_v1(&set));
        let scope = crate::object::managed::Scope {
            schema: &schema,
            api_version,
            subresource: None,
            status_subresource: true,
        };
        if let Ok(first) = crate::object::managed::apply(&scope, None, &v, "a", false, "t") {
            let _ = crate::object::managed::apply(&scope, Some(&first), &v, "b", false, "t");
        }
        drop::<Value>(pruned);
    };
    let _ = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run)
        .map(|h| h.join());
}
