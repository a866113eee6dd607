//! TOML for Helm's `toToml` and `fromToml`: an encoder that writes exactly
//! what BurntSushi/toml v1's `Encoder` writes (plain keys first, then
//! `[tables]` and `[[arrays of tables]]`, two-space indentation per level,
//! floats always with a decimal point or exponent), and a reader giving the
//! Go types `toml.Unmarshal` produces (`int64`, `float64`, strings, maps).

use std::fmt::Write as _;

use gotmpl::{IntKind, Map, Value};

use gostd::strconv::append_float;

/// Why a value cannot be written as TOML; the text is BurntSushi's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TomlError {
    #[error("toml: cannot encode array with nil element")]
    ArrayNilElement,
    #[error("toml: top-level values must be Go maps or structs")]
    NoKey,
    #[error("toml: unsupported type: {0}")]
    Unsupported(String),
    /// A syntax error while reading; `msg` carries BurntSushi's
    /// `(last key "k")` context when it has one.
    #[error("toml: line {line}{msg}")]
    Parse { line: usize, msg: String },
}

const INDENT: &str = "  ";

struct Enc {
    out: String,
}

fn is_bare_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

fn push_quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn push_key(out: &mut String, k: &str) {
    if is_bare_key(k) {
        out.push_str(k);
    } else {
        push_quoted(out, k);
    }
}

/// A host object as the encoder sees it (its JSON form).
fn object_value(v: &Value) -> Option<Value> {
    match v {
        Value::Object(o) => Some(match o.to_json() {
            Some(j) => Value::from_json(&j),
            None => Value::map(Map::new()),
        }),
        _ => None,
    }
}

/// BurntSushi's `tomlTypeOfGo` reduced to what matters: is it a table, an
/// array of tables, or something written inline?
#[derive(PartialEq, Eq)]
enum Kind {
    Nil,
    Table,
    ArrayOfTables,
    Inline,
}

fn kind_of(v: &Value) -> Result<Kind, TomlError> {
    Ok(match v {
        Value::Invalid | Value::Nil => Kind::Nil,
        Value::Map(_) => Kind::Table,
        Value::Object(_) => match object_value(v) {
            Some(Value::Map(_)) => Kind::Table,
            _ => Kind::Inline,
        },
        Value::List(l) => {
            if l.is_empty() {
                return Ok(Kind::Inline);
            }
            let mut all_tables = true;
            for item in l.iter() {
                match kind_of(item)? {
                    Kind::Nil => return Err(TomlError::ArrayNilElement),
                    Kind::Table => {}
                    _ => all_tables = false,
                }
            }
            if all_tables {
                Kind::ArrayOfTables
            } else {
                Kind::Inline
            }
        }
        _ => Kind::Inline,
    })
}

impl Enc {
    fn has_written(&self) -> bool {
        !self.out.is_empty()
    }

    fn newline(&mut self) {
        if self.has_written() {
            self.out.push('\n');
        }
    }

    fn indent(&mut self, key: &[&str]) {
        for _ in 1..key.len() {
            self.out.push_str(INDENT);
        }
    }

    fn key_path(&mut self, key: &[&str]) {
        for (i, k) in key.iter().enumerate() {
            if i > 0 {
                self.out.push('.');
            }
            push_key(&mut self.out, k);
        }
    }

    fn encode(&mut self, key: &[&str], v: &Value) -> Result<(), TomlError> {
        if let Some(o) = object_value(v) {
            if !matches!(o, Value::Map(_)) {
                return self.key_value(key, v);
            }
            return self.encode(key, &o);
        }
        match v {
            Value::Invalid | Value::Nil => Ok(()),
            Value::Map(m) => {
                if key.len() == 1 {
                    self.newline();
                }
                if !key.is_empty() {
                    self.indent(key);
                    self.out.push('[');
                    self.key_path(key);
                    self.out.push(']');
                    self.newline();
                }
                let m = m.borrow();
                self.map(key, &m)
            }
            Value::List(l) if kind_of(v)? == Kind::ArrayOfTables => {
                if key.is_empty() {
                    return Err(TomlError::NoKey);
                }
                for item in l.iter() {
                    self.newline();
                    self.indent(key);
                    self.out.push_str("[[");
                    self.key_path(key);
                    self.out.push_str("]]");
                    self.newline();
                    let table = object_value(item).unwrap_or_else(|| item.clone());
                    if let Value::Map(m) = &table {
                        let m = m.borrow();
                        self.map(key, &m)?;
                    }
                }
                Ok(())
            }
            _ => self.key_value(key, v),
        }
    }

    fn key_value(&mut self, key: &[&str], v: &Value) -> Result<(), TomlError> {
        match key.last() {
            None => self.element(v),
            Some(last) => {
                self.indent(key);
                push_key(&mut self.out, last);
                self.out.push_str(" = ");
                self.element(v)?;
                self.newline();
                Ok(())
            }
        }
    }

    fn map(&mut self, key: &[&str], m: &Map) -> Result<(), TomlError> {
        let mut direct = Vec::new();
        let mut sub = Vec::new();
        for (k, v) in m.iter() {
            match kind_of(v)? {
                Kind::Nil => {}
                Kind::Table | Kind::ArrayOfTables => sub.push((k, v)),
                Kind::Inline => direct.push((k, v)),
            }
        }
        let mut path: Vec<&str> = key.to_vec();
        for (k, v) in direct.into_iter().chain(sub) {
            path.push(k);
            self.encode(&path, v)?;
            path.pop();
        }
        Ok(())
    }

    fn element(&mut self, v: &Value) -> Result<(), TomlError> {
        if let Some(o) = object_value(v) {
            return self.element(&o);
        }
        match v {
            Value::String(s) => push_quoted(&mut self.out, s),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i, _) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Uint(u, _) => {
                let _ = write!(self.out, "{u}");
            }
            Value::Float(f) => {
                if f.is_nan() {
                    if f.is_sign_negative() {
                        self.out.push('-');
                    }
                    self.out.push_str("nan");
                } else if f.is_infinite() {
                    if *f < 0.0 {
                        self.out.push('-');
                    }
                    self.out.push_str("inf");
                } else {
                    let start = self.out.len();
                    append_float(&mut self.out, *f, b'g', -1, 64);
                    let written = &self.out[start..];
                    if !written.contains(['.', 'e', 'E']) {
                        self.out.push_str(".0");
                    }
                }
            }
            Value::Bytes(b) => {
                self.out.push('[');
                for (i, x) in b.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let _ = write!(self.out, "{x}");
                }
                self.out.push(']');
            }
            Value::List(l) => {
                self.out.push('[');
                for (i, item) in l.iter().enumerate() {
                    if item.is_nil() {
                        return Err(TomlError::ArrayNilElement);
                    }
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.element(item)?;
                }
                self.out.push(']');
            }
            Value::Map(m) => {
                let m = m.borrow();
                let mut direct = Vec::new();
                let mut sub = Vec::new();
                for (k, v) in m.iter() {
                    match kind_of(v)? {
                        Kind::Nil => {}
                        Kind::Table | Kind::ArrayOfTables => sub.push((k, v)),
                        Kind::Inline => direct.push((k, v)),
                    }
                }
                self.out.push('{');
                let trail = !sub.is_empty();
                let nd = direct.len();
                for (i, (k, v)) in direct.into_iter().enumerate() {
                    push_key(&mut self.out, k);
                    self.out.push_str(" = ");
                    self.element(v)?;
                    if trail || i != nd - 1 {
                        self.out.push_str(", ");
                    }
                }
                let ns = sub.len();
                for (i, (k, v)) in sub.into_iter().enumerate() {
                    push_key(&mut self.out, k);
                    self.out.push_str(" = ");
                    self.element(v)?;
                    if i != ns - 1 {
                        self.out.push_str(", ");
                    }
                }
                self.out.push('}');
            }
            Value::Invalid | Value::Nil => {}
            other => return Err(TomlError::Unsupported(other.type_name())),
        }
        Ok(())
    }
}

/// Helm's `toToml` body: BurntSushi's `Encoder.Encode(v)`.
pub fn to_toml(v: &Value) -> Result<String, TomlError> {
    let mut e = Enc { out: String::new() };
    e.encode(&[], v)?;
    Ok(e.out)
}

fn from_toml(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::string(s),
        toml::Value::Integer(i) => Value::Int(i, IntKind::Int64),
        toml::Value::Float(f) => Value::Float(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => datetime(&d),
        toml::Value::Array(a) => Value::list(a.into_iter().map(from_toml).collect()),
        toml::Value::Table(t) => {
            Value::map(t.into_iter().map(|(k, v)| (k, from_toml(v))).collect())
        }
    }
}

/// A TOML date-time as the `time.Time` BurntSushi decodes it to: local
/// dates and times are taken as UTC, a local time on January 1 of year 0.
fn datetime(d: &toml::value::Datetime) -> Value {
    let date = match &d.date {
        Some(date) => date.to_string(),
        None => "0000-01-01".to_string(),
    };
    let time = match &d.time {
        Some(t) => t.to_string(),
        None => "00:00:00".to_string(),
    };
    let offset = match &d.offset {
        Some(o) => o.to_string(),
        None => "Z".to_string(),
    };
    let text = format!("{date}T{time}{offset}");
    match gostd::time::parse_in_location(
        "2006-01-02T15:04:05.999999999Z07:00",
        &text,
        gostd::time::Location::Utc,
    ) {
        Ok(t) => gotmpl::time::time_value(t),
        Err(_) => Value::string(d.to_string()),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// The bare or quoted key a `key = value` line starts with.
fn line_key(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let (k, rest) = l.split_once('=')?;
    let k = k.trim();
    if k.is_empty() || k.starts_with('[') || rest.starts_with('=') {
        return None;
    }
    Some(k.trim_matches('"'))
}

/// The table a line lies in (the last `[header]` above it).
fn table_of(text: &str, line: usize) -> Option<String> {
    text.lines()
        .take(line.saturating_sub(1))
        .filter_map(|l| {
            let t = l.trim();
            if t.starts_with('[') {
                Some(
                    t.trim_start_matches('[')
                        .trim_end_matches(']')
                        .trim()
                        .to_string(),
                )
            } else {
                None
            }
        })
        .last()
}

/// Words a syntax error as BurntSushi does, where the problem is one it
/// recognisably shares: `(last key "k")` context, redefinitions, early EOF.
fn burntsushi_message(text: &str, line: usize, offset: usize, crate_msg: &str) -> String {
    let src_line = text.lines().nth(line - 1).unwrap_or("");
    let trimmed = src_line.trim_start();
    let table = table_of(text, line);
    let last_key = line_key(src_line).map(|k| match &table {
        Some(t) => format!("{t}.{k}"),
        None => k.to_string(),
    });
    let msg = if crate_msg.contains("duplicate key") {
        let key = if trimmed.starts_with('[') {
            trimmed
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_string()
        } else {
            last_key.clone().unwrap_or_default()
        };
        format!("Key '{key}' has already been defined.")
    } else if offset >= text.trim_end().len() && last_key.is_some() {
        let after_eq = src_line.split_once('=').map(|x| x.1.trim()).unwrap_or("");
        if after_eq.is_empty() {
            "unexpected EOF; expected value".to_string()
        } else if let Some(q) = after_eq.chars().next().filter(|c| *c == '"' || *c == '\'') {
            format!("unexpected EOF; expected '{q}'")
        } else {
            crate_msg.to_string()
        }
    } else {
        let key_len = trimmed
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
            .count();
        let rest = trimmed[key_len..].trim_start_matches([' ', '\t']);
        match rest.chars().next() {
            Some(c) if key_len > 0 && c != '=' && c != '.' => {
                format!("expected '.' or '=', but got '{c}' instead")
            }
            _ => crate_msg.to_string(),
        }
    };
    match last_key {
        Some(k) if !trimmed.starts_with('[') => format!(" (last key \"{k}\"): {msg}"),
        _ => format!(": {msg}"),
    }
}

/// Stack a level of TOML nesting may take in the `toml` crate's recursive
/// parser, its `Value` drop and [`from_toml`] (generous: a debug build).
const STACK_PER_LEVEL: usize = 8 << 10;

/// Helm's `fromToml` body: `toml.Unmarshal` into `map[string]interface{}`.
/// BurntSushi's reader has no depth limit (Go's stack grows); this one takes
/// what Go's YAML and JSON readers take, [`MAX_DEPTH`](crate::depth::MAX_DEPTH)
/// levels, on a stack sized for the depth the text can reach.
pub fn parse_toml_map(text: &str) -> Result<Map, TomlError> {
    let (depth, line) = nesting(text);
    if depth > crate::depth::MAX_DEPTH {
        return Err(TomlError::Parse {
            line,
            msg: format!(": exceeded max depth of {}", crate::depth::MAX_DEPTH),
        });
    }
    crate::depth::with_stack_for(depth + 64, STACK_PER_LEVEL, || parse_within_depth(text))
}

fn parse_within_depth(text: &str) -> Result<Map, TomlError> {
    match text.parse::<toml::Table>() {
        Ok(t) => Ok(t.into_iter().map(|(k, v)| (k, from_toml(v))).collect()),
        Err(e) => {
            let offset = e.span().map(|s| s.start).unwrap_or(0);
            let line = line_of(text, offset);
            let crate_msg = e.message().lines().next().unwrap_or("").trim();
            // The message quotes the last key whole; a hostile one is long.
            let msg =
                gotmpl::limits::cap_message(burntsushi_message(text, line, offset, crate_msg));
            Err(TomlError::Parse { line, msg })
        }
    }
}

/// How deep the document `text` nests (the root table is 1; each table
/// header segment, dotted key segment, array and inline table adds one) and
/// the first line reaching that depth, read lexically: strings and comments
/// are skipped, syntax is left to the parser.
fn nesting(text: &str) -> (usize, usize) {
    #[derive(Clone, Copy, PartialEq)]
    enum Mode {
        /// Reading a key (dots add levels) in a table whose entries sit at `table`.
        Key,
        /// Reading a `[header]`.
        Header,
        /// Reading a value: containers opened here sit below `parent`.
        Value,
    }
    let b = text.as_bytes();
    let (mut i, mut line) = (0usize, 1usize);
    let (mut deepest, mut deepest_line) = (1usize, 1usize);
    // Depth of the current [table]'s entries; per open array or inline table, its depth.
    let mut table = 1usize;
    let mut open: Vec<(u8, usize)> = Vec::new();
    let mut mode = Mode::Key;
    let (mut segments, mut parent) = (1usize, 1usize);
    let mut header_start = 0usize;
    let mut note = |d: usize, line: usize| {
        if d > deepest {
            deepest = d;
            deepest_line = line;
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                if open.is_empty() {
                    mode = Mode::Key;
                    segments = 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                let fence = if b[i..].starts_with(&[c, c, c]) { 3 } else { 1 };
                i += fence;
                while i < b.len() {
                    if c == b'"' && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    if b[i] == c && b[i..].len() >= fence && b[i..i + fence].iter().all(|x| *x == c)
                    {
                        i += fence;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'[' if mode == Mode::Key && open.is_empty() => {
                mode = Mode::Header;
                header_start = i;
                segments = 1;
            }
            b']' if mode == Mode::Header => {
                let array = b[header_start..].starts_with(b"[[");
                if array && b.get(i + 1) == Some(&b']') {
                    i += 1;
                }
                table = 1 + segments + usize::from(array);
                note(table, line);
                mode = Mode::Value;
            }
            b'.' if matches!(mode, Mode::Key | Mode::Header) => segments += 1,
            b'=' if mode == Mode::Key => {
                let at = open.last().map_or(table, |(_, d)| *d);
                parent = at + segments - 1;
                note(parent, line);
                mode = Mode::Value;
            }
            b'[' | b'{' if mode == Mode::Value => {
                let d = parent + 1;
                note(d, line);
                open.push((c, d));
                if c == b'{' {
                    mode = Mode::Key;
                    segments = 1;
                } else {
                    parent = d;
                }
            }
            b']' | b'}' if mode != Mode::Header => {
                open.pop();
                if let Some((b'[', d)) = open.last() {
                    parent = *d;
                }
                mode = Mode::Value;
            }
            b',' => match open.last() {
                Some((b'{', _)) => {
                    mode = Mode::Key;
                    segments = 1;
                }
                Some((_, d)) => parent = *d,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    (deepest, deepest_line)
}

/// `fromToml` as a template value: a map, or on failure a map whose `Error`
/// key holds the message.
pub fn parse_toml_value(text: &str) -> Value {
    match parse_toml_map(text) {
        Ok(m) => Value::map(m),
        Err(e) => {
            let mut m = Map::new();
            m.insert("Error".into(), Value::string(e.to_string()));
            Value::map(m)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nesting_counts_tables_keys_arrays_and_inline_tables() {
        assert_eq!(nesting("a = 1\n").0, 1);
        assert_eq!(nesting("a.b.c = 1\n").0, 3);
        assert_eq!(nesting("[x]\na = [[1]]\n").0, 4);
        assert_eq!(nesting("[[x.y]]\nz = 1\n").0, 4);
        assert_eq!(nesting("a = { b = { c.d = [1.5, 2.5] } }\n").0, 5);
        // Dots and brackets in strings, comments and numbers are not nesting.
        assert_eq!(nesting("a = \"[[[.{\" # [[[\nb = '[[' \nc = 1.5\n").0, 1);
        assert_eq!(
            nesting("a = \"\"\"\n[[[\n\"\"\"\nb = [\n 1,\n [2],\n]\n").0,
            3
        );
        assert_eq!(nesting("a = 1\nb = [[\n[1]]]\n"), (4, 3));
    }

    use super::*;

    fn d(entries: Vec<(&str, Value)>) -> Value {
        Value::map(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    #[test]
    fn tables_and_keys() {
        assert_eq!(
            to_toml(&d(vec![("a", Value::int(1)), ("b", Value::str("x"))])).unwrap(),
            "a = 1\nb = \"x\"\n"
        );
        assert_eq!(
            to_toml(&d(vec![
                ("t", d(vec![("k", Value::str("v"))])),
                ("a", Value::int(1))
            ]))
            .unwrap(),
            "a = 1\n\n[t]\n  k = \"v\"\n"
        );
        assert_eq!(
            to_toml(&d(vec![(
                "arr",
                Value::list(vec![
                    d(vec![("n", Value::str("a"))]),
                    d(vec![("n", Value::str("b"))])
                ])
            )]))
            .unwrap(),
            "[[arr]]\n  n = \"a\"\n\n[[arr]]\n  n = \"b\"\n"
        );
        assert_eq!(
            to_toml(&d(vec![("a b", Value::int(1)), ("é", Value::int(2))])).unwrap(),
            "\"a b\" = 1\n\"é\" = 2\n"
        );
        assert_eq!(to_toml(&d(vec![("k", Value::Nil)])).unwrap(), "");
        assert_eq!(
            to_toml(&d(vec![(
                "t",
                d(vec![("u", d(vec![("k", Value::int(1))]))])
            )]))
            .unwrap(),
            "[t]\n  [t.u]\n    k = 1\n"
        );
    }

    #[test]
    fn scalars() {
        assert_eq!(
            to_toml(&d(vec![
                ("f", Value::Float(1.5)),
                ("big", Value::Float(1e6)),
                ("n", Value::Float(3.0)),
                ("q", Value::str("a\"b\nc")),
            ]))
            .unwrap(),
            "big = 1e+06\nf = 1.5\nn = 3.0\nq = \"a\\\"b\\nc\"\n"
        );
        assert_eq!(
            to_toml(&Value::list(vec![Value::int(1), Value::int(2)])).unwrap(),
            "[1, 2]"
        );
        assert_eq!(to_toml(&Value::str("x")).unwrap(), "\"x\"");
        assert_eq!(
            to_toml(&d(vec![("l", Value::list(vec![Value::Nil]))])).unwrap_err(),
            TomlError::ArrayNilElement
        );
    }

    #[test]
    fn reading() {
        let m = parse_toml_map("a = 1\nb = \"x\"\nc = 1.5\n[y]\nz = \"w\"").unwrap();
        assert!(matches!(m["a"], Value::Int(1, IntKind::Int64)));
        assert!(matches!(m["c"], Value::Float(f) if f == 1.5));
        assert_eq!(
            to_toml(&Value::map(m)).unwrap(),
            "a = 1\nb = \"x\"\nc = 1.5\n\n[y]\n  z = \"w\"\n"
        );
        assert_eq!(
            parse_toml_map("bad toml").unwrap_err().to_string(),
            "toml: line 1: expected '.' or '=', but got 't' instead"
        );
        let d = parse_toml_map("d = 1979-05-27T07:32:00Z\nl = 1979-05-27").unwrap();
        assert_eq!(d["d"].type_name(), "time.Time");
        assert_eq!(
            crate::json::to_json(&Value::map(d)).unwrap(),
            r#"{"d":"1979-05-27T07:32:00Z","l":"1979-05-27T00:00:00Z"}"#
        );
        assert_eq!(
            parse_toml_map("a = 1\na = 2").unwrap_err().to_string(),
            "toml: line 2 (last key \"a\"): Key 'a' has already been defined."
        );
        assert_eq!(
            parse_toml_map("a = ").unwrap_err().to_string(),
            "toml: line 1 (last key \"a\"): unexpected EOF; expected value"
        );
        assert!(parse_toml_map("").unwrap().is_empty());
    }
}
