//! Go's builtin template functions with reflection semantics: `len`,
//! `index`, `slice` and the comparisons, with Go's error messages.

use std::cmp::Ordering;

use crate::value::{List, MapKind, UintKind, Value};

/// Go's `len`.
pub(crate) fn length(v: &Value) -> Result<i64, String> {
    Ok(match v {
        Value::Nil => return Err("len of nil pointer".into()),
        Value::Invalid => return Err("reflect: call of reflect.Value.Type on zero Value".into()),
        Value::String(s) => crate::gostr::byte_len(s) as i64,
        Value::Bytes(b) => b.len() as i64,
        Value::List(l) => l.len() as i64,
        Value::Map(m) => m.len() as i64,
        Value::Object(o) => match o.entries() {
            Some(e) => e.len() as i64,
            None => return Err(format!("len of type {}", o.type_name())),
        },
        other => return Err(format!("len of type {}", other.type_name())),
    })
}

fn index_arg(i: &Value, cap: usize) -> Result<usize, String> {
    let x: i64 = match i {
        Value::Int(n, _) => *n,
        Value::Uint(n, _) => *n as i64,
        Value::Invalid | Value::Nil => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ))
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

/// Go's `index`.
pub(crate) fn index(item: &Value, indexes: &[Value]) -> Result<Value, String> {
    let mut item = item.clone();
    if item.is_nil() {
        return Err("index of untyped nil".into());
    }
    for ix in indexes {
        item = match &item {
            Value::Nil => return Err("index of nil pointer".into()),
            Value::List(l) => {
                let x = index_arg(ix, l.len())?;
                match l.get(x) {
                    Some(v) => v.clone(),
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::Bytes(b) => {
                let x = index_arg(ix, b.len())?;
                match b.get(x) {
                    Some(v) => Value::Uint(*v as u64, UintKind::Uint8),
                    None => return Err("reflect: slice index out of range".into()),
                }
            }
            Value::String(s) => {
                let bytes = crate::gostr::to_bytes(s);
                let x = index_arg(ix, bytes.len())?;
                match bytes.get(x) {
                    Some(v) => Value::Uint(*v as u64, UintKind::Uint8),
                    None => return Err("reflect: string index out of range".into()),
                }
            }
            Value::Map(m) => {
                let key = match ix {
                    Value::String(k) => k.clone(),
                    Value::Invalid | Value::Nil => {
                        return Err("value is nil; should be of type string".into())
                    }
                    other => {
                        return Err(format!(
                            "value has type {}; should be string",
                            other.type_name()
                        ))
                    }
                };
                match m.get(&key) {
                    Some(v) => v,
                    None if m.kind() == MapKind::String => Value::str(""),
                    None => Value::Nil,
                }
            }
            Value::Invalid => return Err("index of untyped nil".into()),
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

/// Go's builtin `slice`.
pub(crate) fn slice(item: &Value, indexes: &[Value]) -> Result<Value, String> {
    if item.is_nil() {
        return Err("slice of untyped nil".into());
    }
    if indexes.len() > 3 {
        return Err(format!("too many slice indexes: {}", indexes.len()));
    }
    let len = match item {
        Value::String(s) => {
            if indexes.len() == 3 {
                return Err("cannot 3-index slice a string".into());
            }
            crate::gostr::byte_len(s)
        }
        Value::List(l) => l.len(),
        Value::Bytes(b) => b.len(),
        other => return Err(format!("can't slice item of type {}", other.type_name())),
    };
    let mut idx = [0usize, len, len];
    for (i, ix) in indexes.iter().enumerate() {
        idx[i] = index_arg(ix, len)?;
    }
    if idx[0] > idx[1] {
        return Err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    let (a, b) = (idx[0], idx[1]);
    Ok(match item {
        Value::String(s) => {
            let bytes = crate::gostr::to_bytes(s);
            Value::str(&crate::gostr::from_bytes(&bytes[a..b]))
        }
        Value::List(l) => Value::List(List::with_kind(l.items()[a..b].to_vec(), l.kind())),
        Value::Bytes(bs) => Value::Bytes(bs[a..b].into()),
        _ => unreachable_value(),
    })
}

fn unreachable_value() -> Value {
    Value::Invalid
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum BasicKind {
    Invalid,
    Bool,
    Complex,
    Int,
    Float,
    String,
    Uint,
}

fn basic_kind(v: &Value) -> BasicKind {
    match v {
        Value::Bool(_) => BasicKind::Bool,
        Value::Int(..) => BasicKind::Int,
        Value::Uint(..) => BasicKind::Uint,
        Value::Float(_) => BasicKind::Float,
        Value::Complex(..) => BasicKind::Complex,
        Value::String(_) => BasicKind::String,
        _ => BasicKind::Invalid,
    }
}

fn type_of(v: &Value) -> String {
    match v {
        Value::Invalid | Value::Nil => "<nil>".into(),
        other => other.type_name(),
    }
}

fn incompatible(a: &Value, b: &Value) -> String {
    format!(
        "incompatible types for comparison: {} and {}",
        type_of(a),
        type_of(b)
    )
}

fn comparable(v: &Value) -> bool {
    !matches!(
        v,
        Value::List(_) | Value::Map(_) | Value::Bytes(_) | Value::Func(_)
    )
}

/// Go's `eq`: true if `a` equals any of `others`.
pub(crate) fn eq(a: &Value, others: &[Value]) -> Result<bool, String> {
    if others.is_empty() {
        return Err("missing argument for comparison".into());
    }
    let k1 = basic_kind(a);
    for b in others {
        let k2 = basic_kind(b);
        let truth = if k1 != k2 {
            match (a, b) {
                (Value::Int(x, _), Value::Uint(y, _)) => *x >= 0 && *x as u64 == *y,
                (Value::Uint(x, _), Value::Int(y, _)) => *y >= 0 && *x == *y as u64,
                _ => {
                    if !a.is_nil() && !b.is_nil() {
                        return Err(incompatible(a, b));
                    }
                    false
                }
            }
        } else {
            match (a, b) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Complex(r1, i1), Value::Complex(r2, i2)) => r1 == r2 && i1 == i2,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Int(x, _), Value::Int(y, _)) => x == y,
                (Value::String(x), Value::String(y)) => crate::gostr::eq(x, y),
                (Value::Uint(x, _), Value::Uint(y, _)) => x == y,
                _ => {
                    if a.is_nil() || b.is_nil() {
                        a.is_nil() == b.is_nil()
                    } else if !comparable(b) {
                        return Err(format!(
                            "non-comparable type {}: {}",
                            // Go formats the reflect.Value with %s.
                            crate::fmt::sprintf("%s", std::slice::from_ref(b)),
                            b.type_name()
                        ));
                    } else if !comparable(a) {
                        return Err(format!(
                            "non-comparable type {}: {}",
                            crate::fmt::sprintf("%s", std::slice::from_ref(a)),
                            a.type_name()
                        ));
                    } else if a.type_name() != b.type_name() {
                        false
                    } else {
                        match (a, b) {
                            (Value::Object(x), Value::Object(y)) => std::rc::Rc::ptr_eq(x, y),
                            _ => false,
                        }
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `lt`.
pub(crate) fn lt(a: &Value, b: &Value) -> Result<bool, String> {
    let k1 = basic_kind(a);
    if k1 == BasicKind::Invalid {
        return Err("invalid type for comparison".into());
    }
    let k2 = basic_kind(b);
    if k2 == BasicKind::Invalid {
        return Err("invalid type for comparison".into());
    }
    if k1 != k2 {
        return match (a, b) {
            (Value::Int(x, _), Value::Uint(y, _)) => Ok(*x < 0 || (*x as u64) < *y),
            (Value::Uint(x, _), Value::Int(y, _)) => Ok(*y >= 0 && *x < *y as u64),
            _ => Err(incompatible(a, b)),
        };
    }
    Ok(match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y) == Some(Ordering::Less),
        (Value::Int(x, _), Value::Int(y, _)) => x < y,
        (Value::String(x), Value::String(y)) => x < y,
        (Value::Uint(x, _), Value::Uint(y, _)) => x < y,
        _ => return Err("invalid type for comparison".into()),
    })
}

/// Go's `le`.
pub(crate) fn le(a: &Value, b: &Value) -> Result<bool, String> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_follow_go() {
        assert_eq!(eq(&Value::int(1), &[Value::int64(1)]), Ok(true));
        assert!(eq(&Value::int(1), &[Value::Float(1.0)])
            .unwrap_err()
            .contains("incompatible types for comparison: int and float64"));
        assert_eq!(eq(&Value::Invalid, &[Value::str("x")]), Ok(false));
        assert!(lt(&Value::Bool(true), &Value::Bool(false)).is_err());
        assert_eq!(le(&Value::str("a"), &Value::str("a")), Ok(true));
    }

    #[test]
    fn index_and_slice() {
        let l = Value::list(vec![Value::str("a"), Value::str("b")]);
        assert_eq!(
            index(&l, &[Value::int(1)])
                .ok()
                .and_then(|v| v.as_str().map(String::from)),
            Some("b".to_string())
        );
        assert!(index(&l, &[Value::Float(1.0)])
            .unwrap_err()
            .contains("cannot index slice/array with type float64"));
        assert!(slice(&l, &[Value::int(2), Value::int(1)]).is_err());
    }
}
