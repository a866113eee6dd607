//! YAML as Helm reads and writes it.
//!
//! Reading follows `sigs.k8s.io/yaml.Unmarshal` (go-yaml v2, YAML 1.1
//! typing, then JSON); writing follows `sigs.k8s.io/yaml.Marshal` for
//! `toYaml` and yaml.v3's encoder for `toYamlPretty`. The error texts are
//! the ones Helm shows, so template authors see the same messages.

mod emit;
mod parse;
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
    parse::to_json(parse::first_document(text)?)
}

/// Every non-empty document of a multi-document stream (manifests).
pub fn parse_yaml_documents(text: &str) -> Result<Vec<serde_json::Value>, YamlError> {
    parse::all_documents(text)?
        .into_iter()
        .map(parse::to_json)
        .filter(|r| !matches!(r, Ok(serde_json::Value::Null)))
        .collect()
}

/// Any YAML value, as `fromYaml` sees it after the JSON round trip
/// (numbers become float64).
pub fn parse_yaml_value(text: &str) -> Result<Value, YamlError> {
    Ok(Value::from_json(&parse_yaml_to_json(text)?))
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

/// `yaml.Unmarshal(text, &map[string]interface{}{})`: Helm's values files
/// and `fromYaml`. `null` and empty documents give an empty map.
pub fn parse_yaml_map(text: &str) -> Result<gotmpl::Map, YamlError> {
    match parse_yaml_to_json(text)? {
        serde_json::Value::Null => Ok(gotmpl::Map::new()),
        serde_json::Value::Object(o) => Ok(o
            .iter()
            .map(|(k, v)| (k.clone(), Value::from_json(v)))
            .collect()),
        other => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            json_kind(&other)
        ))),
    }
}

/// `yaml.Unmarshal(text, &[]interface{}{})`: `fromYamlArray`.
pub fn parse_yaml_list(text: &str) -> Result<Vec<Value>, YamlError> {
    match parse_yaml_to_json(text)? {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::Array(a) => Ok(a.iter().map(Value::from_json).collect()),
        other => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type []interface {{}}",
            json_kind(&other)
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

/// Helm's `toYamlPretty`: yaml.v3's encoder with indent 2, without the
/// final newline.
pub fn to_yaml_pretty(v: &Value) -> Result<String, YamlError> {
    let mut s = emit::Emitter::new(emit::Flavor::GoV3).document(v)?;
    if s.ends_with('\n') {
        s.pop();
    }
    Ok(s)
}
