//! What kube-apiserver checks on every write, with its messages: what
//! decoding into the Go types refuses and which fields it does not know
//! ([`decode()`]), and the field errors of Kubernetes' Go validation (kube-
//! aggregator's for APIServices) and of CRD structural schemas
//! ([`field_errors`]). The server answers them as
//! 400 and 422 `Status`es.

mod apiservice;
mod crd;
mod decode;
mod rules;

pub use decode::{decode, Decoded};
pub use rules::{validate_label, validate_subdomain};

use crate::registry::ResourceType;
use crate::schema::Schema;
use serde_json::Value;
use std::fmt;

/// One field error, shown as `path: body` like Go's `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    field: String,
    reason: &'static str,
    body: String,
}

impl FieldError {
    /// The field's path (`spec.ports[0].port`).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The `StatusCause` reason (`FieldValueInvalid`, `FieldValueRequired`…).
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The message after the path (`Invalid value: 70000: must be …`).
    pub fn body(&self) -> &str {
        &self.body
    }

    fn new(field: &str, body: &str) -> Self {
        let reason = if body.starts_with("Unsupported value") {
            "FieldValueNotSupported"
        } else if body.starts_with("Too many") {
            "FieldValueTooMany"
        } else {
            "FieldValueInvalid"
        };
        FieldError {
            field: field.to_string(),
            reason,
            body: body.to_string(),
        }
    }

    fn invalid(field: &str, value: &str, msg: &str) -> Self {
        FieldError {
            field: field.to_string(),
            reason: "FieldValueInvalid",
            body: format!("Invalid value: {value}: {msg}"),
        }
    }

    fn required(field: &str) -> Self {
        FieldError {
            field: field.to_string(),
            reason: "FieldValueRequired",
            body: "Required value".into(),
        }
    }

    fn forbidden(field: &str, msg: &str) -> Self {
        FieldError {
            field: field.to_string(),
            reason: "FieldValueForbidden",
            body: format!("Forbidden: {msg}"),
        }
    }

    fn too_long(field: &str, max: usize) -> Self {
        FieldError {
            field: field.to_string(),
            reason: "FieldValueTooLong",
            body: format!("Too long: may not be more than {max} bytes"),
        }
    }

    fn too_long_chars(field: &str, max: u64) -> Self {
        FieldError {
            field: field.to_string(),
            reason: "FieldValueTooLong",
            body: format!("Too long: may not be more than {max} bytes"),
        }
    }

    fn unsupported(field: &str, value: &str, allowed: &[&str]) -> Self {
        let shown: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
        FieldError {
            field: field.to_string(),
            reason: "FieldValueNotSupported",
            body: format!(
                "Unsupported value: {value:?}: supported values: {}",
                shown.join(", ")
            ),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body)
    }
}

/// The field errors of a defaulted write of `obj` of type `rt` (replacing
/// `old`, if any), in the order the real server lists them; custom
/// resources are pruned to their schema on the way.
pub fn field_errors(
    rt: &ResourceType,
    schema: &Schema,
    obj: &mut Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let has_schema = schema.root.is_some();
    let mut errs = Vec::new();
    rules::metadata(obj, &mut errs);
    if rt.crd.is_some() {
        if has_schema {
            errs.extend(crd::validate(schema, obj));
        }
    } else if rt.group.is_empty() || matches!(rt.group.as_str(), "apps" | "batch") {
        let kind = rt.kind.as_str();
        if has_schema {
            rules::required(schema, obj, &mut errs);
        }
        if matches!(kind, "ConfigMap" | "Secret") {
            rules::payload(kind, obj, &mut errs);
        }
        rules::ports(kind, obj, &mut errs);
        rules::enums(kind, obj, &mut errs);
        if let Some(old) = old {
            rules::immutable(kind, old, obj, &mut errs);
        }
    } else if rt.group == "apiregistration.k8s.io" && rt.kind == "APIService" {
        apiservice::validate(obj, &mut errs);
    }
    errs
}
