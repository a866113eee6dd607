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
#[derive(Debug)]
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

struct Builder<'a> {
    text: &'a str,
    parser: Parser<std::str::Chars<'a>>,
    anchors: HashMap<usize, Anchored>,
    /// The collections being read, innermost last: an explicit stack, so
    /// nesting costs heap, not call stack, and a document nested past the
    /// limit is refused before it is built.
    open: Vec<Frame>,
    aliasing: AliasBudget,
}

/// A finished anchored node, with what go-yaml would spend decoding it again
/// at each alias and how deep it nests.
struct Anchored {
    node: Node,
    cost: usize,
    depth: usize,
}

/// A collection being read.
struct Frame {
    anchor: usize,
    /// `decoded` when the collection started: its own decode cost is the
    /// difference at its end.
    cost_start: usize,
    /// How deep the deepest finished child nests (0 for scalars).
    child_depth: usize,
    kind: FrameKind,
}

enum FrameKind {
    Seq(Vec<Node>),
    Map {
        entries: Entries,
        /// The key read, waiting for its value, and whether it is `<<`.
        key: Option<(Node, bool, Marker)>,
    },
}

/// go-yaml's defence against alias expansion (billion laughs), counted as
/// its decoder counts: every node decoded, and those decoded again through
/// an alias. Small documents may be almost all aliases, large ones only a
/// tenth (`allowedAliasRatio` in yaml.v2 and yaml.v3).
#[derive(Default)]
struct AliasBudget {
    decoded: usize,
    aliased: usize,
}

impl AliasBudget {
    fn allowed_ratio(decoded: usize) -> f64 {
        const LOW: usize = 400_000;
        const HIGH: usize = 4_000_000;
        if decoded <= LOW {
            0.99
        } else if decoded >= HIGH {
            0.10
        } else {
            0.99 - 0.89 * ((decoded - LOW) as f64 / (HIGH - LOW) as f64)
        }
    }

    /// Counts decoding `cost` nodes again through an alias; refuses before
    /// any of them is built when that makes the document mostly aliases.
    fn alias(&mut self, cost: usize) -> Result<(), YamlError> {
        self.decoded += 1 + cost;
        self.aliased += cost;
        // The ratio only grows while an alias is expanded and the allowance
        // only shrinks, so checking once at its end is checking every node.
        if self.aliased > 100
            && self.decoded > 1000
            && self.aliased as f64 / self.decoded as f64 > Self::allowed_ratio(self.decoded)
        {
            return Err(YamlError::Unmarshal(
                "document contains excessive aliasing".into(),
            ));
        }
        Ok(())
    }
}

use crate::depth::{guarded, MAX_DEPTH};

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
    } else if msg == "simple key expect ':'" || msg == "simple key expected" {
        // libyaml says this of a required simple key whether it goes stale
        // or the stream ends without its ':'.
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

/// What yaml-rust2 says past 255 levels of flow nesting.
const FLOW_DEPTH_MESSAGE: &str = "recursion limit exceeded";

/// Whether `e` is yaml-rust2 stopping at its flow nesting limit.
pub(crate) fn is_flow_depth_error(e: &YamlError) -> bool {
    match e {
        YamlError::Syntax { msg, .. } | YamlError::Unmarshal(msg) => msg == FLOW_DEPTH_MESSAGE,
        _ => false,
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
            open: Vec::new(),
            aliasing: AliasBudget::default(),
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
                other => return self.node(other, mark).map(Some),
            }
        }
        self.aliasing.decoded += 1;
        let (ev, mark) = self.next()?;
        let root = match ev {
            Event::DocumentEnd => return Ok(Some(Node::Null)),
            ev => self.node(ev, mark)?,
        };
        let (ev, mark) = self.next()?;
        if !matches!(ev, Event::DocumentEnd) {
            return Err(syntax(&mark, "did not find expected <document end>"));
        }
        self.anchors.clear();
        Ok(Some(root))
    }

    /// Reads the node that `ev` starts, to its end.
    fn node(&mut self, mut ev: Event, mut mark: Marker) -> Result<Node, YamlError> {
        loop {
            let finished = match ev {
                Event::Scalar(value, style, anchor, tag) => {
                    self.aliasing.decoded += 1;
                    let is_merge =
                        value == "<<" && matches!(style, TScalarStyle::Plain) && tag.is_none();
                    let n = scalar(value, style, tag.as_ref(), &mark)?;
                    if anchor > 0 {
                        self.anchor(anchor, &n, 1, 0);
                    }
                    Some((n, 0, is_merge))
                }
                Event::Alias(id) => {
                    let Some(a) = self.anchors.get(&id) else {
                        return Err(syntax(&mark, "unknown anchor referenced"));
                    };
                    let (cost, depth) = (a.cost, a.depth);
                    self.check_depth(depth, &mark)?;
                    self.aliasing.alias(cost)?;
                    let n = clone_node(&self.anchors[&id].node);
                    Some((n, depth, false))
                }
                Event::SequenceStart(anchor, _) => {
                    self.open_frame(anchor, FrameKind::Seq(Vec::new()), &mark)?;
                    None
                }
                Event::MappingStart(anchor, _) => {
                    let kind = FrameKind::Map {
                        entries: Entries::default(),
                        key: None,
                    };
                    self.open_frame(anchor, kind, &mark)?;
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(f) = self.open.pop() else {
                        return Err(syntax(&mark, "did not find expected node content"));
                    };
                    let depth = f.child_depth + 1;
                    let n = match f.kind {
                        FrameKind::Seq(items) => Node::Seq(items),
                        FrameKind::Map { entries, .. } => Node::Map(entries.list),
                    };
                    if f.anchor > 0 {
                        let cost = self.aliasing.decoded - f.cost_start;
                        self.anchor(f.anchor, &n, cost, depth);
                    }
                    Some((n, depth, false))
                }
                _ => return Err(syntax(&mark, "did not find expected node content")),
            };
            if let Some((n, depth, is_merge)) = finished {
                match self.open.last_mut() {
                    None => return Ok(n),
                    Some(parent) => add_child(parent, n, depth, is_merge, &mark)?,
                }
            }
            (ev, mark) = self.next()?;
        }
    }

    fn anchor(&mut self, id: usize, n: &Node, cost: usize, depth: usize) {
        let node = clone_node(n);
        self.anchors.insert(id, Anchored { node, cost, depth });
    }

    /// Refuses a node that would nest deeper than Go's readers go.
    fn check_depth(&self, extra: usize, mark: &Marker) -> Result<(), YamlError> {
        if self.open.len() + extra > MAX_DEPTH {
            return Err(syntax(mark, format!("exceeded max depth of {MAX_DEPTH}")));
        }
        Ok(())
    }

    fn open_frame(
        &mut self,
        anchor: usize,
        kind: FrameKind,
        mark: &Marker,
    ) -> Result<(), YamlError> {
        self.check_depth(1, mark)?;
        self.aliasing.decoded += 1;
        self.open.push(Frame {
            anchor,
            cost_start: self.aliasing.decoded - 1,
            child_depth: 0,
            kind,
        });
        Ok(())
    }
}

/// Puts a finished node into the collection being read: the next item of a
/// sequence, or a mapping's key or value.
fn add_child(
    parent: &mut Frame,
    n: Node,
    depth: usize,
    is_merge: bool,
    mark: &Marker,
) -> Result<(), YamlError> {
    parent.child_depth = parent.child_depth.max(depth);
    match &mut parent.kind {
        FrameKind::Seq(items) => items.push(n),
        FrameKind::Map { entries, key } => match key.take() {
            None => *key = Some((n, is_merge, *mark)),
            Some((_, true, m)) => merge_into(entries, n, &m)?,
            Some((k, false, _)) => {
                if matches!(k, Node::Seq(_) | Node::Map(_)) {
                    return Err(YamlError::Unmarshal(format!(
                        "invalid map key: {}",
                        go_sharp_v(&k)
                    )));
                }
                entries.set(k, n);
            }
        },
    }
    Ok(())
}

impl Drop for Anchored {
    fn drop(&mut self) {
        dismantle(std::mem::replace(&mut self.node, Node::Null));
    }
}

/// Drops a node tree without recursing (an anchored tree may be deep).
pub(crate) fn dismantle(n: Node) {
    let mut stack = vec![n];
    while let Some(n) = stack.pop() {
        match n {
            Node::Seq(items) => stack.extend(items),
            Node::Map(entries) => {
                for (k, v) in entries {
                    stack.push(k);
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
}

/// A deep copy for an alias, on as much stack as its depth takes.
fn clone_node(n: &Node) -> Node {
    match n {
        Node::Seq(items) => Node::Seq(guarded(|| items.iter().map(clone_node).collect())),
        Node::Map(entries) => Node::Map(guarded(|| {
            entries
                .iter()
                .map(|(k, v)| (clone_node(k), clone_node(v)))
                .collect()
        })),
        Node::Null => Node::Null,
        Node::Bool(b) => Node::Bool(*b),
        Node::Int(i) => Node::Int(*i),
        Node::Uint(u) => Node::Uint(*u),
        Node::Float(f) => Node::Float(*f),
        Node::Str(s) => Node::Str(s.clone()),
    }
}

/// A mapping being built. The same key set twice keeps its first position
/// and takes the later value, as a Go map does. Most mappings are small
/// and are searched in place; string keys of larger ones are indexed, so
/// that they stay linear.
#[derive(Default)]
struct Entries {
    list: Vec<(Node, Node)>,
    /// Where each string key is in `list`, once `list` has grown past
    /// [`Entries::SEARCHED`] entries.
    by_str: HashMap<String, usize>,
}

impl Entries {
    /// Up to this many entries a key is found by comparing it with each:
    /// cheaper than hashing it and keeping a copy of it in an index.
    const SEARCHED: usize = 16;

    fn set(&mut self, key: Node, value: Node) {
        if let Node::Str(k) = &key {
            if self.list.len() < Self::SEARCHED {
                match self
                    .list
                    .iter_mut()
                    .find(|(old, _)| matches!(old, Node::Str(o) if o == k))
                {
                    Some(slot) => slot.1 = value,
                    None => self.list.push((key, value)),
                }
                return;
            }
            if self.by_str.is_empty() {
                self.index_strings();
            }
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

    /// Indexes the string keys in `list`, which has outgrown searching.
    fn index_strings(&mut self) {
        for (i, (k, _)) in self.list.iter().enumerate() {
            if let Node::Str(k) = k {
                self.by_str.insert(k.clone(), i);
            }
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

/// Refuses text with a character libyaml's reader refuses
/// ([`super::reader_rejects`]). Rendered manifests and values files are
/// almost all printable ASCII, so the text is scanned as bytes, a block at
/// a time, and only the characters outside printable ASCII are looked at
/// one by one (and decoded only when they are not ASCII).
fn check_reader(text: &str) -> Result<(), YamlError> {
    /// Bytes taken a block at a time: one branch per block, and a loop
    /// without early exit, in arithmetic the compiler vectorises (a
    /// `matches!` of ranges here cost ten times the instructions).
    const BLOCK: usize = 32;
    fn printable(b: u8) -> bool {
        matches!(b, b' '..=b'~' | b'\n' | b'\t' | b'\r')
    }
    /// Whether `b` is neither printable ASCII nor a line feed, as 0 or 1;
    /// tabs and carriage returns, rarer, go the one-by-one way.
    fn unusual(b: u8) -> u8 {
        u8::from(b.wrapping_sub(b' ') > b'~' - b' ') & u8::from(b != b'\n')
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while let Some(block) = bytes.get(i..i + BLOCK) {
            if block.iter().fold(0, |any, &b| any | unusual(b)) != 0 {
                break;
            }
            i += BLOCK;
        }
        let Some(&b) = bytes.get(i) else { break };
        if printable(b) {
            i += 1;
            continue;
        }
        // `i` is always at a character's start: it moves over whole blocks
        // of ASCII, single ASCII bytes and whole characters.
        let c = text.get(i..).and_then(|rest| rest.chars().next());
        match c {
            Some(c) if !super::reader_rejects(c) => i += c.len_utf8(),
            _ => {
                return Err(YamlError::Unmarshal(
                    "control characters are not allowed".into(),
                ))
            }
        }
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
    match gostd::strconv::format_float(f, b'g', -1, 32).as_str() {
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
            None => return Err(non_finite(f)),
        },
        Node::Str(s) => J::String(s),
        Node::Seq(items) => guarded(|| {
            let mut out = Vec::with_capacity(items.len());
            let mut rest = items.into_iter();
            while let Some(item) = rest.next() {
                match to_json(item) {
                    Ok(v) => out.push(v),
                    Err(e) => {
                        rest.for_each(dismantle);
                        crate::depth::drop_json(J::Array(out));
                        return Err(e);
                    }
                }
            }
            Ok(J::Array(out))
        })?,
        Node::Map(entries) => guarded(|| {
            let mut m = serde_json::Map::new();
            let mut rest = entries.into_iter();
            while let Some((k, v)) = rest.next() {
                match json_entry(k, v) {
                    Ok((k, v)) => {
                        m.insert(k, v);
                    }
                    Err(e) => {
                        rest.for_each(|(k, v)| {
                            dismantle(k);
                            dismantle(v);
                        });
                        crate::depth::drop_json(J::Object(m));
                        return Err(e);
                    }
                }
            }
            Ok(J::Object(m))
        })?,
    })
}

/// What `json.Marshal` says of a float JSON has no form for.
pub(crate) fn non_finite(f: f64) -> YamlError {
    let shown = if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    };
    YamlError::Convert(format!("json: unsupported value: {shown}"))
}

/// One mapping entry with its key as JSON has it (a string).
fn json_entry(k: Node, v: Node) -> Result<(String, serde_json::Value), YamlError> {
    let key = match k {
        Node::Str(s) => s,
        k => match json_key(&k, &v) {
            Ok(key) => key.into_owned(),
            Err(e) => {
                dismantle(k);
                dismantle(v);
                return Err(e);
            }
        },
    };
    Ok((key, to_json(v)?))
}

/// A mapping key as JSON has it (a string), or why it has none; `value`
/// is the key's value, which the error shows.
pub(crate) fn json_key<'n>(
    key: &'n Node,
    value: &Node,
) -> Result<std::borrow::Cow<'n, str>, YamlError> {
    Ok(match key {
        Node::Str(s) => s.as_str().into(),
        Node::Int(i) => i.to_string().into(),
        Node::Float(f) => float_key(*f).into(),
        Node::Bool(b) => b.to_string().into(),
        Node::Uint(u) => {
            return Err(YamlError::Convert(format!(
                "unsupported map key of type: uint64, key: 0x{u:x}, value: {}",
                short(value)
            )))
        }
        Node::Null => {
            return Err(YamlError::Convert(format!(
                "unsupported map key of type: %!s(<nil>), key: <nil>, value: {}",
                short(value)
            )))
        }
        Node::Seq(_) | Node::Map(_) => return Err(YamlError::Convert("invalid map key".into())),
    })
}

/// Go's `%#v` of a decoded key, for go-yaml's "invalid map key" message.
fn go_sharp_v(n: &Node) -> String {
    match n {
        Node::Null => "interface {}(nil)".into(),
        Node::Bool(b) => b.to_string(),
        Node::Int(i) => i.to_string(),
        Node::Uint(u) => format!("0x{u:x}"),
        Node::Float(f) => gostd::strconv::format_float(*f, b'g', -1, 64),
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
        Node::Float(f) => gostd::strconv::format_float(*f, b'g', -1, 64),
        Node::Str(s) => format!("{s:?}"),
        Node::Seq(_) => "[]interface {}{...}".into(),
        Node::Map(_) => "map[interface {}]interface {}{...}".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `check_reader` decided before it scanned bytes: every character
    /// decoded and tested.
    fn rejected_char_by_char(text: &str) -> bool {
        text.chars().any(super::super::reader_rejects)
    }

    fn agrees(text: &str) {
        assert_eq!(
            check_reader(text).is_err(),
            rejected_char_by_char(text),
            "{text:?}"
        );
    }

    #[test]
    fn check_reader_decides_every_character_as_before() {
        // Each character opening a block, and at a block's last byte (so
        // that its encoding crosses into the next); blocks are 32 bytes.
        let prefixes = ["", &"k".repeat(31)];
        let suffix = "b".repeat(32);
        let mut rejected = 0;
        let mut text = String::new();
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            for prefix in prefixes {
                text.clear();
                text.push_str(prefix);
                text.push(c);
                text.push_str(&suffix);
                let refused = check_reader(&text).is_err();
                assert_eq!(refused, rejected_char_by_char(&text), "{text:?}");
                if refused && prefix.is_empty() {
                    rejected += 1;
                }
            }
        }
        // 0x00–0x08, 0x0B, 0x0C, 0x0E–0x1F, 0x7F–0x84, 0x86–0x9F, 0xFFFE, 0xFFFF.
        assert_eq!(rejected, 9 + 2 + 18 + 6 + 26 + 2);
    }

    #[test]
    fn a_key_set_again_keeps_its_place_and_takes_the_later_value() {
        // Mappings searched in place, at the index threshold, and indexed.
        for n in [3, 15, 16, 17, 40] {
            let mut text: String = (0..n).map(|i| format!("k{i}: {i}\n")).collect();
            text.push_str(&format!(
                "k0: first again\nk{}: last again\n1: int\n'1': str\n",
                n - 1
            ));
            text.push_str("k0: twice\n1: int again\n");
            let Ok(Node::Map(list)) = first_document(&text) else {
                panic!("a mapping: {text}");
            };
            let got: Vec<String> = list.iter().map(|(k, v)| format!("{k:?}={v:?}")).collect();
            let mut want: Vec<String> = (0..n).map(|i| format!("Str(\"k{i}\")=Int({i})")).collect();
            want[0] = "Str(\"k0\")=Str(\"twice\")".into();
            want[n - 1] = format!("Str(\"k{}\")=Str(\"last again\")", n - 1);
            want.push("Int(1)=Str(\"int again\")".into());
            want.push("Str(\"1\")=Str(\"str\")".into());
            assert_eq!(got, want, "{n} keys");
        }
    }

    #[test]
    fn check_reader_decides_mixed_text_as_before() {
        let pieces = [
            "a",
            "key: value\n",
            "\t",
            "\r\n",
            "é",
            "€",
            "😀",
            "\u{85}",
            "\u{a0}",
            "\u{7f}",
            "\u{84}",
            "\u{1}",
            "\u{fffd}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{10000}",
            "\u{e000}",
            "\u{d7ff}",
            "\u{feff}",
            &"y".repeat(17),
            &"w".repeat(40),
        ];
        // A fixed pseudo-random walk over the pieces: many lengths and
        // alignments, reproducible on every run.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (state >> 60) as usize + 1;
            for _ in 0..len {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let piece = pieces[(state >> 33) as usize % pieces.len()];
                // Mostly printable pieces, so that many texts pass.
                if (state >> 20) % 4 == 0 || !rejected_char_by_char(piece) {
                    text.push_str(piece);
                }
            }
            agrees(&text);
        }
        agrees("");
        agrees(&"z".repeat(64));
        agrees(&format!("{}\u{0}", "z".repeat(64)));
    }
}
