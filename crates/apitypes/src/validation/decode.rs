//! What decoding a request body into the Go types refuses (400 with the Go
//! decoder's message) and which fields it does not know (reported under
//! `fieldValidation=Strict`, warned about under `Warn`).

use crate::schema::{Scalar, Schema, Ty};
use serde_json::Value;

/// The outcome of decoding one object.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The Go decoder's first type error, if any.
    pub type_error: Option<String>,
    /// Unknown fields, as `spec.template.spec.containers[0].bogus`.
    pub unknown: Vec<String>,
}

fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// The Go type a schema type decodes into, as the decoder names it.
fn go_type(s: &Schema, ty: &Ty) -> String {
    match ty {
        Ty::Scalar(Scalar::Bool) => "bool".into(),
        Ty::Scalar(Scalar::Int32) => "int32".into(),
        Ty::Scalar(Scalar::Int64) => "int64".into(),
        Ty::Scalar(Scalar::Number) => "float64".into(),
        Ty::Scalar(Scalar::String) => "string".into(),
        Ty::Scalar(Scalar::Bytes) => "[]uint8".into(),
        Ty::Scalar(Scalar::IntOrString) => "intstr.IntOrString".into(),
        Ty::Scalar(Scalar::Quantity) => "resource.Quantity".into(),
        Ty::Scalar(Scalar::Time) => "v1.Time".into(),
        Ty::Obj(i) => {
            let o = s.obj(*i);
            if o.package.is_empty() {
                o.name.clone()
            } else {
                format!("{}.{}", o.package, o.name)
            }
        }
        Ty::Map { elem, .. } => format!("map[string]{}", go_type(s, elem)),
        Ty::List { elem, .. } => format!("[]{}", go_type(s, elem)),
        Ty::Any | Ty::Deduced => "interface {}".into(),
    }
}

struct Walk<'a> {
    s: &'a Schema,
    out: Decoded,
    /// Struct-field path (Go's error context), e.g. `spec.replicas`.
    go_path: Vec<String>,
    /// The innermost Go struct's name.
    structs: Vec<String>,
    /// Path with list indices, for unknown-field reports.
    path: String,
}

impl Walk<'_> {
    fn type_error(&mut self, v: &Value, ty: &Ty) {
        if self.out.type_error.is_some() {
            return;
        }
        let what = match v {
            Value::Number(n) if !n.is_i64() && !n.is_u64() => format!("number {n}"),
            Value::Number(n) if matches!(ty, Ty::Scalar(Scalar::Int32 | Scalar::Int64)) => {
                format!("number {n}")
            }
            other => json_kind(other),
        };
        let target = go_type(self.s, ty);
        let msg = match (self.structs.last(), self.go_path.is_empty()) {
            (Some(st), false) => format!(
                "json: cannot unmarshal {what} into Go struct field {st}.{} of type {target}",
                self.go_path.join(".")
            ),
            _ => format!("json: cannot unmarshal {what} into Go value of type {target}"),
        };
        self.out.type_error = Some(msg);
    }

    fn scalar(&mut self, v: &Value, ty: &Ty, sc: Scalar) {
        let ok = match (sc, v) {
            (_, Value::Null) => true,
            (Scalar::Bool, Value::Bool(_)) => true,
            (Scalar::Int32, Value::Number(n)) => {
                n.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
            }
            (Scalar::Int64, Value::Number(n)) => n.as_i64().is_some(),
            (Scalar::Number, Value::Number(_)) => true,
            (Scalar::String | Scalar::Time, Value::String(_)) => true,
            (Scalar::Bytes, Value::String(b)) => {
                if let Err(msg) = base64_error(b) {
                    if self.out.type_error.is_none() {
                        self.out.type_error = Some(msg);
                    }
                }
                true
            }
            (Scalar::IntOrString, Value::String(_)) => true,
            (Scalar::IntOrString, Value::Number(n)) => {
                n.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
            }
            (Scalar::Quantity, Value::Number(_)) => true,
            (Scalar::Quantity, Value::String(q)) => {
                if !is_quantity(q) && self.out.type_error.is_none() {
                    self.out.type_error = Some(
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                            .into(),
                    );
                }
                true
            }
            _ => false,
        };
        if !ok {
            let target = match sc {
                // IntOrString decodes a non-string into its int32 half.
                Scalar::IntOrString => Ty::Scalar(Scalar::Int32),
                _ => ty.clone(),
            };
            self.type_error(v, &target);
        }
    }

    fn value(&mut self, v: &Value, ty: &Ty) {
        match ty {
            Ty::Scalar(sc) => self.scalar(v, ty, *sc),
            Ty::Any | Ty::Deduced => {}
            Ty::Obj(i) => {
                let Value::Object(m) = v else {
                    if !v.is_null() {
                        self.type_error(v, ty);
                    }
                    return;
                };
                let o = self.s.obj(*i);
                self.structs.push(o.name.clone());
                for (k, c) in m {
                    let base = self.path.len();
                    if !self.path.is_empty() {
                        self.path.push('.');
                    }
                    self.path.push_str(k);
                    match self.s.field_ty(ty, k) {
                        Some((ct, declared)) => {
                            if declared {
                                self.go_path.push(k.clone());
                            }
                            self.value(c, &ct);
                            if declared {
                                self.go_path.pop();
                            }
                        }
                        None => self.out.unknown.push(self.path.clone()),
                    }
                    self.path.truncate(base);
                }
                self.structs.pop();
            }
            Ty::Map { elem, .. } => {
                let Value::Object(m) = v else {
                    if !v.is_null() {
                        self.type_error(v, ty);
                    }
                    return;
                };
                for (k, c) in m {
                    let base = self.path.len();
                    self.path.push('.');
                    self.path.push_str(k);
                    self.value(c, elem);
                    self.path.truncate(base);
                }
            }
            Ty::List { elem, .. } => {
                let Value::Array(items) = v else {
                    if !v.is_null() {
                        self.type_error(v, ty);
                    }
                    return;
                };
                for (i, c) in items.iter().enumerate() {
                    let base = self.path.len();
                    self.path.push_str(&format!("[{i}]"));
                    self.value(c, elem);
                    self.path.truncate(base);
                }
            }
        }
    }
}

/// Decodes `obj` against its kind's schema.
pub fn decode(s: &Schema, obj: &Value) -> Decoded {
    let mut w = Walk {
        s,
        out: Decoded::default(),
        go_path: Vec::new(),
        structs: Vec::new(),
        path: String::new(),
    };
    w.value(obj, &s.root_ty());
    w.out
}

/// Go's base64 decoder's complaint about `s`, if any.
pub(crate) fn base64_error(s: &str) -> Result<(), String> {
    use base64::Engine as _;
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(_) => Ok(()),
        Err(base64::DecodeError::InvalidByte(at, _)) => {
            Err(format!("illegal base64 data at input byte {at}"))
        }
        Err(base64::DecodeError::InvalidLength(n)) => Err(format!(
            "illegal base64 data at input byte {}",
            n.saturating_sub(n % 4)
        )),
        Err(base64::DecodeError::InvalidLastSymbol(at, _)) => {
            Err(format!("illegal base64 data at input byte {at}"))
        }
        Err(base64::DecodeError::InvalidPadding) => Err(format!(
            "illegal base64 data at input byte {}",
            s.len().saturating_sub(1)
        )),
    }
}

/// Kubernetes' quantity syntax (`^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`).
fn is_quantity(q: &str) -> bool {
    let b = q.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let start = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if i == start {
        return false;
    }
    while i < b.len() && b"eEinumkKMGTP".contains(&b[i]) {
        i += 1;
    }
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_decode_errors_name_the_struct_and_field_path() {
        let s = crate::schema::builtin("apps/v1", "Deployment").unwrap();
        let d = decode(&s, &json!({"spec": {"replicas": "three"}}));
        assert_eq!(
            d.type_error.as_deref(),
            Some("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")
        );
        let d = decode(
            &s,
            &json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}}}),
        );
        assert_eq!(
            d.type_error.as_deref(),
            Some("json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32")
        );
        let d = decode(
            &s,
            &json!({"spec": {"bogusField": 1, "template": {"spec": {"containers": [{"name": "c", "imagePullPolicyy": "x"}]}}}}),
        );
        assert_eq!(d.type_error, None);
        assert_eq!(
            d.unknown,
            [
                "spec.bogusField",
                "spec.template.spec.containers[0].imagePullPolicyy"
            ]
        );
    }

    #[test]
    fn secret_data_must_be_base64() {
        let s = crate::schema::builtin("v1", "Secret").unwrap();
        let d = decode(&s, &json!({"data": {"k": "not base64!"}}));
        assert_eq!(
            d.type_error.as_deref(),
            Some("illegal base64 data at input byte 3")
        );
        assert!(decode(&s, &json!({"data": {"k": "aGk="}}))
            .type_error
            .is_none());
    }

    #[test]
    fn quantities() {
        assert!(is_quantity("100m"));
        assert!(is_quantity("1.5Gi"));
        assert!(is_quantity("1e3"));
        assert!(!is_quantity("lots"));
        assert!(!is_quantity(""));
    }
}
