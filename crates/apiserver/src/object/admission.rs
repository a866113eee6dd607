//! Admission-time validation of every write, answered with the real
//! server's status codes and messages: Go decode errors (400), unknown
//! fields under `fieldValidation` (400 under Strict, a `Warning` header
//! under Warn), field errors of Kubernetes' Go validation and of CRD
//! structural schemas (422 `Invalid`), and what server-side apply refuses
//! before merging (duplicate keys, undeclared fields). The checks
//! themselves are `apitypes::validation`'s; this is what the server
//! answers for them.

use crate::error::ApiError;
use apitypes::validation::{self, FieldError};
use apitypes::{ResourceType, Schema};
use serde_json::{json, Value};

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
        .map(|c| json!({"reason": c.reason(), "message": c.body(), "field": c.field()}))
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
    if !schema.is_deduced() {
        let d = validation::decode(schema, obj);
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
    let errs = validation::field_errors(rt, schema, obj, old);
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
    if schema.is_deduced() {
        return Ok(());
    }
    let mut problems = apitypes::typed::duplicates(schema, config);
    problems.extend(apitypes::typed::undeclared(schema, config));
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
