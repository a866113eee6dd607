//! Reading YAML the way Helm does: go-yaml v2 decoding into `interface{}`
//! (first document only, YAML 1.1 typing, anchors, merge keys, duplicate
//! keys overwrite), then sigs.k8s.io/yaml's conversion to JSON (non-string
//! keys stringified, non-finite floats rejected).

use std::collections::HashMap;

use base64::Engine as _;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, ScanError, TScalarStyle};

use super::resolve::{resolve_plain, Resolved};
use super::YamlError;

/// A decoded YAML node, as go-yaml v2 hands it to `interface{}`.
#[derive(Clone, Debug)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// Aliases may expand a document; refuse a billion-laughs blow-up.
const MAX_NODES: usize = 10_000_000;

struct Builder<'a> {
    text: &'a str,
    parser: Parser<std::str::Chars<'a>>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
}

/// Messages yaml-rust2's parser (not its scanner) produces; go-yaml numbers
/// the lines of the two kinds of error differently.
const PARSER_MESSAGES: &[&str] = &[
    "while parsing a block mapping",
    "while parsing a flow sequence",
    "while parsing a flow mapping",
    "while parsing a block collection",
    "while parsing a node",
    "did not find expected node content",
    "did not find expected <",
    "did not find expected next token",
    "invalid content after document end marker",
    "found incompatible YAML document",
];

/// Rewords a yaml-rust2 error as go-yaml (libyaml) words it, with go-yaml's
/// line numbering: scanner errors give the 1-based line, parser errors the
/// 0-based one, and neither is shown when it would be 0.
fn scan_err(text: &str, e: ScanError) -> YamlError {
    let info = e.info();
    let mark = e.marker();
    if info.contains("unknown anchor") {
        let name: String = text
            .chars()
            .skip(mark.index())
            .skip_while(|&c| c != '*')
            .skip(1)
            .take_while(|c| !c.is_whitespace() && !",[]{}".contains(*c))
            .collect();
        return YamlError::Unmarshal(format!("unknown anchor '{name}' referenced"));
    }
    let is_parser = PARSER_MESSAGES.iter().any(|p| info.starts_with(p));
    let mut msg = info;
    if msg.starts_with("while ") {
        if let Some((_, rest)) = msg.split_once(", ") {
            msg = rest;
        }
    }
    let msg = if msg.starts_with("expected ") {
        format!("did not find {msg}")
    } else if msg.starts_with("unexpected character")
        || msg.starts_with("tabs disallowed")
        || msg == "tab cannot be used as indentation"
    {
        "found character that cannot start any token".to_string()
    } else if msg == "simple key expect ':'" {
        "could not find expected ':'".to_string()
    } else {
        msg.to_string()
    };
    let line = if is_parser {
        mark.line().saturating_sub(1)
    } else if mark.line() > 1 {
        mark.line()
    } else {
        0
    };
    if line == 0 {
        YamlError::Unmarshal(msg)
    } else {
        YamlError::Syntax { line, msg }
    }
}

fn syntax(mark: &Marker, msg: impl Into<String>) -> YamlError {
    YamlError::Syntax {
        line: mark.line(),
        msg: msg.into(),
    }
}

impl<'a> Builder<'a> {
    fn new(text: &'a str) -> Self {
        // A byte order mark is not content.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Builder {
            text,
            parser: Parser::new_from_str(text),
            anchors: HashMap::new(),
            nodes: 0,
        }
    }

    fn next(&mut self) -> Result<(Event, Marker), YamlError> {
        self.parser.next_token().map_err(|e| scan_err(self.text, e))
    }

    /// The next document's root, or `None` at the end of the stream.
    fn document(&mut self) -> Result<Option<Node>, YamlError> {
        loop {
            let (ev, mark) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing => continue,
                Event::StreamEnd => return Ok(None),
                Event::DocumentStart => break,
                // yaml-rust2 always opens a document first; be lenient anyway.
                other => return self.node(other, &mark).map(Some),
            }
        }
        let (ev, mark) = self.next()?;
        let root = match ev {
            Event::DocumentEnd => return Ok(Some(Node::Null)),
            ev => self.node(ev, &mark)?,
        };
        let (ev, mark) = self.next()?;
        if !matches!(ev, Event::DocumentEnd) {
            return Err(syntax(&mark, "did not find expected <document end>"));
        }
        self.anchors.clear();
        Ok(Some(root))
    }

    fn count(&mut self, mark: &Marker) -> Result<(), YamlError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(syntax(mark, "document contains excessive aliasing"));
        }
        Ok(())
    }

    fn node(&mut self, ev: Event, mark: &Marker) -> Result<Node, YamlError> {
        self.count(mark)?;
        match ev {
            Event::Scalar(value, style, anchor, tag) => {
                let n = scalar(value, style, tag.as_ref(), mark)?;
                if anchor > 0 {
                    self.anchors.insert(anchor, n.clone());
                }
                Ok(n)
            }
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(n) => {
                    let n = n.clone();
                    self.nodes += approx_size(&n);
                    if self.nodes > MAX_NODES {
                        return Err(syntax(mark, "document contains excessive aliasing"));
                    }
                    Ok(n)
                }
                None => Err(syntax(mark, "unknown anchor referenced")),
            },
            Event::SequenceStart(anchor, _tag) => {
                let mut items = Vec::new();
                loop {
                    let (ev, m) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(ev, &m)?);
                }
                let n = Node::Seq(items);
                if anchor > 0 {
                    self.anchors.insert(anchor, n.clone());
                }
                Ok(n)
            }
            Event::MappingStart(anchor, _tag) => {
                let mut entries = Entries::default();
                loop {
                    let (ev, m) = self.next()?;
                    if matches!(ev, Event::MappingEnd) {
                        break;
                    }
                    let is_merge =
                        matches!(&ev, Event::Scalar(v, TScalarStyle::Plain, _, None) if v == "<<");
                    let key = self.node(ev, &m)?;
                    let (vev, vm) = self.next()?;
                    let value = self.node(vev, &vm)?;
                    if is_merge {
                        merge_into(&mut entries, value, &m)?;
                    } else {
                        if matches!(key, Node::Seq(_) | Node::Map(_)) {
                            return Err(YamlError::Unmarshal(format!(
                                "invalid map key: {}",
                                go_sharp_v(&key)
                            )));
                        }
                        entries.set(key, value);
                    }
                }
                let n = Node::Map(entries.list);
                if anchor > 0 {
                    self.anchors.insert(anchor, n.clone());
                }
                Ok(n)
            }
            _ => Err(syntax(mark, "did not find expected node content")),
        }
    }
}

fn approx_size(n: &Node) -> usize {
    match n {
        Node::Seq(v) => 1 + v.iter().map(approx_size).sum::<usize>(),
        Node::Map(v) => 1 + v.iter().map(|(_, x)| 1 + approx_size(x)).sum::<usize>(),
        _ => 1,
    }
}

/// A mapping being built. The same key set twice keeps its first position
/// and takes the later value, as a Go map does; string keys are indexed so
/// large mappings stay linear.
#[derive(Default)]
struct Entries {
    list: Vec<(Node, Node)>,
    by_str: HashMap<String, usize>,
}

impl Entries {
    fn set(&mut self, key: Node, value: Node) {
        if let Node::Str(k) = &key {
            match self.by_str.get(k) {
                Some(&i) => self.list[i].1 = value,
                None => {
                    self.by_str.insert(k.clone(), self.list.len());
                    self.list.push((key, value));
                }
            }
            return;
        }
        if let Some(slot) = self.list.iter_mut().find(|(k, _)| same_key(k, &key)) {
            slot.1 = value;
        } else {
            self.list.push((key, value));
        }
    }
}

fn same_key(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Null, Node::Null) => true,
        (Node::Bool(x), Node::Bool(y)) => x == y,
        (Node::Int(x), Node::Int(y)) => x == y,
        (Node::Uint(x), Node::Uint(y)) => x == y,
        (Node::Float(x), Node::Float(y)) => x == y,
        (Node::Str(x), Node::Str(y)) => x == y,
        _ => false,
    }
}

fn merge_into(entries: &mut Entries, value: Node, mark: &Marker) -> Result<(), YamlError> {
    const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
    match value {
        Node::Map(m) => {
            for (k, v) in m {
                entries.set(k, v);
            }
            Ok(())
        }
        Node::Seq(items) => {
            // Earlier maps take precedence, so apply them last.
            for item in items.into_iter().rev() {
                match item {
                    Node::Map(m) => {
                        for (k, v) in m {
                            entries.set(k, v);
                        }
                    }
                    _ => return Err(syntax(mark, WANT_MAP)),
                }
            }
            Ok(())
        }
        _ => Err(syntax(mark, WANT_MAP)),
    }
}

fn scalar(
    value: String,
    style: TScalarStyle,
    tag: Option<&Tag>,
    mark: &Marker,
) -> Result<Node, YamlError> {
    let tag_name = tag.map(|t| {
        if t.handle == "tag:yaml.org,2002:" {
            format!("!!{}", t.suffix)
        } else {
            format!("{}{}", t.handle, t.suffix)
        }
    });
    let plain = matches!(style, TScalarStyle::Plain);
    match tag_name.as_deref() {
        None if plain => Ok(from_resolved(resolve_plain(&value), value)),
        None => Ok(Node::Str(value)),
        Some("!!str") => Ok(Node::Str(value)),
        Some("!!binary") => {
            let cleaned: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            match base64::engine::general_purpose::STANDARD.decode(cleaned.as_bytes()) {
                Ok(bytes) => Ok(Node::Str(String::from_utf8_lossy(&bytes).into_owned())),
                Err(e) => Err(syntax(
                    mark,
                    format!("!!binary value contains invalid base64 data: {e}"),
                )),
            }
        }
        Some(t @ ("!!int" | "!!float" | "!!bool" | "!!null" | "!!timestamp")) => {
            let r = resolve_plain(&value);
            let ok = match (t, &r) {
                ("!!int", Resolved::Int(_) | Resolved::Uint(_)) => true,
                ("!!float", Resolved::Int(_) | Resolved::Uint(_)) => {
                    // An int under !!float becomes a float.
                    let f = match r {
                        Resolved::Int(i) => i as f64,
                        Resolved::Uint(u) => u as f64,
                        _ => 0.0,
                    };
                    return Ok(Node::Float(f));
                }
                ("!!float", Resolved::Float(_)) => true,
                ("!!bool", Resolved::Bool(_)) => true,
                ("!!null", Resolved::Null) => true,
                ("!!timestamp", Resolved::Timestamp) => true,
                _ => false,
            };
            if ok {
                Ok(from_resolved(r, value))
            } else {
                let rtag = match r {
                    Resolved::Null => "!!null",
                    Resolved::Bool(_) => "!!bool",
                    Resolved::Int(_) | Resolved::Uint(_) => "!!int",
                    Resolved::Float(_) => "!!float",
                    Resolved::Timestamp => "!!timestamp",
                    Resolved::Str => "!!str",
                };
                let _ = mark;
                Err(YamlError::Unmarshal(format!(
                    "cannot decode {rtag} `{value}` as a {t}"
                )))
            }
        }
        // Unknown and local tags leave the text as it is.
        Some(_) => {
            if plain {
                Ok(from_resolved(resolve_plain(&value), value))
            } else {
                Ok(Node::Str(value))
            }
        }
    }
}

fn from_resolved(r: Resolved, text: String) -> Node {
    match r {
        Resolved::Null => Node::Null,
        Resolved::Bool(b) => Node::Bool(b),
        Resolved::Int(i) => Node::Int(i),
        Resolved::Uint(u) => Node::Uint(u),
        Resolved::Float(f) => Node::Float(f),
        Resolved::Timestamp | Resolved::Str => Node::Str(text),
    }
}

fn check_reader(text: &str) -> Result<(), YamlError> {
    if text.chars().any(super::reader_rejects) {
        return Err(YamlError::Unmarshal(
            "control characters are not allowed".into(),
        ));
    }
    Ok(())
}

/// The first document (go-yaml's `Unmarshal`); `Node::Null` when there is none.
pub(crate) fn first_document(text: &str) -> Result<Node, YamlError> {
    check_reader(text)?;
    let mut b = Builder::new(text);
    Ok(b.document()?.unwrap_or(Node::Null))
}

/// Every document of a stream.
pub(crate) fn all_documents(text: &str) -> Result<Vec<Node>, YamlError> {
    check_reader(text)?;
    let mut b = Builder::new(text);
    let mut out = Vec::new();
    while let Some(d) = b.document()? {
        out.push(d);
    }
    Ok(out)
}

/// sigs.k8s.io/yaml's float key: `strconv.FormatFloat(f, 'g', -1, 32)`,
/// with non-finite values spelled the YAML way.
fn float_key(f: f64) -> String {
    match crate::json::format_float_g32(f).as_str() {
        "NaN" => ".nan".into(),
        "+Inf" => ".inf".into(),
        "-Inf" => "-.inf".into(),
        s => s.to_string(),
    }
}

/// sigs.k8s.io/yaml's `convertToJSONableObject` followed by `json.Marshal`.
pub(crate) fn to_json(n: Node) -> Result<serde_json::Value, YamlError> {
    use serde_json::Value as J;
    Ok(match n {
        Node::Null => J::Null,
        Node::Bool(b) => J::Bool(b),
        Node::Int(i) => J::from(i),
        Node::Uint(u) => J::from(u),
        Node::Float(f) => match serde_json::Number::from_f64(f) {
            Some(n) => J::Number(n),
            None => {
                let shown = if f.is_nan() {
                    "NaN"
                } else if f > 0.0 {
                    "+Inf"
                } else {
                    "-Inf"
                };
                return Err(YamlError::Convert(format!(
                    "json: unsupported value: {shown}"
                )));
            }
        },
        Node::Str(s) => J::String(s),
        Node::Seq(items) => J::Array(items.into_iter().map(to_json).collect::<Result<_, _>>()?),
        Node::Map(entries) => {
            let mut m = serde_json::Map::new();
            for (k, v) in entries {
                let key = match k {
                    Node::Str(s) => s,
                    Node::Int(i) => i.to_string(),
                    Node::Float(f) => float_key(f),
                    Node::Bool(b) => b.to_string(),
                    Node::Uint(u) => {
                        return Err(YamlError::Convert(format!(
                            "unsupported map key of type: uint64, key: 0x{u:x}, value: {}",
                            short(&v)
                        )))
                    }
                    Node::Null => {
                        return Err(YamlError::Convert(format!(
                            "unsupported map key of type: %!s(<nil>), key: <nil>, value: {}",
                            short(&v)
                        )))
                    }
                    Node::Seq(_) | Node::Map(_) => {
                        return Err(YamlError::Convert("invalid map key".into()));
                    }
                };
                m.insert(key, to_json(v)?);
            }
            J::Object(m)
        }
    })
}

/// Go's `%#v` of a decoded key, for go-yaml's "invalid map key" message.
fn go_sharp_v(n: &Node) -> String {
    match n {
        Node::Null => "interface {}(nil)".into(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Uint(u) => format!("0x{u:x}"),
        Node::Float(f) => crate::json::format_float_g(*f),
        Node::Str(s) => format!("{s:?}"),
        Node::Seq(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Node::Map(entries) => format!(
            "map[interface {{}}]interface {{}}{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}:{}", go_sharp_v(k), go_sharp_v(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn short(n: &Node) -> String {
    match n {
        Node::Null => "<nil>".into(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Uint(u) => u.to_string(),
        Node::Float(f) => crate::json::format_float_g(*f),
        Node::Str(s) => format!("{s:?}"),
        Node::Seq(_) => "[]interface {}{...}".into(),
        Node::Map(_) => "map[interface {}]interface {}{...}".into(),
    }
}
