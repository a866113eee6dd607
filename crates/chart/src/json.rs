//! JSON exactly as Go's `encoding/json` writes and reads it, for `toJson`,
//! `toRawJson`, `toPrettyJson` and `fromJson`: map keys sorted, `<`, `>`, `&`
//! escaped as `\u003c`…, U+2028/2029 escaped, floats in Go's shortest form
//! (`1e+21`, `1e-7`, integral floats without `.0`), `[]byte` as base64, and
//! Go's own syntax error messages when parsing.

use std::fmt::Write as _;

use base64::Engine as _;
use gotmpl::{Map, Value};

/// Why a value cannot be marshaled; the text is Go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonError {
    #[error("json: unsupported value: {0}")]
    UnsupportedValue(String),
    #[error("json: unsupported type: {0}")]
    UnsupportedType(String),
    /// A syntax error or type mismatch while decoding (Go's message).
    #[error("{0}")]
    Decode(String),
}

// ---------------------------------------------------------------------------
// Go float formatting

/// The shortest decimal digits of a finite, non-zero `f` and the exponent
/// `e` such that `|f| = 0.d1d2d3… × 10^e`.
fn shortest_digits(f: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest round-tripping digits, like Go's
    // strconv with precision -1.
    digits_of(&format!("{:e}", f.abs()))
}

fn digits_of(s: &str) -> (String, i32) {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (digits.to_string(), exp + 1)
}

fn push_exp(out: &mut String, exp: i32) {
    out.push(if exp < 0 { '-' } else { '+' });
    let a = exp.unsigned_abs();
    if a < 10 {
        out.push('0');
    }
    let _ = write!(out, "{a}");
}

/// `strconv.FormatFloat(f, 'e', -1, 64)` for finite non-zero `f` (sign excluded).
fn fmt_e(out: &mut String, digits: &str, dp: i32) {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    push_exp(out, dp - 1);
}

/// `strconv.FormatFloat(f, 'f', -1, 64)` for finite non-zero `f` (sign excluded).
fn fmt_f(out: &mut String, digits: &str, dp: i32) {
    let nd = digits.len() as i32;
    if dp <= 0 {
        out.push_str("0.");
        for _ in 0..(-dp) {
            out.push('0');
        }
        out.push_str(digits);
    } else if dp >= nd {
        out.push_str(digits);
        for _ in 0..(dp - nd) {
            out.push('0');
        }
    } else {
        out.push_str(&digits[..dp as usize]);
        out.push('.');
        out.push_str(&digits[dp as usize..]);
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, which is also what `%v`
/// prints for a float64: `1e+06`, `1.5`, `1e-05`, `+Inf`, `NaN`.
pub fn format_float_g(f: f64) -> String {
    let mut out = String::new();
    push_float_g(&mut out, f);
    out
}

pub(crate) fn push_float_g(out: &mut String, f: f64) {
    if f.is_nan() {
        out.push_str("NaN");
        return;
    }
    if f.is_infinite() {
        out.push_str(if f > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    let (digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        fmt_e(out, &digits, dp);
    } else {
        fmt_f(out, &digits, dp);
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits that
/// identify `f` as a float32.
pub fn format_float_g32(f: f64) -> String {
    let f32v = f as f32;
    if !f32v.is_finite() || f32v == 0.0 {
        return format_float_g(f32v as f64);
    }
    let mut out = String::new();
    if f32v.is_sign_negative() {
        out.push('-');
    }
    let (digits, dp) = digits_of(&format!("{:e}", f32v.abs()));
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        fmt_e(&mut out, &digits, dp);
    } else {
        fmt_f(&mut out, &digits, dp);
    }
    out
}

/// A float64 as `encoding/json` writes it (finite values only).
pub fn format_float_json(f: f64) -> String {
    let mut out = String::new();
    push_float_json(&mut out, f);
    out
}

fn push_float_json(out: &mut String, f: f64) {
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return;
    }
    let (digits, dp) = shortest_digits(f);
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        let exp = dp - 1;
        // Go trims `e-07` to `e-7` but keeps `e+21`.
        if exp < 0 {
            let _ = write!(out, "-{}", -exp);
        } else {
            let _ = write!(out, "+{exp}");
        }
    } else {
        fmt_f(out, &digits, dp);
    }
}

// ---------------------------------------------------------------------------
// Encoding

struct Encoder {
    out: String,
    escape_html: bool,
}

fn push_json_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let esc: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '<' | '>' | '&' if escape_html => None,
            '\u{2028}' => Some("\\u2028"),
            '\u{2029}' => Some("\\u2029"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
        start = i + c.len_utf8();
    }
    out.push_str(std::str::from_utf8(&bytes[start..]).unwrap_or(""));
    out.push('"');
}

impl Encoder {
    /// One value; nested values recurse here, each level on enough stack.
    fn value(&mut self, v: &Value) -> Result<(), JsonError> {
        crate::depth::guarded(|| self.value_here(v))
    }

    fn value_here(&mut self, v: &Value) -> Result<(), JsonError> {
        match v {
            Value::Invalid | Value::Nil => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i, _) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Uint(u, _) => {
                let _ = write!(self.out, "{u}");
            }
            Value::Float(f) => {
                if !f.is_finite() {
                    return Err(JsonError::UnsupportedValue(format_float_g(*f)));
                }
                push_float_json(&mut self.out, *f);
            }
            Value::Complex(..) => return Err(JsonError::UnsupportedType("complex128".into())),
            Value::String(s) => push_json_string(&mut self.out, s, self.escape_html),
            Value::Bytes(b) => {
                let enc = base64::engine::general_purpose::STANDARD.encode(b);
                self.out.push('"');
                self.out.push_str(&enc);
                self.out.push('"');
            }
            Value::List(l) => {
                self.out.push('[');
                for (i, item) in l.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.value(item)?;
                }
                self.out.push(']');
            }
            Value::Map(m) if m.is_nil_map() => self.out.push_str("null"),
            Value::Map(m) => {
                let m = m.borrow();
                self.map(&m)?;
            }
            Value::Object(o) => {
                if let Some(fields) = o.json_fields() {
                    self.object(fields.iter().map(|(k, v)| (*k, v)))?;
                } else {
                    match o.to_json() {
                        Some(j) => self.json(&j)?,
                        None => self.out.push_str("{}"),
                    }
                }
            }
            Value::Func(f) => return Err(JsonError::UnsupportedType(f.type_name())),
        }
        Ok(())
    }

    fn map(&mut self, m: &Map) -> Result<(), JsonError> {
        self.object(m.iter().map(|(k, v)| (k.as_ref(), v)))
    }

    /// A JSON object of `entries`, in the order given.
    fn object<'v>(
        &mut self,
        entries: impl Iterator<Item = (&'v str, &'v Value)>,
    ) -> Result<(), JsonError> {
        self.out.push('{');
        for (i, (k, v)) in entries.enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            push_json_string(&mut self.out, k, self.escape_html);
            self.out.push(':');
            self.value(v)?;
        }
        self.out.push('}');
        Ok(())
    }

    fn json(&mut self, j: &serde_json::Value) -> Result<(), JsonError> {
        crate::depth::guarded(|| self.json_here(j))
    }

    fn json_here(&mut self, j: &serde_json::Value) -> Result<(), JsonError> {
        use serde_json::Value as J;
        match j {
            J::Null => self.out.push_str("null"),
            J::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            J::Number(n) => {
                if let Some(i) = n.as_i64() {
                    let _ = write!(self.out, "{i}");
                } else if let Some(u) = n.as_u64() {
                    let _ = write!(self.out, "{u}");
                } else {
                    push_float_json(&mut self.out, n.as_f64().unwrap_or(0.0));
                }
            }
            J::String(s) => push_json_string(&mut self.out, s, self.escape_html),
            J::Array(a) => {
                self.out.push('[');
                for (i, item) in a.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.json(item)?;
                }
                self.out.push(']');
            }
            J::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                self.out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    push_json_string(&mut self.out, k, self.escape_html);
                    self.out.push(':');
                    self.json(&o[k])?;
                }
                self.out.push('}');
            }
        }
        Ok(())
    }
}

fn encode(v: &Value, escape_html: bool) -> Result<String, JsonError> {
    let mut e = Encoder {
        out: String::new(),
        escape_html,
    };
    e.value(v)?;
    Ok(e.out)
}

/// Go's `json.Marshal(v)`.
pub fn to_json(v: &Value) -> Result<String, JsonError> {
    encode(v, true)
}

/// A JSON encoder with `SetEscapeHTML(false)` (Sprig's `toRawJson`).
pub fn to_raw_json(v: &Value) -> Result<String, JsonError> {
    encode(v, false)
}

/// Go's `json.MarshalIndent(v, "", "  ")`.
pub fn to_pretty_json(v: &Value) -> Result<String, JsonError> {
    Ok(indent(&encode(v, true)?))
}

/// Go's `json.Indent` with two spaces over compact, valid JSON.
fn indent(compact: &str) -> String {
    let b = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut esc = false;
    let mut i = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while i < b.len() {
        let c = b[i];
        if in_str {
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            // Copy whole UTF-8 sequences.
            let len = utf8_len(c);
            out.push_str(&compact[i..i + len]);
            i += len;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                out.push('"');
            }
            b'{' | b'[' => {
                out.push(c as char);
                // Empty containers stay on one line.
                if i + 1 < b.len() && (b[i + 1] == b'}' || b[i + 1] == b']') {
                    out.push(b[i + 1] as char);
                    i += 2;
                    continue;
                }
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            _ => out.push(c as char),
        }
        i += 1;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

// ---------------------------------------------------------------------------
// Decoding

/// What the Go target of `json.Unmarshal` is, for its type-mismatch message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `interface{}`: anything.
    Any,
    /// `map[string]interface {}`: an object (or `null`).
    Map,
    /// `[]interface {}`: an array (or `null`).
    List,
}

struct Dec<'a> {
    s: &'a [u8],
    src: &'a str,
    i: usize,
    /// The first type error: Go reports it after decoding everything else.
    deferred: Option<JsonError>,
    /// Objects and arrays open around the current position.
    depth: usize,
}

/// Go's `quoteChar`.
fn quote_char(c: char) -> String {
    match c {
        '\'' => "'\\''".into(),
        '"' => "'\"'".into(),
        c => {
            let q = format!("{c:?}");
            // Rust's char Debug is close to Go's strconv.Quote for common cases.
            let inner = &q[1..q.len() - 1];
            format!("'{inner}'")
        }
    }
}

impl Dec<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn cur_char(&self) -> char {
        self.src[self.i..].chars().next().unwrap_or('\0')
    }

    fn invalid(&self, ctx: &str) -> JsonError {
        JsonError::Decode(format!(
            "invalid character {} {ctx}",
            quote_char(self.cur_char())
        ))
    }

    fn eof() -> JsonError {
        JsonError::Decode("unexpected end of JSON input".into())
    }

    /// One value; a nested one recurses here, each level on enough stack,
    /// and nesting past Go's `maxNestingDepth` is refused as Go refuses it.
    fn value(&mut self) -> Result<Value, JsonError> {
        self.ws();
        if matches!(self.s.get(self.i), Some(b'{' | b'[')) {
            if self.depth >= crate::depth::MAX_DEPTH {
                return Err(self.invalid("exceeded max depth"));
            }
            self.depth += 1;
            let v = crate::depth::guarded(|| self.value_here());
            self.depth -= 1;
            return v;
        }
        self.value_here()
    }

    fn value_here(&mut self) -> Result<Value, JsonError> {
        let Some(&c) = self.s.get(self.i) else {
            return Err(Self::eof());
        };
        match c {
            b'{' => {
                self.i += 1;
                let mut m = Map::new();
                self.ws();
                if self.s.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Value::map(m));
                }
                loop {
                    self.ws();
                    match self.s.get(self.i) {
                        None => return Err(Self::eof()),
                        Some(b'"') => {}
                        Some(_) => {
                            return Err(self.invalid("looking for beginning of object key string"))
                        }
                    }
                    let k = self.string()?;
                    self.ws();
                    match self.s.get(self.i) {
                        None => return Err(Self::eof()),
                        Some(b':') => self.i += 1,
                        Some(_) => return Err(self.invalid("after object key")),
                    }
                    let v = self.value()?;
                    m.insert(k, v);
                    self.ws();
                    match self.s.get(self.i) {
                        None => return Err(Self::eof()),
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Value::map(m));
                        }
                        Some(_) => return Err(self.invalid("after object key:value pair")),
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.s.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Value::list(items));
                }
                loop {
                    items.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        None => return Err(Self::eof()),
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Value::list(items));
                        }
                        Some(_) => return Err(self.invalid("after array element")),
                    }
                }
            }
            b'"' => Ok(Value::string(self.string()?)),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Nil),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.invalid("looking for beginning of value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, JsonError> {
        let w = word.as_bytes();
        for (k, &expected) in w.iter().enumerate() {
            match self.s.get(self.i) {
                None => return Err(Self::eof()),
                Some(&c) if c == expected => self.i += 1,
                Some(_) if k > 0 => {
                    return Err(self.invalid(&format!(
                        "in literal {word} (expecting {})",
                        quote_char(expected as char)
                    )))
                }
                Some(_) => return Err(self.invalid("looking for beginning of value")),
            }
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, JsonError> {
        let start = self.i;
        let s = self.s;
        let digits = |i: &mut usize| {
            let st = *i;
            while *i < s.len() && s[*i].is_ascii_digit() {
                *i += 1;
            }
            *i - st
        };
        if s[self.i] == b'-' {
            self.i += 1;
            match s.get(self.i) {
                None => return Err(Self::eof()),
                Some(c) if c.is_ascii_digit() => {}
                Some(_) => return Err(self.invalid("in numeric literal")),
            }
        }
        if s[self.i] == b'0' {
            self.i += 1;
        } else {
            digits(&mut self.i);
        }
        if s.get(self.i) == Some(&b'.') {
            self.i += 1;
            match s.get(self.i) {
                None => return Err(Self::eof()),
                Some(c) if c.is_ascii_digit() => {}
                Some(_) => return Err(self.invalid("after decimal point in numeric literal")),
            }
            digits(&mut self.i);
        }
        if matches!(s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            match s.get(self.i) {
                None => return Err(Self::eof()),
                Some(c) if c.is_ascii_digit() => {}
                Some(_) => return Err(self.invalid("in exponent of numeric literal")),
            }
            digits(&mut self.i);
        }
        let text = &self.src[start..self.i];
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::Float(f)),
            _ => {
                if self.deferred.is_none() {
                    self.deferred = Some(JsonError::Decode(format!(
                        "json: cannot unmarshal number {text} into Go value of type float64"
                    )));
                }
                Ok(Value::Nil)
            }
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        // At the opening quote.
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return Err(Self::eof());
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.i += 1;
                    let Some(&e) = self.s.get(self.i) else {
                        return Err(Self::eof());
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp)
                                && self.s.get(self.i) == Some(&b'\\')
                                && self.s.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4()?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    let c = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                    out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                } else {
                                    out.push('\u{fffd}');
                                    self.i = save;
                                }
                            } else {
                                out.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                            }
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.invalid("in string escape code"));
                        }
                    }
                }
                c if c < 0x20 => return Err(self.invalid("in string literal")),
                _ => {
                    let len = utf8_len(c);
                    out.push_str(&self.src[self.i..self.i + len]);
                    self.i += len;
                }
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let Some(&c) = self.s.get(self.i) else {
                return Err(Self::eof());
            };
            let d = match (c as char).to_digit(16) {
                Some(d) => d,
                None => return Err(self.invalid("in \\u hexadecimal character escape")),
            };
            v = v * 16 + d;
            self.i += 1;
        }
        Ok(v)
    }
}

fn kind_word(v: &Value) -> &'static str {
    match v {
        Value::Map(_) => "object",
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Float(_) => "number",
        Value::Bool(_) => "bool",
        _ => "null",
    }
}

/// Go's `json.Unmarshal(text, &target)`: numbers become float64; the whole
/// text is checked for syntax before any type mismatch is reported.
/// `null` gives `Value::Nil` (the caller keeps its empty map or list).
pub fn parse(text: &str, target: Target) -> Result<Value, JsonError> {
    match parse_partial(text, target) {
        (v, None) => Ok(v),
        (_, Some(e)) => Err(e),
    }
}

/// Like [`parse`], but also hands back what Go leaves decoded when a value
/// deep inside does not fit (a number out of float64 range becomes nil).
/// On a syntax error or top-level mismatch the value is `Value::Nil`.
pub fn parse_partial(text: &str, target: Target) -> (Value, Option<JsonError>) {
    let mut d = Dec {
        s: text.as_bytes(),
        src: text,
        i: 0,
        deferred: None,
        depth: 0,
    };
    let v = match d.value() {
        Ok(v) => v,
        Err(e) => return (Value::Nil, Some(e)),
    };
    d.ws();
    if d.i < d.s.len() {
        return (Value::Nil, Some(d.invalid("after top-level value")));
    }
    let type_name = match (target, &v) {
        (_, Value::Nil)
        | (Target::Any, _)
        | (Target::Map, Value::Map(_))
        | (Target::List, Value::List(_)) => return (v, d.deferred),
        (Target::Map, _) => "map[string]interface {}",
        (Target::List, _) => "[]interface {}",
    };
    let e = JsonError::Decode(format!(
        "json: cannot unmarshal {} into Go value of type {type_name}",
        kind_word(&v)
    ));
    (Value::Nil, Some(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gotmpl::{IntKind, MapRef};

    fn m(entries: &[(&str, Value)]) -> Value {
        Value::Map(MapRef::new(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        ))
    }

    #[test]
    fn go_g_format() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (100000.0, "100000"),
            (123456789.0, "1.23456789e+08"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e21, "1e+21"),
            (-2.5, "-2.5"),
            (1.2345678901234567e19, "1.2345678901234567e+19"),
            (1e100, "1e+100"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_g(f), want, "{f}");
        }
        assert_eq!(format_float_g(f64::INFINITY), "+Inf");
        assert_eq!(format_float_g(-0.0), "-0");
        assert_eq!(format_float_g32(1.2345678901), "1.2345679");
        assert_eq!(format_float_g32(0.1), "0.1");
        assert_eq!(format_float_g32(1e10), "1e+10");
    }

    #[test]
    fn go_json_float_format() {
        let cases = [
            (1e6, "1000000"),
            (1.5, "1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (12345678901234567890.0, "12345678901234567000"),
            (-0.0, "-0"),
            (0.1, "0.1"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float_json(f), want, "{f}");
        }
    }

    #[test]
    fn marshal_like_go() {
        let v = m(&[
            ("b", Value::Float(1.0)),
            (
                "a",
                Value::list(vec![
                    Value::int(1),
                    Value::str("x"),
                    Value::Nil,
                    Value::Bool(true),
                ]),
            ),
        ]);
        assert_eq!(to_json(&v).unwrap(), r#"{"a":[1,"x",null,true],"b":1}"#);
        assert_eq!(
            to_json(&Value::str("<a>&b")).unwrap(),
            r#""\u003ca\u003e\u0026b""#
        );
        assert_eq!(to_raw_json(&Value::str("<a>&b")).unwrap(), r#""<a>&b""#);
        assert_eq!(to_json(&Value::str("\u{2028}")).unwrap(), r#""\u2028""#);
        assert_eq!(
            to_json(&Value::str("\t\n\u{1}")).unwrap(),
            r#""\t\n\u0001""#
        );
        assert_eq!(
            to_json(&Value::Int(9007199254740993, IntKind::Int64)).unwrap(),
            "9007199254740993"
        );
        assert_eq!(
            to_json(&Value::Bytes(b"hi".to_vec().into())).unwrap(),
            r#""aGk=""#
        );
        assert!(matches!(
            to_json(&Value::Float(f64::NAN)),
            Err(JsonError::UnsupportedValue(s)) if s == "NaN"
        ));
    }

    #[test]
    fn pretty() {
        let v = m(&[
            ("b", Value::int(1)),
            ("a", Value::list(vec![Value::int(1), Value::int(2)])),
            ("e", Value::list(vec![])),
            ("s", Value::str("x,{y}:")),
        ]);
        assert_eq!(
            to_pretty_json(&v).unwrap(),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": 1,\n  \"e\": [],\n  \"s\": \"x,{y}:\"\n}"
        );
        assert_eq!(to_pretty_json(&m(&[])).unwrap(), "{}");
    }

    #[test]
    fn decode_errors_read_like_go() {
        let err = |s: &str, t| parse(s, t).unwrap_err().to_string();
        assert_eq!(
            err("{bad", Target::Map),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(err("", Target::Map), "unexpected end of JSON input");
        assert_eq!(
            err("{\"a\":1} trailing", Target::Map),
            "invalid character 't' after top-level value"
        );
        assert_eq!(
            err("[1,2]", Target::Map),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(
            err("{}", Target::List),
            "json: cannot unmarshal object into Go value of type []interface {}"
        );
        assert_eq!(
            err("[bad", Target::List),
            "invalid character 'b' looking for beginning of value"
        );
        assert_eq!(err("tru", Target::Any), "unexpected end of JSON input");
        assert_eq!(
            err("trux", Target::Any),
            "invalid character 'x' in literal true (expecting 'e')"
        );
    }

    #[test]
    fn decode_values() {
        let v = parse(
            r#"{"n":12345678901234567890,"s":"\u00e9\ud83d\ude00","l":[1,null]}"#,
            Target::Map,
        )
        .unwrap();
        assert_eq!(
            to_json(&v).unwrap(),
            r#"{"l":[1,null],"n":12345678901234567000,"s":"é😀"}"#
        );
        assert!(matches!(parse("null", Target::Map), Ok(Value::Nil)));
    }
}
