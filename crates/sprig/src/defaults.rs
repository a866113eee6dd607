//! Sprig's default and flow-control functions: `default`, `empty`,
//! `coalesce`, `all`, `any`, `ternary` and `fail`, with Go's notion of an
//! empty value (nil, zero numbers, "", empty slices and maps, false).

use gotmpl::{Func, FuncError, FuncMap, Ty, Value};

use super::conv::{is_empty, s};

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "default",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(match a.get(1) {
                Some(given) if !is_empty(given) => given.clone(),
                _ => a[0].clone(),
            })
        }),
    );
    m.insert(
        "empty",
        Func::new(&[Ty::Any], |_, a| Ok(Value::Bool(is_empty(&a[0])))),
    );
    m.insert(
        "coalesce",
        Func::variadic(&[], Ty::Any, |_, a| {
            Ok(a.into_iter().find(|v| !is_empty(v)).unwrap_or(Value::Nil))
        }),
    );
    m.insert(
        "all",
        Func::variadic(&[], Ty::Any, |_, a| {
            Ok(Value::Bool(a.iter().all(|v| !is_empty(v))))
        }),
    );
    m.insert(
        "any",
        Func::variadic(&[], Ty::Any, |_, a| {
            Ok(Value::Bool(a.iter().any(|v| !is_empty(v))))
        }),
    );
    m.insert(
        "ternary",
        Func::new(&[Ty::Any, Ty::Any, Ty::Bool], |_, a| {
            let cond = matches!(a[2], Value::Bool(true));
            Ok(if cond { a[0].clone() } else { a[1].clone() })
        }),
    );
    m.insert(
        "fail",
        Func::new(&[Ty::String], |_, a| Err(FuncError::new(s(&a[0])))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::fmt_v;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn out(name: &str, args: Vec<Value>) -> String {
        fmt_v(&call(name, args).expect("ok"))
    }

    #[test]
    fn defaults() {
        assert_eq!(out("default", vec!["d".into(), "".into()]), "d");
        assert_eq!(out("default", vec!["d".into(), "x".into()]), "x");
        assert_eq!(out("default", vec!["d".into(), Value::Bool(false)]), "d");
        assert_eq!(out("default", vec!["d".into(), Value::list(vec![])]), "d");
        assert_eq!(out("default", vec!["d".into(), Value::Float(0.0)]), "d");
        assert_eq!(out("default", vec!["d".into()]), "d");
        assert_eq!(out("default", vec!["d".into(), " ".into()]), " ");
        assert_eq!(
            out("default", vec!["d".into(), "a".into(), "b".into()]),
            "a"
        );
        assert_eq!(out("default", vec![Value::Float(3.0), Value::int(7)]), "7");
    }

    #[test]
    fn emptiness_and_friends() {
        assert_eq!(out("empty", vec![Value::Nil]), "true");
        assert_eq!(out("empty", vec!["0".into()]), "false");
        assert_eq!(
            out("empty", vec![Value::list(vec![Value::int(0)])]),
            "false"
        );
        assert_eq!(
            out("coalesce", vec![Value::int(0), "".into(), "x".into()]),
            "x"
        );
        assert!(call("coalesce", vec![Value::int(0), Value::Float(0.0)])
            .unwrap()
            .is_nil());
        assert_eq!(
            out("all", vec![Value::int(1), "a".into(), Value::Bool(true)]),
            "true"
        );
        assert_eq!(out("all", vec![Value::int(1), "".into()]), "false");
        assert_eq!(out("all", vec![]), "true");
        assert_eq!(
            out("any", vec![Value::int(0), "".into(), "x".into()]),
            "true"
        );
        assert_eq!(out("any", vec![]), "false");
        assert_eq!(
            out("ternary", vec!["a".into(), "b".into(), Value::Bool(false)]),
            "b"
        );
        assert_eq!(call("fail", vec!["boom".into()]).unwrap_err().0, "boom");
    }
}
