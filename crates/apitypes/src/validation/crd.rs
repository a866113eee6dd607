//! Custom resources against their CRD's structural schema: types, enums,
//! required fields, ranges, lengths, patterns and nullability (422 with the
//! apiextensions validator's messages), and pruning of unknown fields.

use super::FieldError;
use crate::schema::{Checks, Scalar, Schema, Ty};
use serde_json::Value;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn expected(ty: &Ty) -> Option<&'static str> {
    Some(match ty {
        Ty::Obj(_) | Ty::Map { .. } => "object",
        Ty::List { .. } => "array",
        Ty::Scalar(Scalar::Bool) => "boolean",
        Ty::Scalar(Scalar::Int64 | Scalar::Int32) => "integer",
        Ty::Scalar(Scalar::Number) => "number",
        Ty::Scalar(Scalar::String) => "string",
        _ => return None,
    })
}

fn type_ok(ty: &Ty, v: &Value) -> bool {
    match (ty, v) {
        (Ty::Scalar(Scalar::IntOrString), Value::String(_)) => true,
        (Ty::Scalar(Scalar::IntOrString), Value::Number(n)) => n.is_i64() || n.is_u64(),
        (Ty::Scalar(Scalar::Number), Value::Number(_)) => true,
        _ => match expected(ty) {
            Some(t) => t == type_name(v),
            None => true,
        },
    }
}

struct Walk<'a> {
    s: &'a Schema,
    errs: Vec<FieldError>,
}

impl Walk<'_> {
    fn node(&mut self, path: &str, ty: &Ty, checks: Option<&Checks>, v: &mut Value) {
        if v.is_null() {
            if checks.is_some_and(|c| c.nullable) || matches!(ty, Ty::Deduced | Ty::Any) {
                return;
            }
            if let Some(t) = expected(ty) {
                self.errs.push(FieldError::invalid(
                    path,
                    "\"null\"",
                    &format!("{path} in body must be of type {t}: \"null\""),
                ));
            }
            return;
        }
        if !type_ok(ty, v) {
            let t = expected(ty).unwrap_or("string");
            let got = type_name(v);
            self.errs.push(FieldError::invalid(
                path,
                &format!("{got:?}"),
                &format!("{path} in body must be of type {t}: {got:?}"),
            ));
            return;
        }
        if let Some(c) = checks {
            self.checks(path, c, v);
        }
        match ty {
            Ty::Obj(i) => {
                let o = self.s.obj(*i);
                let Value::Object(m) = v else { return };
                for r in &o.required {
                    if !m.contains_key(r) {
                        self.errs.push(FieldError::required(&join(path, r)));
                    }
                }
                // Pruning: fields the schema does not declare are dropped.
                if o.additional.is_none() && !o.preserve_unknown {
                    m.retain(|k, _| o.fields.contains_key(k) || (o.embedded && k == "metadata"));
                }
                for (k, c) in m.iter_mut() {
                    let p = join(path, k);
                    if let Some(f) = o.fields.get(k) {
                        if path.is_empty()
                            && matches!(k.as_str(), "metadata" | "apiVersion" | "kind")
                        {
                            continue;
                        }
                        self.node(&p, &f.ty, f.checks.as_deref(), c);
                    } else if let Some(a) = &o.additional {
                        self.node(&p, a, None, c);
                    }
                }
            }
            Ty::Map { elem, .. } => {
                if let Value::Object(m) = v {
                    for (k, c) in m.iter_mut() {
                        self.node(&join(path, k), elem, None, c);
                    }
                }
            }
            Ty::List { elem, .. } => {
                if let Value::Array(items) = v {
                    for (i, c) in items.iter_mut().enumerate() {
                        self.node(&format!("{path}[{i}]"), elem, None, c);
                    }
                }
            }
            _ => {}
        }
    }

    fn checks(&mut self, path: &str, c: &Checks, v: &Value) {
        if let Some(allowed) = &c.enumeration {
            if !allowed.contains(v) {
                let shown: Vec<String> = allowed.iter().map(Value::to_string).collect();
                self.errs.push(FieldError::new(
                    path,
                    &format!(
                        "Unsupported value: {v}: supported values: {}",
                        shown.join(", ")
                    ),
                ));
            }
        }
        if let Some(n) = v.as_f64() {
            if let Some(max) = c.maximum {
                if n > max || (c.exclusive_maximum && n == max) {
                    let rel = if c.exclusive_maximum {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    self.errs.push(FieldError::invalid(
                        path,
                        &v.to_string(),
                        &format!("{path} in body should be {rel} {}", num(max)),
                    ));
                }
            }
            if let Some(min) = c.minimum {
                if n < min || (c.exclusive_minimum && n == min) {
                    let rel = if c.exclusive_minimum {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    self.errs.push(FieldError::invalid(
                        path,
                        &v.to_string(),
                        &format!("{path} in body should be {rel} {}", num(min)),
                    ));
                }
            }
        }
        if let Some(s) = v.as_str() {
            let len = s.chars().count() as u64;
            if let Some(max) = c.max_length {
                if len > max {
                    self.errs.push(FieldError::too_long_chars(path, max));
                }
            }
            if let Some(min) = c.min_length {
                if len < min {
                    self.errs.push(FieldError::invalid(
                        path,
                        &v.to_string(),
                        &format!("{path} in body should be at least {min} chars long"),
                    ));
                }
            }
            if let Some(p) = &c.pattern {
                if regex::Regex::new(p).is_ok_and(|re| !re.is_match(s)) {
                    self.errs.push(FieldError::invalid(
                        path,
                        &v.to_string(),
                        &format!("{path} in body should match '{p}'"),
                    ));
                }
            }
        }
        if let Some(items) = v.as_array() {
            let n = items.len() as u64;
            if let Some(max) = c.max_items {
                if n > max {
                    self.errs.push(FieldError::new(
                        path,
                        &format!("Too many: {n}: must have at most {max} items"),
                    ));
                }
            }
            if let Some(min) = c.min_items {
                if n < min {
                    self.errs.push(FieldError::invalid(
                        path,
                        &n.to_string(),
                        &format!("{path} in body should have at least {min} items"),
                    ));
                }
            }
        }
        if let Some(m) = v.as_object() {
            let n = m.len() as u64;
            if let Some(max) = c.max_properties {
                if n > max {
                    self.errs.push(FieldError::new(
                        path,
                        &format!("Too many: {n}: must have at most {max} items"),
                    ));
                }
            }
            if let Some(min) = c.min_properties {
                if n < min {
                    self.errs.push(FieldError::invalid(
                        path,
                        &n.to_string(),
                        &format!("{path} in body should have at least {min} properties"),
                    ));
                }
            }
        }
    }
}

fn num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// Validates and prunes a custom resource in place.
pub(crate) fn validate(s: &Schema, obj: &mut Value) -> Vec<FieldError> {
    let mut w = Walk {
        s,
        errs: Vec::new(),
    };
    w.node("", &s.root_ty(), s.root_checks.as_deref(), obj);
    w.errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        crate::schema::compile_crd(
            &json!({"type": "object", "properties": {"spec": {"type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}
            }}}}),
            "Widget",
        )
    }

    #[test]
    fn structural_errors_read_like_the_real_ones() {
        let s = schema();
        let mut o = json!({"spec": "text"});
        let e: Vec<String> = validate(&s, &mut o)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            e,
            ["spec: Invalid value: \"string\": spec in body must be of type object: \"string\""]
        );
        let mut o = json!({"spec": {"size": 11, "mode": "c", "name": "ABCDEF", "extra": 1}});
        let e: Vec<String> = validate(&s, &mut o)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            e,
            [
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.name: Too long: may not be more than 5 bytes",
                "spec.name: Invalid value: \"ABCDEF\": spec.name in body should match '^[a-z]+$'",
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ]
        );
        assert!(
            o["spec"].get("extra").is_none(),
            "unknown fields are pruned"
        );
        let mut o = json!({"spec": {}});
        let e: Vec<String> = validate(&s, &mut o)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(e, ["spec.size: Required value"]);
    }
}
