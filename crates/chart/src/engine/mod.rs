//! The rendering engine, as Helm's `pkg/engine`: every template of a chart
//! and its subcharts is parsed into one template set (in Helm's order, so
//! the same `define` wins), each non-partial template is executed with the
//! values of the chart it belongs to, and `<no value>` is removed from the
//! output. Also provides Helm's own functions that need the render:
//! `include`, `tpl`, `required` and `lookup`.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use crate::loader::{utf8_lossy, Chart};
use crate::values::prepare::{rendered_templates, subchart_path};

use gotmpl::{
    Func, FuncError, FuncMap, MapKind, MapRef, MissingKey, ParseCache, Templates, Ty, Value,
};

/// Helm's limit on how often one template may be included recursively.
const INCLUDE_RECURSION_MAX: usize = 1000;

/// A template to render: its full name (`<chart>/templates/x.yaml`), its
/// text, and the top-level object it sees as `.` (`Values`, `Chart`,
/// `Release`, `Capabilities`, `Files`, `Subcharts`; `Template` is added here).
#[derive(Clone, Debug)]
pub struct Renderable {
    pub name: String,
    /// The template's file as the chart holds it (shared with the chart,
    /// not copied per render), parsed as UTF-8 with invalid sequences
    /// replaced.
    pub text: Arc<[u8]>,
    pub vals: MapRef,
    pub base_path: String,
}

/// A rendering error, with the message Helm would give.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RenderError {
    #[error("parse error at ({location}): {message}")]
    Parse { location: String, message: String },
    #[error("{0}")]
    Exec(String),
}

/// Looks up a live object for Helm's `lookup` (apiVersion, kind, namespace,
/// name). Without one, `lookup` returns an empty map as `helm template` does.
pub type LookupFn = Rc<dyn Fn(&str, &str, &str, &str) -> Result<serde_json::Value, String>>;

/// The Helm template engine: Sprig and Helm functions over gotmpl.
pub struct Engine {
    base: Rc<FuncMap>,
    pub(crate) lookup: Option<LookupFn>,
    pub(crate) strict: bool,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

/// How much template text the per-thread parse cache holds.
pub(crate) const PARSE_CACHE_BYTES: usize = 64 << 20;

thread_local! {
    static BASE_FUNCS: Rc<FuncMap> = {
        let mut m = sprig::funcmap();
        crate::funcs::register(&mut m);
        Rc::new(m)
    };
    // Charts are rendered again and again (every reconcile, every `tpl`
    // call with the same text); every render's set has the same function
    // names, so parses can be shared between renders on a thread.
    pub(crate) static PARSE_CACHE: Rc<RefCell<ParseCache>> =
        Rc::new(RefCell::new(ParseCache::new(PARSE_CACHE_BYTES)));
}

/// Forgets what this thread remembers between renders (parsed templates,
/// values files, schemas, `fromYaml` input): to measure a first render, or
/// to free memory once charts are gone.
pub fn clear_caches() {
    PARSE_CACHE.with(|c| *c.borrow_mut() = ParseCache::new(PARSE_CACHE_BYTES));
    gocodec::memo::clear_all();
}

/// Why a standalone template text did not render: the text/template
/// message of the failed step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderStringError {
    #[error("{0}")]
    Parse(String),
    #[error("{0}")]
    Exec(String),
}

/// Renders one template text on its own, with Sprig's and Helm's functions
/// but no chart (so no `include`, `tpl` or `lookup`) and nothing as `.`:
/// what operator-sdk does with a watch's `overrideValues`.
pub fn render_string(name: &str, text: &str) -> Result<String, RenderStringError> {
    let mut set = Templates::new(BASE_FUNCS.with(|b| b.clone()));
    set.parse(name, text)
        .map_err(|e| RenderStringError::Parse(e.to_string()))?;
    Rc::new(set)
        .execute(name, &Value::Invalid)
        .map_err(|e| RenderStringError::Exec(e.to_string()))
}

/// Calls `f` with the name a render gives each template of `chart` and
/// its subcharts (`<chart>/charts/<sub>/templates/x.yaml`) and its text,
/// skipping what a render never parses.
pub(crate) fn for_each_template(chart: &Chart, f: &mut dyn FnMut(&str, &str)) {
    fn walk(c: &Chart, full_path: &str, f: &mut dyn FnMut(&str, &str)) {
        for (name, t) in rendered_templates(c, full_path) {
            f(&name, &utf8_lossy(&t.data));
        }
        for d in &c.dependencies {
            walk(d, &subchart_path(full_path, d.name()), f);
        }
    }
    walk(chart, chart.name(), f);
}

/// Parses templates into this thread's parse cache ahead of a render of
/// them on this thread, which then finds them parsed (see [`crate::oneshot`]).
/// A text that does not parse is left for the render to report.
pub(crate) struct ParseHere {
    set: Templates,
}

impl ParseHere {
    pub(crate) fn new() -> Self {
        let mut set = Templates::new(Engine::new().render_funcs());
        PARSE_CACHE.with(|c| set.set_parse_cache(c.clone()));
        ParseHere { set }
    }

    pub(crate) fn parse(&mut self, name: &str, text: &str) {
        let _ = self.set.parse(name, text);
    }

    /// Keeps the parses of a cache filled on another thread with
    /// [`Engine::render_funcs`].
    pub(crate) fn merge(&mut self, parsed: ParseCache) {
        PARSE_CACHE.with(|c| c.borrow_mut().merge(parsed));
    }
}

impl Engine {
    pub fn new() -> Self {
        Engine {
            base: BASE_FUNCS.with(|b| b.clone()),
            lookup: None,
            strict: false,
        }
    }

    /// Answers `lookup` from a live cluster.
    pub(crate) fn with_lookup(mut self, f: LookupFn) -> Self {
        self.lookup = Some(f);
        self
    }

    /// `missingkey=error` (Helm's `--strict` lint mode).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The functions of one render: the shared Sprig/Helm set plus the
    /// closures that carry per-render state.
    pub(crate) fn render_funcs(&self) -> Rc<FuncMap> {
        let mut m = FuncMap::layered(self.base.clone());
        let included: Rc<RefCell<HashMap<String, usize>>> = Rc::default();
        let inc = included.clone();
        m.insert(
            "include",
            Func::new(&[Ty::String, Ty::Any], move |ctx, args| {
                let name = args[0].as_str().unwrap_or_default().to_string();
                {
                    let mut counts = inc.borrow_mut();
                    let c = counts.entry(name.clone()).or_insert(0);
                    if *c > INCLUDE_RECURSION_MAX {
                        return Err(FuncError::new(format!(
                            "rendering template has a nested reference name: {name}: unable to execute template"
                        )));
                    }
                    *c += 1;
                }
                let data = nil_to_invalid(&args[1]);
                let r = ctx.execute_template(&name, &data);
                if let Some(c) = inc.borrow_mut().get_mut(&name) {
                    *c = c.saturating_sub(1);
                }
                r.map(Value::string).map_err(|e| FuncError::new(e.to_string()))
            }),
        );
        m.insert(
            "tpl",
            Func::new(&[Ty::String, Ty::Any], move |ctx, args| {
                let text = args[0].as_str().unwrap_or_default();
                let Some(parent) = ctx.templates() else {
                    return Err(FuncError::new("tpl: no template set"));
                };
                // Go's `tpl` parses into a clone of the calling set and runs
                // exactly the tree it parsed: an empty or blank text runs as
                // itself, even where it leaves an outer `tpl`'s text in place
                // under the same name. A layer is that clone, copy-on-write.
                let mut child = Templates::layered(parent.clone());
                let name = parent.root_name().to_string();
                let tree = child
                    .parse(&name, text)
                    .map_err(|e| FuncError::new(format!("cannot parse template {text:?}: {e}")))?;
                let child = Rc::new(child);
                let mut out = String::new();
                let data = nil_to_invalid(&args[1]);
                child
                    .execute_tree(&tree, &data, &mut out, ctx.depth() + 1)
                    .map_err(|e| {
                        FuncError::new(format!(
                            "error during tpl function execution for {text:?}: {e}"
                        ))
                    })?;
                Ok(Value::string(out.replace("<no value>", "")))
            }),
        );
        m.insert(
            "required",
            Func::new(&[Ty::String, Ty::Any], |_, args| {
                let missing = match &args[1] {
                    Value::Nil | Value::Invalid => true,
                    Value::String(s) => s.is_empty(),
                    _ => false,
                };
                if missing {
                    return Err(FuncError::new(warn_wrap(
                        args[0].as_str().unwrap_or_default(),
                    )));
                }
                Ok(args[1].clone())
            }),
        );
        // Helm's own `fail`, marked like `required` (Sprig's is not).
        m.insert(
            "fail",
            Func::new(&[Ty::String], |_, a| {
                Err(FuncError::new(warn_wrap(a[0].as_str().unwrap_or_default())))
            }),
        );
        let lookup = self.lookup.clone();
        m.insert(
            "lookup",
            Func::new(
                &[Ty::String, Ty::String, Ty::String, Ty::String],
                move |_, a| {
                    let s = |i: usize| a[i].as_str().unwrap_or_default().to_string();
                    match &lookup {
                        None => Ok(Value::map(Default::default())),
                        Some(f) => {
                            let j = f(&s(0), &s(1), &s(2), &s(3)).map_err(FuncError::new)?;
                            Ok(match Value::from_json(&j) {
                                Value::Nil => Value::map(Default::default()),
                                v => v,
                            })
                        }
                    }
                },
            ),
        );
        Rc::new(m)
    }

    /// Renders the templates; returns the output of every non-partial
    /// template by name.
    pub fn render(&self, tpls: &[Renderable]) -> Result<BTreeMap<String, String>, RenderError> {
        self.render_feeding(tpls, &mut |_, _| {})
    }

    /// [`Engine::render`], handing each template's output to `feed` (name,
    /// text) as soon as it is out, in the order the templates run.
    pub fn render_feeding(
        &self,
        tpls: &[Renderable],
        feed: &mut dyn FnMut(&str, &str),
    ) -> Result<BTreeMap<String, String>, RenderError> {
        let (set, runs) = self.template_set(tpls)?;
        let mut out = BTreeMap::new();
        for t in runs {
            let text = run_template(&set, t)?;
            feed(&t.name, &text);
            out.insert(t.name.clone(), text);
        }
        Ok(out)
    }

    /// Every template parsed into one set, in Helm's order, and the
    /// templates to run (all but partials), in the order Helm runs them.
    pub(crate) fn template_set<'t>(
        &self,
        tpls: &'t [Renderable],
    ) -> Result<(Rc<Templates>, Vec<&'t Renderable>), RenderError> {
        let mut set = Templates::new(self.render_funcs());
        set.set_root_name("gotpl");
        PARSE_CACHE.with(|c| set.set_parse_cache(c.clone()));
        let mut opts = set.options();
        opts.missing_key = if self.strict {
            MissingKey::Error
        } else {
            MissingKey::Zero
        };
        set.set_options(opts);

        let mut order: Vec<&Renderable> = tpls.iter().collect();
        // Helm's `sortTemplates` (deeper paths first, then reverse lexical order;
        // it decides which of two same-named `define`s wins), each key computed once.
        order.sort_by_cached_key(|t| {
            (
                std::cmp::Reverse(t.name.matches('/').count()),
                std::cmp::Reverse(t.name.as_str()),
            )
        });
        for t in &order {
            set.parse(&t.name, &utf8_lossy(&t.text))
                .map_err(|e| parse_error(&t.name, e.message()))?;
        }
        order.retain(|t| {
            let base = t.name.rsplit('/').next().unwrap_or(&t.name);
            !base.starts_with('_')
        });
        Ok((Rc::new(set), order))
    }
}

/// Runs one template of `set` with its chart's objects (and `.Template`).
pub(crate) fn run_template(set: &Rc<Templates>, t: &Renderable) -> Result<String, RenderError> {
    let mut tm = gotmpl::Map::new();
    tm.insert("Name".into(), Value::str(&t.name));
    tm.insert("BasePath".into(), Value::str(&t.base_path));
    // Helm sets `.Template` itself: no template's doing (see
    // `oneshot::render`).
    gotmpl::value::watch::ignoring(|| {
        t.vals.insert(
            "Template",
            Value::Map(MapRef::with_kind(tm, MapKind::Named("common.Values"))),
        )
    });
    let data = Value::Map(t.vals.clone());
    let text = set
        .execute(&t.name, &data)
        .map_err(|e| RenderError::Exec(exec_error(&t.name, e.message())))?;
    // Stray bytes (see gotmpl::gostr) leave as U+FFFD, as Go's
    // JSON and YAML decoders read them.
    Ok(gotmpl::gostr::to_text(&text).replace("<no value>", ""))
}

/// Helm passes `interface{}` data to templates; a nil there is "no value".
fn nil_to_invalid(v: &Value) -> Value {
    match v {
        Value::Nil => Value::Invalid,
        other => other.clone(),
    }
}

/// Helm's `cleanupParseError`: `parse error at (file:line): cause`.
fn parse_error(name: &str, msg: &str) -> RenderError {
    let tokens: Vec<&str> = msg.split(": ").collect();
    if tokens.len() == 1 {
        return RenderError::Exec(format!("parse error in ({name}): {msg}"));
    }
    RenderError::Parse {
        location: tokens[1].to_string(),
        message: tokens[tokens.len() - 1].to_string(),
    }
}

/// Helm marks the messages of `fail` and `required` with these, so that the
/// message can be shown alone however deeply the call was nested.
pub(crate) const WARN_START: &str = "HELM_ERR_START";
pub(crate) const WARN_END: &str = "HELM_ERR_END";

/// Wraps a `fail`/`required` message in Helm's markers.
pub(crate) fn warn_wrap(msg: &str) -> String {
    format!("{WARN_START}{msg}{WARN_END}")
}

/// Helm's `reformatExecErrorMsg`: a `fail`/`required` message alone with
/// the outermost location; otherwise, when the whole chain of wrapped
/// template errors can be read, one block per template (location, action,
/// message) so users can follow nested `include`s; anything else verbatim.
fn exec_error(name: &str, msg: &str) -> String {
    let tokens: Vec<&str> = msg.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({name}): {msg}");
    }
    let location = tokens[1];
    // Go's `warnRegex`, `HELM_ERR_START((?s).*)HELM_ERR_END`: the first
    // start marker to the last end marker.
    if let Some(i) = tokens[2].find(WARN_START) {
        let rest = &tokens[2][i + WARN_START.len()..];
        if let Some(j) = rest.rfind(WARN_END) {
            return format!("execution error at ({location}): {}", &rest[..j]);
        }
    }
    // A chain cut short (see gotmpl::limits) no longer parses link by
    // link; shown as it is, it still has the outermost call and the cause.
    if gotmpl::limits::was_capped(msg) {
        return msg.to_string();
    }
    match trace_chain(msg) {
        Some(trace) => trace,
        None => msg.to_string(),
    }
}

/// One link of a wrapped template error, as Helm's `TraceableError`.
#[derive(PartialEq)]
struct Traceable<'a> {
    location: &'a str,
    executed: String,
    message: &'a str,
}

/// Reads one link: `template: LOC: executing "NAME" at <CTX>: MSG`,
/// `template: LOC: MSG`, or Go's `template: no template ...` (message only).
/// MSG stops before a nested ` template:` error, which is the next link.
fn parse_traceable(s: &str) -> Option<Traceable<'_>> {
    let rest = s.strip_prefix("template: ")?;
    if rest.starts_with("no template ") {
        return Some(Traceable {
            location: "",
            executed: String::new(),
            message: s,
        });
    }
    let (location, after) = rest.split_once(": ")?;
    if after.starts_with("executing ") {
        if let Some(at) = after.find(" at <") {
            if let Some(end) = after[at..].find(">: ") {
                let end = at + end;
                return Some(Traceable {
                    location,
                    executed: format!("{}:", &after[..=end]),
                    message: cut_next(&after[end + 3..]),
                });
            }
        }
    }
    Some(Traceable {
        location,
        executed: String::new(),
        message: cut_next(after),
    })
}

/// Go's error chain of a flat message: after `error calling F: ` comes the
/// function's own error (`%w`); `include` returns the inner template's
/// error, which starts a new link. A function error that is not a template
/// error ends the chain unreadable, as does any unparsable link.
fn trace_chain(msg: &str) -> Option<String> {
    let mut links: Vec<Traceable> = Vec::new();
    let mut current = Some(msg);
    while let Some(text) = current {
        let t = parse_traceable(text)?;
        current = None;
        if !t.executed.is_empty() {
            let body = &text[text.len() - text_after_executing(text).len()..];
            if let Some(call) = body.strip_prefix("error calling ") {
                current = Some(call.split_once(": ").map(|(_, inner)| inner)?);
            }
        }
        links.push(t);
    }
    let mut out = String::new();
    for l in &links {
        let m = l.message;
        if !l.location.is_empty() {
            out.push_str(l.location);
            out.push_str("\n  ");
        }
        if !l.executed.is_empty() {
            out.push_str(&l.executed);
            out.push_str("\n    ");
        }
        let m = if !l.executed.is_empty() && m.contains(&l.executed) {
            ""
        } else {
            m
        };
        if !m.is_empty() {
            out.push_str(m);
            out.push('\n');
        }
    }
    Some(out.trim().to_string())
}

/// A message up to a nested ` template:` error (at least one character).
fn cut_next(m: &str) -> &str {
    match m.get(1..).and_then(|t| t.find(" template:")) {
        Some(i) => &m[..i + 1],
        None => m,
    }
}

/// The MSG part of `template: LOC: executing "NAME" at <CTX>: MSG`.
fn text_after_executing(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("template: ") else {
        return "";
    };
    let Some((_, after)) = rest.split_once(": ") else {
        return "";
    };
    let Some(at) = after.find(" at <") else {
        return "";
    };
    match after[at..].find(">: ") {
        Some(end) => &after[at + end + 3..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(values: serde_json::Value) -> MapRef {
        let mut m = gotmpl::Map::new();
        m.insert("Values".into(), Value::from_json(&values));
        MapRef::new(m)
    }

    #[test]
    fn renders_with_includes_and_strips_no_value() {
        let e = Engine::new();
        let v = vals(serde_json::json!({"name": "x"}));
        let tpls = vec![
            Renderable {
                name: "c/templates/a.yaml".into(),
                text: r#"{{ include "c.n" . }}|{{ .Values.missing }}|{{ .Template.Name }}"#
                    .as_bytes()
                    .into(),
                vals: v.clone(),
                base_path: "c/templates".into(),
            },
            Renderable {
                name: "c/templates/_h.tpl".into(),
                text: r#"{{ define "c.n" }}n={{ .Values.name }}{{ end }}"#.as_bytes().into(),
                vals: v,
                base_path: "c/templates".into(),
            },
        ];
        let out = e.render(&tpls).expect("renders");
        assert_eq!(out.len(), 1);
        assert_eq!(out["c/templates/a.yaml"], "n=x||c/templates/a.yaml");
    }

    #[test]
    fn exec_errors_are_reformatted_like_helm() {
        // Outputs of Helm v4.2.3 for the same failures.
        let f = "c/templates/a.yaml";
        assert_eq!(
            exec_error(f, "template: c/templates/a.yaml:1:10: executing \"c/templates/a.yaml\" at <.Values.m.a.b>: can't evaluate field b in type interface {}"),
            "c/templates/a.yaml:1:10\n  executing \"c/templates/a.yaml\" at <.Values.m.a.b>:\n    can't evaluate field b in type interface {}"
        );
        assert_eq!(
            exec_error(f, "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"h2\" .>: error calling include: template: c/templates/_h.tpl:1:65: executing \"h2\" at <include \"h\" .>: error calling include: template: c/templates/_h.tpl:1:26: executing \"h\" at <.Values.nope.x>: nil pointer evaluating interface {}.x"),
            "c/templates/a.yaml:1:3\n  executing \"c/templates/a.yaml\" at <include \"h2\" .>:\n    error calling include:\nc/templates/_h.tpl:1:65\n  executing \"h2\" at <include \"h\" .>:\n    error calling include:\nc/templates/_h.tpl:1:26\n  executing \"h\" at <.Values.nope.x>:\n    nil pointer evaluating interface {}.x"
        );
        assert_eq!(
            exec_error(f, "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"missing\" .>: error calling include: template: no template \"missing\" associated with template \"gotpl\""),
            "c/templates/a.yaml:1:3\n  executing \"c/templates/a.yaml\" at <include \"missing\" .>:\n    error calling include:\ntemplate: no template \"missing\" associated with template \"gotpl\""
        );
        // A function's own error ends the readable chain: kept verbatim.
        let verbatim = "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"e\" .>: error calling include: template: c/templates/_h.tpl:1:171: executing \"e\" at <eq 1 \"a\">: error calling eq: incompatible types for comparison: int and string";
        assert_eq!(exec_error(f, verbatim), verbatim);
        // `required` deep inside includes: its message at the outer location.
        assert_eq!(
            exec_error(f, &format!("template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"r\" .>: error calling include: template: c/templates/_h.tpl:1:9: executing \"r\" at <required \"m\" .x>: error calling required: {}", warn_wrap("need: x"))),
            "execution error at (c/templates/a.yaml:1:3): need: x"
        );
    }

    #[test]
    fn values_methods_are_callable() {
        let e = Engine::new();
        let values = Value::from_json(&serde_json::json!({
            "m": {"a": 1, "c": {"d": 2}}, "l": [1], "AsMap": "key"
        }));
        let mut top = gotmpl::Map::new();
        top.insert(
            "Values".into(),
            Value::Map(
                values
                    .as_map()
                    .unwrap()
                    .retyped(MapKind::Named("common.Values")),
            ),
        );
        let run = |text: &str| {
            e.render(&[Renderable {
                name: "c/templates/a.yaml".into(),
                text: text.as_bytes().into(),
                vals: MapRef::new(top.clone()),
                base_path: "c/templates".into(),
            }])
            .map(|out| out["c/templates/a.yaml"].clone())
            .map_err(|e| e.to_string())
        };
        // Outputs of Helm v4.2.3.
        assert_eq!(
            run("{{ .Values.AsMap | toJson }} {{ typeOf .Values.AsMap }}").unwrap(),
            r#"{"AsMap":"key","l":[1],"m":{"a":1,"c":{"d":2}}} map[string]interface {}"#
        );
        assert_eq!(
            run("{{ (.Values.Table \"m\").YAML }}|{{ typeOf (.Values.Table \"m.c\") }}").unwrap(),
            "a: 1\nc:\n  d: 2\n|common.Values"
        );
        assert_eq!(run("{{ .Values.PathValue \"m.c.d\" }}").unwrap(), "2");
        assert!(run("{{ .Values.Table \"l\" }}")
            .unwrap_err()
            .ends_with("error calling Table: \"l\" is not a table"));
        assert!(run("{{ .Values.PathValue \"m\" }}")
            .unwrap_err()
            .ends_with("error calling PathValue: \"m\" is not a value"));
        assert_eq!(run("{{ index .Values \"AsMap\" }}").unwrap(), "key");
    }

    #[test]
    fn tpl_recursion_is_an_error_not_a_crash() {
        // Go has no limit here and dies of stack overflow; rudder stops at
        // its template depth limit with an error the chart author can read.
        let e = Engine::new();
        let tpls = vec![Renderable {
            name: "c/templates/a.yaml".into(),
            text: "{{ tpl .Values.a . }}".as_bytes().into(),
            vals: vals(serde_json::json!({"a": "{{ tpl .Values.a . }}"})),
            base_path: "c/templates".into(),
        }];
        let err = e.render(&tpls).unwrap_err().to_string();
        assert!(
            err.ends_with("exceeded maximum template depth (10000)"),
            "{}",
            &err[err.len() - 200..]
        );
    }

    #[test]
    fn include_recursion_is_bounded() {
        let e = Engine::new();
        let tpls = vec![Renderable {
            name: "c/templates/a.yaml".into(),
            text: r#"{{ define "loop" }}{{ include "loop" . }}{{ end }}{{ include "loop" . }}"#
                .as_bytes()
                .into(),
            vals: vals(serde_json::json!({})),
            base_path: "c/templates".into(),
        }];
        let err = e.render(&tpls).unwrap_err().to_string();
        assert!(
            err.contains("rendering template has a nested reference name: loop"),
            "{err}"
        );
    }
}
