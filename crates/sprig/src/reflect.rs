//! Sprig's reflection functions: `typeOf`, `typeIs`, `typeIsLike`,
//! `kindOf`, `kindIs` and `deepEqual`, with Go's type and kind names.

use gotmpl::{Func, FuncMap, Ty, Value};

use super::conv::{deep_equal, s};

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "typeOf",
        Func::new(&[Ty::Any], |_, a| Ok(Value::string(a[0].type_name()))),
    );
    m.insert(
        "typeIs",
        Func::new(&[Ty::String, Ty::Any], |_, a| {
            Ok(Value::Bool(s(&a[0]) == a[1].type_name()))
        }),
    );
    m.insert(
        "typeIsLike",
        Func::new(&[Ty::String, Ty::Any], |_, a| {
            let (target, t) = (s(&a[0]), a[1].type_name());
            Ok(Value::Bool(target == t || format!("*{target}") == t))
        }),
    );
    m.insert(
        "kindOf",
        Func::new(&[Ty::Any], |_, a| Ok(Value::str(a[0].kind().go_name()))),
    );
    m.insert(
        "kindIs",
        Func::new(&[Ty::String, Ty::Any], |_, a| {
            Ok(Value::Bool(s(&a[0]) == a[1].kind().go_name()))
        }),
    );
    m.insert(
        "deepEqual",
        Func::new(&[Ty::Any, Ty::Any], |_, a| {
            Ok(Value::Bool(deep_equal(&a[0], &a[1])))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::{FuncError, ListKind};

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn out(name: &str, args: Vec<Value>) -> String {
        crate::conv::fmt_v(&call(name, args).expect("ok"))
    }

    #[test]
    fn types_and_kinds() {
        assert_eq!(out("typeOf", vec![Value::Nil]), "<nil>");
        assert_eq!(out("typeOf", vec![Value::Float(1.0)]), "float64");
        assert_eq!(out("typeOf", vec![Value::list(vec![])]), "[]interface {}");
        assert_eq!(out("kindOf", vec![Value::Nil]), "invalid");
        assert_eq!(out("kindOf", vec![Value::list(vec![])]), "slice");
        assert_eq!(out("kindOf", vec![Value::map(Default::default())]), "map");
        assert_eq!(out("kindIs", vec!["string".into(), "a".into()]), "true");
        assert_eq!(
            out("typeIs", vec!["int".into(), Value::Float(1.0)]),
            "false"
        );
        assert_eq!(out("typeIsLike", vec!["string".into(), "a".into()]), "true");
        let strs = Value::List(gotmpl::List::with_kind(vec![], ListKind::String));
        assert_eq!(out("typeOf", vec![strs]), "[]string");
    }

    #[test]
    fn deep_equal_needs_same_types() {
        assert_eq!(
            out("deepEqual", vec![Value::int(1), Value::Float(1.0)]),
            "false"
        );
        assert_eq!(out("deepEqual", vec![Value::Nil, Value::Nil]), "true");
        assert_eq!(
            out(
                "deepEqual",
                vec![
                    Value::list(vec![Value::int(1), Value::int(2)]),
                    Value::list(vec![Value::int(1), Value::int(2)])
                ]
            ),
            "true"
        );
    }
}
