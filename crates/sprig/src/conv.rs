//! Sprig's type conversion functions (`atoi`, `int`, `int64`, `float64`,
//! `toDecimal`, `toString`, `toStrings`) and the value helpers the other core
//! Sprig modules share: spf13/cast number conversion, Sprig's `strval`,
//! Go emptiness and `reflect.DeepEqual`.

use gotmpl::{FuncError, FuncMap, IntKind, ListKind, Ty, Value};

/// A Go `int` parameter type.
pub(crate) const INT: Ty = Ty::Int(IntKind::Int);

/// Registers a function under several names.
pub(crate) fn reg(m: &mut FuncMap, names: &[&str], f: gotmpl::Func) {
    for n in names {
        m.insert(*n, f.clone());
    }
}

/// The string of an argument declared `string` (anything else reads as "").
pub(crate) fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// The integer of an argument declared as a Go integer type.
pub(crate) fn i(v: &Value) -> i64 {
    match v {
        Value::Int(n, _) => *n,
        Value::Uint(n, _) => *n as i64,
        _ => 0,
    }
}

/// Go's `%v` of a value.
pub(crate) fn fmt_v(v: &Value) -> String {
    gotmpl::fmt::format_value(v)
}

/// Sprig's `strval`: strings and bytes as they are, anything else as `%v`.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Bytes(b) => gotmpl::gostr::from_bytes(b).into_owned(),
        other => fmt_v(other),
    }
}

/// The elements of a Go slice or array value, or `None` for other kinds.
pub(crate) fn slice_items(v: &Value) -> Option<Vec<Value>> {
    match v {
        Value::List(l) => Some(l.to_vec()),
        Value::Bytes(b) => Some(
            b.iter()
                .map(|x| Value::Uint(u64::from(*x), gotmpl::UintKind::Uint8))
                .collect(),
        ),
        Value::Object(o) if o.kind() == gotmpl::Kind::Slice => {
            o.entries().map(|e| e.into_iter().map(|(_, v)| v).collect())
        }
        _ => None,
    }
}

/// What Go says when Sprig calls `reflect.TypeOf(nil).Kind()`.
pub(crate) const NIL_DEREF: &str =
    "runtime error: invalid memory address or nil pointer dereference";

/// The elements of a slice argument, or Sprig's error `"<prefix> <kind>"`
/// (e.g. `Cannot push on type string`). A nil argument panics in Go.
pub(crate) fn slice_or_err(v: &Value, prefix: &str) -> Result<Vec<Value>, FuncError> {
    if v.is_nil() {
        return Err(FuncError::new(NIL_DEREF));
    }
    slice_items(v).ok_or_else(|| FuncError::new(format!("{prefix} {}", v.kind().go_name())))
}

/// Sprig's `empty`: the zero value of its type (structs are never empty).
pub(crate) fn is_empty(v: &Value) -> bool {
    match v {
        Value::Invalid | Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(n, _) => *n == 0,
        Value::Uint(n, _) => *n == 0,
        Value::Float(f) => *f == 0.0,
        Value::Complex(r, im) => *r == 0.0 && *im == 0.0,
        Value::String(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        // Map- and slice-like host objects (Helm's `.Files`) are empty without entries.
        Value::Object(o) => match o.kind() {
            gotmpl::Kind::Map | gotmpl::Kind::Slice => o.entries().is_none_or(|e| e.is_empty()),
            _ => false,
        },
        Value::Func(_) => false,
    }
}

/// Go's `reflect.DeepEqual` over template values: types must match exactly.
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Invalid | Value::Nil, Value::Invalid | Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x, kx), Value::Int(y, ky)) => kx == ky && x == y,
        (Value::Uint(x, kx), Value::Uint(y, ky)) => kx == ky && x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Complex(xr, xi), Value::Complex(yr, yi)) => xr == yr && xi == yi,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.kind() == y.kind()
                && x.len() == y.len()
                && x.iter().zip(y.iter()).all(|(p, q)| deep_equal(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.kind() != y.kind() {
                return false;
            }
            if x.ptr_eq(y) {
                return true;
            }
            let (xm, ym) = (x.entries(), y.entries());
            xm.len() == ym.len()
                && xm
                    .iter()
                    .zip(ym.iter())
                    .all(|((kx, vx), (ky, vy))| kx == ky && deep_equal(vx, vy))
        }
        (Value::Object(x), Value::Object(y)) => {
            std::rc::Rc::ptr_eq(x, y)
                || (x.type_name() == y.type_name() && x.format_sharp_v() == y.format_sharp_v())
        }
        _ => false,
    }
}

/// cast's `trimZeroDecimal`: "10.00" → "10", anything else unchanged.
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (0..b.len()).rev() {
        match b[i] {
            b'.' => {
                if found_zero {
                    return &s[..i];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's rule for `_` digit separators in number literals.
fn underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut start = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        start = 1;
    }
    let b = &b[start..];
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || hex && c.is_ascii_hexdigit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseInt(s, base, 64)`; base 0 detects `0x`/`0o`/`0b`/`0` prefixes.
pub(crate) fn parse_go_int(s: &str, base: u32) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let (neg, body) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits, base0) = if base == 0 {
        let lower = body.to_ascii_lowercase();
        if lower.starts_with("0x") {
            (16, &body[2..], true)
        } else if lower.starts_with("0o") {
            (8, &body[2..], true)
        } else if lower.starts_with("0b") {
            (2, &body[2..], true)
        } else if body.starts_with('0') && body.len() > 1 {
            (8, &body[1..], true)
        } else {
            (10, body, true)
        }
    } else {
        (base, body, false)
    };
    let cleaned: String;
    let digits = if base0 && digits.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        cleaned = digits.replace('_', "");
        cleaned.as_str()
    } else {
        digits
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let u = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if u > 1u64 << 63 {
            None
        } else {
            Some((u as i64).wrapping_neg())
        }
    } else if u > i64::MAX as u64 {
        None
    } else {
        Some(u as i64)
    }
}

/// Go's `strconv.ParseFloat(s, 64)`: decimal or hex (`0x1p4`) input, `_`
/// separators where Go allows them, `inf`/`nan`; out of range is an error.
pub(crate) fn parse_go_float(s: &str) -> Option<f64> {
    let cleaned;
    let s = if s.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        cleaned = s.replace('_', "");
        cleaned.as_str()
    } else {
        s
    };
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.len() >= 2 && body[..2].eq_ignore_ascii_case("0x") {
        let f = parse_hex_float(&body[2..])?;
        return Some(if neg { -f } else { f });
    }
    if body.starts_with(['+', '-']) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    let lower = body.to_ascii_lowercase();
    if f.is_infinite() && !(lower == "inf" || lower == "infinity") {
        // Go reports a range error, which cast turns into 0.
        return None;
    }
    Some(f)
}

/// The digits and mandatory `p` exponent of a Go hex float literal.
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = s.split_once(['p', 'P'])?;
    let exp: i32 = exp.parse().ok()?;
    let mut value = 0f64;
    let mut frac_digits = 0i32;
    let mut seen_point = false;
    let mut any = false;
    for c in mant.chars() {
        if c == '.' && !seen_point {
            seen_point = true;
            continue;
        }
        value = value * 16.0 + f64::from(c.to_digit(16)?);
        any = true;
        if seen_point {
            frac_digits += 1;
        }
    }
    if !any {
        return None;
    }
    let f = value * 2f64.powi(exp - 4 * frac_digits);
    f.is_finite().then_some(f)
}

/// Go's float64 → int64 conversion on amd64 (out of range gives MinInt64).
pub(crate) fn f64_to_i64(f: f64) -> i64 {
    // 2^63 as a float; anything outside [-2^63, 2^63) does not fit.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// spf13/cast `ToInt64` (and `ToInt`, the same on 64-bit): invalid input is 0.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(n, _) => *n,
        Value::Uint(n, _) => *n as i64,
        Value::Float(f) => f64_to_i64(*f),
        Value::String(s) => parse_go_int(trim_zero_decimal(s), 0).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// spf13/cast `ToFloat64`: invalid input is 0.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(n, _) => *n as f64,
        Value::Uint(n, _) => *n as f64,
        Value::Float(f) => *f,
        Value::String(s) => parse_go_float(s).unwrap_or(0.0),
        Value::Bool(true) => 1.0,
        _ => 0.0,
    }
}

/// Sprig's `strslice` (`toStrings`): nil elements are dropped.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) if l.kind() == ListKind::String => l.iter().map(strval).collect(),
        _ => match slice_items(v) {
            Some(items) => items.iter().filter(|x| !x.is_nil()).map(strval).collect(),
            None if v.is_nil() => Vec::new(),
            None => vec![strval(v)],
        },
    }
}

/// `strconv.Atoi` with the error dropped: syntax errors give 0, while range
/// errors still give the clamped value Go returns beside the error.
fn atoi(t: &str) -> i64 {
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return 0;
    }
    match parse_go_int(t, 10) {
        Some(n) => n,
        None if neg => i64::MIN,
        None => i64::MAX,
    }
}

pub(crate) fn register(m: &mut FuncMap) {
    m.insert(
        "atoi",
        gotmpl::Func::new(&[Ty::String], |_, a| Ok(Value::int(atoi(s(&a[0]))))),
    );
    m.insert(
        "int64",
        gotmpl::Func::new(&[Ty::Any], |_, a| Ok(Value::int64(to_int64(&a[0])))),
    );
    m.insert(
        "int",
        gotmpl::Func::new(&[Ty::Any], |_, a| Ok(Value::int(to_int64(&a[0])))),
    );
    m.insert(
        "float64",
        gotmpl::Func::new(&[Ty::Any], |_, a| Ok(Value::Float(to_float64(&a[0])))),
    );
    m.insert(
        "toDecimal",
        gotmpl::Func::new(&[Ty::Any], |_, a| {
            let text = fmt_v(&a[0]);
            Ok(Value::int64(parse_go_int(&text, 8).unwrap_or(0)))
        }),
    );
    m.insert(
        "toString",
        gotmpl::Func::new(&[Ty::Any], |_, a| Ok(Value::string(strval(&a[0])))),
    );
    m.insert(
        "toStrings",
        gotmpl::Func::new(&[Ty::Any], |_, a| Ok(Value::string_list(strslice(&a[0])))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Vec<Value>) -> Result<Value, FuncError> {
        crate::call_registered(register, name, args)
    }

    fn out(v: Result<Value, FuncError>) -> String {
        fmt_v(&v.expect("ok"))
    }

    #[test]
    fn cast_int_semantics() {
        assert_eq!(out(call("int", vec!["42".into()])), "42");
        assert_eq!(out(call("int", vec![Value::Float(-3.9)])), "-3");
        assert_eq!(out(call("int", vec!["3.9".into()])), "0");
        assert_eq!(out(call("int", vec!["0x1F".into()])), "31");
        assert_eq!(out(call("int", vec!["010".into()])), "8");
        assert_eq!(out(call("int", vec!["1e3".into()])), "0");
        assert_eq!(out(call("int", vec!["1_000".into()])), "1000");
        assert_eq!(out(call("int", vec!["10.00".into()])), "10");
        assert_eq!(out(call("int", vec!["  5".into()])), "0");
        assert_eq!(out(call("int", vec![Value::Nil])), "0");
        assert_eq!(
            out(call("int64", vec![Value::Float(1e19)])),
            "-9223372036854775808"
        );
        assert_eq!(
            out(call("int64", vec!["9223372036854775807".into()])),
            "9223372036854775807"
        );
        assert_eq!(
            call("int64", vec![Value::int(1)]).unwrap().type_name(),
            "int64"
        );
    }

    #[test]
    fn atoi_and_floats() {
        assert_eq!(out(call("atoi", vec!["+5".into()])), "5");
        assert_eq!(out(call("atoi", vec![" 42".into()])), "0");
        assert_eq!(out(call("atoi", vec!["-7".into()])), "-7");
        assert_eq!(out(call("float64", vec!["1.5".into()])), "1.5");
        assert_eq!(out(call("float64", vec!["0x10".into()])), "0");
        assert_eq!(out(call("float64", vec![Value::Bool(true)])), "1");
        assert_eq!(out(call("toDecimal", vec!["0777".into()])), "511");
        assert_eq!(out(call("toDecimal", vec!["9".into()])), "0");
        assert_eq!(out(call("toDecimal", vec!["0o17".into()])), "0");
    }

    #[test]
    fn to_strings() {
        let l = Value::list(vec![
            Value::int(1),
            "a".into(),
            Value::Float(2.5),
            Value::Nil,
        ]);
        let r = call("toStrings", vec![l]).unwrap();
        assert_eq!(r.type_name(), "[]string");
        assert_eq!(fmt_v(&r), "[1 a 2.5]");
        assert_eq!(
            out(call("toString", vec![Value::Float(1000000.0)])),
            "1e+06"
        );
        assert_eq!(out(call("toString", vec![Value::Nil])), "<nil>");
    }

    /// Every Sprig v3.3.0 name that belongs to the core modules is registered.
    #[test]
    fn all_core_sprig_names_registered() {
        let mut m = FuncMap::new();
        crate::strings::register(&mut m);
        crate::regex::register(&mut m);
        crate::lists::register(&mut m);
        crate::dicts::register(&mut m);
        crate::defaults::register(&mut m);
        register(&mut m);
        crate::math::register(&mut m);
        crate::reflect::register(&mut m);
        let names = "hello abbrev abbrevboth trunc trim upper lower title untitle substr repeat \
            trimall trimAll trimSuffix trimPrefix nospace initials swapcase snakecase camelcase \
            kebabcase wrap wrapWith contains hasPrefix hasSuffix quote squote cat indent nindent \
            replace plural toString atoi int64 int float64 seq toDecimal split splitList splitn \
            toStrings until untilStep add1 add sub div mod mul add1f addf subf divf mulf biggest \
            max min maxf minf ceil floor round join sortAlpha default empty coalesce all any \
            compact mustCompact ternary deepCopy mustDeepCopy typeOf typeIs typeIsLike kindOf \
            kindIs deepEqual tuple list dict get set unset hasKey pluck keys pick omit merge \
            mergeOverwrite mustMerge mustMergeOverwrite values append push mustAppend mustPush \
            prepend mustPrepend first mustFirst rest mustRest last mustLast initial mustInitial \
            reverse mustReverse uniq mustUniq without mustWithout has mustHas slice mustSlice \
            concat dig chunk mustChunk fail regexMatch mustRegexMatch regexFindAll \
            mustRegexFindAll regexFind mustRegexFind regexReplaceAll mustRegexReplaceAll \
            regexReplaceAllLiteral mustRegexReplaceAllLiteral regexSplit mustRegexSplit \
            regexQuoteMeta";
        let missing: Vec<&str> = names
            .split_whitespace()
            .filter(|n| !m.contains(n))
            .collect();
        assert!(missing.is_empty(), "not registered: {missing:?}");
    }

    #[test]
    fn deep_equality() {
        assert!(!deep_equal(&Value::int(1), &Value::Float(1.0)));
        assert!(deep_equal(
            &Value::list(vec![Value::Float(1.0)]),
            &Value::list(vec![Value::Float(1.0)])
        ));
        assert!(!deep_equal(
            &Value::list(vec![]),
            &Value::string_list(vec![])
        ));
    }
}
