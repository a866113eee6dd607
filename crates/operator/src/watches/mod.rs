//! `watches.yaml`: which custom resource kinds the operator watches and which chart
//! each becomes, in the Go helm-operator's format plus rudder's scope extensions.
//!
//! The file is read as the Go operator reads it (`sigs.k8s.io/yaml`: YAML 1.1 typing,
//! field names matched case-insensitively, scalars accepted where a string is
//! expected, unknown fields ignored — with a warning naming the field and the known
//! ones, where Go is silent), but bad durations and bad selectors are errors naming
//! the file and entry instead of being silently ignored. [`reload`] reloads a chart
//! whose files change.

pub(crate) mod reload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chart::engine::RenderStringError;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::{Expression, Selector, SelectorExt};
use serde_json::{Map, Value};

use crate::status::StatusManifest;

/// One entry of `watches.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The chart directory or archive (resolved to a usable path).
    pub chart: PathBuf,
    /// Watch the kinds of the release's objects and repair drift (default true).
    pub watch_dependent_resources: bool,
    /// `overrideValues` after `$VAR` expansion, still as `--set` expressions' raw text.
    pub override_values: BTreeMap<String, String>,
    pub reconcile_period: Option<Duration>,
    pub max_concurrent_reconciles: Option<usize>,
    /// Only CRs matching this label selector are reconciled.
    pub selector: Option<LabelSelector>,
    /// rudder extension: the release may create cluster-scoped objects.
    pub allow_cluster_scoped: bool,
    /// rudder extension: other namespaces the release may create objects in (`"*"`: any).
    pub allowed_namespaces: Vec<String>,
    /// `dryRunOption`: how the Go operator renders manifests when comparing them
    /// (`server` evaluates `lookup` against the cluster).
    pub dry_run_option: DryRunOption,
    /// rudder extension (`installWait`): `Deployed` turns True after an install only
    /// once the release's workloads are ready.
    pub install_wait: bool,
    /// rudder extension (`upgradeWait`): the same after an upgrade.
    pub upgrade_wait: bool,
    /// rudder extension (`waitTimeout`): how long those waits last before
    /// `ReleaseFailed` (default 5m).
    pub wait_timeout: Option<Duration>,
    /// rudder extension (`maxHistory`): release records kept per CR, overriding
    /// `--max-history` (0: keep all).
    pub max_history: Option<usize>,
    /// rudder extension (`statusManifest`): what `status.deployedRelease.manifest`
    /// shows, overriding `--status-manifest`.
    pub status_manifest: Option<StatusManifest>,
}

impl Default for Watch {
    fn default() -> Self {
        Watch {
            group: String::new(),
            version: String::new(),
            kind: String::new(),
            chart: PathBuf::new(),
            watch_dependent_resources: true,
            override_values: BTreeMap::new(),
            reconcile_period: None,
            max_concurrent_reconciles: None,
            selector: None,
            allow_cluster_scoped: false,
            allowed_namespaces: Vec::new(),
            dry_run_option: DryRunOption::Client,
            install_wait: false,
            upgrade_wait: false,
            wait_timeout: None,
            max_history: None,
            status_manifest: None,
        }
    }
}

/// `dryRunOption` of a watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRunOption {
    /// `none`/`client` (the default): render without asking the cluster.
    #[default]
    Client,
    /// `server`: templates' `lookup` sees the live cluster.
    Server,
}

/// A `watches.yaml` that cannot be used; the message says which file and entry.
#[derive(Debug, thiserror::Error)]
pub enum WatchesError {
    #[error("could not read watches file {}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not YAML, or not a list of entries.
    #[error("{file}: {message}")]
    Syntax { file: String, message: String },
    /// One entry (numbered from 1) is invalid.
    #[error("{file}: entry #{number}{}: {message}", gvk_suffix(.gvk))]
    Entry {
        file: String,
        /// 1-based position of the entry in the list.
        number: usize,
        /// `group/version, Kind=kind` when known.
        gvk: Option<String>,
        message: String,
    },
    /// `overrideValues` that `--set` parsing refuses.
    #[error("overrideValues of {gvk}: {message}")]
    Override { gvk: String, message: String },
}

fn gvk_suffix(gvk: &Option<String>) -> String {
    gvk.as_ref().map(|g| format!(" ({g})")).unwrap_or_default()
}

impl Watch {
    /// `group/version` (just `version` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn gvk(&self) -> kube::api::GroupVersionKind {
        kube::api::GroupVersionKind::gvk(&self.group, &self.version, &self.kind)
    }

    /// The GVK as Go prints `schema.GroupVersionKind`: `group/version, Kind=Kind`.
    pub fn gvk_string(&self) -> String {
        format!("{}, Kind={}", self.api_version(), self.kind)
    }

    /// The overrides as values, exactly as `helm --set-string key=value` would give
    /// them: the Go operator feeds each `key=value` to `strvals.ParseIntoString`, so
    /// every leaf is a string (`"false"` and `"3"` stay strings) while `a.b`, `a[0]`
    /// and `{x,y}` still build maps and lists. Keys are applied in sorted order, so
    /// overlapping keys resolve the same way every time.
    pub fn override_values(&self) -> Result<Map<String, Value>, WatchesError> {
        let mut out = Map::new();
        for (k, v) in &self.override_values {
            chart::values::strvals::parse_into_string(&format!("{k}={v}"), &mut out).map_err(
                |e| WatchesError::Override {
                    gvk: self.gvk_string(),
                    message: format!("{k}: {e}"),
                },
            )?;
        }
        Ok(out)
    }

    /// The selector as a `labelSelector=` query string for list and watch calls;
    /// `None` when every CR is selected.
    pub fn label_selector_string(&self) -> Option<String> {
        let sel = self.kube_selector();
        (!sel.selects_all()).then(|| sel.to_string())
    }

    /// Whether a CR with these labels is selected by this watch.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.kube_selector().matches(labels)
    }

    fn kube_selector(&self) -> Selector {
        let Some(sel) = &self.selector else {
            return Selector::default();
        };
        // `parse` checks every selector; one built by hand that kube cannot
        // read must select nothing (an `in ()` the API server refuses),
        // never everything.
        Selector::try_from(sel.clone()).unwrap_or_else(|_| {
            Expression::In("rudder.invalid/selector".into(), Default::default()).into()
        })
    }

    /// Whether the release may create objects in `namespace` (its own is always allowed).
    pub fn namespace_allowed(&self, release_namespace: &str, namespace: &str) -> bool {
        namespace == release_namespace
            || self
                .allowed_namespaces
                .iter()
                .any(|n| n == "*" || n == namespace)
    }

    /// Loads this watch's chart.
    pub fn load_chart(&self) -> Result<chart::loader::Chart, chart::loader::LoadError> {
        chart::loader::load(&self.chart)
    }
}

/// Reads and validates a `watches.yaml`. Relative chart paths are looked up in the
/// working directory first (as the Go operator does), then beside the file.
pub fn load(path: &Path) -> Result<Vec<Watch>, WatchesError> {
    let text = std::fs::read_to_string(path).map_err(|source| WatchesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file = path.display().to_string();
    let (watches, warnings) = parse_named(&text, base, &file)?;
    for warning in &warnings {
        tracing::warn!(target: "cmd", file = %file, "{warning}");
    }
    Ok(watches)
}

/// Parses and validates `watches.yaml` text; `base_dir` is where relative chart
/// paths are looked up when they are not found relative to the working directory.
/// Unknown fields are ignored ([`load`] logs a warning for each).
pub fn parse(text: &str, base_dir: &Path) -> Result<Vec<Watch>, WatchesError> {
    parse_named(text, base_dir, "watches.yaml").map(|(w, _)| w)
}

/// [`parse`], and one warning per ignored unknown field, naming it, its entry and
/// the known fields.
#[cfg(test)]
pub(crate) fn parse_with_warnings(
    text: &str,
    base_dir: &Path,
) -> Result<(Vec<Watch>, Vec<String>), WatchesError> {
    parse_named(text, base_dir, "watches.yaml")
}

const FIELDS: &[&str] = &[
    "group",
    "version",
    "kind",
    "chart",
    "watchDependentResources",
    "overrideValues",
    "reconcilePeriod",
    "maxConcurrentReconciles",
    "selector",
    "dryRunOption",
    "allowClusterScoped",
    "allowedNamespaces",
    "installWait",
    "upgradeWait",
    "waitTimeout",
    "maxHistory",
    "statusManifest",
];

/// Warnings about what was ignored, one line each.
type Warnings = Vec<String>;

fn parse_named(
    text: &str,
    base_dir: &Path,
    file: &str,
) -> Result<(Vec<Watch>, Warnings), WatchesError> {
    let syntax = |message: String| WatchesError::Syntax {
        file: file.to_string(),
        message,
    };
    let doc = gocodec::yaml::parse_yaml_to_json(text).map_err(|e| syntax(e.to_string()))?;
    let entries = match doc {
        Value::Null => Vec::new(),
        Value::Array(a) => a,
        other => {
            return Err(syntax(format!(
                "expected a list of watches (`- group: ...`), found {}",
                json_kind(&other)
            )))
        }
    };
    let mut watches: Vec<Watch> = Vec::with_capacity(entries.len());
    let mut warnings = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let number = i + 1;
        let mut ignored = Vec::new();
        let watch = parse_entry(entry, base_dir, &mut ignored).map_err(|(gvk, message)| {
            WatchesError::Entry {
                file: file.to_string(),
                number,
                gvk,
                message,
            }
        })?;
        for what in ignored {
            warnings.push(format!(
                "{file}: entry #{number} ({}): {what}",
                watch.gvk_string()
            ));
        }
        if let Some(first) = watches
            .iter()
            .position(|w| w.gvk_string() == watch.gvk_string())
        {
            return Err(WatchesError::Entry {
                file: file.to_string(),
                number,
                gvk: Some(watch.gvk_string()),
                message: format!(
                    "duplicate GVK: entry #{} already watches this kind; one kind maps to one chart",
                    first + 1
                ),
            });
        }
        watches.push(watch);
    }
    Ok((watches, warnings))
}

/// An entry error: the GVK if it was read already, and the message.
type EntryErr = (Option<String>, String);

fn parse_entry(
    entry: &Value,
    base_dir: &Path,
    ignored: &mut Vec<String>,
) -> Result<Watch, EntryErr> {
    let Value::Object(obj) = entry else {
        return Err((
            None,
            format!(
                "expected a mapping with group, version, kind and chart, found {}",
                json_kind(entry)
            ),
        ));
    };
    // encoding/json matches field names case-insensitively; two spellings of one
    // field would make the Go result depend on key order, so refuse them.
    let mut fields: BTreeMap<&'static str, &Value> = BTreeMap::new();
    for (key, value) in obj {
        let Some(name) = FIELDS.iter().find(|f| f.eq_ignore_ascii_case(key)) else {
            // Go's decoder ignores unknown fields; a misspelt one is worth a word.
            ignored.push(format!(
                "unknown field {key:?} is ignored (known fields: {})",
                FIELDS.join(", ")
            ));
            continue;
        };
        if fields.insert(name, value).is_some() {
            return Err((
                gvk_of(obj),
                format!("field {name:?} is given twice (field names are case-insensitive)"),
            ));
        }
    }
    let get = |name: &str| fields.get(name).copied().filter(|v| !v.is_null());

    let mut w = Watch::default();
    let mut missing = Vec::new();
    for (name, slot) in [
        ("group", &mut w.group),
        ("version", &mut w.version),
        ("kind", &mut w.kind),
    ] {
        if let Some(v) = get(name) {
            *slot = scalar_string(v).map_err(|e| (None, format!("{name}: {e}")))?;
        }
        if slot.is_empty() {
            missing.push(name);
        }
    }
    let gvk = Some(w.gvk_string());
    if !missing.is_empty() {
        return Err((
            if w.kind.is_empty() { None } else { gvk },
            format!(
                "{} must not be empty: each watch names the group, version and kind of its custom resource",
                missing.join(", ")
            ),
        ));
    }
    let fail = |message: String| (gvk.clone(), message);
    for (name, value) in [
        ("group", &w.group),
        ("version", &w.version),
        ("kind", &w.kind),
    ] {
        if value.contains(|c: char| c == '/' || c == ',' || c.is_whitespace()) {
            return Err(fail(format!(
                "{name} {value:?} must not contain '/', ',' or spaces"
            )));
        }
    }

    let chart = match get("chart") {
        Some(v) => scalar_string(v).map_err(|e| fail(format!("chart: {e}")))?,
        None => String::new(),
    };
    if chart.is_empty() {
        return Err(fail(
            "chart must not be empty: give the path of the chart directory or .tgz archive".into(),
        ));
    }
    w.chart = resolve_chart(&chart, base_dir).map_err(fail)?;
    chart::loader::load(&w.chart).map_err(|e| {
        fail(format!(
            "chart {} cannot be loaded: {}",
            w.chart.display(),
            release::api_error::Chain(&e)
        ))
    })?;

    if let Some(v) = get("watchDependentResources") {
        w.watch_dependent_resources = v.as_bool().ok_or_else(|| {
            fail(format!(
                "watchDependentResources must be true or false, found {}",
                json_kind(v)
            ))
        })?;
    }
    if let Some(v) = get("overrideValues") {
        let Value::Object(map) = v else {
            return Err(fail(format!(
                "overrideValues must be a mapping of --set paths to values, found {}",
                json_kind(v)
            )));
        };
        for (k, val) in map {
            let raw = if val.is_null() {
                String::new()
            } else {
                scalar_string(val).map_err(|e| fail(format!("overrideValues.{k}: {e}")))?
            };
            let expanded = expand_template(k, &gostd::os::expand_env(&raw))
                .map_err(|e| fail(format!("overrideValues.{k}: {e}")))?;
            w.override_values.insert(k.clone(), expanded);
        }
    }
    if let Some(v) = get("reconcilePeriod") {
        let Value::String(s) = v else {
            return Err(fail(format!(
                "reconcilePeriod must be a duration string like \"1m30s\", found {}",
                json_kind(v)
            )));
        };
        let d = parse_go_duration(s).map_err(|e| fail(format!("reconcilePeriod: {e}")))?;
        // As in the Go operator, zero means "use --reconcile-period".
        w.reconcile_period = Some(d).filter(|d| !d.is_zero());
    }
    if let Some(v) = get("maxConcurrentReconciles") {
        match v.as_u64() {
            Some(n) if n >= 1 => w.max_concurrent_reconciles = Some(n as usize),
            _ => {
                return Err(fail(format!(
                    "maxConcurrentReconciles must be a whole number of at least 1, found {v}"
                )))
            }
        }
    }
    if let Some(v) = get("selector") {
        let sel = parse_selector(v, ignored).map_err(|e| fail(format!("selector: {e}")))?;
        let empty = sel.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && sel.match_expressions.as_ref().is_none_or(|m| m.is_empty());
        w.selector = (!empty).then_some(sel);
    }
    if let Some(v) = get("dryRunOption") {
        let s = scalar_string(v).map_err(|e| fail(format!("dryRunOption: {e}")))?;
        w.dry_run_option = match s.as_str() {
            "" | "none" | "client" => DryRunOption::Client,
            "server" => DryRunOption::Server,
            other => {
                return Err(fail(format!(
                    "dryRunOption {other:?} is not one of none, client, server"
                )))
            }
        };
    }
    for (key, field) in [
        ("installWait", &mut w.install_wait),
        ("upgradeWait", &mut w.upgrade_wait),
    ] {
        if let Some(v) = get(key) {
            *field = v.as_bool().ok_or_else(|| {
                fail(format!(
                    "{key} must be true or false, found {}",
                    json_kind(v)
                ))
            })?;
        }
    }
    if let Some(v) = get("waitTimeout") {
        let Value::String(s) = v else {
            return Err(fail(format!(
                "waitTimeout must be a duration string like \"5m\", found {}",
                json_kind(v)
            )));
        };
        let d = parse_go_duration(s).map_err(|e| fail(format!("waitTimeout: {e}")))?;
        w.wait_timeout = Some(d).filter(|d| !d.is_zero());
    }
    if let Some(v) = get("maxHistory") {
        match v.as_u64() {
            Some(n) => w.max_history = Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => {
                return Err(fail(format!(
                    "maxHistory must be a whole number (release records kept per custom resource; 0 keeps all), found {v}"
                )))
            }
        }
    }
    if let Some(v) = get("statusManifest") {
        let s = scalar_string(v).map_err(|e| fail(format!("statusManifest: {e}")))?;
        w.status_manifest = Some(
            s.parse()
                .map_err(|e| fail(format!("statusManifest: {e}")))?,
        );
    }
    if let Some(v) = get("allowClusterScoped") {
        w.allow_cluster_scoped = v.as_bool().ok_or_else(|| {
            fail(format!(
                "allowClusterScoped must be true or false, found {}",
                json_kind(v)
            ))
        })?;
    }
    if let Some(v) = get("allowedNamespaces") {
        let Value::Array(list) = v else {
            return Err(fail(format!(
                "allowedNamespaces must be a list of namespace names or \"*\", found {}",
                json_kind(v)
            )));
        };
        for item in list {
            let ns = scalar_string(item).map_err(|e| fail(format!("allowedNamespaces: {e}")))?;
            if ns != "*" && !is_dns_label(&ns) {
                return Err(fail(format!(
                    "allowedNamespaces: {ns:?} is not a namespace name (lowercase letters, digits and '-', at most 63) nor \"*\""
                )));
            }
            w.allowed_namespaces.push(ns);
        }
    }
    Ok(w)
}

/// `group/version, Kind=kind` of a raw entry, best effort, for error messages.
fn gvk_of(obj: &Map<String, Value>) -> Option<String> {
    let field = |name: &str| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| scalar_string(v).ok())
            .unwrap_or_default()
    };
    let (g, v, k) = (field("group"), field("version"), field("kind"));
    if k.is_empty() {
        return None;
    }
    let w = Watch {
        group: g,
        version: v,
        kind: k,
        ..Watch::default()
    };
    Some(w.gvk_string())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A scalar where Go wants a string: `sigs.k8s.io/yaml` turns numbers and booleans
/// into their text when the target field is a string.
fn scalar_string(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(if let Some(i) = n.as_i64() {
            i.to_string()
        } else if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            // `sigs.k8s.io/yaml` writes floats decoded into strings as float32s.
            gostd::strconv::format_float(n.as_f64().unwrap_or_default(), b'g', -1, 32)
        }),
        other => Err(format!("expected a string, found {}", json_kind(other))),
    }
}

/// The Go operator runs each override through `text/template` with the Sprig
/// functions (after `$VAR` expansion); text without `{{` comes out unchanged.
fn expand_template(name: &str, text: &str) -> Result<String, String> {
    if !text.contains("{{") {
        return Ok(text.to_string());
    }
    chart::engine::render_string(name, text).map_err(|e| match e {
        RenderStringError::Parse(e) => format!("invalid template string {text:?}: {e}"),
        RenderStringError::Exec(e) => format!("failed to execute template {text:?}: {e}"),
    })
}

/// A non-negative Go duration (`30s`, `1m30s`, `1.5h`, a bare `0`), as
/// `time.ParseDuration` reads it, for settings and flags.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let d = gostd::time::Duration::parse(text).map_err(|e| {
        format!(
            "invalid duration {text:?} ({e}): use a Go duration like \"30s\", \"1m30s\" or \"2h\""
        )
    })?;
    d.to_std()
        .ok_or_else(|| format!("duration {text:?} must not be negative"))
}

/// Go's `time.Duration.String`: `1m0s`, `1h30m0s`, `1.5s`, `500ms`, `0s`.
pub(crate) fn format_go_duration(d: Duration) -> String {
    gostd::time::Duration::from_std(d).to_string()
}

fn resolve_chart(chart: &str, base_dir: &Path) -> Result<PathBuf, String> {
    let p = Path::new(chart);
    if p.is_absolute() {
        return if p.exists() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("chart {chart} does not exist"))
        };
    }
    if p.exists() {
        let cwd = std::env::current_dir()
            .map_err(|e| format!("chart {chart}: cannot read the working directory: {e}"))?;
        return Ok(cwd.join(p));
    }
    let beside = base_dir.join(p);
    if beside.exists() {
        return Ok(beside);
    }
    Err(format!(
        "chart {chart} does not exist (looked in the working directory and in {})",
        base_dir.display()
    ))
}

fn parse_selector(v: &Value, ignored: &mut Vec<String>) -> Result<LabelSelector, String> {
    let Value::Object(obj) = v else {
        return Err(format!(
            "expected a mapping with matchLabels and/or matchExpressions, found {}",
            json_kind(v)
        ));
    };
    let mut sel = LabelSelector::default();
    for (key, value) in obj {
        if key.eq_ignore_ascii_case("matchLabels") {
            if value.is_null() {
                continue;
            }
            let Value::Object(m) = value else {
                return Err(format!(
                    "matchLabels must be a mapping, found {}",
                    json_kind(value)
                ));
            };
            let mut labels = BTreeMap::new();
            for (k, v) in m {
                let v = scalar_string(v).map_err(|e| format!("matchLabels.{k}: {e}"))?;
                check_label_key(k)?;
                check_label_value(k, &v)?;
                labels.insert(k.clone(), v);
            }
            sel.match_labels = Some(labels);
        } else if key.eq_ignore_ascii_case("matchExpressions") {
            if value.is_null() {
                continue;
            }
            let Value::Array(list) = value else {
                return Err(format!(
                    "matchExpressions must be a list, found {}",
                    json_kind(value)
                ));
            };
            let mut exprs = Vec::new();
            for (i, e) in list.iter().enumerate() {
                let at = format!("selector.matchExpressions[{i}]");
                exprs.push(
                    parse_requirement(e, &at, ignored)
                        .map_err(|m| format!("matchExpressions[{i}]: {m}"))?,
                );
            }
            sel.match_expressions = Some(exprs);
        } else {
            ignored.push(format!(
                "unknown field selector.{key} is ignored (known fields: matchLabels, matchExpressions)"
            ));
        }
    }
    Ok(sel)
}

fn parse_requirement(
    v: &Value,
    at: &str,
    ignored: &mut Vec<String>,
) -> Result<LabelSelectorRequirement, String> {
    let Value::Object(obj) = v else {
        return Err(format!(
            "expected a mapping with key, operator and values, found {}",
            json_kind(v)
        ));
    };
    let mut req = LabelSelectorRequirement::default();
    let mut values: Option<Vec<String>> = None;
    for (k, val) in obj {
        if k.eq_ignore_ascii_case("key") {
            req.key = scalar_string(val).map_err(|e| format!("key: {e}"))?;
        } else if k.eq_ignore_ascii_case("operator") {
            req.operator = scalar_string(val).map_err(|e| format!("operator: {e}"))?;
        } else if k.eq_ignore_ascii_case("values") {
            match val {
                Value::Null => {}
                Value::Array(list) => {
                    let mut out = Vec::new();
                    for item in list {
                        out.push(scalar_string(item).map_err(|e| format!("values: {e}"))?);
                    }
                    values = Some(out);
                }
                other => return Err(format!("values must be a list, found {}", json_kind(other))),
            }
        } else {
            ignored.push(format!(
                "unknown field {at}.{k} is ignored (known fields: key, operator, values)"
            ));
        }
    }
    check_label_key(&req.key)?;
    let n = values.as_ref().map_or(0, Vec::len);
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if n == 0 {
                return Err(format!(
                    "operator {} on key {:?} needs at least one value",
                    req.operator, req.key
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if n != 0 {
                return Err(format!(
                    "operator {} on key {:?} takes no values",
                    req.operator, req.key
                ));
            }
        }
        other => {
            return Err(format!(
                "{other:?} is not a valid label selector operator (use In, NotIn, Exists or DoesNotExist)"
            ))
        }
    }
    for v in values.iter().flatten() {
        check_label_value(&req.key, v)?;
    }
    req.values = values;
    Ok(req)
}

/// A label name part: at most 63 of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn check_label_key(key: &str) -> Result<(), String> {
    let ok = match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(key),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{key:?} is not a valid label key (an optional DNS prefix and '/', then at most 63 of letters, digits, '-', '_', '.')"
        ))
    }
}

fn check_label_value(key: &str, value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "{value:?} (for key {key:?}) is not a valid label value (at most 63 of letters, digits, '-', '_', '.', alphanumeric at both ends)"
        ))
    }
}

#[cfg(test)]
mod tests;
