//! A YAML writer that produces go-yaml's output byte for byte: the libyaml
//! emitter's layout rules (indentation, `- ` placement, folding at 80
//! columns, block scalars with chomping and indentation hints) and its scalar
//! style choice (plain, single-quoted, double-quoted or literal).
//!
//! Two flavours are needed: Helm's `toYaml` (sigs.k8s.io/yaml: the value goes
//! through JSON first, then go-yaml v2 writes it with sequences flush with
//! their key) and `toYamlPretty` (yaml.v3 with indent 2: sequences indented
//! under their key, numbers written from the Go value itself).

use std::borrow::Cow;
use std::fmt::Write as _;

use base64::Engine as _;
use gotmpl::Value;

use super::resolve::needs_quotes;
use super::YamlError;
use crate::json::{format_float_json, push_float_g};

const BEST_INDENT: i32 = 2;
/// libyaml writes longer keys in the explicit `? key` form.
const MAX_SIMPLE_KEY: usize = 128;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `sigs.k8s.io/yaml.Marshal`: JSON semantics, go-yaml v2 layout.
    JsonV2,
    /// yaml.v3 `Encoder` with `SetIndent(2)`.
    GoV3,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

#[derive(Clone, Copy, Default)]
struct Ctx {
    root: bool,
    mapping: bool,
    simple_key: bool,
}

struct Analysis {
    multiline: bool,
    flow_plain: bool,
    block_plain: bool,
    single_quoted: bool,
    block: bool,
}

pub(crate) struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    indent: i32,
    flavor: Flavor,
    /// Plain and quoted scalars fold at a space past this column (go-yaml
    /// v2 and sigs.k8s.io/yaml: 80; yaml.v3's default: never).
    best_width: usize,
}

fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// libyaml's `analyze_scalar`. yaml.v3 (`tabs_in_blocks`) lets tabs into
/// block scalars, where go-yaml v2 treats them like any control character.
fn analyze(value: &str, tabs_in_blocks: bool) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            flow_plain: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut tab_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if value.starts_with("---") || value.starts_with("...") {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut it = value.char_indices().peekable();
    let mut first = true;
    while let Some((i, c)) = it.next() {
        let next = it.peek().map(|&(_, n)| n);
        let followed_by_whitespace = next.is_none_or(is_blank);
        let last = i + c.len_utf8() == value.len();
        if first {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                '?' | ':' => {
                    flow_indicators = true;
                    if followed_by_whitespace {
                        block_indicators = true;
                    }
                }
                '-' if followed_by_whitespace => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_indicators = true,
                ':' => {
                    flow_indicators = true;
                    if followed_by_whitespace {
                        block_indicators = true;
                    }
                }
                '#' if preceded_by_whitespace => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        }
        if tabs_in_blocks && c == '\t' {
            tab_characters = true;
        } else if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            if first {
                leading_space = true;
            }
            if last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if first {
                leading_break = true;
            }
            if last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blank(c) || is_break(c);
        first = false;
    }

    let mut a = Analysis {
        multiline: line_breaks,
        flow_plain: true,
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.flow_plain = false;
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || tab_characters || special_characters {
        a.flow_plain = false;
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || special_characters {
        a.block = false;
    }
    if line_breaks {
        a.flow_plain = false;
        a.block_plain = false;
    }
    if flow_indicators {
        a.flow_plain = false;
    }
    if block_indicators {
        a.block_plain = false;
    }
    a
}

/// go-yaml's key order (`keyList.Less` for string keys): letters sort
/// after non-letters, runs of digits compare as numbers, and after a shared
/// digit a letter sorts first.
fn key_less(a: &str, b: &str) -> bool {
    // Keys are nearly always ASCII: compare bytes then, without collecting.
    if a.is_ascii() && b.is_ascii() {
        return key_less_units(a.as_bytes(), b.as_bytes(), |c| c as char);
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    key_less_units(&ar, &br, |c| c)
}

fn key_less_units<C: Copy + PartialEq + PartialOrd>(
    ar: &[C],
    br: &[C],
    ch: impl Fn(C) -> char,
) -> bool {
    let digit = |c: C| ch(c).is_ascii_digit();
    let mut digits = false;
    let n = ar.len().min(br.len());
    for i in 0..n {
        if ar[i] == br[i] {
            digits = digit(ar[i]);
            continue;
        }
        let al = ch(ar[i]).is_alphabetic();
        let bl = ch(br[i]).is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if digits { al } else { bl };
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ch(ar[i]) == '0' || ch(br[i]) == '0' {
            let mut j = i;
            while j > 0 && digit(ar[j - 1]) {
                j -= 1;
                if ch(ar[j]) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(ar[ai]) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(ch(ar[ai]) as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(br[bi]) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(ch(br[bi]) as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// A merge sort driven by a "less" predicate. Unlike `slice::sort_by` it
/// cannot panic when the predicate is not a total order (go-yaml's is not,
/// for some odd keys); it just yields some order.
fn sort_keys<T>(items: &mut Vec<T>, less: &dyn Fn(&T, &T) -> bool) {
    if items.len() < 2 {
        return;
    }
    if items.len() <= 16 {
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 && less(&items[j], &items[j - 1]) {
                items.swap(j, j - 1);
                j -= 1;
            }
        }
        return;
    }
    let right_half = items.split_off(items.len() / 2);
    let mut left = std::mem::take(items);
    let mut right = right_half;
    sort_keys(&mut left, less);
    sort_keys(&mut right, less);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut l = left.into_iter().peekable();
    let mut r = right.into_iter().peekable();
    loop {
        match (l.peek(), r.peek()) {
            (Some(a), Some(b)) => {
                if less(b, a) {
                    out.extend(r.next());
                } else {
                    out.extend(l.next());
                }
            }
            (Some(_), None) => out.extend(l.next()),
            (None, Some(_)) => out.extend(r.next()),
            (None, None) => break,
        }
    }
    *items = out;
}

/// A scalar ready to write: its text and whether it is a string (strings
/// get a style chosen from their content; other scalars are always plain).
enum Scalar<'a> {
    Plain(Cow<'a, str>),
    Str(Cow<'a, str>),
}

impl Emitter {
    pub(crate) fn new(flavor: Flavor) -> Self {
        Emitter {
            out: String::new(),
            column: 0,
            whitespace: true,
            indention: true,
            indent: -1,
            flavor,
            best_width: match flavor {
                Flavor::JsonV2 => 80,
                Flavor::GoV3 => usize::MAX,
            },
        }
    }

    /// Writes one document holding `v` and returns the text (ending in a newline).
    pub(crate) fn document(mut self, v: &Value) -> Result<String, YamlError> {
        self.node(
            v,
            Ctx {
                root: true,
                ..Ctx::default()
            },
        )?;
        // Document end: go to a fresh line.
        self.indent = -1;
        self.write_indent();
        Ok(self.out)
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_str(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        self.put_str(ind);
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn unsupported(v: &Value, json: bool) -> YamlError {
        if json {
            let what = match v {
                Value::Float(f) => {
                    let mut s = String::new();
                    push_float_g(&mut s, *f);
                    return YamlError::Marshal(format!(
                        "error marshaling into JSON: json: unsupported value: {s}"
                    ));
                }
                other => other.type_name(),
            };
            YamlError::Marshal(format!(
                "error marshaling into JSON: json: unsupported type: {what}"
            ))
        } else {
            YamlError::Marshal(format!("cannot marshal type: {}", v.type_name()))
        }
    }

    fn scalar_of<'v>(&self, v: &'v Value) -> Result<Option<Scalar<'v>>, YamlError> {
        let json = self.flavor == Flavor::JsonV2;
        Ok(Some(match v {
            Value::Invalid | Value::Nil => Scalar::Plain("null".into()),
            // Through JSON a nil map is `null`; yaml.v3 writes it as `{}`.
            Value::Map(m) if json && m.is_nil_map() => Scalar::Plain("null".into()),
            Value::Bool(b) => Scalar::Plain(if *b { "true" } else { "false" }.into()),
            Value::Int(i, _) => Scalar::Plain(i.to_string().into()),
            Value::Uint(u, _) => Scalar::Plain(u.to_string().into()),
            Value::Float(f) => {
                if json {
                    if !f.is_finite() {
                        return Err(Self::unsupported(v, true));
                    }
                    Scalar::Plain(json_number_as_yaml(*f).into())
                } else {
                    let s = if f.is_nan() {
                        ".nan".to_string()
                    } else if f.is_infinite() {
                        if *f > 0.0 { ".inf" } else { "-.inf" }.to_string()
                    } else {
                        let mut s = String::new();
                        push_float_g(&mut s, *f);
                        s
                    };
                    Scalar::Plain(s.into())
                }
            }
            Value::String(s) => Scalar::Str(Cow::Borrowed(s)),
            Value::Bytes(b) if json => {
                Scalar::Str(base64::engine::general_purpose::STANDARD.encode(b).into())
            }
            Value::Complex(..) | Value::Func(_) => return Err(Self::unsupported(v, json)),
            _ => return Ok(None),
        }))
    }

    /// One value; nested values recurse here, each level on enough stack.
    fn node(&mut self, v: &Value, ctx: Ctx) -> Result<(), YamlError> {
        crate::depth::guarded(|| self.node_here(v, ctx))
    }

    fn node_here(&mut self, v: &Value, ctx: Ctx) -> Result<(), YamlError> {
        if let Some(s) = self.scalar_of(v)? {
            return self.scalar(s, ctx);
        }
        match v {
            Value::List(l) => {
                let items = l.items();
                if items.is_empty() {
                    return self.empty_flow("[]");
                }
                self.sequence(items.len(), |e, i| e.node(&items[i], Ctx::default()), ctx)
            }
            Value::Bytes(b) => {
                let items: Vec<Value> = b.iter().map(|&x| Value::int(x as i64)).collect();
                if items.is_empty() {
                    return self.empty_flow("[]");
                }
                self.sequence(items.len(), |e, i| e.node(&items[i], Ctx::default()), ctx)
            }
            Value::Map(m) => {
                let m = m.borrow();
                if m.is_empty() {
                    return self.empty_flow("{}");
                }
                let mut entries: Vec<(&String, &Value)> = m.iter().collect();
                sort_keys(&mut entries, &|a, b| key_less(a.0, b.0));
                self.mapping(&entries)
            }
            Value::Object(o) => {
                let j = o
                    .to_json()
                    .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
                let converted = from_json_exact(&j);
                self.node(&converted, ctx)
            }
            _ => Err(Self::unsupported(v, self.flavor == Flavor::JsonV2)),
        }
    }

    fn empty_flow(&mut self, text: &str) -> Result<(), YamlError> {
        self.write_indicator(&text[..1], true, true, false);
        self.write_indicator(&text[1..], false, false, false);
        Ok(())
    }

    fn sequence(
        &mut self,
        len: usize,
        mut item: impl FnMut(&mut Self, usize) -> Result<(), YamlError>,
        ctx: Ctx,
    ) -> Result<(), YamlError> {
        let saved = self.indent;
        let indentless = match self.flavor {
            Flavor::JsonV2 => ctx.mapping && !self.indention,
            Flavor::GoV3 => false,
        };
        self.increase_indent(false, indentless);
        for i in 0..len {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            item(self, i)?;
        }
        self.indent = saved;
        Ok(())
    }

    fn mapping(&mut self, entries: &[(&String, &Value)]) -> Result<(), YamlError> {
        let saved = self.indent;
        self.increase_indent(false, false);
        let value_ctx = Ctx {
            mapping: true,
            ..Ctx::default()
        };
        for (k, v) in entries {
            self.write_indent();
            let key = Scalar::Str(Cow::Borrowed(k.as_str()));
            let simple = k.chars().count() <= MAX_SIMPLE_KEY && !k.contains(is_break);
            if simple {
                self.scalar(
                    key,
                    Ctx {
                        mapping: true,
                        simple_key: true,
                        ..Ctx::default()
                    },
                )?;
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(key, value_ctx)?;
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(v, value_ctx)?;
        }
        self.indent = saved;
        Ok(())
    }

    fn scalar(&mut self, s: Scalar<'_>, ctx: Ctx) -> Result<(), YamlError> {
        // sigs.k8s.io/yaml re-reads its JSON text with go-yaml, whose reader
        // refuses characters JSON leaves unescaped (DEL, C1 controls).
        if let Scalar::Str(t) = &s {
            if self.flavor == Flavor::JsonV2
                && t.chars().any(|c| c >= ' ' && super::reader_rejects(c))
            {
                return Err(YamlError::Marshal(
                    "yaml: control characters are not allowed".into(),
                ));
            }
        }
        let (text, requested) = match &s {
            Scalar::Plain(t) => (t.as_ref(), Style::Plain),
            Scalar::Str(t) => {
                let t = t.as_ref();
                let style = if t.contains('\n') {
                    Style::Literal
                } else if !needs_quotes(t) {
                    Style::Plain
                } else {
                    Style::Double
                };
                (t, style)
            }
        };
        let a = analyze(text, self.flavor == Flavor::GoV3);
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if !a.block_plain {
                style = Style::Single;
            }
            if text.is_empty() && ctx.simple_key {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || ctx.simple_key) {
            style = Style::Double;
        }

        let saved = self.indent;
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.write_plain(text, allow_breaks),
            Style::Single => self.write_single(text, allow_breaks),
            Style::Double => self.write_double(text, allow_breaks),
            Style::Literal => self.write_literal(text),
        }
        self.indent = saved;
        let _ = ctx.root;
        Ok(())
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let mut spaces = false;
        let mut it = value.chars().peekable();
        while let Some(c) = it.next() {
            if c == ' ' {
                let next_space = it.peek() == Some(&' ');
                if allow_breaks && !spaces && self.column > self.best_width && !next_space {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let chars: Vec<char> = value.chars().collect();
        let n = chars.len();
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > self.best_width
                    && i > 0
                    && i < n - 1
                    && chars[i + 1] != ' '
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        let mut spaces = false;
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let n = chars.len();
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    c => {
                        let u = c as u32;
                        let mut buf = String::new();
                        if u <= 0xFF {
                            let _ = write!(buf, "x{u:02X}");
                        } else if u <= 0xFFFF {
                            let _ = write!(buf, "u{u:04X}");
                        } else {
                            let _ = write!(buf, "U{u:08X}");
                        }
                        self.put_str(&buf);
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > self.best_width && i != 0 && i != n - 1
                {
                    self.write_indent();
                    if i + 1 < n && chars[i + 1] == ' ' {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // Block scalar hints: an indentation indicator when the text starts
        // with a space or break, and the chomping indicator.
        if value.starts_with(' ') || value.starts_with(is_break) {
            let hint = char::from(b'0' + BEST_INDENT as u8);
            let mut buf = [0u8; 4];
            self.write_indicator(hint.encode_utf8(&mut buf), false, false, false);
        }
        let mut rev = value.chars().rev();
        let chomp = match rev.next() {
            None => Some("-"),
            Some(last) if !is_break(last) => Some("-"),
            Some(_) => match rev.next() {
                None => Some("+"),
                Some(prev) if is_break(prev) => Some("+"),
                Some(_) => None,
            },
        };
        if let Some(ch) = chomp {
            self.write_indicator(ch, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// How a float64 reads after `json.Marshal` and go-yaml's number typing:
/// integral values in the int64/uint64 range come back as integers,
/// everything else as a float written with `%g`-style shortest digits.
fn json_number_as_yaml(f: f64) -> String {
    let text = format_float_json(f);
    if !text.contains(['.', 'e']) {
        // go-yaml reads the JSON digits back as an int, then as a uint.
        if let Ok(i) = text.parse::<i64>() {
            return i.to_string();
        }
        if !text.starts_with('-') && text.parse::<u64>().is_ok() {
            return text;
        }
    }
    let mut s = String::new();
    push_float_g(&mut s, f);
    s
}

/// JSON from a host object, keeping integers as integers (objects carry
/// exact numbers, unlike decoded values).
fn from_json_exact(j: &serde_json::Value) -> Value {
    use serde_json::Value as J;
    match j {
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::int64(i)
            } else if let Some(u) = n.as_u64() {
                Value::Uint(u, gotmpl::UintKind::Uint64)
            } else {
                Value::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        J::Array(a) => Value::list(a.iter().map(from_json_exact).collect()),
        J::Object(o) => Value::map(
            o.iter()
                .map(|(k, v)| (k.clone(), from_json_exact(v)))
                .collect(),
        ),
        other => Value::from_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_matches_go_yaml() {
        let mut keys = vec!["b", "B", "a", "_", "1", "a10", "a9", "a09"];
        sort_keys(&mut keys, &|a, b| key_less(a, b));
        assert_eq!(keys, vec!["_", "1", "B", "a", "a9", "a09", "a10", "b"]);
    }

    #[test]
    fn key_order_digits() {
        let mut keys = vec!["a12", "a1b", "a10", "a09", "a9", "a", "b2", "10", "9", "1a"];
        sort_keys(&mut keys, &|a, b| key_less(a, b));
        assert_eq!(
            keys,
            vec!["1a", "9", "10", "a", "a1b", "a9", "a09", "a10", "a12", "b2"]
        );
    }

    #[test]
    fn sort_is_total_on_large_inputs() {
        let mut keys: Vec<String> = (0..100).map(|i| format!("k{}", 99 - i)).collect();
        sort_keys(&mut keys, &|a, b| key_less(a, b));
        assert_eq!(keys[0], "k0");
        assert_eq!(keys[99], "k99");
    }

    #[test]
    fn numbers_after_json_round_trip() {
        assert_eq!(json_number_as_yaml(1e6), "1000000");
        assert_eq!(json_number_as_yaml(-0.0), "0");
        assert_eq!(json_number_as_yaml(1e21), "1e+21");
        assert_eq!(json_number_as_yaml(1e-7), "1e-07");
        assert_eq!(json_number_as_yaml(0.000001), "1e-06");
        assert_eq!(json_number_as_yaml(1.5), "1.5");
        assert_eq!(json_number_as_yaml(1e20), "1e+20");
        assert_eq!(json_number_as_yaml(1234567.5), "1.2345675e+06");
    }
}
