//! Admission-time validation of every write, answered with the real
//! server's status codes and messages: Go decode errors (400), unknown
//! fields under `fieldValidation` (400 under Strict, a `Warning` header
//! under Warn), field errors of Kubernetes' Go validation and of CRD
//! structural schemas (422 `Invalid`), and what server-side apply refuses
//! before merging (duplicate keys, undeclared fields).

mod crd;
mod decode;
mod rules;

use crate::error::ApiError;
use crate::registry::ResourceType;
use crate::schema::Schema;
use serde_json::{json, Value};
use std::fmt;

/// The `fieldValidation` directive of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter (absent means Warn, the server default).
    pub(crate) fn parse(v: Option<&str>) -> Result<Self, ApiError> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// One field error, shown as `path: body` like Go's `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    field: String,
    reason: &'static str,
    body: String,
}

impl FieldError {
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

/// The 422 `Invalid` status for a list of field errors.
pub(crate) fn invalid(rt: &ResourceType, name: &str, errs: &[FieldError]) -> ApiError {
    let qualified = if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    };
    let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let list = if shown.len() == 1 {
        shown[0].clone()
    } else {
        format!("[{}]", shown.join(", "))
    };
    let mut e = ApiError::new(
        422,
        "Invalid",
        format!("{qualified} \"{name}\" is invalid: {list}"),
    );
    let causes: Vec<Value> = errs
        .iter()
        .map(|c| json!({"reason": c.reason, "message": c.body, "field": c.field}))
        .collect();
    let mut d = json!({"name": name, "kind": rt.kind, "causes": causes});
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    e.details = Some(d);
    e
}

fn cannot_handle(rt: &ResourceType, msg: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version {:?} cannot be handled as a {}: {msg}",
        rt.kind, rt.version, rt.kind
    ))
}

/// Decoding a write of `obj`: Go type errors and unknown fields (which
/// become warnings under Warn).
pub(crate) fn check_decode(
    rt: &ResourceType,
    schema: &Schema,
    obj: &Value,
    mode: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let has_schema = schema.root.is_some();
    if has_schema {
        let d = decode::decode(schema, obj);
        if rt.crd.is_none() {
            if let Some(e) = &d.type_error {
                return Err(cannot_handle(rt, e));
            }
        }
        if !d.unknown.is_empty() {
            match mode {
                FieldValidation::Strict => {
                    let list: Vec<String> = d
                        .unknown
                        .iter()
                        .map(|u| format!("unknown field {u:?}"))
                        .collect();
                    return Err(cannot_handle(
                        rt,
                        &format!("strict decoding error: {}", list.join(", ")),
                    ));
                }
                FieldValidation::Warn => {
                    warnings.extend(d.unknown.iter().map(|u| format!("unknown field {u:?}")));
                }
                FieldValidation::Ignore => {}
            }
        }
    }
    Ok(())
}

/// Validation of a defaulted write of `obj` (replacing `old`, if any);
/// custom resources are pruned to their schema.
pub(crate) fn check_rules(
    rt: &ResourceType,
    schema: &Schema,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
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
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(rt, &name, &errs))
    }
}

/// What server-side apply refuses before it merges: duplicate keys of
/// associative lists and fields the schema does not declare (500, as the
/// real server answers a typed-conversion failure).
pub(crate) fn check_applied(
    rt: &ResourceType,
    schema: &Schema,
    ns: &str,
    config: &Value,
) -> Result<(), ApiError> {
    if schema.root.is_none() {
        return Ok(());
    }
    let mut problems = crate::typed::duplicates(schema, config);
    problems.extend(crate::typed::undeclared(schema, config));
    if problems.is_empty() {
        return Ok(());
    }
    let detail = if problems.len() == 1 {
        problems.remove(0)
    } else {
        let mut lines = vec!["errors:".to_string()];
        lines.extend(problems.iter().map(|p| format!("  {p}")));
        lines.join("\n")
    };
    let obj_ns = config
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(if rt.namespaced { ns } else { "" });
    let name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({obj_ns}/{name}; {}/{}, Kind={}): {detail}",
            rt.group, rt.version, rt.kind
        ),
    ))
}
