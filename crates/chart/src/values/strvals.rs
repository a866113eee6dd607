//! Parsing of `--set`, `--set-string`, `--set-json`, `--set-file` and
//! `--set-literal` lines exactly as Helm's `pkg/strvals` does:
//! `a.b=c,d[0]=x,e={x,y}`, `\` escapes the next character, `--set` turns
//! `true`/`false` into bools, `null` into nil and decimal integers without a
//! leading zero into int64, `--set-string` keeps strings, `--set-json` reads
//! one JSON value per key, `--set-literal` takes everything after the first
//! `=` verbatim.
//!
//! Results are JSON. `--set` integers are JSON integers (Helm's `int64`);
//! `--set-json` numbers are JSON floats (Go's `encoding/json` gives
//! `float64`), so a consumer can tell them apart with
//! `serde_json::Number::is_f64`.

use serde_json::Value as Json;

use crate::values::Values;

/// The largest list index Helm accepts.
pub(crate) const MAX_INDEX: usize = 65536;
/// The deepest `a.b.c` nesting Helm accepts.
pub(crate) const MAX_NESTED_NAME_LEVEL: usize = 30;

/// A `--set`-style line Helm would refuse, with Helm's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StrvalsError(pub String);

/// Reads the value of `--set-file` entries: gets the path, returns the value.
pub(crate) type FileReader<'a> = &'a dyn Fn(&str) -> Result<Json, String>;

#[derive(Clone, Copy)]
enum Mode<'a> {
    Typed,
    Strings,
    Json,
    File(FileReader<'a>),
}

/// `strvals.Parse`: a `--set` line into new values.
pub fn parse(s: &str) -> Result<Values, StrvalsError> {
    let mut v = Values::new();
    parse_into(s, &mut v)?;
    Ok(v)
}

/// `strvals.ParseInto`: a `--set` line merged into `dest`.
pub fn parse_into(s: &str, dest: &mut Values) -> Result<(), StrvalsError> {
    Parser::new(s, Mode::Typed).parse(dest)
}

/// `strvals.ParseIntoString`: a `--set-string` line merged into `dest`.
pub fn parse_into_string(s: &str, dest: &mut Values) -> Result<(), StrvalsError> {
    Parser::new(s, Mode::Strings).parse(dest)
}

/// `strvals.ParseJSON`: a `--set-json` line merged into `dest`.
pub fn parse_json(s: &str, dest: &mut Values) -> Result<(), StrvalsError> {
    Parser::new(s, Mode::Json).parse(dest)
}

/// `strvals.ParseIntoFile`: a `--set-file` line merged into `dest`; `reader`
/// turns each path into its value (Helm: the file's text).
pub(crate) fn parse_into_file(
    s: &str,
    dest: &mut Values,
    reader: FileReader,
) -> Result<(), StrvalsError> {
    Parser::new(s, Mode::File(reader)).parse(dest)
}

/// `strvals.ParseLiteralInto`: a `--set-literal` line merged into `dest`.
pub fn parse_literal_into(s: &str, dest: &mut Values) -> Result<(), StrvalsError> {
    let mut p = Parser::new(s, Mode::Strings);
    p.literal = true;
    p.parse(dest)
}

/// The user-supplied value sources of one release, merged in Helm's order
/// (`pkg/cli/values.Options.MergeValues`): values files, then `--set-json`,
/// `--set`, `--set-string`, `--set-file`, `--set-literal`.
#[derive(Debug, Clone, Default)]
pub struct ValueOptions {
    /// Parsed `-f` files, in order.
    pub value_files: Vec<Values>,
    pub json_values: Vec<String>,
    pub values: Vec<String>,
    pub string_values: Vec<String>,
    pub file_values: Vec<String>,
    pub literal_values: Vec<String>,
}

impl ValueOptions {
    /// Merges every source; `read_file` serves `--set-file` paths.
    pub fn merge(&self, read_file: FileReader) -> Result<Values, StrvalsError> {
        let mut base = super::merge_user_values(self.value_files.iter().cloned());
        let wrap =
            |what: &str, e: StrvalsError| StrvalsError(format!("failed parsing {what} data: {e}"));
        for v in &self.json_values {
            parse_json(v, &mut base).map_err(|e| wrap("--set-json", e))?;
        }
        for v in &self.values {
            parse_into(v, &mut base).map_err(|e| wrap("--set", e))?;
        }
        for v in &self.string_values {
            parse_into_string(v, &mut base).map_err(|e| wrap("--set-string", e))?;
        }
        for v in &self.file_values {
            parse_into_file(v, &mut base, read_file).map_err(|e| wrap("--set-file", e))?;
        }
        for v in &self.literal_values {
            parse_literal_into(v, &mut base).map_err(|e| wrap("--set-literal", e))?;
        }
        Ok(base)
    }
}

/// What stopped a scan: a stop character, or the end of input.
type Scan = (Vec<char>, Option<char>);

struct Parser<'a> {
    sc: Vec<char>,
    pos: usize,
    mode: Mode<'a>,
    literal: bool,
}

enum Err {
    Eof,
    NotList,
    Msg(String),
}

impl From<String> for Err {
    fn from(s: String) -> Self {
        Err::Msg(s)
    }
}

fn err<T>(s: impl Into<String>) -> Result<T, Err> {
    Err(Err::Msg(s.into()))
}

/// Go's `%T` of a decoded value, for the type-assertion panics Helm recovers.
fn go_type(v: &Json) -> &'static str {
    match v {
        Json::Null => "nil",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float64",
        Json::Number(_) => "int64",
        Json::String(_) => "string",
        Json::Array(_) => "[]interface {}",
        Json::Object(_) => "map[string]interface {}",
    }
}

fn conversion_panic(v: &Json, want: &str) -> Err {
    let got = go_type(v);
    if got == "nil" {
        Err::Msg(format!(
            "unable to parse key: interface conversion: interface {{}} is nil, not {want}"
        ))
    } else {
        Err::Msg(format!(
            "unable to parse key: interface conversion: interface {{}} is {got}, not {want}"
        ))
    }
}

/// Go's `%q` of a `[]rune`.
fn quote_runes(r: &[char]) -> String {
    let items: Vec<String> = r
        .iter()
        .map(|c| match c {
            '\'' => "'\\''".to_string(),
            '\\' => "'\\\\'".to_string(),
            '\n' => "'\\n'".to_string(),
            '\t' => "'\\t'".to_string(),
            c => format!("'{c}'"),
        })
        .collect();
    format!("[{}]", items.join(" "))
}

/// Go's `%q` of a string (enough for keys).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn set(data: &mut Values, key: &str, val: Json) {
    if !key.is_empty() {
        data.insert(key.to_string(), val);
    }
}

fn set_index(list: &mut Vec<Json>, index: i64, val: Json) -> Result<(), Err> {
    if index < 0 {
        return err(format!("negative {index} index not allowed"));
    }
    let i = index as usize;
    if i > MAX_INDEX {
        return err(format!(
            "index of {index} is greater than maximum supported index of {MAX_INDEX}"
        ));
    }
    if list.len() <= i {
        list.resize(i + 1, Json::Null);
    }
    list[i] = val;
    Ok(())
}

/// `--set` typing of a scalar.
fn typed_val(v: &[char], as_string: bool) -> Json {
    let val: String = v.iter().collect();
    if as_string {
        return Json::String(val);
    }
    if val.eq_ignore_ascii_case("true") {
        return Json::Bool(true);
    }
    if val.eq_ignore_ascii_case("false") {
        return Json::Bool(false);
    }
    if val.eq_ignore_ascii_case("null") {
        return Json::Null;
    }
    if val == "0" {
        return Json::from(0i64);
    }
    if !val.is_empty() && !val.starts_with('0') {
        if let Some(i) = go_parse_int(&val) {
            return Json::from(i);
        }
    }
    Json::String(val)
}

/// `strconv.ParseInt(s, 10, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `strconv.Atoi` with Go's error text.
fn go_atoi(s: &str) -> Result<i64, String> {
    go_parse_int(s).ok_or_else(|| {
        let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
        if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
            format!("strconv.Atoi: parsing {}: value out of range", quote(s))
        } else {
            format!("strconv.Atoi: parsing {}: invalid syntax", quote(s))
        }
    })
}

/// Go's `encoding/json` decoding into `interface{}`: numbers are float64.
fn json_floats(v: Json) -> Json {
    match v {
        Json::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map(Json::Number)
            .unwrap_or(Json::Null),
        Json::Array(a) => Json::Array(a.into_iter().map(json_floats).collect()),
        Json::Object(m) => Json::Object(m.into_iter().map(|(k, v)| (k, json_floats(v))).collect()),
        other => other,
    }
}

impl<'a> Parser<'a> {
    fn new(s: &str, mode: Mode<'a>) -> Self {
        Parser {
            sc: s.chars().collect(),
            pos: 0,
            mode,
            literal: false,
        }
    }

    fn parse(&mut self, data: &mut Values) -> Result<(), StrvalsError> {
        loop {
            match self.key(data, 0) {
                Ok(()) => continue,
                Err(Err::Eof) => return Ok(()),
                Err(Err::NotList) => return Err(StrvalsError("not a list".into())),
                Err(Err::Msg(m)) => return Err(StrvalsError(m)),
            }
        }
    }

    fn read(&mut self) -> Option<char> {
        let c = self.sc.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    /// `runesUntil` (with `\` escapes) or `runesUntilLiteral` (without).
    fn until(&mut self, stop: &[char]) -> Result<Scan, (Vec<char>, Err)> {
        let mut v = Vec::new();
        loop {
            let Some(r) = self.read() else {
                return Err((v, Err::Eof));
            };
            if stop.contains(&r) {
                return Ok((v, Some(r)));
            }
            if r == '\\' && !self.literal {
                match self.read() {
                    Some(n) => v.push(n),
                    None => return Err((v, Err::Eof)),
                }
                continue;
            }
            v.push(r);
        }
    }

    fn reader(&self, rs: &[char]) -> Result<Json, Err> {
        match self.mode {
            Mode::Typed => Ok(typed_val(rs, false)),
            Mode::Strings | Mode::Json => Ok(typed_val(rs, true)),
            Mode::File(f) => {
                let path: String = rs.iter().collect();
                f(&path).map_err(Err::Msg)
            }
        }
    }

    fn key(&mut self, data: &mut Values, mut level: usize) -> Result<(), Err> {
        let stop: &[char] = if self.literal {
            &['=', '[', '.']
        } else {
            &['=', '[', ',', '.']
        };
        let (k, last) = match self.until(stop) {
            Ok(x) => x,
            Err((k, e)) => {
                if k.is_empty() {
                    return Err(e);
                }
                let k: String = k.iter().collect();
                return err(format!("key {} has no value", quote(&k)));
            }
        };
        let k: String = k.iter().collect();
        match last {
            Some('[') => {
                let i = self
                    .key_index()
                    .map_err(|e| Err::Msg(format!("error parsing index: {}", msg(e))))?;
                let mut list = match data.get(&k) {
                    None => Vec::new(),
                    Some(Json::Array(a)) => a.clone(),
                    Some(other) => return Err(conversion_panic(other, "[]interface {}")),
                };
                let res = self.list_item(&mut list, i, level);
                set(data, &k, Json::Array(list));
                res
            }
            Some('=') => {
                if self.literal {
                    let value = self.literal_val();
                    set(data, &k, Json::String(value));
                    return Ok(());
                }
                if let Mode::Json = self.mode {
                    if self.empty_val() {
                        set(data, &k, Json::Null);
                        return Ok(());
                    }
                    let v = self.json_value()?;
                    set(data, &k, v);
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list() {
                    Ok(vl) => {
                        set(data, &k, Json::Array(vl));
                        Ok(())
                    }
                    Err(Err::Eof) => {
                        set(data, &k, Json::String(String::new()));
                        Err(Err::Eof)
                    }
                    Err(Err::NotList) => {
                        let rs = self.val();
                        let v = self.reader(&rs);
                        match v {
                            Ok(v) => {
                                set(data, &k, v);
                                Ok(())
                            }
                            Err(e) => {
                                set(data, &k, Json::Null);
                                Err(e)
                            }
                        }
                    }
                    Err(e) => Err(e),
                }
            }
            Some(',') => {
                set(data, &k, Json::String(String::new()));
                err(format!(
                    "key {} has no value (cannot end with ,)",
                    quote(&k)
                ))
            }
            Some('.') => {
                level += 1;
                if level > MAX_NESTED_NAME_LEVEL {
                    return err(format!(
                        "value name nested level is greater than maximum supported nested level of {MAX_NESTED_NAME_LEVEL}"
                    ));
                }
                let mut inner = match data.get(&k) {
                    None => Values::new(),
                    Some(Json::Object(m)) => m.clone(),
                    Some(other) => return Err(conversion_panic(other, "map[string]interface {}")),
                };
                let e = self.key(&mut inner, level);
                if e.is_ok() && inner.is_empty() {
                    return err(format!("key map {} has no value", quote(&k)));
                }
                if !inner.is_empty() {
                    set(data, &k, Json::Object(inner));
                }
                e
            }
            _ => err("parse error"),
        }
    }

    fn key_index(&mut self) -> Result<i64, Err> {
        let (v, _) = self.until(&[']']).map_err(|(_, e)| e)?;
        let s: String = v.iter().collect();
        go_atoi(&s).map_err(Err::Msg)
    }

    fn list_item(&mut self, list: &mut Vec<Json>, i: i64, level: usize) -> Result<(), Err> {
        if i < 0 {
            return err(format!("negative {i} index not allowed"));
        }
        let (k, last) = match self.until(&['[', '.', '=']) {
            Ok(x) => x,
            Err((k, e)) => {
                if !k.is_empty() {
                    return err(format!(
                        "unexpected data at end of array index: {}",
                        quote_runes(&k)
                    ));
                }
                return Err(e);
            }
        };
        if !k.is_empty() {
            return err(format!(
                "unexpected data at end of array index: {}",
                quote_runes(&k)
            ));
        }
        match last {
            Some('=') => {
                if self.literal {
                    let value = self.literal_val();
                    return set_index(list, i, Json::String(value));
                }
                if let Mode::Json = self.mode {
                    if self.empty_val() {
                        return set_index(list, i, Json::Null);
                    }
                    let v = self.json_value()?;
                    set_index(list, i, v)?;
                    self.empty_val();
                    return Ok(());
                }
                match self.val_list() {
                    Ok(vl) => set_index(list, i, Json::Array(vl)),
                    Err(Err::Eof) => set_index(list, i, Json::String(String::new())),
                    Err(Err::NotList) => {
                        let rs = self.val();
                        let v = self.reader(&rs)?;
                        set_index(list, i, v)
                    }
                    Err(e) => Err(e),
                }
            }
            Some('[') => {
                let next = self
                    .key_index()
                    .map_err(|e| Err::Msg(format!("error parsing index: {}", msg(e))))?;
                let mut crt = match list.get(i as usize) {
                    None | Some(Json::Null) => Vec::new(),
                    Some(Json::Array(a)) => a.clone(),
                    Some(other) => return Err(conversion_panic(other, "[]interface {}")),
                };
                self.list_item(&mut crt, next, level)?;
                set_index(list, i, Json::Array(crt))
            }
            Some('.') => {
                let mut inner = match list.get(i as usize) {
                    Some(Json::Object(m)) => m.clone(),
                    _ => Values::new(),
                };
                self.key(&mut inner, level)?;
                set_index(list, i, Json::Object(inner))
            }
            _ => err("parse error: unexpected token"),
        }
    }

    /// Skips spaces; true at the end or after a comma.
    fn empty_val(&mut self) -> bool {
        loop {
            match self.read() {
                None => return true,
                Some(',') => return true,
                Some(c) if c.is_whitespace() => {}
                Some(_) => {
                    self.unread();
                    return false;
                }
            }
        }
    }

    fn json_value(&mut self) -> Result<Json, Err> {
        let rest: String = self.sc[self.pos..].iter().collect();
        // As deep as Go's decoder reads, on the stack that takes (serde_json
        // alone stops at 128 levels).
        let depth = gocodec::depth::json_text_depth(rest.as_bytes());
        if depth > gocodec::depth::MAX_DEPTH {
            return err(format!(
                "exceeded max depth of {}",
                gocodec::depth::MAX_DEPTH
            ));
        }
        let mut de = serde_json::Deserializer::from_str(&rest);
        de.disable_recursion_limit();
        let mut stream = de.into_iter::<Json>();
        let next = gocodec::depth::with_stack_for(depth, 2048, || stream.next());
        match next {
            Some(Ok(v)) => {
                let consumed = rest[..stream.byte_offset()].chars().count();
                self.pos += consumed;
                Ok(gocodec::depth::with_stack_for(depth, 1024, || {
                    json_floats(v)
                }))
            }
            Some(Err(e)) => err(e.to_string()),
            None => err("unexpected EOF"),
        }
    }

    fn val(&mut self) -> Vec<char> {
        match self.until(&[',']) {
            Ok((v, _)) => v,
            Err((v, _)) => v,
        }
    }

    fn literal_val(&mut self) -> String {
        let s: String = self.sc[self.pos..].iter().collect();
        self.pos = self.sc.len();
        s
    }

    fn val_list(&mut self) -> Result<Vec<Json>, Err> {
        match self.read() {
            None => return Err(Err::Eof),
            Some('{') => {}
            Some(_) => {
                self.unread();
                return Err(Err::NotList);
            }
        }
        let mut list = Vec::new();
        loop {
            match self.until(&[',', '}']) {
                Err(_) => return err("list must terminate with '}'"),
                Ok((rs, Some('}'))) => {
                    match self.read() {
                        Some(',') | None => {}
                        Some(_) => self.unread(),
                    }
                    list.push(self.reader(&rs)?);
                    return Ok(list);
                }
                Ok((rs, _)) => list.push(self.reader(&rs)?),
            }
        }
    }
}

fn msg(e: Err) -> String {
    match e {
        Err::Eof => "EOF".into(),
        Err::NotList => "not a list".into(),
        Err::Msg(m) => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Json {
        Json::Object(parse(s).unwrap())
    }

    #[test]
    fn set_basics() {
        assert_eq!(p("name=value"), json!({"name": "value"}));
        assert_eq!(p("a.b=c,d=e"), json!({"a": {"b": "c"}, "d": "e"}));
        assert_eq!(
            p("a=1,b=true,c=null,d=0,e=01,f=-3,g=1.5,h=FALSE"),
            json!({"a": 1, "b": true, "c": null, "d": 0, "e": "01", "f": -3, "g": "1.5", "h": false})
        );
        assert!(p("a=1")["a"].is_i64());
        assert_eq!(p("a="), json!({"a": ""}));
        assert_eq!(p("a={x,y}"), json!({"a": ["x", "y"]}));
        assert_eq!(p("a={x,y},b=c"), json!({"a": ["x", "y"], "b": "c"}));
        assert_eq!(p("a[0]=x,a[2]=z"), json!({"a": ["x", null, "z"]}));
        assert_eq!(p("a[1].b=c"), json!({"a": [null, {"b": "c"}]}));
        assert_eq!(p("a[0][1]=c"), json!({"a": [[null, "c"]]}));
        assert_eq!(p(r"a=x\,y,b\.c=d"), json!({"a": "x,y", "b.c": "d"}));
        assert_eq!(p("a.b.c=1,a.b.d=2"), json!({"a": {"b": {"c": 1, "d": 2}}}));
    }

    #[test]
    fn set_errors() {
        let e = |s: &str| parse(s).unwrap_err().to_string();
        assert_eq!(e("a"), "key \"a\" has no value");
        assert_eq!(e("a,b=c"), "key \"a\" has no value (cannot end with ,)");
        assert_eq!(e("a={x,y"), "list must terminate with '}'");
        assert_eq!(
            e("a[x]=1"),
            "error parsing index: strconv.Atoi: parsing \"x\": invalid syntax"
        );
        assert_eq!(e("a[-1]=1"), "negative -1 index not allowed");
        assert_eq!(
            e("a[70000]=1"),
            "index of 70000 is greater than maximum supported index of 65536"
        );
        assert_eq!(e("a=1,a.b=2"), "unable to parse key: interface conversion: interface {} is int64, not map[string]interface {}");
    }

    #[test]
    fn set_string_and_literal() {
        let mut v = Values::new();
        parse_into_string("a=1,b=true,c=null", &mut v).unwrap();
        assert_eq!(Json::Object(v), json!({"a": "1", "b": "true", "c": "null"}));
        let mut v = Values::new();
        parse_literal_into("a.b=x,y={z}\\n", &mut v).unwrap();
        assert_eq!(Json::Object(v), json!({"a": {"b": "x,y={z}\\n"}}));
    }

    #[test]
    fn set_json() {
        let mut v = Values::new();
        parse_json(r#"a={"x": [1, 2]},b=,c="s""#, &mut v).unwrap();
        let j = Json::Object(v);
        assert_eq!(j, json!({"a": {"x": [1.0, 2.0]}, "b": null, "c": "s"}));
        assert!(j["a"]["x"][0].is_f64());
    }

    #[test]
    fn set_file() {
        let mut v = Values::new();
        let reader =
            |p: &str| -> Result<Json, String> { Ok(Json::String(format!("content of {p}"))) };
        parse_into_file("a=/tmp/x,b=/tmp/y", &mut v, &reader).unwrap();
        assert_eq!(
            Json::Object(v),
            json!({"a": "content of /tmp/x", "b": "content of /tmp/y"})
        );
    }

    #[test]
    fn merge_order() {
        let opts = ValueOptions {
            value_files: vec![
                json!({"a": {"b": 1, "c": 2}}).as_object().unwrap().clone(),
                json!({"a": {"c": 3}}).as_object().unwrap().clone(),
            ],
            values: vec!["a.d=4".into()],
            string_values: vec!["a.d=5".into()],
            ..Default::default()
        };
        let none = |_: &str| -> Result<Json, String> { Err("no files".into()) };
        let v = opts.merge(&none).unwrap();
        assert_eq!(Json::Object(v), json!({"a": {"b": 1, "c": 3, "d": "5"}}));
    }
}
