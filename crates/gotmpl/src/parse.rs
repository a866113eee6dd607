//! The parser: builds template trees from lexer items, following Go's
//! `text/template/parse` grammar, checks and error messages.
//!
//! A tree is never changed once parsed, and shares its parts through
//! `Arc`, so it is `Send + Sync`: sets on several threads may execute the
//! same trees at once (see [`crate::SharedTemplates`]).

use std::sync::Arc;

use foldhash::HashMap;

use crate::lex::{Item, ItemType, Lexer};
use crate::literal::{parse_number, plain_literal, unquote, unquote_to_string};

/// A piece of a template's source: text and quoted literals stay where
/// they are in the source the tree keeps, rather than each being copied.
#[derive(Clone)]
pub struct Span {
    src: Arc<str>,
    start: usize,
    end: usize,
}

impl Span {
    /// `part`, which must be a slice of `src`.
    fn of(src: &Arc<str>, part: &str) -> Span {
        let start = (part.as_ptr() as usize).wrapping_sub(src.as_ptr() as usize);
        debug_assert!(start + part.len() <= src.len(), "a span outside its source");
        Span {
            src: src.clone(),
            start,
            end: start + part.len(),
        }
    }
}

impl std::ops::Deref for Span {
    type Target = str;
    fn deref(&self) -> &str {
        &self.src[self.start..self.end]
    }
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// A parsed number literal with every interpretation Go's parser keeps.
#[derive(Clone, Debug, Default)]
pub struct Number {
    pub text: String,
    pub is_int: bool,
    pub is_uint: bool,
    pub is_float: bool,
    pub is_complex: bool,
    pub int: i64,
    pub uint: u64,
    pub float: f64,
    pub complex: (f64, f64),
}

/// An operand of a command.
#[derive(Clone, Debug)]
pub enum Arg {
    /// `.A.B` (idents without dots).
    Field {
        pos: usize,
        idents: Vec<Arc<str>>,
    },
    /// `(pipe).A.B` or `fn.A` — a term followed by fields.
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<Arc<str>>,
    },
    /// `$x.A.B` (first ident includes the `$`).
    Variable {
        pos: usize,
        idents: Vec<Arc<str>>,
    },
    Dot(usize),
    Nil(usize),
    Bool(usize, bool),
    Number(usize, Arc<Number>),
    /// `quoted` is the source form, `text` the unquoted value.
    String {
        pos: usize,
        quoted: Span,
        text: Arc<str>,
    },
    Identifier {
        pos: usize,
        name: Arc<str>,
    },
    Pipe(Arc<Pipe>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Bool(pos, _)
            | Arg::Number(pos, _)
            | Arg::String { pos, .. }
            | Arg::Identifier { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

impl std::fmt::Display for Arg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arg::Field { idents, .. } => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(_) = node.as_ref() {
                    write!(f, "({node})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for i in fields {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Variable { idents, .. } => f.write_str(&idents.join(".")),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Bool(_, b) => write!(f, "{b}"),
            Arg::Number(_, n) => f.write_str(&n.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Pipe(p) => stacker::maybe_grow(32 * 1024, 256 * 1024, || write!(f, "{p}")),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if let Arg::Pipe(_) = a {
                write!(f, "({a})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    /// Declared or assigned variables, with their `$`.
    pub decl: Vec<Arc<str>>,
    pub cmds: Vec<Command>,
}

impl std::fmt::Display for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.decl.is_empty() {
            f.write_str(&self.decl.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Deeply nested templates make deeply nested trees; dropping them
/// recursively could overflow the stack, so nested pipes and branches are
/// dismantled iteratively.
impl Drop for Pipe {
    fn drop(&mut self) {
        let mut stack: Vec<Pipe> = Vec::new();
        take_pipes(&mut self.cmds, &mut stack);
        while let Some(mut p) = stack.pop() {
            take_pipes(&mut p.cmds, &mut stack);
        }
    }
}

fn take_pipes(cmds: &mut Vec<Command>, stack: &mut Vec<Pipe>) {
    fn arg(a: Arg, stack: &mut Vec<Pipe>) {
        match a {
            Arg::Pipe(rc) => {
                if let Ok(p) = Arc::try_unwrap(rc) {
                    stack.push(p);
                }
            }
            Arg::Chain { node, .. } => arg(*node, stack),
            _ => {}
        }
    }
    for c in cmds.drain(..) {
        for a in c.args {
            arg(a, stack);
        }
    }
}

impl Drop for Branch {
    fn drop(&mut self) {
        let mut stack: Vec<Branch> = Vec::new();
        take_branches(&mut self.list, &mut stack);
        if let Some(e) = self.else_list.as_mut() {
            take_branches(e, &mut stack);
        }
        while let Some(mut b) = stack.pop() {
            take_branches(&mut b.list, &mut stack);
            if let Some(e) = b.else_list.as_mut() {
                take_branches(e, &mut stack);
            }
        }
    }
}

fn take_branches(nodes: &mut Vec<Node>, stack: &mut Vec<Branch>) {
    for n in nodes.drain(..) {
        match n {
            Node::If(b) | Node::Range(b) | Node::With(b) => stack.push(b),
            _ => {}
        }
    }
}

#[derive(Clone, Debug)]
pub struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

#[derive(Clone, Debug)]
pub enum Node {
    Text(Span),
    Action {
        pos: usize,
        pipe: Pipe,
    },
    If(Branch),
    Range(Branch),
    With(Branch),
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break(usize),
    Continue(usize),
}

/// One parsed template: a file's main body or a `define`d block.
#[derive(Debug)]
pub struct Tree {
    pub name: String,
    /// The name of the file (parse) the tree came from, for error locations.
    pub parse_name: Arc<str>,
    /// The source text, to turn byte positions into line:column.
    pub text: Arc<str>,
    /// Shared by the copies [`Tree::renamed`] makes.
    pub root: Arc<[Node]>,
}

impl Tree {
    /// `NAME:LINE:COL` of a byte position, as Go's `ErrorContext` prints it
    /// (the column counts bytes from 0 after the last newline).
    pub fn location(&self, pos: usize) -> String {
        let pos = pos.min(self.text.len());
        let before = &self.text[..pos];
        let col = match before.rfind('\n') {
            None => pos,
            Some(nl) => pos - (nl + 1),
        };
        let line = 1 + before.matches('\n').count();
        format!("{}:{}:{}", self.parse_name, line, col)
    }

    /// This tree as the same text parsed under the name `file` gives it:
    /// the main tree (`is_main`) takes that name, every tree that file
    /// name for its locations. Nodes are shared, not copied.
    pub(crate) fn renamed(&self, file: &Arc<str>, is_main: bool) -> Tree {
        Tree {
            name: if is_main {
                file.to_string()
            } else {
                self.name.clone()
            },
            parse_name: file.clone(),
            text: self.text.clone(),
            root: self.root.clone(),
        }
    }

    /// True when the tree has nothing but whitespace text and comments;
    /// such a definition does not replace an existing one.
    pub fn is_empty(&self) -> bool {
        is_empty_list(&self.root)
    }
}

fn is_empty_list(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| match n {
        Node::Text(t) => t
            .trim_matches([' ', '\t', '\r', '\n', '\x0b', '\x0c'])
            .is_empty(),
        _ => false,
    })
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Go's builtin functions (a `match`, as every identifier of a text is
/// checked against them).
pub(crate) fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "and"
            | "call"
            | "html"
            | "index"
            | "slice"
            | "js"
            | "len"
            | "not"
            | "or"
            | "print"
            | "printf"
            | "println"
            | "urlquery"
            | "eq"
            | "ge"
            | "gt"
            | "le"
            | "lt"
            | "ne"
    )
}

/// What [`parse`] returns: the trees, and whether the text defines a
/// template of its own name (so that the trees depend on that name beyond
/// [`Tree::renamed`]).
pub(crate) struct ParseOutput {
    pub trees: Vec<Tree>,
    pub defines_own_name: bool,
}

/// Parses `text` as the template `name`. Returns the tree of `name` first and
/// then every other `define`/`block` tree, in source order. As in Go, the main tree is
/// one more definition of `name`: a non-empty `define` of the same name wins
/// over an empty main body (and is then the only tree of that name), and two
/// non-empty ones are an error.
pub(crate) fn parse(
    name: &str,
    text: &str,
    has_func: &dyn Fn(&str) -> bool,
) -> Result<ParseOutput, ParseError> {
    let parse_name: Arc<str> = Arc::from(name);
    let src: Arc<str> = Arc::from(text);
    // Lexed from the copy the trees keep, so that items are slices of it.
    let lexed = src.clone();
    let mut p = Parser {
        lexer: Lexer::new(&lexed),
        names: HashMap::default(),
        idx: 0,
        last_line: 1,
        vars: vec!["$"],
        range_depth: 0,
        action_line: 0,
        has_func,
        parse_name: parse_name.clone(),
        trees: Vec::new(),
        text: src.clone(),
    };
    let root = p.parse_top()?;
    let main = Tree {
        name: name.to_string(),
        parse_name,
        text: src,
        root: root.into(),
    };
    let same = p.trees.iter().position(|t| t.name == name);
    let trees = match same {
        Some(i) if !p.trees[i].is_empty() => {
            if !main.is_empty() {
                return p.err(format!(
                    "template: multiple definition of template {name:?}"
                ));
            }
            let mut out = vec![p.trees.remove(i)];
            out.append(&mut p.trees);
            out
        }
        same => {
            if let Some(i) = same {
                p.trees.remove(i);
            }
            let mut out = vec![main];
            out.append(&mut p.trees);
            out
        }
    };
    Ok(ParseOutput {
        trees,
        defines_own_name: same.is_some(),
    })
}

/// Items the parser keeps behind its position: it backs up at most a few
/// (Go's parser keeps three of lookahead).
const WINDOW_KEEP: usize = 16;

struct Parser<'a, 's> {
    /// Also the window of items the parser looks at (see [`Lexer::item`]).
    lexer: Lexer<'s>,
    names: HashMap<&'s str, Arc<str>>,
    idx: usize,
    last_line: usize,
    /// Variables in scope: slices of the text, as the items are.
    vars: Vec<&'s str>,
    range_depth: usize,
    action_line: usize,
    has_func: &'a dyn Fn(&str) -> bool,
    parse_name: Arc<str>,
    trees: Vec<Tree>,
    text: Arc<str>,
}

type PResult<T> = Result<T, ParseError>;

enum ListEnd {
    End,
    Else,
}

impl<'s> Parser<'_, 's> {
    /// The item at `idx`, or the final `Eof`/`Error` item when `idx` is
    /// past it; and whether `idx` was an item.
    #[inline]
    fn at_idx(&mut self) -> (Item<'s>, bool) {
        match self.lexer.item(self.idx) {
            Some(it) => (it, true),
            None => (self.lexer.end_item(), false),
        }
    }

    fn next(&mut self) -> Item<'s> {
        let (it, real) = self.at_idx();
        if real {
            self.idx += 1;
            if self.idx - self.lexer.base() > 4 * WINDOW_KEEP {
                self.lexer.forget_before(self.idx - WINDOW_KEEP);
            }
        }
        self.last_line = it.line;
        it
    }
    fn backup(&mut self) {
        self.idx -= 1;
    }
    fn peek(&mut self) -> Item<'s> {
        let (it, _) = self.at_idx();
        self.last_line = it.line;
        it
    }
    fn next_non_space(&mut self) -> Item<'s> {
        loop {
            let it = self.next();
            if it.typ != ItemType::Space {
                return it;
            }
        }
    }
    fn peek_non_space(&mut self) -> Item<'s> {
        let it = self.next_non_space();
        self.backup();
        it
    }

    /// A field, variable or function name, shared by all its uses in the
    /// text: one allocation per distinct name rather than per use.
    fn name(&mut self, s: &'s str) -> Arc<str> {
        self.names.entry(s).or_insert_with(|| Arc::from(s)).clone()
    }

    fn err<T>(&self, msg: impl AsRef<str>) -> PResult<T> {
        Err(ParseError(format!(
            "template: {}:{}: {}",
            self.parse_name,
            self.last_line,
            msg.as_ref()
        )))
    }

    fn unexpected<T>(&self, token: &Item, context: &str) -> PResult<T> {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != token.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.action_line
                );
                if self.lexer.error_message().ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.err(format!("{}{}", self.lexer.error_message(), extra));
        }
        self.err(format!("unexpected {} in {}", token.describe(), context))
    }

    fn expect(&mut self, typ: ItemType, context: &str) -> PResult<Item<'s>> {
        let t = self.next_non_space();
        if t.typ != typ {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn parse_top(&mut self) -> PResult<Vec<Node>> {
        let mut root = Vec::new();
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let save = self.idx;
                self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.idx = save;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.push(n),
                Parsed::Nothing => {}
                Parsed::End => return self.err("unexpected {{end}}"),
                Parsed::Else => return self.err("unexpected {{else}}"),
            }
        }
        Ok(root)
    }

    fn add_tree(&mut self, name: String, root: Vec<Node>) -> PResult<()> {
        let tree = Tree {
            name: name.clone(),
            parse_name: self.parse_name.clone(),
            text: self.text.clone(),
            root: root.into(),
        };
        if let Some(i) = self.trees.iter().position(|t| t.name == name) {
            if self.trees[i].is_empty() {
                self.trees[i] = tree;
                return Ok(());
            }
            if !tree.is_empty() {
                return self.err(format!(
                    "template: multiple definition of template {:?}",
                    name
                ));
            }
            return Ok(());
        }
        self.trees.push(tree);
        Ok(())
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let tok = self.next_non_space();
        if tok.typ != ItemType::String && tok.typ != ItemType::RawString {
            return self.unexpected(&tok, context);
        }
        let name = unquote_to_string(tok.val).or_else(|e| self.err(e))?;
        self.expect(ItemType::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$"]);
        let saved_depth = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_depth;
        if let ListEnd::Else = end {
            return self.err(format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add_tree(name, list)
    }

    fn item_list(&mut self) -> PResult<(Vec<Node>, ListEnd)> {
        let mut list = Vec::new();
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.push(n),
                Parsed::Nothing => {}
                Parsed::End => return Ok((list, ListEnd::End)),
                Parsed::Else => return Ok((list, ListEnd::Else)),
            }
        }
        self.err("unexpected EOF")
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let tok = self.next_non_space();
        match tok.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text(Span::of(&self.text, tok.val)))),
            ItemType::LeftDelim => {
                self.action_line = tok.line;
                let r = self.action();
                self.action_line = 0;
                r
            }
            ItemType::Comment => Ok(Parsed::Nothing),
            _ => self.unexpected(&tok, "input"),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let tok = self.next_non_space();
        match tok.typ {
            ItemType::Block => return self.block_control().map(Parsed::Node),
            ItemType::Break => return self.break_continue(tok, true).map(Parsed::Node),
            ItemType::Continue => return self.break_continue(tok, false).map(Parsed::Node),
            ItemType::Else => {
                let peek = self.peek_non_space();
                if peek.typ == ItemType::If || peek.typ == ItemType::With {
                    return Ok(Parsed::Else);
                }
                self.expect(ItemType::RightDelim, "else")?;
                return Ok(Parsed::Else);
            }
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            ItemType::If => return self.control("if").map(|b| Parsed::Node(Node::If(b))),
            ItemType::Range => return self.control("range").map(|b| Parsed::Node(Node::Range(b))),
            ItemType::Template => return self.template_control().map(Parsed::Node),
            ItemType::With => return self.control("with").map(|b| Parsed::Node(Node::With(b))),
            _ => {}
        }
        self.backup();
        let pos = self.peek().pos;
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Parsed::Node(Node::Action { pos, pipe }))
    }

    fn break_continue(&mut self, tok: Item<'s>, is_break: bool) -> PResult<Node> {
        let word = if is_break {
            "{{break}}"
        } else {
            "{{continue}}"
        };
        let t = self.next_non_space();
        if t.typ != ItemType::RightDelim {
            return self.unexpected(&t, word);
        }
        if self.range_depth == 0 {
            return self.err(format!("{word} outside {{{{range}}}}"));
        }
        Ok(if is_break {
            Node::Break(tok.pos)
        } else {
            Node::Continue(tok.pos)
        })
    }

    fn control(&mut self, context: &str) -> PResult<Branch> {
        let mark = self.vars.len();
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.control_inner(context));
        self.vars.truncate(mark);
        r
    }

    fn control_inner(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let res = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, end) = res?;
        let mut else_list = None;
        if let ListEnd::Else = end {
            let peek = self.peek().typ;
            if context == "if" && peek == ItemType::If {
                self.next();
                let b = self.control("if")?;
                else_list = Some(vec![Node::If(b)]);
            } else if context == "with" && peek == ItemType::With {
                self.next();
                let b = self.control("with")?;
                else_list = Some(vec![Node::With(b)]);
            } else {
                let (l, end) = self.item_list()?;
                if let ListEnd::Else = end {
                    return self.err("expected end; found {{else}}");
                }
                else_list = Some(l);
            }
        }
        Ok(Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn template_name(&mut self, tok: &Item, context: &str) -> PResult<String> {
        match tok.typ {
            ItemType::String | ItemType::RawString => {
                unquote_to_string(tok.val).or_else(|e| self.err(e))
            }
            _ => self.unexpected(tok, context),
        }
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, ItemType::RightDelim)?);
        }
        Ok(Node::Template {
            pos: tok.pos,
            name,
            pipe,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let tok = self.next_non_space();
        let name = self.template_name(&tok, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$"]);
        let saved_depth = std::mem::replace(&mut self.range_depth, 0);
        let res = self.item_list();
        self.vars = saved_vars;
        self.range_depth = saved_depth;
        let (list, end) = res?;
        if let ListEnd::Else = end {
            return self.err(format!("unexpected {{{{else}}}} in {context}"));
        }
        self.add_tree(name.clone(), list)?;
        Ok(Node::Template {
            pos: tok.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: start.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ != ItemType::Variable {
                break;
            }
            let save = self.idx;
            self.next_non_space();
            let next = self.peek_non_space();
            match next.typ {
                ItemType::Assign | ItemType::Declare => {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(self.name(v.val));
                    self.vars.push(v.val);
                    break;
                }
                ItemType::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(self.name(v.val));
                    self.vars.push(v.val);
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                                continue 'decls;
                            }
                            _ => return self.err("range can only initialize variables"),
                        }
                    }
                    return self.err(format!("too many declarations in {context}"));
                }
                _ => {
                    self.idx = save;
                    break;
                }
            }
        }
        loop {
            let tok = self.next_non_space();
            if tok.typ == end {
                if pipe.cmds.is_empty() {
                    return self.err(format!("missing value for {context}"));
                }
                for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
                    if matches!(
                        c.args[0],
                        Arg::Bool(..)
                            | Arg::Dot(_)
                            | Arg::Nil(_)
                            | Arg::Number(..)
                            | Arg::String { .. }
                    ) {
                        return self.err(format!(
                            "non executable command in pipeline stage {}",
                            i + 1
                        ));
                    }
                }
                return Ok(pipe);
            }
            match tok.typ {
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return self.unexpected(&tok, context),
            }
        }
    }

    fn command(&mut self) -> PResult<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command {
            pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let tok = self.next();
            match tok.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return self.unexpected(&tok, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.err("empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ == ItemType::Field {
            let pos = self.peek().pos;
            return match node {
                // `term` made room for these fields.
                Arg::Field { mut idents, .. } => {
                    self.push_fields(&mut idents);
                    Ok(Some(Arg::Field { pos, idents }))
                }
                Arg::Variable { mut idents, .. } => {
                    self.push_fields(&mut idents);
                    Ok(Some(Arg::Variable { pos, idents }))
                }
                Arg::Bool(..)
                | Arg::String { .. }
                | Arg::Number(..)
                | Arg::Nil(_)
                | Arg::Dot(_) => {
                    // Read past the fields first: the error's line is
                    // the line of what follows them.
                    self.push_fields(&mut Vec::new());
                    self.err(format!("unexpected . after term {:?}", node.to_string()))
                }
                other => {
                    let mut fields = Vec::with_capacity(self.fields_ahead());
                    self.push_fields(&mut fields);
                    Ok(Some(Arg::Chain {
                        pos,
                        node: Box::new(other),
                        fields,
                    }))
                }
            };
        }
        Ok(Some(node))
    }

    /// How many field items follow, from the current one on: the room a
    /// name with its chain of fields takes, so that it is allocated once.
    fn fields_ahead(&mut self) -> usize {
        let mut n = 0;
        while let Some(Item {
            typ: ItemType::Field,
            ..
        }) = self.lexer.item(self.idx + n)
        {
            n += 1;
        }
        n
    }

    /// Reads the field items that follow, as names.
    fn push_fields(&mut self, names: &mut Vec<Arc<str>>) {
        while self.peek().typ == ItemType::Field {
            let f = self.next();
            names.push(self.name(&f.val[1..]));
        }
    }

    /// A variable's or field's name with room for the fields after it.
    fn chain_start(&mut self, first: &'s str) -> Vec<Arc<str>> {
        let mut idents = Vec::with_capacity(1 + self.fields_ahead());
        idents.push(self.name(first));
        idents
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let tok = self.next_non_space();
        let arg = match tok.typ {
            ItemType::Identifier => {
                if !is_builtin(tok.val) && !(self.has_func)(tok.val) {
                    return self.err(format!("function {:?} not defined", tok.val));
                }
                Arg::Identifier {
                    pos: tok.pos,
                    name: self.name(tok.val),
                }
            }
            ItemType::Dot => Arg::Dot(tok.pos),
            ItemType::Nil => Arg::Nil(tok.pos),
            ItemType::Variable => {
                if !self.vars.contains(&tok.val) {
                    return self.err(format!("undefined variable {:?}", tok.val));
                }
                Arg::Variable {
                    pos: tok.pos,
                    idents: self.chain_start(tok.val),
                }
            }
            ItemType::Field => Arg::Field {
                pos: tok.pos,
                idents: self.chain_start(&tok.val[1..]),
            },
            ItemType::Bool => Arg::Bool(tok.pos, tok.val == "true"),
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                let n = parse_number(tok.val, tok.typ).or_else(|e| self.err(e))?;
                Arg::Number(tok.pos, Arc::new(n))
            }
            ItemType::LeftParen => {
                let p = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                    self.pipeline("parenthesized pipeline", ItemType::RightParen)
                })?;
                Arg::Pipe(Arc::new(p))
            }
            ItemType::String | ItemType::RawString => {
                let text = match plain_literal(tok.val) {
                    // Shared like names: charts repeat the same literals.
                    Some(body) => self.name(body),
                    None => Arc::from(unquote(tok.val).or_else(|e| self.err(e))?),
                };
                Arg::String {
                    pos: tok.pos,
                    quoted: Span::of(&self.text, tok.val),
                    text,
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        };
        Ok(Some(arg))
    }
}

enum Parsed {
    Node(Node),
    Nothing,
    End,
    Else,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Vec<Tree>, ParseError> {
        parse("t", s, &|n| n == "upper").map(|p| p.trees)
    }

    #[test]
    fn parses_control_structures() {
        let trees =
            p("{{if .a}}x{{else if .b}}y{{else}}z{{end}}{{range $i, $v := .l}}{{$v}}{{end}}")
                .expect("parses");
        assert_eq!(trees.len(), 1);
        assert_eq!(trees[0].root.len(), 2);
    }

    #[test]
    fn defines_are_separate_trees() {
        let trees = p(r#"a{{define "x"}}X{{end}}b{{block "y" .}}Y{{end}}"#).expect("parses");
        let names: Vec<_> = trees.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, vec!["t", "x", "y"]);
    }

    #[test]
    fn errors_like_go() {
        let e = p("{{ nope }}").unwrap_err().0;
        assert_eq!(e, r#"template: t:1: function "nope" not defined"#);
        let e = p("{{ $x }}").unwrap_err().0;
        assert_eq!(e, r#"template: t:1: undefined variable "$x""#);
        let e = p("\n{{ end }}").unwrap_err().0;
        assert_eq!(e, "template: t:2: unexpected {{end}}");
        let e = p("{{break}}").unwrap_err().0;
        assert!(e.ends_with("{{break}} outside {{range}}"), "{e}");
    }

    #[test]
    fn long_texts_parse_through_the_item_window() {
        // Far more items than the parser keeps behind it, with the
        // look-back of a `define` and of declarations at the very end.
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!("l{i} {{{{ $v{i} := .a.b }}}}{{{{ $v{i} }}}}\n"));
        }
        text.push_str("{{ define \"d\" }}{{ $x, $y := 1 }}{{ end }}");
        let e = p(&text).unwrap_err().0;
        assert_eq!(e, "template: t:301: too many declarations in command");
        text.truncate(text.len() - "{{ define \"d\" }}{{ $x, $y := 1 }}{{ end }}".len());
        text.push_str("{{ define \"d\" }}D{{ end }}\n{{ .x \"a\n}}");
        let e = p(&text).unwrap_err().0;
        assert_eq!(e, "template: t:302: unterminated quoted string");
        text.truncate(text.len() - "\n{{ .x \"a\n}}".len());
        let trees = p(&text).expect("parses");
        assert_eq!(trees.len(), 2);
        assert_eq!(trees[0].root.len(), 901);
    }

    #[test]
    fn main_body_is_one_more_definition_of_its_name() {
        // An empty body gives way to a define of the same name...
        let trees = p(r#"{{define "t"}}D{{end}} "#).expect("parses");
        assert_eq!(trees.len(), 1);
        assert_eq!(trees[0].name, "t");
        assert!(!trees[0].is_empty());
        // ...an empty define to the body...
        let trees = p(r#"{{define "t"}} {{end}}B"#).expect("parses");
        assert_eq!(trees.len(), 1);
        assert!(matches!(&trees[0].root[..], [Node::Text(b)] if &**b == "B"));
        // ...and two bodies are an error at the last line, as in Go.
        let e = p("a\n{{define \"t\"}}D{{end}}\n").unwrap_err().0;
        assert_eq!(
            e,
            r#"template: t:3: template: multiple definition of template "t""#
        );
    }
}
