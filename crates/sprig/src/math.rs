//! Sprig's arithmetic: integer math over spf13/cast `ToInt64` (wrapping like
//! Go's int64), float math through exact decimals as shopspring/decimal
//! does it (so `addf 0.1 0.2` is 0.3), rounding, and the integer sequences
//! `until`, `untilStep` and `seq`.

use gotmpl::{Func, FuncError, FuncMap, List, ListKind, Ty, Value};
use num_bigint::{BigInt, Sign};

use super::conv::{i, reg, to_float64, to_int64, INT};

/// Go's panic text for an integer division by zero.
const DIV_ZERO: &str = "runtime error: integer divide by zero";

/// shopspring/decimal's `DivisionPrecision`.
const DIVISION_PRECISION: i64 = 16;

/// The longest list `until`/`untilStep` build; Go would run out of memory.
const MAX_SEQ: i64 = 10_000_000;

/// An exact decimal `mantissa × 10^exp`.
#[derive(Clone, Debug)]
struct Decimal {
    m: BigInt,
    e: i64,
}

impl Decimal {
    /// `decimal.NewFromFloat`: the shortest decimal that reads back as `f`.
    fn from_f64(f: f64) -> Result<Decimal, FuncError> {
        if !f.is_finite() {
            let shown = gostd::strconv::format_float(f, b'g', -1, 64);
            return Err(FuncError::new(format!(
                "Cannot create a Decimal from {shown}"
            )));
        }
        // Go's shortest digits (strconv 'e', -1), which NewFromFloat uses.
        let text = gostd::strconv::format_float(f, b'e', -1, 64);
        let (mant, exp) = text.split_once('e').unwrap_or((&text, "0"));
        let exp: i64 = exp.parse().unwrap_or(0);
        let frac_len = mant.split_once('.').map(|(_, f)| f.len()).unwrap_or(0) as i64;
        let digits: String = mant.chars().filter(|c| *c != '.').collect();
        let m: BigInt = digits.parse().unwrap_or_default();
        Ok(Decimal {
            m,
            e: exp - frac_len,
        })
    }

    fn to_f64(&self) -> f64 {
        format!("{}e{}", self.m, self.e).parse().unwrap_or(0.0)
    }

    fn pow10(n: i64) -> BigInt {
        BigInt::from(10u32).pow(n.unsigned_abs() as u32)
    }

    /// Both mantissas at the smaller exponent.
    fn aligned(&self, o: &Decimal) -> (BigInt, BigInt, i64) {
        let e = self.e.min(o.e);
        (
            &self.m * Self::pow10(self.e - e),
            &o.m * Self::pow10(o.e - e),
            e,
        )
    }

    fn add(&self, o: &Decimal) -> Decimal {
        let (a, b, e) = self.aligned(o);
        Decimal { m: a + b, e }
    }

    fn sub(&self, o: &Decimal) -> Decimal {
        let (a, b, e) = self.aligned(o);
        Decimal { m: a - b, e }
    }

    fn mul(&self, o: &Decimal) -> Decimal {
        Decimal {
            m: &self.m * &o.m,
            e: self.e + o.e,
        }
    }

    /// `Decimal.Div`: the quotient rounded half away from zero to 16 places.
    fn div(&self, o: &Decimal) -> Result<Decimal, FuncError> {
        if o.m.sign() == Sign::NoSign {
            return Err(FuncError::new("decimal division by 0"));
        }
        // self/o × 10^16 = (ma / mb) × 10^(ea − eb + 16)
        let k = self.e - o.e + DIVISION_PRECISION;
        let (num, den) = if k >= 0 {
            (&self.m * Self::pow10(k), o.m.clone())
        } else {
            (self.m.clone(), &o.m * Self::pow10(-k))
        };
        let mut q = &num / &den;
        let r = &num % &den;
        let twice: BigInt = BigInt::from_biguint(Sign::Plus, r.magnitude() * 2u32);
        let den_abs = BigInt::from_biguint(Sign::Plus, den.magnitude().clone());
        if twice >= den_abs {
            if (num.sign() == Sign::Minus) != (den.sign() == Sign::Minus) {
                q -= 1;
            } else {
                q += 1;
            }
        }
        Ok(Decimal {
            m: q,
            e: -DIVISION_PRECISION,
        })
    }
}

/// Sprig's `execDecimalOp`: folds the arguments through exact decimals.
fn decimal_op(
    first: &Value,
    rest: &[Value],
    op: fn(&Decimal, &Decimal) -> Result<Decimal, FuncError>,
) -> Result<Value, FuncError> {
    let mut acc = Decimal::from_f64(to_float64(first))?;
    for x in rest {
        acc = op(&acc, &Decimal::from_f64(to_float64(x))?)?;
    }
    Ok(Value::Float(acc.to_f64()))
}

/// `math.Pow(10, p)` for the integral places `round` uses.
fn pow10f(p: i64) -> f64 {
    let p = p.clamp(-400, 400) as i32;
    if p >= 0 {
        10f64.powi(p)
    } else {
        1.0 / 10f64.powi(-p)
    }
}

/// Sprig's `round` (ties and the rounding point as in the Go code).
fn round(val: f64, places: i64, round_on: f64) -> f64 {
    let pow = pow10f(places);
    let digit = pow * val;
    let frac = if digit.is_infinite() {
        f64::NAN
    } else {
        digit.fract()
    };
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    r / pow
}

/// Sprig's `untilStep`.
fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, FuncError> {
    let mut v = Vec::new();
    let too_many = || FuncError::new("untilStep: too many elements");
    if stop < start {
        if step >= 0 {
            return Ok(v);
        }
        let mut x = start;
        while x > stop {
            if v.len() as i64 >= MAX_SEQ {
                return Err(too_many());
            }
            v.push(x);
            x = match x.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
        return Ok(v);
    }
    if step <= 0 {
        return Ok(v);
    }
    let mut x = start;
    while x < stop {
        if v.len() as i64 >= MAX_SEQ {
            return Err(too_many());
        }
        v.push(x);
        x = match x.checked_add(step) {
            Some(n) => n,
            None => break,
        };
    }
    Ok(v)
}

fn int_list(v: Vec<i64>) -> Value {
    Value::List(List::with_kind(
        v.into_iter().map(Value::int).collect(),
        ListKind::Int,
    ))
}

/// Sprig's `seq`, printed like `fmt.Sprint([]int)` without the brackets.
fn seq(p: &[i64]) -> Result<String, FuncError> {
    let nums = match *p {
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            until_step(1, end.wrapping_add(inc), inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(start, end.wrapping_add(step), step)?
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(String::new());
                }
            }
            until_step(start, end.wrapping_add(inc), step)?
        }
        _ => Vec::new(),
    };
    Ok(nums
        .iter()
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .join(" "))
}

fn int_op(m: &mut FuncMap, name: &str, f: fn(i64, i64) -> Result<i64, FuncError>) {
    m.insert(
        name,
        Func::new(&[Ty::Any, Ty::Any], move |_, a| {
            f(to_int64(&a[0]), to_int64(&a[1])).map(Value::int64)
        }),
    );
}

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "add1",
        Func::new(&[Ty::Any], |_, a| {
            Ok(Value::int64(to_int64(&a[0]).wrapping_add(1)))
        }),
    );
    m.insert(
        "add",
        Func::variadic(&[], Ty::Any, |_, a| {
            Ok(Value::int64(
                a.iter().fold(0i64, |acc, x| acc.wrapping_add(to_int64(x))),
            ))
        }),
    );
    int_op(m, "sub", |x, y| Ok(x.wrapping_sub(y)));
    int_op(m, "div", |x, y| {
        if y == 0 {
            Err(FuncError::new(DIV_ZERO))
        } else {
            Ok(x.wrapping_div(y))
        }
    });
    int_op(m, "mod", |x, y| {
        if y == 0 {
            Err(FuncError::new(DIV_ZERO))
        } else {
            Ok(x.wrapping_rem(y))
        }
    });
    m.insert(
        "mul",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(Value::int64(
                a[1..]
                    .iter()
                    .fold(to_int64(&a[0]), |acc, x| acc.wrapping_mul(to_int64(x))),
            ))
        }),
    );
    reg(
        m,
        &["max", "biggest"],
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(Value::int64(
                a[1..].iter().map(to_int64).fold(to_int64(&a[0]), i64::max),
            ))
        }),
    );
    m.insert(
        "min",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(Value::int64(
                a[1..].iter().map(to_int64).fold(to_int64(&a[0]), i64::min),
            ))
        }),
    );
    m.insert(
        "maxf",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .map(to_float64)
                    .fold(to_float64(&a[0]), go_max),
            ))
        }),
    );
    m.insert(
        "minf",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .map(to_float64)
                    .fold(to_float64(&a[0]), go_min),
            ))
        }),
    );
    m.insert(
        "floor",
        Func::new(&[Ty::Any], |_, a| {
            Ok(Value::Float(to_float64(&a[0]).floor()))
        }),
    );
    m.insert(
        "ceil",
        Func::new(&[Ty::Any], |_, a| {
            Ok(Value::Float(to_float64(&a[0]).ceil()))
        }),
    );
    m.insert(
        "round",
        Func::variadic(&[Ty::Any, INT], Ty::Float64, |_, a| {
            let round_on = match a.get(2) {
                Some(Value::Float(f)) => *f,
                _ => 0.5,
            };
            Ok(Value::Float(round(to_float64(&a[0]), i(&a[1]), round_on)))
        }),
    );
    m.insert(
        "add1f",
        Func::new(&[Ty::Any], |_, a| {
            decimal_op(&a[0], &[Value::int(1)], |x, y| Ok(x.add(y)))
        }),
    );
    m.insert(
        "addf",
        Func::variadic(&[], Ty::Any, |_, a| {
            decimal_op(&Value::Float(0.0), &a, |x, y| Ok(x.add(y)))
        }),
    );
    m.insert(
        "subf",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            decimal_op(&a[0], &a[1..], |x, y| Ok(x.sub(y)))
        }),
    );
    m.insert(
        "mulf",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            decimal_op(&a[0], &a[1..], |x, y| Ok(x.mul(y)))
        }),
    );
    m.insert(
        "divf",
        Func::variadic(&[Ty::Any], Ty::Any, |_, a| {
            decimal_op(&a[0], &a[1..], Decimal::div)
        }),
    );
    m.insert(
        "until",
        Func::new(&[INT], |_, a| {
            let n = i(&a[0]);
            let step = if n < 0 { -1 } else { 1 };
            until_step(0, n, step).map(int_list)
        }),
    );
    m.insert(
        "untilStep",
        Func::new(&[INT, INT, INT], |_, a| {
            until_step(i(&a[0]), i(&a[1]), i(&a[2])).map(int_list)
        }),
    );
    m.insert(
        "seq",
        Func::variadic(&[], INT, |_, a| {
            let p: Vec<i64> = a.iter().map(i).collect();
            seq(&p).map(Value::string)
        }),
    );
}

/// Go's `math.Max` (NaN wins; +0 beats -0).
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() {
            y
        } else {
            x
        }
    } else if x > y {
        x
    } else {
        y
    }
}

/// Go's `math.Min` (NaN wins; -0 beats +0).
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == 0.0 && y == 0.0 {
        if x.is_sign_negative() {
            x
        } else {
            y
        }
    } else if x < y {
        x
    } else {
        y
    }
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

    fn n(x: i64) -> Value {
        Value::int(x)
    }

    fn f(x: f64) -> Value {
        Value::Float(x)
    }

    #[test]
    fn integer_math() {
        assert_eq!(out("add", vec![n(1), n(2), n(3)]), "6");
        assert_eq!(out("add", vec![f(1.9), n(1)]), "2");
        assert_eq!(out("add", vec![]), "0");
        assert_eq!(out("add", vec!["x".into(), n(1)]), "1");
        assert_eq!(out("add", vec![n(i64::MAX), n(1)]), "-9223372036854775808");
        assert_eq!(out("sub", vec![n(3), n(10)]), "-7");
        assert_eq!(out("mul", vec![f(1.5), f(1.5)]), "1");
        assert_eq!(out("div", vec![n(-7), n(2)]), "-3");
        assert_eq!(out("mod", vec![n(-7), n(3)]), "-1");
        assert_eq!(
            call("div", vec![n(1), n(0)]).unwrap_err().0,
            "runtime error: integer divide by zero"
        );
        assert_eq!(out("max", vec!["3".into(), n(20)]), "20");
        assert_eq!(out("min", vec![n(4), n(2), n(9)]), "2");
        assert_eq!(call("max", vec![n(1)]).unwrap().type_name(), "int64");
    }

    #[test]
    fn float_math() {
        assert_eq!(out("addf", vec![f(1.1), f(2.2)]), "3.3");
        assert_eq!(out("addf", vec![f(0.1), f(0.2)]), "0.3");
        assert_eq!(out("mulf", vec![f(0.1), n(3)]), "0.3");
        assert_eq!(out("mulf", vec![n(1000000), n(1000000)]), "1e+12");
        assert_eq!(out("divf", vec![n(10), n(4)]), "2.5");
        assert_eq!(out("divf", vec![n(7), n(2), n(2)]), "1.75");
        assert_eq!(out("divf", vec![n(1), n(3)]), "0.3333333333333333");
        assert_eq!(out("divf", vec![n(2), n(3)]), "0.6666666666666667");
        assert_eq!(
            call("divf", vec![n(1), n(0)]).unwrap_err().0,
            "decimal division by 0"
        );
        assert_eq!(out("subf", vec![n(1)]), "1");
        assert_eq!(out("add1f", vec![f(1.5)]), "2.5");
        assert_eq!(out("addf", vec!["1.5".into(), n(1)]), "2.5");
        assert_eq!(out("maxf", vec![f(1.5), f(2.5), f(0.5)]), "2.5");
        assert_eq!(out("minf", vec![f(1.5), f(-2.5)]), "-2.5");
        assert_eq!(out("floor", vec!["2.9".into()]), "2");
        assert_eq!(out("ceil", vec![f(1.2)]), "2");
    }

    #[test]
    fn rounding() {
        assert_eq!(out("round", vec![f(1.234), n(2)]), "1.23");
        assert_eq!(out("round", vec![f(2.5), n(0)]), "3");
        assert_eq!(out("round", vec![f(-2.5), n(0)]), "-3");
        assert_eq!(out("round", vec![f(1.005), n(2)]), "1");
        assert_eq!(out("round", vec![f(2.675), n(2)]), "2.68");
        assert_eq!(out("round", vec![f(123.456), n(-1)]), "120");
    }

    #[test]
    fn sequences() {
        assert_eq!(out("until", vec![n(5)]), "[0 1 2 3 4]");
        assert_eq!(out("until", vec![n(-3)]), "[0 -1 -2]");
        assert_eq!(call("until", vec![n(2)]).unwrap().type_name(), "[]int");
        assert_eq!(out("untilStep", vec![n(10), n(0), n(-3)]), "[10 7 4 1]");
        assert_eq!(out("untilStep", vec![n(0), n(10), n(-1)]), "[]");
        assert_eq!(out("seq", vec![n(5)]), "1 2 3 4 5");
        assert_eq!(out("seq", vec![n(5), n(2)]), "5 4 3 2");
        assert_eq!(out("seq", vec![n(0), n(3), n(10)]), "0 3 6 9");
        assert_eq!(out("seq", vec![n(0)]), "1 0");
        assert_eq!(out("seq", vec![]), "");
        assert_eq!(out("seq", vec![n(1), n(1)]), "1");
    }
}
