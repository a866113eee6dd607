//! YAML as Helm reads and writes it.
//!
//! Reading follows `sigs.k8s.io/yaml.Unmarshal` (go-yaml v2, YAML 1.1
//! typing, then JSON); writing follows `sigs.k8s.io/yaml.Marshal` for
//! `toYaml` and yaml.v3's encoder for `toYamlPretty`. The error texts are
//! the ones Helm shows, so template authors see the same messages.

mod emit;
mod parse;
mod pick;
pub(crate) mod resolve;

use gotmpl::Value;

/// A YAML read or write failure, worded as Helm words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The text is not YAML.
    #[error("error converting YAML to JSON: yaml: line {line}: {msg}")]
    Syntax { line: usize, msg: String },
    /// Valid YAML that go-yaml cannot decode (a bad `!!int` and the like).
    #[error("error converting YAML to JSON: yaml: {0}")]
    Unmarshal(String),
    /// YAML that has no JSON form (`.inf`, a null key …).
    #[error("error converting YAML to JSON: {0}")]
    Convert(String),
    /// The JSON form does not fit the Go type asked for.
    #[error("error unmarshaling JSON: while decoding JSON: {0}")]
    Decode(String),
    /// A value that cannot be written as YAML.
    #[error("{0}")]
    Marshal(String),
}

/// Characters libyaml's reader refuses anywhere in its input.
pub(crate) fn reader_rejects(c: char) -> bool {
    let u = c as u32;
    !(c == '\t'
        || c == '\n'
        || c == '\r'
        || (0x20..=0x7E).contains(&u)
        || u == 0x85
        || (0xA0..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u)
        || u >= 0x10000)
}

/// Reads the first YAML document the way `sigs.k8s.io/yaml.Unmarshal` does
/// before the JSON decoding step: YAML 1.1 typing, anchors and merge keys,
/// later duplicate keys winning, non-string keys turned into strings. An
/// empty document gives `null`.
pub fn parse_yaml_to_json(text: &str) -> Result<serde_json::Value, YamlError> {
    match parse::first_document(text) {
        Ok(doc) => parse::to_json(doc),
        Err(e) => deep_json(text, e),
    }
}

/// The values at `paths` (each a list of mapping keys from the root) of
/// what [`parse_yaml_to_json`] gives for `text`, in `paths` order: `None`
/// where a key is missing or a value on the way is not a mapping. The
/// document is decoded and checked in full, so it fails where
/// [`parse_yaml_to_json`] fails, with the same error; only the JSON of the
/// rest of it is never built. Sorting rendered manifests reads each
/// document's head this way.
///
/// # Panics
///
/// When one path is a prefix of another (or two are the same): each value
/// is picked once.
pub fn parse_yaml_picks(
    text: &str,
    paths: &[&[&str]],
) -> Result<Vec<Option<serde_json::Value>>, YamlError> {
    assert!(
        paths.iter().enumerate().all(|(i, a)| paths[i + 1..]
            .iter()
            .all(|b| !a.starts_with(b) && !b.starts_with(a))),
        "no path may be a prefix of another"
    );
    match parse::first_document(text) {
        Ok(doc) => pick::pick(doc, paths),
        Err(e) => deep_json(text, e).map(|doc| pick::pick_json(doc, paths)),
    }
}

/// Every non-empty document of a multi-document stream (manifests).
pub fn parse_yaml_documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    let docs = match parse::all_documents(text) {
        Ok(docs) => docs,
        Err(e) => return deep_json(text, e).map(|v| vec![v]),
    };
    docs.into_iter()
        .map(parse::to_json)
        .filter(|r| !matches!(r, Ok(serde_json::Value::Null)))
        .collect()
}

/// yaml-rust2 counts flow nesting in a byte and stops at 255 levels, where
/// go-yaml goes to 10,000. Deep flow collections are in practice JSON (a
/// `.json` values file, `toJson` output), which reads the same as JSON
/// and as YAML: such text is read as JSON instead. Anything else keeps the
/// YAML error.
fn deep_json(text: &str, yaml_error: YamlError) -> Result<serde_json::Value, YamlError> {
    if !parse::is_flow_depth_error(&yaml_error) {
        return Err(yaml_error);
    }
    let body = text.strip_prefix('\u{feff}').unwrap_or(text).trim_start();
    if !body.starts_with(['{', '[']) {
        return Err(flow_depth_error(yaml_error));
    }
    match crate::depth::parse_json_text(body.as_bytes()) {
        Ok(v) => Ok(v),
        Err(e) if e.starts_with("exceeded max depth") => Err(YamlError::Unmarshal(e)),
        Err(_) => Err(flow_depth_error(yaml_error)),
    }
}

/// The flow nesting yaml-rust2 stops at.
pub const MAX_FLOW_DEPTH: usize = 255;

/// yaml-rust2's "recursion limit exceeded", said so that a user can act on it:
/// the depth reached, where Helm stops, and the form that reads deeper.
fn flow_depth_error(e: YamlError) -> YamlError {
    let msg = format!(
        "flow collections ([...] or {{...}}) nest deeper than {MAX_FLOW_DEPTH} levels, the most \
         rudder reads in YAML flow style (Helm reads {}); write them in block style, or the \
         whole document as JSON",
        crate::depth::MAX_DEPTH
    );
    match e {
        YamlError::Syntax { line, .. } => YamlError::Syntax { line, msg },
        _ => YamlError::Unmarshal(msg),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// [`parse_yaml_to_json`], remembered per thread by text: templates call
/// `fromYaml` on the same text in every render (and often several times
/// in one). The tree is shared; callers convert it into fresh values.
fn parse_yaml_shared(text: &str) -> Result<std::rc::Rc<serde_json::Value>, YamlError> {
    use std::cell::RefCell;
    thread_local! {
        static MEMO: RefCell<crate::memo::Memo<Result<std::rc::Rc<serde_json::Value>, YamlError>>> =
            RefCell::new(crate::memo::Memo::new(16 << 20));
    }
    if let Some(v) = MEMO.with(|m| m.borrow().get(text.as_bytes())) {
        return v;
    }
    let v = parse_yaml_to_json(text).map(std::rc::Rc::new);
    MEMO.with(|m| m.borrow_mut().put(text.as_bytes(), v.clone()));
    v
}

/// `yaml.Unmarshal(text, &map[string]interface{}{})`: Helm's values files
/// and `fromYaml`. `null` and empty documents give an empty map.
pub fn parse_yaml_map(text: &str) -> Result<gotmpl::Map, YamlError> {
    match &*parse_yaml_shared(text)? {
        serde_json::Value::Null => Ok(gotmpl::Map::new()),
        serde_json::Value::Object(o) => Ok(o
            .iter()
            .map(|(k, v)| (k.clone(), Value::from_json(v)))
            .collect()),
        other => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(other)
        ))),
    }
}

/// `yaml.Unmarshal(text, &[]interface{}{})`: `fromYamlArray`.
pub fn parse_yaml_list(text: &str) -> Result<Vec<Value>, YamlError> {
    match &*parse_yaml_shared(text)? {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Array(a) => Ok(a.iter().map(Value::from_json).collect()),
        other => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type []interface {{}}",
            json_kind(other)
        ))),
    }
}

/// Helm's `toYaml`: `sigs.k8s.io/yaml.Marshal` without the final newline.
pub fn to_yaml(v: &Value) -> Result<String, YamlError> {
    let mut s = emit::Emitter::new(emit::Flavor::JsonV2).document(v)?;
    if s.ends_with('\n') {
        s.pop();
    }
    Ok(s)
}

/// [`to_yaml`] of a plain JSON value (a Kubernetes object, a release's
/// values): what `sigs.k8s.io/yaml.Marshal` writes for it, without the final
/// newline.
pub fn json_to_yaml(v: &serde_json::Value) -> Result<String, YamlError> {
    to_yaml(&Value::from_json(v))
}

/// Helm's `toYamlPretty`: yaml.v3's encoder with indent 2, without the
/// final newline.
pub fn to_yaml_pretty(v: &Value) -> Result<String, YamlError> {
    let mut s = emit::Emitter::new(emit::Flavor::GoV3).document(v)?;
    if s.ends_with('\n') {
        s.pop();
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn j(text: &str) -> serde_json::Value {
        parse_yaml_to_json(text).unwrap()
    }

    fn err(text: &str) -> String {
        parse_yaml_to_json(text).unwrap_err().to_string()
    }

    #[test]
    fn yaml_1_1_typing() {
        assert_eq!(
            j("a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: ~\nh:\ni: 2021-01-01\nj: 12:30"),
            json!({"a": true, "b": false, "c": true, "d": false, "e": true, "f": false,
                   "g": null, "h": null, "i": "2021-01-01", "j": "12:30"})
        );
        assert_eq!(
            j("a: 0777\nb: 0x1F\nc: 0o17\nd: 0b11\ne: +12\nf: -0x1F\ng: 1_000\nh: 1e3\ni: .5"),
            json!({"a": 511, "b": 31, "c": 15, "d": 3, "e": 12, "f": -31, "g": 1000, "h": 1000.0, "i": 0.5})
        );
        assert_eq!(
            j("a: 'yes'\nb: \"1\"\nc: !!str 2"),
            json!({"a": "yes", "b": "1", "c": "2"})
        );
    }

    #[test]
    fn keys_become_strings() {
        assert_eq!(
            j("on: 1\nn: 2\n1: one\n1.5: x\n3.14159265358979: pi\ntrue: t"),
            json!({"true": "t", "false": 2, "1": "one", "1.5": "x", "3.1415927": "pi"})
        );
        assert!(err("~: 1").contains("unsupported map key"));
    }

    #[test]
    fn anchors_merges_duplicates() {
        assert_eq!(
            j("base: &b\n  x: 1\n  w: 0\nd:\n  <<: *b\n  w: 2\ne: *b\nf: 1\nf: 2"),
            json!({"base": {"x": 1, "w": 0}, "d": {"x": 1, "w": 2}, "e": {"x": 1, "w": 0}, "f": 2})
        );
        assert_eq!(
            j("a: &a {p: 1}\nb: &b {p: 2, q: 2}\nc:\n  <<: [*a, *b]"),
            json!({"a": {"p": 1}, "b": {"p": 2, "q": 2}, "c": {"p": 1, "q": 2}})
        );
        assert_eq!(
            err("a: *nope"),
            "error converting YAML to JSON: yaml: unknown anchor 'nope' referenced"
        );
    }

    #[test]
    fn block_scalars() {
        assert_eq!(
            j("a: |\n  x\n  y\nb: >\n  x\n  y\nc: |-\n  x\nd: |+\n  x\n\ne: 1"),
            json!({"a": "x\ny\n", "b": "x y\n", "c": "x", "d": "x\n\n", "e": 1})
        );
    }

    #[test]
    fn errors_read_like_go_yaml() {
        assert_eq!(
            err("a: [bad"),
            "error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'"
        );
        assert_eq!(
            err("a: b: c"),
            "error converting YAML to JSON: yaml: mapping values are not allowed in this context"
        );
        assert_eq!(
            err("key:\n\tvalue"),
            "error converting YAML to JSON: yaml: line 2: found character that cannot start any token"
        );
        // A key with no ':' before the end of the stream (the golden of
        // Helm's template-with-invalid-yaml).
        assert_eq!(
            err("spec:\n  a: 1\ninvalid\n"),
            "error converting YAML to JSON: yaml: line 4: could not find expected ':'"
        );
        assert_eq!(
            err("a: .inf"),
            "error converting YAML to JSON: json: unsupported value: +Inf"
        );
        assert_eq!(
            err("a: !!int x"),
            "error converting YAML to JSON: yaml: cannot decode !!str `x` as a !!int"
        );
        assert_eq!(
            parse_yaml_map("just a string").unwrap_err().to_string(),
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type map[string]interface {}"
        );
    }

    #[test]
    fn documents() {
        assert_eq!(j(""), serde_json::Value::Null);
        assert!(parse_yaml_map("# nothing\n").unwrap().is_empty());
        assert_eq!(j("a: 1\n---\nb: 2"), json!({"a": 1}));
        assert_eq!(
            parse_yaml_documents("---\na: 1\n---\n---\nb: 2\n").unwrap(),
            vec![json!({"a": 1}), json!({"b": 2})]
        );
    }

    fn to(v: serde_json::Value) -> String {
        to_yaml(&Value::from_json(&v)).unwrap()
    }

    #[test]
    fn to_yaml_layout_and_quoting() {
        assert_eq!(
            to(json!({"list": ["a", {"b": 1, "c": [1, 2]}], "m": {"n": {}}, "e": [], "s": "yes"})),
            "e: []\nlist:\n- a\n- b: 1\n  c:\n  - 1\n  - 2\nm:\n  \"n\": {}\ns: \"yes\""
        );
        assert_eq!(to(json!({"k": "a\nb\n"})), "k: |\n  a\n  b");
        assert_eq!(to(json!({"k": " lead\nx"})), "k: |2-\n   lead\n  x");
        assert_eq!(to(json!({"k": "trail \nx"})), "k: \"trail \\nx\"");
        assert_eq!(
            to(json!({"k": "a: b", "l": "#c", "m": "x, y", "n": "😀"})),
            "k: 'a: b'\nl: '#c'\nm: x, y\n\"n\": \"\\U0001F600\""
        );
        assert_eq!(
            to(json!({"k": 1e6, "f": 1.5, "g": 1e21, "h": 1e-7})),
            "f: 1.5\ng: 1e+21\nh: 1e-07\nk: 1000000"
        );
        assert_eq!(
            to(json!({"k": "word ".repeat(20).trim_end()})),
            "k: word word word word word word word word word word word word word word word word\n  word word word word"
        );
        assert_eq!(to(json!("plain")), "plain");
        assert_eq!(to(json!(null)), "null");
    }

    #[test]
    fn to_yaml_pretty_indents_lists() {
        let v = Value::from_json(
            &json!({"a": [1, 2], "b": {"c": [{"d": 1e6}]}, "w": "word ".repeat(20)}),
        );
        assert_eq!(
            to_yaml_pretty(&v).unwrap(),
            format!(
                "a:\n  - 1\n  - 2\nb:\n  c:\n    - d: 1e+06\nw: '{}'",
                "word ".repeat(20)
            )
        );
    }
}
