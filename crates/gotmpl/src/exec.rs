//! Template sets and execution, following Go's `text/template` evaluator:
//! the same truthiness, nil/missing-key semantics, argument conversion and
//! error messages (`template: NAME:LINE:COL: executing "NAME" at <NODE>: ...`).

use std::cell::{Cell, RefCell};
// Names are looked up on every parse and call: a fast hasher.
use foldhash::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use crate::error::Error;
use crate::fmt;
use crate::func::CallCtx;
use crate::funcs::FuncMap;
use crate::options::{MissingKey, Options};
use crate::parse::{Arg, Branch, Command, Node, Number, Pipe, Tree};
use crate::parse_cache::{parse_through, ParseCache};
use crate::shared::{Literals, SharedTemplates};
use crate::value::{Func, ListKind, MapKind, Ty, UintKind, Value};

/// A set of named templates that can call each other, with the functions
/// they may use. A set can be layered over another (cheaply, for Helm's
/// `tpl`): lookups fall through to the base.
pub struct Templates {
    root_name: String,
    own: HashMap<String, Arc<Tree>>,
    base: Option<Rc<Templates>>,
    funcs: Rc<FuncMap>,
    options: Options,
    cache: Option<Rc<RefCell<ParseCache>>>,
    /// Bytes written so far by executions of this set and its layers.
    written: Rc<Cell<usize>>,
    /// The trees' string literals as values, shared with the layers.
    literals: Literals,
}

impl Templates {
    pub fn new(funcs: Rc<FuncMap>) -> Self {
        Templates {
            root_name: String::new(),
            own: HashMap::default(),
            base: None,
            funcs,
            options: Options::default(),
            cache: None,
            written: Rc::default(),
            literals: Literals::default(),
        }
    }

    /// Reuses parses from (and adds them to) `cache`; layers made with
    /// [`Templates::layered`] share it. See [`ParseCache`] for when sharing
    /// is sound.
    pub fn set_parse_cache(&mut self, cache: Rc<RefCell<ParseCache>>) {
        self.cache = Some(cache);
    }

    /// A new, empty layer over `base`, sharing its functions and options.
    pub fn layered(base: Rc<Templates>) -> Self {
        Templates {
            root_name: base.root_name.clone(),
            own: HashMap::default(),
            funcs: base.funcs.clone(),
            options: base.options,
            cache: base.cache.clone(),
            written: base.written.clone(),
            literals: base.literals.clone(),
            base: Some(base),
        }
    }

    /// Every template of this set and its bases, for sets on other
    /// threads to execute ([`Templates::from_shared`]): parsed trees are
    /// never changed, so threads share them as they are.
    pub fn share(&self) -> SharedTemplates {
        let trees = self
            .names()
            .into_iter()
            .filter_map(|name| {
                let tree = self.lookup_shared(&name)?;
                Some((name, tree))
            })
            .collect();
        SharedTemplates {
            trees,
            root_name: self.root_name.clone(),
            options: self.options,
        }
    }

    /// A set of the templates `shared` (by a set on another thread, say),
    /// with `funcs` (this thread's own: functions hold values of their
    /// thread). It executes them as the sharing set would, its output
    /// counted apart from that set's; a `tpl` or other parse adds trees of
    /// its own.
    pub fn from_shared(funcs: Rc<FuncMap>, shared: &SharedTemplates) -> Templates {
        Templates {
            root_name: shared.root_name.clone(),
            own: shared.trees.iter().cloned().collect(),
            base: None,
            funcs,
            options: shared.options,
            cache: None,
            written: Rc::default(),
            literals: Literals::default(),
        }
    }

    /// Bytes written so far by executions of this set and its layers.
    pub fn written(&self) -> usize {
        self.written.get()
    }

    /// The name of the set itself, shown in "no template" errors
    /// (Go's name of the root template; Helm's is `gotpl`).
    pub fn set_root_name(&mut self, name: impl Into<String>) {
        self.root_name = name.into();
    }

    pub fn root_name(&self) -> &str {
        &self.root_name
    }

    pub fn options(&self) -> Options {
        self.options
    }

    pub fn set_options(&mut self, o: Options) {
        self.options = o;
    }

    pub fn funcs(&self) -> &Rc<FuncMap> {
        &self.funcs
    }

    /// Parses `text` as template `name`, adding it and every template it
    /// defines. Like Go's `Template.New(name).Parse(text)`: a later definition
    /// of a name replaces an earlier one unless the later one is empty.
    /// Returns the tree just parsed for `name` even when it was empty and
    /// so did not replace an earlier `name` in the set: like the template Go
    /// returns, it is what [`Templates::execute_tree`] runs to execute
    /// exactly this text.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<Arc<Tree>, Error> {
        let funcs = self.funcs.clone();
        let trees = parse_through(self.cache.as_ref(), name, text, &|n| funcs.contains(n))?;
        for t in trees.iter() {
            if t.is_empty() && self.lookup(&t.name).is_some() {
                continue;
            }
            self.own.insert(t.name.clone(), t.clone());
        }
        Ok(trees[0].clone())
    }

    /// The template of that name, searching base layers too.
    pub fn lookup(&self, name: &str) -> Option<&Tree> {
        match self.own.get(name) {
            Some(t) => Some(t),
            None => self.base.as_ref().and_then(|b| b.lookup(name)),
        }
    }

    fn lookup_shared(&self, name: &str) -> Option<Arc<Tree>> {
        match self.own.get(name) {
            Some(t) => Some(t.clone()),
            None => self.base.as_ref().and_then(|b| b.lookup_shared(name)),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    /// Names of the templates in this layer and its bases.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.own.keys().cloned().collect();
        if let Some(b) = &self.base {
            for n in b.names() {
                if !self.own.contains_key(&n) {
                    v.push(n);
                }
            }
        }
        v.sort();
        v
    }

    /// Executes the template `name` with `data` as dot and `$`.
    pub fn execute(self: &Rc<Self>, name: &str, data: &Value) -> Result<String, Error> {
        let mut out = String::new();
        self.execute_into(name, data, &mut out, 0)?;
        // Output written piece by piece may join stray bytes into text.
        Ok(match crate::gostr::canonical(&out) {
            std::borrow::Cow::Borrowed(_) => out,
            std::borrow::Cow::Owned(joined) => joined,
        })
    }

    /// Executes into `out`, starting at nesting `depth` (for host functions
    /// that execute templates from inside a running one).
    pub(crate) fn execute_into(
        self: &Rc<Self>,
        name: &str,
        data: &Value,
        out: &mut String,
        depth: usize,
    ) -> Result<(), Error> {
        let Some(tree) = self.lookup(name) else {
            return Err(Error::Exec(format!(
                "template: no template {name:?} associated with template {:?}",
                self.root_name
            )));
        };
        self.execute_tree(tree, data, out, depth)
    }

    /// Executes `tree` (one [`Templates::parse`] returned) in this set, as
    /// Go's `Execute` runs a template's own tree whatever its name maps to.
    pub fn execute_tree(
        self: &Rc<Self>,
        tree: &Tree,
        data: &Value,
        out: &mut String,
        depth: usize,
    ) -> Result<(), Error> {
        if depth >= self.options.max_depth {
            return Err(Error::Exec(format!(
                "template: {}: exceeded maximum template depth ({})",
                tree.name, self.options.max_depth
            )));
        }
        let mut st = State {
            tmpl: self,
            tree,
            out,
            vars: vec![("$", Cur::plain(data.clone()))],
            depth,
            at: At::None,
        };
        // Hosts re-enter here from inside a function call (Helm's `include`
        // and `tpl`), with many frames since the last check: a wide margin.
        stacker::maybe_grow(256 * 1024, 2 * 1024 * 1024, || {
            st.walk_list(&Cur::plain(data.clone()), &tree.root)
        })
        .map(|_| ())
    }
}

/// A value with the knowledge Go's reflection keeps of whether its static
/// type is `interface {}` (elements of `[]interface{}` and
/// `map[string]interface{}`). Go's error messages name that type.
#[derive(Clone, Debug)]
struct Cur {
    v: Value,
    iface: bool,
}

impl Cur {
    fn plain(v: Value) -> Cur {
        Cur { v, iface: false }
    }
    fn static_type(&self) -> String {
        if self.iface {
            "interface {}".to_string()
        } else {
            self.v.type_name()
        }
    }
}

/// The node being evaluated, for error locations.
#[derive(Clone, Copy)]
enum At<'t> {
    None,
    Arg(&'t Arg),
    Cmd(&'t Command),
    Pipe(&'t Pipe),
    /// A `{{template}}` action, which Go shows whole.
    Template(usize, &'t str, Option<&'t Pipe>),
}

enum Flow {
    Normal,
    Break,
    Continue,
}

struct State<'a, 'o> {
    tmpl: &'a Rc<Templates>,
    tree: &'a Tree,
    out: &'o mut String,
    /// Variables in scope, innermost last; names borrow the tree.
    vars: Vec<(&'a str, Cur)>,
    depth: usize,
    at: At<'a>,
}

type R<T> = Result<T, Error>;

/// The value a command receives from the previous pipeline stage.
type Final = Option<Value>;

/// Go reports a wrong argument count at the function's name, not at the
/// whole command (`at <not>`, not `at <not 1 2>`).
fn arity_at<'t>(at: At<'t>, args: &'t [Arg]) -> At<'t> {
    match (at, args.first()) {
        (At::Cmd(_), Some(ident)) => At::Arg(ident),
        (at, _) => at,
    }
}

fn ty_can_be_nil(ty: Ty) -> bool {
    matches!(
        ty,
        Ty::Any | Ty::Reflect | Ty::List(_) | Ty::Map | Ty::Bytes
    )
}

impl<'a> State<'a, '_> {
    fn errorf<T>(&self, msg: impl AsRef<str>) -> R<T> {
        let name = &self.tree.name;
        let (pos, ctx) = match self.at {
            At::None => {
                return Err(Error::Exec(crate::limits::cap_message(format!(
                    "template: {}: {}",
                    name,
                    msg.as_ref()
                ))))
            }
            At::Arg(a) => (a.pos(), a.to_string()),
            At::Cmd(c) => (c.pos, c.to_string()),
            At::Pipe(p) => (p.pos, p.to_string()),
            At::Template(p, name, pipe) => (
                p,
                match pipe {
                    Some(pipe) => format!("{{{{template {} {pipe}}}}}", crate::fmt::quote(name)),
                    None => format!("{{{{template {}}}}}", crate::fmt::quote(name)),
                },
            ),
        };
        // Each level of a nested failure wraps the one below: capping here
        // keeps the whole chain bounded.
        Err(Error::Exec(crate::limits::cap_message(format!(
            "template: {}: executing {:?} at <{}>: {}",
            self.tree.location(pos),
            name,
            ctx,
            msg.as_ref()
        ))))
    }

    fn walk_list(&mut self, dot: &Cur, nodes: &'a [Node]) -> R<Flow> {
        for n in nodes {
            match self.walk(dot, n)? {
                Flow::Normal => {}
                f => return Ok(f),
            }
        }
        Ok(Flow::Normal)
    }

    fn write(&mut self, s: &str) -> R<()> {
        let written = self.tmpl.written.get().saturating_add(s.len());
        if written > self.tmpl.options.max_output {
            return self.errorf(format!(
                "output exceeds the limit of {} bytes",
                self.tmpl.options.max_output
            ));
        }
        self.tmpl.written.set(written);
        self.out.push_str(s);
        Ok(())
    }

    fn walk(&mut self, dot: &Cur, node: &'a Node) -> R<Flow> {
        match node {
            Node::Text(t) => {
                self.write(t)?;
                Ok(Flow::Normal)
            }
            Node::Action { pipe, .. } => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.at = At::Pipe(pipe);
                    self.print_value(&v)?;
                }
                Ok(Flow::Normal)
            }
            Node::If(b) => grow(|| self.walk_if_with(dot, b, false)),
            Node::With(b) => grow(|| self.walk_if_with(dot, b, true)),
            Node::Range(b) => grow(|| self.walk_range(dot, b)),
            Node::Template { pos, name, pipe } => {
                self.at = At::Template(*pos, name, pipe.as_ref());
                let tmpl: &'a Rc<Templates> = self.tmpl;
                let Some(tree) = tmpl.lookup(name) else {
                    return self.errorf(format!("template {name:?} not defined"));
                };
                if self.depth + 1 >= tmpl.options.max_depth {
                    return self.errorf(format!(
                        "exceeded maximum template depth ({})",
                        tmpl.options.max_depth
                    ));
                }
                let v = match pipe {
                    Some(p) => self.eval_pipeline(dot, p)?,
                    None => Value::Invalid,
                };
                let mut sub = State {
                    tmpl,
                    tree,
                    out: &mut *self.out,
                    vars: vec![("$", Cur::plain(v.clone()))],
                    depth: self.depth + 1,
                    at: At::None,
                };
                stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                    sub.walk_list(&Cur::plain(v), &tree.root)
                })?;
                Ok(Flow::Normal)
            }
            Node::Break(_) => Ok(Flow::Break),
            Node::Continue(_) => Ok(Flow::Continue),
        }
    }

    fn walk_if_with(&mut self, dot: &Cur, b: &'a Branch, is_with: bool) -> R<Flow> {
        let mark = self.vars.len();
        let r = (|| {
            let v = self.eval_pipeline(dot, &b.pipe)?;
            if v.truthy() {
                if is_with {
                    self.walk_list(&Cur::plain(v), &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(Flow::Normal)
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Cur, b: &'a Branch) -> R<Flow> {
        let mark = self.vars.len();
        let r = self.walk_range_inner(dot, b);
        self.vars.truncate(mark);
        r.map(|_| Flow::Normal)
    }

    fn range_iteration(&mut self, b: &'a Branch, index: Cur, elem: Cur) -> R<Flow> {
        let mark = self.vars.len();
        let decl = &b.pipe.decl;
        if !decl.is_empty() {
            if b.pipe.is_assign {
                if decl.len() > 1 {
                    self.set_var(&decl[0], index.clone())?;
                } else {
                    self.set_var(&decl[0], elem.clone())?;
                }
            } else {
                self.set_top_var(1, elem.clone());
            }
        }
        if decl.len() > 1 {
            if b.pipe.is_assign {
                self.set_var(&decl[1], elem.clone())?;
            } else {
                self.set_top_var(2, index);
            }
        }
        let r = self.walk_list(&elem, &b.list);
        self.vars.truncate(mark);
        r
    }

    fn walk_range_inner(&mut self, dot: &Cur, b: &'a Branch) -> R<()> {
        self.at = At::Pipe(&b.pipe);
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let mut ran = false;
        match &val {
            Value::List(l) => {
                let iface = l.kind() == ListKind::Any;
                for (i, e) in l.iter().enumerate() {
                    ran = true;
                    let f = self.range_iteration(
                        b,
                        Cur::plain(Value::int(i as i64)),
                        Cur {
                            v: e.clone(),
                            iface,
                        },
                    )?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Bytes(bs) => {
                for (i, e) in bs.iter().enumerate() {
                    ran = true;
                    let f = self.range_iteration(
                        b,
                        Cur::plain(Value::int(i as i64)),
                        Cur::plain(Value::Uint(*e as u64, UintKind::Uint8)),
                    )?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Map(m) => {
                let iface = m.kind() != MapKind::String;
                for (k, e) in m.entries() {
                    ran = true;
                    let f =
                        self.range_iteration(b, Cur::plain(Value::string(k)), Cur { v: e, iface })?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Invalid | Value::Nil => {}
            Value::Object(o) if o.entries().is_some() => {
                for (i, (k, e)) in o.entries().unwrap_or_default().into_iter().enumerate() {
                    ran = true;
                    let key = if let Value::Invalid = k {
                        Value::int(i as i64)
                    } else {
                        k
                    };
                    let f = self.range_iteration(b, Cur::plain(key), Cur::plain(e))?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Int(n, k) => {
                if b.pipe.decl.len() > 1 {
                    return self.errorf(format!(
                        "can't use {} to iterate over more than one variable",
                        fmt::format_value(&val)
                    ));
                }
                for i in 0..(*n).max(0) {
                    ran = true;
                    let iv = Cur::plain(Value::Int(i, *k));
                    let f = self.range_iteration(b, iv.clone(), iv)?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            Value::Uint(n, k) => {
                if b.pipe.decl.len() > 1 {
                    return self.errorf(format!(
                        "can't use {} to iterate over more than one variable",
                        fmt::format_value(&val)
                    ));
                }
                for i in 0..*n {
                    ran = true;
                    let iv = Cur::plain(Value::Uint(i, *k));
                    let f = self.range_iteration(b, iv.clone(), iv)?;
                    if let Flow::Break = f {
                        break;
                    }
                }
            }
            other => {
                return self.errorf(format!(
                    "range can't iterate over {}",
                    fmt::format_value(other)
                ))
            }
        }
        if !ran {
            if let Some(e) = &b.else_list {
                self.walk_list(dot, e)?;
            }
        }
        Ok(())
    }

    fn set_var(&mut self, name: &str, v: Cur) -> R<()> {
        for (n, val) in self.vars.iter_mut().rev() {
            if *n == name {
                *val = v;
                return Ok(());
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    fn set_top_var(&mut self, n: usize, v: Cur) {
        let len = self.vars.len();
        if n <= len {
            self.vars[len - n].1 = v;
        }
    }

    fn var_value(&self, name: &str) -> R<Cur> {
        for (n, v) in self.vars.iter().rev() {
            if *n == name {
                return Ok(v.clone());
            }
        }
        self.errorf(format!("undefined variable: {name}"))
    }

    fn print_value(&mut self, v: &Value) -> R<()> {
        match v {
            Value::Invalid => self.write("<no value>"),
            Value::Func(f) => self.errorf(format!(
                "can't print {} of type {}",
                f.type_name(),
                f.type_name()
            )),
            Value::String(s) => {
                let s = s.clone();
                self.write(&s)
            }
            other => {
                let s = fmt::format_value(other);
                self.write(&s)
            }
        }
    }

    fn eval_pipeline(&mut self, dot: &Cur, pipe: &'a Pipe) -> R<Value> {
        self.at = At::Pipe(pipe);
        let mut value: Final = None;
        for cmd in &pipe.cmds {
            let v = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
                self.eval_command(dot, cmd, value.take())
            })?;
            // Go digs into interface values between stages; a nil interface
            // becomes "no value".
            value = Some(match v {
                Value::Nil => Value::Invalid,
                other => other,
            });
        }
        let value = value.unwrap_or(Value::Invalid);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(var, Cur::plain(value.clone()))?;
            } else {
                self.vars.push((var, Cur::plain(value.clone())));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &[Arg], fin: &Final) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return self.errorf(format!("can't give argument to non-function {}", args[0]));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Cur, cmd: &'a Command, fin: Final) -> R<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { idents, .. } => {
                self.at = At::Arg(first);
                return self
                    .eval_field_chain(dot, dot.clone(), first, idents, &cmd.args, fin)
                    .map(|c| c.v);
            }
            Arg::Chain { node, fields, .. } => {
                return self
                    .eval_chain(dot, first, node, fields, &cmd.args, fin)
                    .map(|c| c.v)
            }
            Arg::Identifier { name, .. } => {
                self.at = At::Arg(first);
                return self.eval_function(dot, name, cmd, &cmd.args, fin);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p);
            }
            Arg::Variable { idents, .. } => {
                return self
                    .eval_variable(dot, first, idents, &cmd.args, fin)
                    .map(|c| c.v)
            }
            _ => {}
        }
        self.at = At::Arg(first);
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool(_, b) => Ok(Value::Bool(*b)),
            Arg::Dot(_) => Ok(dot.v.clone()),
            Arg::Nil(_) => self.errorf("nil is not a command"),
            Arg::Number(_, n) => self.ideal_constant(n),
            Arg::String { text, .. } => Ok(self.literal(text)),
            _ => self.errorf(format!("can't evaluate command {first:?}")),
        }
    }

    /// A string literal of the tree as a value.
    fn literal(&self, text: &Arc<str>) -> Value {
        self.tmpl.literals.value(text)
    }

    fn ideal_constant(&self, n: &Number) -> R<Value> {
        let t = &n.text;
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && matches!(t.as_bytes()[1], b'x' | b'X')
            && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if n.is_complex {
            return Ok(Value::Complex(n.complex.0, n.complex.1));
        }
        if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float));
        }
        if n.is_int {
            return Ok(Value::int(n.int));
        }
        if n.is_uint {
            return self.errorf(format!("{t} overflows int"));
        }
        Ok(Value::Invalid)
    }

    fn eval_chain(
        &mut self,
        dot: &Cur,
        chain: &'a Arg,
        node: &'a Arg,
        fields: &'a [Arc<str>],
        args: &'a [Arg],
        fin: Final,
    ) -> R<Cur> {
        self.at = At::Arg(chain);
        if let Arg::Nil(_) = node {
            return self.errorf(format!("indirection through explicit nil in {chain}"));
        }
        let recv = self.eval_arg_untyped(dot, node)?;
        self.eval_field_chain(dot, recv, chain, fields, args, fin)
    }

    fn eval_variable(
        &mut self,
        dot: &Cur,
        node: &'a Arg,
        idents: &'a [Arc<str>],
        args: &'a [Arg],
        fin: Final,
    ) -> R<Cur> {
        self.at = At::Arg(node);
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            self.not_a_function(args, &fin)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, node, &idents[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Cur,
        mut recv: Cur,
        node: &'a Arg,
        idents: &'a [Arc<str>],
        args: &'a [Arg],
        fin: Final,
    ) -> R<Cur> {
        let n = idents.len();
        for id in &idents[..n - 1] {
            recv = self.eval_field(dot, id, node, &[], None, recv)?;
        }
        self.eval_field(dot, &idents[n - 1], node, args, fin, recv)
    }

    fn eval_field(
        &mut self,
        dot: &Cur,
        name: &str,
        node: &'a Arg,
        args: &'a [Arg],
        fin: Final,
        recv: Cur,
    ) -> R<Cur> {
        self.at = At::Arg(node);
        let has_args = args.len() > 1 || fin.is_some();
        match &recv.v {
            Value::Invalid => {
                if self.tmpl.options.missing_key == MissingKey::Error {
                    return self.errorf(format!("nil data; no entry for key {name:?}"));
                }
                Ok(Cur::plain(Value::Invalid))
            }
            Value::Nil => self.errorf(format!("nil pointer evaluating interface {{}}.{name}")),
            Value::Object(o) => {
                if let Some(m) = o.method(name) {
                    let v = self.eval_call(dot, &m, false, node, name, args, fin)?;
                    return Ok(Cur::plain(v));
                }
                if let Some(f) = o.field(name) {
                    if has_args {
                        return self.errorf(format!(
                            "{name} has arguments but cannot be invoked as function"
                        ));
                    }
                    return Ok(Cur::plain(f));
                }
                self.errorf(format!(
                    "can't evaluate field {name} in type {}",
                    recv.static_type()
                ))
            }
            Value::Map(m) => {
                if let MapKind::Named(type_name) = m.kind() {
                    if let Some(f) = self.tmpl.funcs.method(type_name, name) {
                        let bound = f.bind(recv.v.clone());
                        let v = self.eval_call(dot, &bound, false, node, name, args, fin)?;
                        return Ok(Cur::plain(v));
                    }
                }
                if has_args {
                    return self.errorf(format!("{name} is not a method but has arguments"));
                }
                let string_map = m.kind() == MapKind::String;
                match m.get(name) {
                    Some(v) => Ok(Cur {
                        v,
                        iface: !string_map,
                    }),
                    None => match self.tmpl.options.missing_key {
                        MissingKey::Default => Ok(Cur::plain(Value::Invalid)),
                        MissingKey::Zero => Ok(if string_map {
                            Cur::plain(Value::str(""))
                        } else {
                            Cur {
                                v: Value::Nil,
                                iface: true,
                            }
                        }),
                        MissingKey::Error => {
                            self.errorf(format!("map has no entry for key {name:?}"))
                        }
                    },
                }
            }
            _ => self.errorf(format!(
                "can't evaluate field {name} in type {}",
                recv.static_type()
            )),
        }
    }

    fn eval_function(
        &mut self,
        dot: &Cur,
        name: &'a str,
        cmd: &'a Command,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Value> {
        if let Some(f) = self.tmpl.funcs.get(name) {
            let f = f.clone();
            return self.eval_call_at(dot, &f, false, At::Cmd(cmd), name, args, fin);
        }
        if let Some(sig) = builtin_sig(name) {
            return self.eval_builtin(dot, name, sig, cmd, args, fin);
        }
        self.errorf(format!("{name:?} is not a defined function"))
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Cur,
        f: &Func,
        is_builtin: bool,
        node: &'a Arg,
        name: &str,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Value> {
        self.eval_call_at(dot, f, is_builtin, At::Arg(node), name, args, fin)
    }

    /// Checks the argument count the way Go's `evalCall` does.
    fn check_arity(
        &self,
        name: &str,
        params: usize,
        variadic: bool,
        args: &[Arg],
        fin: &Final,
    ) -> R<()> {
        let given = args.len().saturating_sub(1);
        let num_in = given + usize::from(fin.is_some());
        if variadic {
            if num_in < params {
                return self.errorf(format!(
                    "wrong number of args for {name}: want at least {params} got {given}"
                ));
            }
        } else if num_in != params {
            return self.errorf(format!(
                "wrong number of args for {name}: want {params} got {num_in}"
            ));
        }
        Ok(())
    }

    /// Evaluates arguments against parameter types, like Go's `evalCall`.
    fn build_args(
        &mut self,
        dot: &Cur,
        params: &[Ty],
        variadic: Option<Ty>,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Vec<Value>> {
        let rest = if args.is_empty() { args } else { &args[1..] };
        let num_in = rest.len() + usize::from(fin.is_some());
        let num_fixed = if variadic.is_some() {
            params.len()
        } else {
            rest.len()
        };
        let mut argv = Vec::with_capacity(num_in);
        let mut i = 0;
        while i < num_fixed && i < rest.len() {
            argv.push(self.eval_arg(dot, params[i], &rest[i])?);
            i += 1;
        }
        if let Some(vt) = variadic {
            while i < rest.len() {
                argv.push(self.eval_arg(dot, vt, &rest[i])?);
                i += 1;
            }
        }
        if let Some(f) = fin {
            let t = match variadic {
                Some(vt) if num_in > num_fixed => vt,
                _ => params[num_in - 1],
            };
            argv.push(self.validate_type(f, t)?);
        }
        Ok(argv)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call_at(
        &mut self,
        dot: &Cur,
        f: &Func,
        _is_builtin: bool,
        at: At<'a>,
        name: &str,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Value> {
        self.at = arity_at(at, args);
        self.check_arity(name, f.params.len(), f.variadic.is_some(), args, &fin)?;
        let argv = self.build_args(dot, &f.params, f.variadic, args, fin)?;
        self.at = at;
        let mut ctx = CallCtx {
            tmpl: Some(self.tmpl),
            depth: self.depth,
            dot: dot.v.clone(),
        };
        match (f.imp)(&mut ctx, argv) {
            Ok(v) => Ok(v),
            Err(e) => self.errorf(format!("error calling {name}: {}", e.0)),
        }
    }

    /// Evaluates an operand with no type expectation (`evalArg(dot, nil, n)`).
    fn eval_arg_untyped(&mut self, dot: &Cur, arg: &'a Arg) -> R<Cur> {
        self.at = At::Arg(arg);
        match arg {
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(_) => Ok(Cur::plain(Value::Invalid)),
            Arg::Field { idents, .. } => {
                self.eval_field_chain(dot, dot.clone(), arg, idents, &[], None)
            }
            Arg::Variable { idents, .. } => self.eval_variable(dot, arg, idents, &[], None),
            Arg::Pipe(p) => self.eval_pipeline(dot, p).map(Cur::plain),
            Arg::Identifier { name, .. } => {
                let cmd_args = std::slice::from_ref(arg);
                self.eval_function_node(dot, name, arg, cmd_args)
                    .map(Cur::plain)
            }
            Arg::Chain { node, fields, .. } => self.eval_chain(dot, arg, node, fields, &[], None),
            _ => self.eval_empty_interface(dot, arg).map(Cur::plain),
        }
    }

    fn eval_function_node(
        &mut self,
        dot: &Cur,
        name: &'a str,
        node: &'a Arg,
        args: &'a [Arg],
    ) -> R<Value> {
        if let Some(f) = self.tmpl.funcs.get(name) {
            let f = f.clone();
            return self.eval_call_at(dot, &f, false, At::Arg(node), name, args, None);
        }
        if let Some(sig) = builtin_sig(name) {
            self.at = At::Arg(node);
            return self.eval_builtin_at(dot, name, sig, At::Arg(node), args, None);
        }
        self.errorf(format!("{name:?} is not a defined function"))
    }

    fn eval_arg(&mut self, dot: &Cur, ty: Ty, arg: &'a Arg) -> R<Value> {
        self.at = At::Arg(arg);
        match arg {
            Arg::Dot(_) => return self.validate_type(dot.v.clone(), ty),
            Arg::Nil(_) => {
                if ty_can_be_nil(ty) {
                    return Ok(if ty == Ty::Reflect {
                        Value::Invalid
                    } else {
                        Value::Nil
                    });
                }
                return self.errorf(format!("cannot assign nil to {}", ty.go_name()));
            }
            Arg::Field { .. }
            | Arg::Variable { .. }
            | Arg::Pipe(_)
            | Arg::Identifier { .. }
            | Arg::Chain { .. } => {
                let v = self.eval_arg_untyped(dot, arg)?;
                self.at = At::Arg(arg);
                return self.validate_type(v.v, ty);
            }
            _ => {}
        }
        match ty {
            Ty::Bool => match arg {
                Arg::Bool(_, b) => Ok(Value::Bool(*b)),
                _ => self.errorf(format!("expected bool; found {arg}")),
            },
            Ty::Complex128 => match arg {
                Arg::Number(_, n) if n.is_complex => Ok(Value::Complex(n.complex.0, n.complex.1)),
                _ => self.errorf(format!("expected complex; found {arg}")),
            },
            Ty::Float64 => match arg {
                Arg::Number(_, n) if n.is_float => Ok(Value::Float(n.float)),
                _ => self.errorf(format!("expected float; found {arg}")),
            },
            Ty::Int(k) => match arg {
                Arg::Number(_, n) if n.is_int => Ok(Value::Int(n.int, k)),
                _ => self.errorf(format!("expected integer; found {arg}")),
            },
            Ty::Uint(k) => match arg {
                Arg::Number(_, n) if n.is_uint => Ok(Value::Uint(n.uint, k)),
                _ => self.errorf(format!("expected unsigned integer; found {arg}")),
            },
            Ty::String => match arg {
                Arg::String { text, .. } => Ok(self.literal(text)),
                _ => self.errorf(format!("expected string; found {arg}")),
            },
            Ty::Any | Ty::Reflect => self.eval_empty_interface(dot, arg),
            _ => self.errorf(format!(
                "can't handle {arg} for arg of type {}",
                ty.go_name()
            )),
        }
    }

    fn eval_empty_interface(&mut self, dot: &Cur, arg: &'a Arg) -> R<Value> {
        self.at = At::Arg(arg);
        match arg {
            Arg::Bool(_, b) => Ok(Value::Bool(*b)),
            Arg::Dot(_) => Ok(dot.v.clone()),
            Arg::Number(_, n) => self.ideal_constant(n),
            Arg::String { text, .. } => Ok(self.literal(text)),
            _ => self.eval_arg_untyped(dot, arg).map(|c| c.v),
        }
    }

    /// Go's `validateType`: is the value assignable to the parameter type?
    fn validate_type(&self, v: Value, ty: Ty) -> R<Value> {
        if let Value::Invalid = v {
            return match ty {
                Ty::Any => Ok(Value::Nil),
                Ty::Reflect => Ok(Value::Invalid),
                t if ty_can_be_nil(t) => Ok(Value::Nil),
                t => self.errorf(format!("invalid value; expected {}", t.go_name())),
            };
        }
        let ok = match (ty, &v) {
            (Ty::Any | Ty::Reflect, _) => true,
            (Ty::Bool, Value::Bool(_)) => true,
            (Ty::String, Value::String(_)) => true,
            (Ty::Int(k), Value::Int(_, k2)) => k == *k2,
            (Ty::Uint(k), Value::Uint(_, k2)) => k == *k2,
            (Ty::Float64, Value::Float(_)) => true,
            (Ty::Complex128, Value::Complex(..)) => true,
            (Ty::List(k), Value::List(l)) => l.kind() == k,
            (Ty::Map, Value::Map(m)) => m.kind() != MapKind::String,
            (Ty::Bytes, Value::Bytes(_)) => true,
            (t, Value::Nil) => ty_can_be_nil(t),
            _ => false,
        };
        if ok {
            return Ok(v);
        }
        // A nil that came out of a map is a typed `interface {}` in Go.
        let got = match v {
            Value::Nil => "interface {}".to_string(),
            other => other.type_name(),
        };
        self.errorf(format!(
            "wrong type for value; expected {}; got {got}",
            ty.go_name()
        ))
    }

    fn eval_builtin(
        &mut self,
        dot: &Cur,
        name: &str,
        sig: (&'static [Ty], Option<Ty>),
        cmd: &'a Command,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Value> {
        self.eval_builtin_at(dot, name, sig, At::Cmd(cmd), args, fin)
    }

    fn eval_builtin_at(
        &mut self,
        dot: &Cur,
        name: &str,
        sig: (&'static [Ty], Option<Ty>),
        at: At<'a>,
        args: &'a [Arg],
        fin: Final,
    ) -> R<Value> {
        self.at = arity_at(at, args);
        let (params, variadic) = sig;
        self.check_arity(name, params.len(), variadic.is_some(), args, &fin)?;
        self.at = at;
        if name == "and" || name == "or" {
            let rest = if args.is_empty() { args } else { &args[1..] };
            let mut v = Value::Invalid;
            for a in rest {
                v = self.eval_arg(dot, Ty::Reflect, a)?;
                if v.truthy() == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(f) = fin {
                v = f;
            }
            return Ok(v);
        }
        let argv = self.build_args(dot, params, variadic, args, fin)?;
        self.at = at;
        let callee = if name == "call" {
            let rest = if args.is_empty() { args } else { &args[1..] };
            rest.first().map(|a| a.to_string()).unwrap_or_default()
        } else {
            String::new()
        };
        match self.call_builtin(name, &callee, argv) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at = at;
                self.errorf(format!("error calling {name}: {e}"))
            }
        }
    }

    fn call_builtin(
        &mut self,
        name: &str,
        callee: &str,
        argv: Vec<Value>,
    ) -> Result<Value, String> {
        use crate::builtins as b;
        match name {
            "not" => Ok(Value::Bool(!argv[0].truthy())),
            "len" => b::length(&argv[0]).map(Value::int),
            "index" => b::index(&argv[0], &argv[1..]),
            "slice" => b::slice(&argv[0], &argv[1..]),
            "print" => Ok(Value::string(fmt::sprint(&argv))),
            "println" => Ok(Value::string(fmt::sprintln(&argv))),
            "printf" => {
                let f = argv[0].as_str().unwrap_or_default().to_string();
                Ok(Value::string(fmt::sprintf(&f, &argv[1..])))
            }
            "html" => Ok(Value::string(crate::escape::html_escape(
                &crate::escape::eval_args(&argv),
            ))),
            "js" => Ok(Value::string(crate::escape::js_escape(
                &crate::escape::eval_args(&argv),
            ))),
            "urlquery" => Ok(Value::string(crate::escape::query_escape(
                &crate::escape::eval_args(&argv),
            ))),
            "eq" => b::eq(&argv[0], &argv[1..]).map(Value::Bool),
            "ne" => b::eq(&argv[0], &argv[1..2]).map(|t| Value::Bool(!t)),
            "lt" => b::lt(&argv[0], &argv[1]).map(Value::Bool),
            "le" => b::le(&argv[0], &argv[1]).map(Value::Bool),
            "gt" => b::le(&argv[0], &argv[1]).map(|t| Value::Bool(!t)),
            "ge" => b::lt(&argv[0], &argv[1]).map(|t| Value::Bool(!t)),
            "call" => {
                let f = match &argv[0] {
                    Value::Invalid | Value::Nil => return Err("call of nil".into()),
                    Value::Func(f) => f.clone(),
                    other => {
                        return Err(format!(
                            "non-function {callee} of type {}",
                            other.type_name()
                        ))
                    }
                };
                let args = argv[1..].to_vec();
                let want = f.params.len();
                if f.variadic.is_some() {
                    if args.len() < want {
                        return Err(format!(
                            "wrong number of args for {callee}: got {} want at least {want}",
                            args.len()
                        ));
                    }
                } else if args.len() != want {
                    return Err(format!(
                        "wrong number of args for {callee}: got {} want {want}",
                        args.len()
                    ));
                }
                let mut ctx = CallCtx {
                    tmpl: Some(self.tmpl),
                    depth: self.depth,
                    dot: Value::Invalid,
                };
                let args = args
                    .into_iter()
                    .map(|a| {
                        if let Value::Invalid = a {
                            Value::Nil
                        } else {
                            a
                        }
                    })
                    .collect();
                (f.imp)(&mut ctx, args).map_err(|e| e.0)
            }
            _ => Err(format!("{name:?} is not a defined function")),
        }
    }
}

/// Runs `f` with enough stack, growing it on the heap when nesting is deep.
fn grow<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// Signatures of Go's builtin functions.
fn builtin_sig(name: &str) -> Option<(&'static [Ty], Option<Ty>)> {
    const R1: &[Ty] = &[Ty::Reflect];
    const R2: &[Ty] = &[Ty::Reflect, Ty::Reflect];
    const S1: &[Ty] = &[Ty::String];
    const NONE: &[Ty] = &[];
    Some(match name {
        "and" | "or" => (R1, Some(Ty::Reflect)),
        "call" => (R1, Some(Ty::Reflect)),
        "html" | "js" | "urlquery" | "print" | "println" => (NONE, Some(Ty::Any)),
        "printf" => (S1, Some(Ty::Any)),
        "index" | "slice" => (R1, Some(Ty::Reflect)),
        "len" | "not" => (R1, None),
        "eq" => (R1, Some(Ty::Reflect)),
        "ne" | "lt" | "le" | "gt" | "ge" => (R2, None),
        _ => return None,
    })
}
