//! Sprig's list functions. Like the Go originals they accept any slice
//! (`[]interface {}`, `[]string`, `[]int`, bytes…) and return new
//! `[]interface {}` slices; the non-`must` variants fail the render on a bad
//! argument just as their Go panics do.

use gotmpl::{Func, FuncError, FuncMap, List, ListKind, Ty, Value};

use super::conv::{
    deep_equal, i, is_empty, reg, slice_items, slice_or_err, strslice, strval, to_int64, INT,
    NIL_DEREF,
};

fn any_list(items: Vec<Value>) -> Value {
    Value::list(items)
}

/// Registers `name` and `mustName` for a one-list function.
fn list_fn(m: &mut FuncMap, names: &[&str], what: &'static str, f: fn(Vec<Value>) -> Value) {
    reg(
        m,
        names,
        Func::new(&[Ty::Any], move |_, a| Ok(f(slice_or_err(&a[0], what)?))),
    );
}

/// Sprig's `slice`: `list[start:end]`, keeping the slice's own type.
fn slice(a: &[Value]) -> Result<Value, FuncError> {
    let list = &a[0];
    if list.is_nil() {
        return Err(FuncError::new(NIL_DEREF));
    }
    let items = slice_items(list).ok_or_else(|| {
        FuncError::new(format!(
            "list should be type of slice or array but {}",
            list.kind().go_name()
        ))
    })?;
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    let start = a.get(1).map(to_int64).unwrap_or(0);
    let end = a.get(2).map(to_int64).unwrap_or(items.len() as i64);
    if start < 0 || end < start || end > items.len() as i64 {
        return Err(FuncError::new(
            "reflect.Value.Slice: slice index out of bounds",
        ));
    }
    let part = items[start as usize..end as usize].to_vec();
    Ok(match list {
        Value::Bytes(b) => Value::Bytes(b[start as usize..end as usize].into()),
        Value::List(l) => Value::List(List::with_kind(part, l.kind())),
        _ => any_list(part),
    })
}

/// Sprig's `chunk`, including the float arithmetic behind its chunk count.
fn chunk(size: i64, items: &[Value]) -> Result<Value, FuncError> {
    let l = items.len() as i64;
    let cs_f = ((l - 1) as f64 / size as f64).floor() + 1.0;
    let cs = super::conv::f64_to_i64(cs_f);
    if cs < 0 {
        return Err(FuncError::new("runtime error: makeslice: len out of range"));
    }
    let mut out = Vec::new();
    for ci in 0..cs {
        let mut clen = size;
        if ci == cs - 1 {
            clen = super::conv::f64_to_i64((l as f64 % size as f64).floor());
            if clen == 0 {
                clen = size;
            }
        }
        if clen < 0 {
            return Err(FuncError::new("runtime error: makeslice: len out of range"));
        }
        let mut part = Vec::with_capacity(clen as usize);
        for j in 0..clen {
            let ix = ci * size + j;
            let v = usize::try_from(ix)
                .ok()
                .and_then(|ix| items.get(ix))
                .ok_or_else(|| {
                    FuncError::new(format!(
                        "runtime error: index out of range [{ix}] with length {l}"
                    ))
                })?;
            part.push(v.clone());
        }
        out.push(any_list(part));
    }
    Ok(Value::List(List::with_kind(out, ListKind::AnyList)))
}

pub(crate) fn register(m: &mut FuncMap) {
    reg(
        m,
        &["list", "tuple"],
        Func::variadic(&[], Ty::Any, |_, a| Ok(any_list(a))),
    );
    reg(
        m,
        &["append", "push", "mustAppend", "mustPush"],
        Func::new(&[Ty::Any, Ty::Any], |_, a| {
            let mut items = slice_or_err(&a[0], "Cannot push on type")?;
            items.push(a[1].clone());
            Ok(any_list(items))
        }),
    );
    reg(
        m,
        &["prepend", "mustPrepend"],
        Func::new(&[Ty::Any, Ty::Any], |_, a| {
            let mut items = slice_or_err(&a[0], "Cannot prepend on type")?;
            items.insert(0, a[1].clone());
            Ok(any_list(items))
        }),
    );
    list_fn(
        m,
        &["first", "mustFirst"],
        "Cannot find first on type",
        |l| l.first().cloned().unwrap_or(Value::Nil),
    );
    list_fn(m, &["last", "mustLast"], "Cannot find last on type", |l| {
        l.last().cloned().unwrap_or(Value::Nil)
    });
    list_fn(m, &["rest", "mustRest"], "Cannot find rest on type", |l| {
        any_list(l.get(1..).map(<[Value]>::to_vec).unwrap_or_default())
    });
    list_fn(
        m,
        &["initial", "mustInitial"],
        "Cannot find initial on type",
        |l| {
            let n = l.len().saturating_sub(1);
            any_list(l[..n].to_vec())
        },
    );
    list_fn(
        m,
        &["reverse", "mustReverse"],
        "Cannot find reverse on type",
        |mut l| {
            l.reverse();
            any_list(l)
        },
    );
    list_fn(m, &["uniq", "mustUniq"], "Cannot find uniq on type", |l| {
        let mut dest: Vec<Value> = Vec::new();
        for v in l {
            if !dest.iter().any(|d| deep_equal(&v, d)) {
                dest.push(v);
            }
        }
        any_list(dest)
    });
    list_fn(
        m,
        &["compact", "mustCompact"],
        "Cannot compact on type",
        |l| any_list(l.into_iter().filter(|v| !is_empty(v)).collect()),
    );
    reg(
        m,
        &["without", "mustWithout"],
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            let items = slice_or_err(&a[0], "Cannot find without on type")?;
            let omit = &a[1..];
            Ok(any_list(
                items
                    .into_iter()
                    .filter(|v| !omit.iter().any(|o| deep_equal(v, o)))
                    .collect(),
            ))
        }),
    );
    reg(
        m,
        &["has", "mustHas"],
        Func::new(&[Ty::Any, Ty::Any], |_, a| {
            if a[1].is_nil() {
                return Ok(Value::Bool(false));
            }
            let items = slice_or_err(&a[1], "Cannot find has on type")?;
            Ok(Value::Bool(items.iter().any(|v| deep_equal(&a[0], v))))
        }),
    );
    reg(
        m,
        &["slice", "mustSlice"],
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| slice(&a)),
    );
    m.insert(
        "concat",
        Func::variadic(&[], Ty::Any, |_, a| {
            let mut out = Vec::new();
            for l in &a {
                if l.is_nil() {
                    return Err(FuncError::new(NIL_DEREF));
                }
                match slice_items(l) {
                    Some(items) => out.extend(items),
                    None => {
                        return Err(FuncError::new(format!(
                            "Cannot concat type {} as list",
                            l.kind().go_name()
                        )))
                    }
                }
            }
            Ok(any_list(out))
        }),
    );
    reg(
        m,
        &["chunk", "mustChunk"],
        Func::new(&[INT, Ty::Any], |_, a| {
            let items = slice_or_err(&a[1], "Cannot chunk type")?;
            chunk(i(&a[0]), &items)
        }),
    );
    m.insert(
        "sortAlpha",
        Func::new(&[Ty::Any], |_, a| {
            let mut v = if slice_items(&a[0]).is_some() {
                strslice(&a[0])
            } else {
                vec![strval(&a[0])]
            };
            v.sort();
            Ok(Value::List(List::with_kind(
                v.into_iter().map(Value::string).collect(),
                ListKind::String,
            )))
        }),
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

    fn ints(v: &[i64]) -> Value {
        Value::list(v.iter().map(|x| Value::int(*x)).collect())
    }

    fn strs(v: &[&str]) -> Value {
        Value::string_list(v.iter().map(|x| x.to_string()).collect())
    }

    #[test]
    fn basics() {
        assert_eq!(
            out("list", vec![Value::int(1), "a".into(), Value::Nil]),
            "[1 a <nil>]"
        );
        assert_eq!(out("first", vec![ints(&[1, 2, 3])]), "1");
        assert!(call("first", vec![ints(&[])]).unwrap().is_nil());
        assert_eq!(out("rest", vec![ints(&[1, 2, 3])]), "[2 3]");
        assert_eq!(out("rest", vec![ints(&[])]), "[]");
        assert_eq!(out("last", vec![ints(&[1, 2, 3])]), "3");
        assert_eq!(out("initial", vec![ints(&[1, 2, 3])]), "[1 2]");
        assert_eq!(out("initial", vec![strs(&["a", "b", "c"])]), "[a b]");
        assert_eq!(out("append", vec![ints(&[1, 2]), Value::int(3)]), "[1 2 3]");
        assert_eq!(out("prepend", vec![strs(&[]), "x".into()]), "[x]");
        assert_eq!(out("reverse", vec![ints(&[1, 2, 3])]), "[3 2 1]");
        assert_eq!(out("uniq", vec![ints(&[1, 2, 1, 3, 2])]), "[1 2 3]");
        assert_eq!(
            out("without", vec![ints(&[1, 2, 3, 2]), Value::int(2)]),
            "[1 3]"
        );
        assert_eq!(
            call("uniq", vec![strs(&["a"])]).unwrap().type_name(),
            "[]interface {}"
        );
        // Sprig's chunk returns [][]interface{}: each chunk is a list.
        let chunks = call("chunk", vec![Value::int(2), ints(&[1, 2, 3])]).unwrap();
        assert_eq!(chunks.type_name(), "[][]interface {}");
        assert_eq!(fmt_v(&chunks), "[[1 2] [3]]");
    }

    #[test]
    fn errors() {
        assert_eq!(
            call("first", vec!["abc".into()]).unwrap_err().0,
            "Cannot find first on type string"
        );
        assert_eq!(
            call("mustLast", vec!["x".into()]).unwrap_err().0,
            "Cannot find last on type string"
        );
        assert!(call("append", vec![Value::Nil, Value::int(1)]).is_err());
        assert!(call(
            "slice",
            vec![ints(&[1, 2, 3]), Value::int(1), Value::int(5)]
        )
        .is_err());
        assert!(call(
            "slice",
            vec![ints(&[1, 2, 3]), Value::int(2), Value::int(1)]
        )
        .is_err());
        assert!(call("chunk", vec![Value::int(0), ints(&[1, 2])]).is_err());
    }

    #[test]
    fn membership_and_shapes() {
        let floats = Value::list(vec![Value::Float(1.0), Value::Float(2.0)]);
        assert_eq!(out("has", vec![Value::int(1), floats.clone()]), "false");
        assert_eq!(out("has", vec![Value::Float(1.0), floats]), "true");
        assert_eq!(
            out("has", vec![Value::Nil, Value::list(vec![Value::Nil])]),
            "true"
        );
        assert_eq!(
            out(
                "compact",
                vec![Value::list(vec![
                    Value::int(0),
                    "".into(),
                    Value::Nil,
                    "a".into(),
                    Value::Bool(false),
                    Value::int(1),
                    ints(&[])
                ])]
            ),
            "[a 1]"
        );
        assert_eq!(out("slice", vec![ints(&[1, 2, 3]), Value::int(1)]), "[2 3]");
        assert_eq!(
            call("slice", vec![strs(&["a", "b"]), Value::int(1)])
                .unwrap()
                .type_name(),
            "[]string"
        );
        assert_eq!(
            out("concat", vec![ints(&[1]), ints(&[2, 3]), ints(&[])]),
            "[1 2 3]"
        );
        assert_eq!(out("concat", vec![]), "[]");
        assert_eq!(
            out("chunk", vec![Value::int(3), ints(&[0, 1, 2, 3, 4, 5, 6])]),
            "[[0 1 2] [3 4 5] [6]]"
        );
        assert_eq!(
            out(
                "sortAlpha",
                vec![Value::list(vec!["b".into(), Value::int(1), "a".into()])]
            ),
            "[1 a b]"
        );
        assert_eq!(out("sortAlpha", vec!["x".into()]), "[x]");
    }
}
