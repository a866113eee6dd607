//! The release values of a CR: its `.spec` (which must be an object) with the watch's
//! `overrideValues` merged on top, as the Go helm-operator does (overrides win).

use chart::values::Values;
use kube::api::DynamicObject;
use serde_json::Value;

/// The CR's `.spec` as values; absent or null is empty. The error says what to change.
pub fn spec_values(cr: &DynamicObject) -> Result<Values, String> {
    match cr.data.get("spec") {
        None | Some(Value::Null) => Ok(Values::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(other) => Err(format!(
            "spec must be an object holding the chart's values, but it is {}; \
             set spec to a map such as `spec: {{replicaCount: 2}}`",
            kind_of(other)
        )),
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
pub fn merge_overrides(values: &mut Values, overrides: &Values) {
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

    fn cr(data: Value) -> DynamicObject {
        DynamicObject {
            types: None,
            metadata: Default::default(),
            data,
        }
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
        let err = spec_values(&cr(json!({"spec": "hello"}))).unwrap_err();
        assert!(err.starts_with("spec must be an object"), "{err}");
        assert!(err.contains("it is a string"), "{err}");
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
