//! The JSON the store keeps, written and parsed without deep recursion on
//! the current stack (`serde_stacker` grows it as needed), so objects as
//! deep as kube-apiserver stores them, and what the server adds to them,
//! round-trip. Responses and watch events are written with the same
//! serialiser.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Parses JSON the server itself wrote, at any depth: what it adds to an
/// object (`managedFields` mirrors the object's own nesting) may take a
/// body accepted at the limit past it.
pub(crate) fn stored_json(body: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    de.disable_recursion_limit();
    let v =
        Value::deserialize(serde_stacker::Deserializer::new(&mut de)).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

/// Serialises a value without deep recursion on the current stack.
pub(crate) fn to_string(v: &Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::new(&mut out);
    let ok = v
        .serialize(serde_stacker::Serializer::new(&mut ser))
        .is_ok();
    if !ok {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}
