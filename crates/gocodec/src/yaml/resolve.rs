//! YAML 1.1 implicit typing of plain scalars, as go-yaml v2 resolves them
//! (`yes`/`no`/`on`/`off` booleans, `0777` octal, `1_000`, `.inf` …). The
//! emitter asks the same question to decide when a string must be quoted.

/// What a plain scalar means.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A timestamp (`2001-12-14`); decoded as its text, like go-yaml v2 does
    /// for `interface{}` targets.
    Timestamp,
    Str,
}

/// go-yaml v2's `resolve("", s)`.
pub(crate) fn resolve_plain(s: &str) -> Resolved {
    let b = s.as_bytes();
    let Some(&first) = b.first() else {
        return Resolved::Null;
    };
    match first {
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => {
            lookup_map(s).unwrap_or(Resolved::Str)
        }
        b'.' => {
            if let Some(r) = lookup_map(s) {
                return r;
            }
            match go_parse_float(s) {
                Some(f) => Resolved::Float(f),
                None => Resolved::Str,
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if let Some(r) = lookup_map(s) {
                return r;
            }
            resolve_number(s)
        }
        // `<<` is not looked up through the hint table; the decoder treats
        // a plain `<<` key as a merge on its own.
        _ => Resolved::Str,
    }
}

fn lookup_map(s: &str) -> Option<Resolved> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

fn resolve_number(s: &str) -> Resolved {
    if is_timestamp(s) {
        return Resolved::Timestamp;
    }
    let plain: std::borrow::Cow<'_, str> = if s.contains('_') {
        s.replace('_', "").into()
    } else {
        s.into()
    };
    if let Some(i) = go_parse_int(&plain) {
        return Resolved::Int(i);
    }
    if let Some(u) = go_parse_uint(&plain) {
        return Resolved::Uint(u);
    }
    if is_yaml_style_float(&plain) {
        if let Some(f) = go_parse_float(&plain) {
            return Resolved::Float(f);
        }
    }
    Resolved::Str
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Splits Go's base prefix off an unsigned literal (`strconv.ParseInt(s, 0, 64)`).
fn go_radix(s: &str) -> (u32, &str) {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'0' {
        match b[1] {
            b'x' | b'X' => return (16, &s[2..]),
            b'o' | b'O' => return (8, &s[2..]),
            b'b' | b'B' => return (2, &s[2..]),
            _ => return (8, &s[1..]),
        }
    }
    (10, s)
}

fn go_parse_magnitude(s: &str) -> Option<u64> {
    let (radix, digits) = go_radix(s);
    if digits.is_empty() {
        // "0" alone is base 8 with no digits left: it is zero.
        return if s == "0" { Some(0) } else { None };
    }
    if !digits.bytes().all(|c| (c as char).is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `strconv.ParseInt(s, 0, 64)` (underscores already removed).
pub(crate) fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let m = go_parse_magnitude(rest)?;
    if neg {
        if m <= i64::MAX as u64 + 1 {
            Some((m as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(m).ok()
    }
}

/// `strconv.ParseUint(s, 0, 64)`: no sign allowed.
fn go_parse_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    go_parse_magnitude(s)
}

/// `strconv.ParseFloat(s, 64)` for the decimal forms YAML can produce.
pub(crate) fn go_parse_float(s: &str) -> Option<f64> {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = t.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" || lower == "nan" {
        let v = if lower == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Some(if s.starts_with('-') { -v } else { v });
    }
    if !t
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-' | b'_'))
    {
        return None;
    }
    let cleaned: std::borrow::Cow<'_, str> = if s.contains('_') {
        s.replace('_', "").into()
    } else {
        s.into()
    };
    cleaned.parse::<f64>().ok()
}

/// go-yaml v2's timestamp check: starts with four digits and a dash and
/// parses as one of its layouts. Only the shape matters here, because the
/// value is kept as a string either way.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    parse_date_time(s)
}

fn parse_date_time(s: &str) -> bool {
    // Layouts: "2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00",
    // "2006-1-2 15:4:5.999999999", "2006-1-2".
    let b = s.as_bytes();
    let mut i = 5;
    let num = |i: &mut usize, max: usize| -> Option<u32> {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - st < max {
            *i += 1;
        }
        if *i == st {
            return None;
        }
        s[st..*i].parse().ok()
    };
    let Some(month) = num(&mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b'-' {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zone_required = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let Some(h) = num(&mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b':' {
        return false;
    }
    i += 1;
    let Some(m) = num(&mut i, 2) else {
        return false;
    };
    if i >= b.len() || b[i] != b':' {
        return false;
    }
    i += 1;
    let Some(sec) = num(&mut i, 2) else {
        return false;
    };
    if h > 23 || m > 59 || sec > 59 {
        return false;
    }
    if i < b.len() && (b[i] == b'.' || b[i] == b',') {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == st {
            return false;
        }
    }
    if !zone_required {
        return i == b.len();
    }
    if i == b.len() {
        return false;
    }
    if b[i] == b'Z' {
        return i + 1 == b.len();
    }
    if b[i] == b'+' || b[i] == b'-' {
        let z = &b[i + 1..];
        return z.len() == 5
            && z[0].is_ascii_digit()
            && z[1].is_ascii_digit()
            && z[2] == b':'
            && z[3].is_ascii_digit()
            && z[4].is_ascii_digit();
    }
    false
}

/// go-yaml's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`,
/// quoted on output for the sake of YAML 1.1 readers.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        let g = &b[st..i];
        let ok = match g.len() {
            1 => true,
            2 => g[0] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// True when a string must be quoted so that a YAML 1.1 reader reads it back
/// as the same string (go-yaml's `canUsePlain` check, plus yaml.v3's old-bool rule,
/// which gives the same answers).
pub(crate) fn needs_quotes(s: &str) -> bool {
    !matches!(resolve_plain(s), Resolved::Str) || is_base60_float(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_and_nulls() {
        for s in [
            "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
        ] {
            assert_eq!(resolve_plain(s), Resolved::Bool(true), "{s}");
        }
        for s in ["n", "N", "no", "NO", "off", "Off", "false", "FALSE"] {
            assert_eq!(resolve_plain(s), Resolved::Bool(false), "{s}");
        }
        for s in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(resolve_plain(s), Resolved::Null, "{s}");
        }
        assert_eq!(resolve_plain("yEs"), Resolved::Str);
        assert_eq!(resolve_plain("nULL"), Resolved::Str);
    }

    #[test]
    fn numbers() {
        assert_eq!(resolve_plain("0777"), Resolved::Int(511));
        assert_eq!(resolve_plain("0x1F"), Resolved::Int(31));
        assert_eq!(resolve_plain("-0x1F"), Resolved::Int(-31));
        assert_eq!(resolve_plain("0o17"), Resolved::Int(15));
        assert_eq!(resolve_plain("0b11"), Resolved::Int(3));
        assert_eq!(resolve_plain("+12"), Resolved::Int(12));
        assert_eq!(resolve_plain("1_000"), Resolved::Int(1000));
        assert_eq!(resolve_plain("0"), Resolved::Int(0));
        assert_eq!(resolve_plain("08"), Resolved::Float(8.0));
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain("1.0"), Resolved::Float(1.0));
        assert_eq!(resolve_plain(".5"), Resolved::Float(0.5));
        assert_eq!(resolve_plain("+.5"), Resolved::Float(0.5));
        assert_eq!(
            resolve_plain("12345678901234567890"),
            Resolved::Uint(12345678901234567890)
        );
        assert_eq!(resolve_plain(".inf"), Resolved::Float(f64::INFINITY));
        assert!(matches!(resolve_plain(".nan"), Resolved::Float(f) if f.is_nan()));
        assert_eq!(resolve_plain("12:30"), Resolved::Str);
        assert_eq!(resolve_plain("1.2.3"), Resolved::Str);
        assert_eq!(resolve_plain("-"), Resolved::Str);
        assert_eq!(resolve_plain("1e"), Resolved::Str);
    }

    #[test]
    fn timestamps_and_base60() {
        assert_eq!(resolve_plain("2021-01-01"), Resolved::Timestamp);
        assert_eq!(
            resolve_plain("2001-12-14t21:59:43.10-05:00"),
            Resolved::Timestamp
        );
        assert_eq!(resolve_plain("2001-12-14 21:59:43.10"), Resolved::Timestamp);
        assert_eq!(resolve_plain("2021-13-01"), Resolved::Str);
        assert!(is_base60_float("1:2:3"));
        assert!(is_base60_float("12:30"));
        assert!(is_base60_float("190:20:30.15"));
        assert!(!is_base60_float("12:60"));
        assert!(!is_base60_float("a:1"));
    }

    #[test]
    fn quoting_decisions() {
        for s in [
            "yes",
            "on",
            "1.0",
            "null",
            "~",
            "",
            "123",
            "0x1F",
            "1e3",
            ".inf",
            "2021-01-01",
            "1:2:3",
            "0b1",
        ] {
            assert!(needs_quotes(s), "{s}");
        }
        for s in ["plain", "=", "<<", "?q", "x, y", "héllo"] {
            assert!(!needs_quotes(s), "{s}");
        }
    }
}
