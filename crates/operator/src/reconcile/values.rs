//! The release values of a CR: its `.spec` (which must be an object) with the watch's
//! `overrideValues` merged on top, as the Go helm-operator does (overrides win). The
//! spec is parsed here, from the raw JSON the cache keeps, as deep as Go reads JSON.
//! [`release_values`] is the same composition for `rudder values`.

use chart::values::Values;
use gocodec::depth::MAX_DEPTH;
use serde_json::Value;

use crate::cr::CustomResource;
use crate::watches::{Watch, WatchesError};

/// Why a CR's release values cannot be composed.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// The watch's `overrideValues` do not parse.
    #[error(transparent)]
    Overrides(#[from] WatchesError),
    /// The CR's `.spec` gives no values (the operator reports it as the CR's failure).
    #[error("{0}")]
    Spec(String),
}

/// The values a CR's release gets, composed exactly as the operator composes them
/// (its `.spec` with `watch`'s `overrideValues` on top), and those overrides alone,
/// so a caller can tell which values came from `watches.yaml`.
pub fn release_values(watch: &Watch, cr: &CustomResource) -> Result<(Values, Values), ValuesError> {
    let overrides = watch.override_values()?;
    let mut values = spec_values(cr).map_err(|e| ValuesError::Spec(e.to_string()))?;
    merge_overrides(&mut values, &overrides);
    Ok((values, overrides))
}

/// Why a CR's `.spec` gives no values; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SpecError {
    /// The spec is not a map (Go's helm-operator: `Irreconcilable`).
    #[error(
        "spec must be an object holding the chart's values, but it is {0}; \
         set spec to a map such as `spec: {{replicaCount: 2}}`"
    )]
    NotAnObject(&'static str),
    /// The spec cannot be parsed as values (nested past what Go's readers accept).
    #[error(
        "spec cannot be read as the chart's values: {0} (values may nest at most \
         {MAX_DEPTH} levels, as Helm reads them); make the spec shallower"
    )]
    Unreadable(String),
}

/// The CR's `.spec` as values; absent or null is empty.
pub(crate) fn spec_values(cr: &CustomResource) -> Result<Values, SpecError> {
    let parsed = match cr.spec_json() {
        None => return Ok(Values::new()),
        Some(parsed) => parsed.map_err(SpecError::Unreadable)?,
    };
    match parsed {
        Value::Null => Ok(Values::new()),
        Value::Object(m) => Ok(m),
        other => Err(SpecError::NotAnObject(kind_of(&other))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Merges `overrides` into `values`: maps merge key by key, anything else is replaced.
pub(crate) fn merge_overrides(values: &mut Values, overrides: &Values) {
    for (k, v) in overrides {
        match (values.get_mut(k), v) {
            (Some(Value::Object(dst)), Value::Object(src)) => merge_overrides(dst, src),
            _ => {
                values.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cr(data: Value) -> CustomResource {
        CustomResource::from(kube::api::DynamicObject {
            types: None,
            metadata: Default::default(),
            data,
        })
    }

    #[test]
    fn spec_must_be_an_object() {
        assert_eq!(spec_values(&cr(json!({}))).unwrap(), Values::new());
        assert_eq!(
            spec_values(&cr(json!({"spec": null}))).unwrap(),
            Values::new()
        );
        let v = spec_values(&cr(json!({"spec": {"a": 1}}))).unwrap();
        assert_eq!(v["a"], json!(1));
        let err = spec_values(&cr(json!({"spec": "hello"})))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("spec must be an object"), "{err}");
        assert!(err.contains("it is a string"), "{err}");
    }

    #[test]
    fn a_spec_nested_past_go_s_limit_is_unreadable_and_says_how_deep() {
        let levels = MAX_DEPTH + 1;
        let text = format!(
            r#"{{"metadata":{{"name":"deep"}},"spec":{}{{}}{}}}"#,
            "{\"a\":".repeat(levels - 1),
            "}".repeat(levels - 1)
        );
        let deep: CustomResource = serde_json::from_str(&text).expect("the CR decodes");
        let err = spec_values(&deep).unwrap_err();
        assert!(matches!(err, SpecError::Unreadable(_)), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("at most 10000 levels"), "{msg}");
    }

    #[test]
    fn overrides_win_and_merge_deeply() {
        let mut v = json!({"image": {"repo": "x", "tag": "1"}, "n": 1})
            .as_object()
            .cloned()
            .unwrap();
        let o = json!({"image": {"tag": "2"}, "n": {"deep": true}})
            .as_object()
            .cloned()
            .unwrap();
        merge_overrides(&mut v, &o);
        assert_eq!(
            Value::Object(v),
            json!({"image": {"repo": "x", "tag": "2"}, "n": {"deep": true}})
        );
    }
}
