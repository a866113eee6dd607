//! Fuzzes what the API server does with a request body before it stores
//! anything: decoding (JSON, YAML, protobuf by content type), Go-style type
//! checks against a built-in kind's schema, the apply field set, merge,
//! comparison and duplicate-key checks. None of it may panic or overflow
//! the stack, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the content type and the kind.
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let content_type = match sel % 4 {
        0 => "application/json",
        1 => "application/yaml",
        2 => "application/apply-patch+yaml",
        _ => "application/vnd.kubernetes.protobuf",
    };
    let kind = match (sel >> 2) % 4 {
        0 => ("apps/v1", "Deployment"),
        1 => ("v1", "Service"),
        2 => ("v1", "Secret"),
        _ => ("batch/v1", "Job"),
    };
    apiserver::fuzzing::request_body(content_type, kind.0, kind.1, body);
});
