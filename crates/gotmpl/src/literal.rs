//! Go's literal syntax as the parser reads it: `strconv.Unquote` for
//! string and rune literals and `parse.NewNumber`'s reading of numbers,
//! with Go's own error texts.

use crate::lex::ItemType;
use crate::parse::Number;

/// The value of a string literal the lexer produced that [`unquote`]
/// would return unchanged from between its quotes: no escapes (or, raw, no
/// carriage returns). Most literals are such, and need no copy to unquote.
pub(crate) fn plain_literal(s: &str) -> Option<&str> {
    let q = *s.as_bytes().first()?;
    if s.len() < 2 || !matches!(q, b'"' | b'`') || s.as_bytes()[s.len() - 1] != q {
        return None;
    }
    let body = &s[1..s.len() - 1];
    let special = |b: u8| match q {
        b'"' => matches!(b, b'\\' | b'"' | b'\n'),
        _ => matches!(b, b'\r' | b'`'),
    };
    (!body.bytes().any(special)).then_some(body)
}

/// [`unquote`], copying a plain literal's body (as template names nearly
/// all are) rather than reading it character by character.
pub(crate) fn unquote_to_string(s: &str) -> Result<String, String> {
    match plain_literal(s) {
        Some(body) => Ok(body.to_string()),
        None => unquote(s),
    }
}

/// Go's `strconv.Unquote` for the three literal forms the lexer produces.
pub(crate) fn unquote(s: &str) -> Result<String, String> {
    let bad = || "invalid syntax".to_string();
    if s.len() < 2 {
        return Err(bad());
    }
    let q = s.as_bytes()[0];
    if q != s.as_bytes()[s.len() - 1] {
        return Err(bad());
    }
    let body = &s[1..s.len() - 1];
    match q {
        b'`' => {
            if body.contains('`') {
                return Err(bad());
            }
            Ok(body.replace('\r', ""))
        }
        b'"' | b'\'' => {
            // Go string literals are bytes: `\xff` and `\377` are single
            // bytes (which may or may not form UTF-8); in rune literals they
            // are code points.
            let mut out: Vec<u8> = Vec::with_capacity(body.len());
            let push = |out: &mut Vec<u8>, c: char| {
                out.extend_from_slice(c.encode_utf8(&mut [0u8; 4]).as_bytes());
            };
            let mut chars = body.chars().peekable();
            while let Some(c) = chars.next() {
                if c == q as char && q == b'"' {
                    return Err(bad());
                }
                if c == '\n' {
                    return Err(bad());
                }
                if c != '\\' {
                    push(&mut out, c);
                    continue;
                }
                let e = chars.next().ok_or_else(bad)?;
                match e {
                    'a' => push(&mut out, '\x07'),
                    'b' => push(&mut out, '\x08'),
                    'f' => push(&mut out, '\x0c'),
                    'n' => push(&mut out, '\n'),
                    'r' => push(&mut out, '\r'),
                    't' => push(&mut out, '\t'),
                    'v' => push(&mut out, '\x0b'),
                    '\\' => push(&mut out, '\\'),
                    '\'' if q == b'\'' => push(&mut out, '\''),
                    '"' if q == b'"' => push(&mut out, '"'),
                    '0'..='7' | 'x' => {
                        let (n, radix, mut v) = match e {
                            'x' => (2, 16, 0),
                            _ => (2, 8, e.to_digit(8).unwrap_or(0)),
                        };
                        for _ in 0..n {
                            let d = chars
                                .next()
                                .and_then(|c| c.to_digit(radix))
                                .ok_or_else(bad)?;
                            v = v * radix + d;
                        }
                        if v > 255 {
                            return Err(bad());
                        }
                        if q == b'\'' {
                            push(&mut out, char::from(v as u8));
                        } else {
                            out.push(v as u8);
                        }
                    }
                    'u' | 'U' => {
                        let n = if e == 'u' { 4 } else { 8 };
                        let mut v: u32 = 0;
                        for _ in 0..n {
                            let d = chars.next().and_then(|c| c.to_digit(16)).ok_or_else(bad)?;
                            v = v * 16 + d;
                        }
                        push(&mut out, char::from_u32(v).ok_or_else(bad)?);
                    }
                    _ => return Err(bad()),
                }
            }
            if q == b'\'' && std::str::from_utf8(&out).map_or(0, |r| r.chars().count()) != 1 {
                return Err(bad());
            }
            Ok(crate::gostr::from_bytes(&out).into_owned())
        }
        _ => Err(bad()),
    }
}

/// Go's `strconv.UnquoteChar(s, '\'')`: the code point that `s` starts
/// with (an escape read as in a rune literal) and the rest of `s`, or `None`
/// where Go reports `ErrSyntax`.
fn unquote_rune(s: &str) -> Option<(u32, &str)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c == '\'' {
        return None;
    }
    if c != '\\' {
        // A stray byte decodes as Go's RuneError.
        let r = crate::gostr::escaped_byte(c).map_or(c as u32, |_| 0xFFFD);
        return Some((r, chars.as_str()));
    }
    let e = chars.next()?;
    let rest = chars.as_str();
    let digits = |n: usize, radix: u32| -> Option<(u32, &str)> {
        let d = rest.get(..n)?;
        let mut v: u32 = 0;
        for ch in d.chars() {
            v = v * radix + ch.to_digit(radix)?;
        }
        Some((v, &rest[n..]))
    };
    let simple = |v: char| Some((v as u32, rest));
    match e {
        'a' => simple('\x07'),
        'b' => simple('\x08'),
        'f' => simple('\x0c'),
        'n' => simple('\n'),
        'r' => simple('\r'),
        't' => simple('\t'),
        'v' => simple('\x0b'),
        '\\' | '\'' => simple(e),
        'x' => digits(2, 16),
        'u' | 'U' => {
            let (v, tail) = digits(if e == 'u' { 4 } else { 8 }, 16)?;
            char::from_u32(v).map(|_| (v, tail))
        }
        '0'..='7' => {
            let (low, tail) = digits(2, 8)?;
            let v = (e as u32 - '0' as u32) << 6 | low;
            (v <= 255).then_some((v, tail))
        }
        _ => None,
    }
}

fn parse_go_int(text: &str) -> Option<(bool, u64)> {
    // strconv.ParseInt/ParseUint with base 0: sign, prefixes, underscores.
    let (neg, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(r) = lower.strip_prefix("0x") {
        (16, r.to_string(), true)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (2, r.to_string(), true)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (8, r.to_string(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string(), true)
    } else {
        (10, lower.clone(), false)
    };
    if digits.contains('_') {
        // Underscores only between digits or after a base prefix.
        let b = digits.as_bytes();
        let mut prev_us = !prefixed;
        for (i, &c) in b.iter().enumerate() {
            if c == b'_' {
                if prev_us && !(i == 0 && prefixed) {
                    return None;
                }
                prev_us = true;
            } else {
                prev_us = false;
            }
        }
        if prev_us {
            return None;
        }
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if clean.is_empty() {
        if radix == 8 && !lower.starts_with("0o") {
            return Some((neg, 0));
        }
        return None;
    }
    let v = u64::from_str_radix(&clean, radix).ok()?;
    Some((neg, v))
}

fn parse_go_float(text: &str) -> Result<f64, ()> {
    let t: String = text.chars().filter(|&c| c != '_').collect();
    let lower = t.to_ascii_lowercase();
    let (neg, body) = match lower.as_bytes().first() {
        Some(b'-') => (true, &lower[1..]),
        Some(b'+') => (false, &lower[1..]),
        _ => (false, &lower[..]),
    };
    let v = if let Some(hex) = body.strip_prefix("0x") {
        // Hex float: mantissa p exponent.
        let (mant, exp) = match hex.split_once('p') {
            Some((m, e)) => (m, e.parse::<i32>().map_err(|_| ())?),
            None => (hex, 0),
        };
        let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = 0f64;
        for c in ip.chars() {
            v = v * 16.0 + c.to_digit(16).ok_or(())? as f64;
        }
        let mut scale = 1.0 / 16.0;
        for c in fp.chars() {
            v += c.to_digit(16).ok_or(())? as f64 * scale;
            scale /= 16.0;
        }
        v * 2f64.powi(exp)
    } else {
        if body.is_empty() || body.contains(['i', 'n', 'f']) && !body.contains('e') {
            return Err(());
        }
        body.parse::<f64>().map_err(|_| ())?
    };
    if v.is_infinite() {
        return Err(());
    }
    Ok(if neg { -v } else { v })
}

/// Go's `parse.NewNumber`: every interpretation of a numeric literal.
pub(crate) fn parse_number(text: &str, typ: ItemType) -> Result<Number, String> {
    let mut n = Number {
        text: text.to_string(),
        ..Default::default()
    };
    if typ == ItemType::CharConstant {
        // Go: `strconv.UnquoteChar` after the opening quote; its error is
        // "invalid syntax", and anything but the closing quote after one
        // character is a malformed constant.
        let body = text.strip_prefix('\'').unwrap_or(text);
        let (r, tail) = unquote_rune(body).ok_or_else(|| "invalid syntax".to_string())?;
        if tail != "'" {
            return Err(format!("malformed character constant: {text}"));
        }
        let r = i64::from(r);
        n.is_int = true;
        n.int = r;
        n.is_uint = true;
        n.uint = r as u64;
        n.is_float = true;
        n.float = r as f64;
        return Ok(n);
    }
    if typ == ItemType::Complex {
        // "1+2i": split at the last sign that is not an exponent sign.
        let b = text.as_bytes();
        let mut split = None;
        for i in (1..b.len()).rev() {
            if (b[i] == b'+' || b[i] == b'-') && !matches!(b[i - 1], b'e' | b'E' | b'p' | b'P') {
                split = Some(i);
                break;
            }
        }
        let i = split.ok_or_else(|| format!("illegal number syntax: {text:?}"))?;
        let re =
            parse_go_float(&text[..i]).map_err(|_| format!("illegal number syntax: {text:?}"))?;
        let im = parse_go_float(&text[i..text.len() - 1])
            .map_err(|_| format!("illegal number syntax: {text:?}"))?;
        n.is_complex = true;
        n.complex = (re, im);
        simplify_complex(&mut n);
        return Ok(n);
    }
    if let Some(body) = text.strip_suffix('i') {
        if let Ok(f) = parse_go_float(body) {
            n.is_complex = true;
            n.complex = (0.0, f);
            simplify_complex(&mut n);
            return Ok(n);
        }
    }
    if let Some((neg, u)) = parse_go_int(text) {
        if !neg {
            n.is_uint = true;
            n.uint = u;
        }
        let i = if neg {
            if u <= i64::MAX as u64 + 1 {
                Some((u as i128).wrapping_neg() as i64)
            } else {
                None
            }
        } else if u <= i64::MAX as u64 {
            Some(u as i64)
        } else {
            None
        };
        if let Some(i) = i {
            n.is_int = true;
            n.int = i;
            if i == 0 {
                n.is_uint = true;
                n.uint = 0;
            }
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float = n.int as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float = n.uint as f64;
    } else if let Ok(f) = parse_go_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {text:?}"));
        }
        n.is_float = true;
        n.float = f;
        if f.fract() == 0.0 && f >= i64::MIN as f64 && f < i64::MAX as f64 {
            n.is_int = true;
            n.int = f as i64;
        }
        if f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 {
            n.is_uint = true;
            n.uint = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!("illegal number syntax: {text:?}"));
    }
    Ok(n)
}

fn simplify_complex(n: &mut Number) {
    if n.complex.1 == 0.0 {
        n.is_float = true;
        n.float = n.complex.0;
        if n.float.fract() == 0.0 && n.float.abs() < 9.2e18 {
            n.is_int = true;
            n.int = n.float as i64;
        }
        if n.float.fract() == 0.0 && n.float >= 0.0 && n.float < 1.8e19 {
            n.is_uint = true;
            n.uint = n.float as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse, Arg, Node, ParseError, Tree};

    fn p(s: &str) -> Result<Vec<Tree>, ParseError> {
        parse("t", s, &|n| n == "upper").map(|p| p.trees)
    }

    #[test]
    fn plain_literals_are_what_unquote_returns() {
        for lit in [
            r#""abc""#,
            r#""""#,
            "`a\\nb`",
            "`a\nb`",
            r#""a\"b""#,
            r#""\u00e9""#,
            "`a\rb`",
            "\"é\"",
        ] {
            if let Some(body) = plain_literal(lit) {
                assert_eq!(Ok(body.to_string()), unquote(lit), "{lit}");
            }
        }
        assert_eq!(plain_literal(r#""abc""#), Some("abc"));
        assert_eq!(plain_literal("`a\\nb`"), Some("a\\nb"));
        assert_eq!(plain_literal(r#""a\"b""#), None);
        assert_eq!(plain_literal("`a\rb`"), None);
        let trees = p("{{ printf \"%s\\t\" `x\r` }}").expect("parses");
        let Node::Action { pipe, .. } = &trees[0].root[0] else {
            panic!("an action")
        };
        let texts: Vec<_> = pipe.cmds[0].args[1..]
            .iter()
            .map(|a| match a {
                Arg::String { text, .. } => text.to_string(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(texts, vec!["%s\t".to_string(), "x".to_string()]);
    }

    #[test]
    fn numbers() {
        let n = parse_number("0x1F", ItemType::Number).expect("num");
        assert!(n.is_int && n.int == 31);
        let n = parse_number("1_000", ItemType::Number).expect("num");
        assert_eq!(n.int, 1000);
        let n = parse_number("1.5", ItemType::Number).expect("num");
        assert!(n.is_float && !n.is_int);
        assert!(parse_number("1e400", ItemType::Number).is_err());
        let n = parse_number("'a'", ItemType::CharConstant).expect("char");
        assert_eq!(n.int, 97);
    }

    #[test]
    fn character_constants_like_strconv_unquote_char() {
        let rune = |t: &str| parse_number(t, ItemType::CharConstant).map(|n| n.int);
        for (text, want) in [
            (r"'\n'", 10),
            (r"'\x41'", 65),
            (r"'\xff'", 255),
            (r"'\101'", 65),
            (r"'\377'", 255),
            (r"'\u00e9'", 233),
            (r"'\U0001F600'", 0x1F600),
            (r"'\''", 39),
            ("'\"'", 34),
            ("'é'", 233),
        ] {
            assert_eq!(rune(text), Ok(want), "{text}");
        }
        // What strconv rejects is Go's bare "invalid syntax".
        for text in [
            "''",
            r"'\z'",
            "'\\\"'",
            r"'\400'",
            r"'\08'",
            r"'\xZZ'",
            r"'\x4'",
            r"'\u12'",
            r"'\ud800'",
            r"'\U00110000'",
        ] {
            assert_eq!(rune(text), Err("invalid syntax".to_string()), "{text}");
        }
        assert_eq!(
            rune("'ab'"),
            Err("malformed character constant: 'ab'".to_string())
        );
        let e = p("x\n{{ '' }}").unwrap_err().0;
        assert_eq!(e, "template: t:2: invalid syntax");
    }
}
