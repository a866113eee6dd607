//! Request bodies: media types as kube-apiserver accepts them (415 for
//! anything else), and JSON and YAML decoding as deep as the real server
//! goes and stores (Go's decoders stop at 10,000 levels; serde's default of
//! 128 would refuse what a real cluster stores).

use crate::error::ApiError;
use axum::http::HeaderMap;
use serde_json::Value;

/// Go's `encoding/json` nesting limit (`maxNestingDepth`), which the
/// apiserver's decoders inherit; YAML is converted to JSON under the same
/// bound.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// Request bodies above this are refused before parsing
/// (kube-apiserver's `--max-request-body-bytes` default).
pub(crate) const MAX_BODY: usize = 3 * 1024 * 1024;

/// Bodies nested deeper than this are handled on a thread with a large
/// stack (see `router`).
pub(crate) const SHALLOW: usize = 128;

/// Media types a create or update body may have.
const OBJECT_TYPES: &str =
    "application/json, application/yaml, application/vnd.kubernetes.protobuf";
const CUSTOM_OBJECT_TYPES: &str = "application/json, application/yaml";

/// What a body's `content-type` says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Yaml,
    Protobuf,
}

/// The media type of a request, without parameters.
pub(crate) fn media_type(headers: &HeaderMap) -> String {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn format_of(mt: &str) -> Option<Format> {
    match mt {
        // A missing content type is read as JSON, as client-go sends it.
        ""
        | "application/json"
        | "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => Some(Format::Json),
        "application/yaml" | "application/apply-patch+yaml" => Some(Format::Yaml),
        m if m.contains("protobuf") => Some(Format::Protobuf),
        _ => None,
    }
}

/// The 415 for a body of a media type the server does not read.
pub(crate) fn unsupported(accepted: &str) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        ),
    )
}

/// Decodes a create or update body (`custom`: a custom resource, which
/// has no protobuf form).
pub(crate) fn decode(headers: &HeaderMap, body: &[u8], custom: bool) -> Result<Value, ApiError> {
    let accepted = if custom {
        CUSTOM_OBJECT_TYPES
    } else {
        OBJECT_TYPES
    };
    let mt = media_type(headers);
    match format_of(&mt) {
        Some(Format::Protobuf) if custom => Err(unsupported(accepted)),
        Some(f) => decode_as(f, body),
        None => Err(unsupported(accepted)),
    }
}

/// Decodes a body already known to be of format `f`, as deep as Go's
/// decoders go: the serving threads' stacks hold objects that deep.
pub(crate) fn decode_as(f: Format, body: &[u8]) -> Result<Value, ApiError> {
    if f == Format::Protobuf {
        return crate::http::protobuf::decode(body)
            .map_err(|e| ApiError::new(415, "UnsupportedMediaType", e));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    match f {
        Format::Yaml => {
            let text = std::str::from_utf8(body)
                .map_err(|e| ApiError::bad_request(format!("the body is not valid UTF-8: {e}")))?;
            yaml(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
        }
        _ => {
            json(body).map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}")))
        }
    }
}

/// Parses JSON up to [`MAX_DEPTH`] levels without exhausting the stack.
pub(crate) fn json(body: &[u8]) -> Result<Value, String> {
    if json_depth(body) > MAX_DEPTH {
        return Err(format!("exceeded max depth of {MAX_DEPTH}"));
    }
    crate::storage::json::stored_json(body)
}

fn yaml(text: &str) -> Result<Value, String> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! { max_depth: MAX_DEPTH },
    };
    stacker::maybe_grow(64 * 1024, 256 * 1024 * 1024, || {
        serde_saphyr::from_str_with_options::<Value>(text, options).map_err(|e| e.to_string())
    })
}

/// The deepest nesting of `[`/`{` in JSON text, outside strings; for YAML
/// it also counts indentation, so it bounds the depth from above.
pub(crate) fn json_depth(body: &[u8]) -> usize {
    gostd::json::nesting_depth(body, usize::MAX)
}

/// An upper bound of a body's nesting, JSON or YAML (flow brackets plus
/// block indentation).
pub(crate) fn depth_bound(body: &[u8]) -> usize {
    let indent = body
        .split(|b| *b == b'\n')
        .map(|l| l.iter().take_while(|c| **c == b' ' || **c == b'-').count())
        .max()
        .unwrap_or(0);
    json_depth(body) + indent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_json_is_accepted_up_to_the_real_limit() {
        // As on the server, deep bodies are handled on a large stack.
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(deep_json)
            .unwrap()
            .join()
            .unwrap();
    }

    fn deep_json() {
        let n = MAX_DEPTH;
        let text = "[".repeat(n) + &"]".repeat(n);
        let v = decode_as(Format::Json, text.as_bytes()).expect("10,000 levels decode");
        assert_eq!(crate::storage::json::to_string(&v).len(), text.len());
        let too_deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        let e = decode_as(Format::Json, too_deep.as_bytes()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "error decoding JSON body: exceeded max depth of 10000")
        );
        drop(v);
    }

    #[test]
    fn media_types() {
        let mut h = HeaderMap::new();
        h.insert("content-type", "text/plain".parse().unwrap());
        let e = decode(&h, b"x", false).unwrap_err();
        assert_eq!(e.code, 415);
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        h.insert(
            "content-type",
            "application/yaml; charset=utf-8".parse().unwrap(),
        );
        assert_eq!(decode(&h, b"a: 1", false).unwrap()["a"], 1);
        h.insert("content-type", "application/xml".parse().unwrap());
        assert_eq!(decode(&h, b"<a/>", true).unwrap_err().code, 415);
    }
}
