//! The `Chart.yaml` model (apiVersion v1 and v2), `Chart.lock`, and the v1
//! `requirements.yaml`/`requirements.lock` files, read and validated the way
//! Helm v4 reads them, plus the `.Chart` object that templates see.
//!
//! Helm decodes these files by turning YAML into JSON and unmarshalling the
//! JSON into Go structs, so field names match case-insensitively, `null`
//! leaves a field at its zero value, and a value of the wrong JSON type is an
//! error naming the Go struct field. The decoding here follows that.

use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// API version of charts that keep dependencies in `requirements.yaml`.
pub(crate) const API_VERSION_V1: &str = "v1";
/// API version of charts that keep dependencies in `Chart.yaml`.
pub(crate) const API_VERSION_V2: &str = "v2";

/// A problem in a chart's metadata files.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChartfileError {
    /// The file is not YAML, or its YAML does not fit the Go struct.
    #[error("cannot load {file}: {message}")]
    Decode { file: String, message: String },
    /// The metadata breaks one of Helm's validation rules.
    #[error("validation: {0}")]
    Validation(String),
}

/// One maintainer of a chart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
    pub url: String,
}

/// A dependency declared in `Chart.yaml` (v2) or `requirements.yaml` (v1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dependency {
    pub name: String,
    /// A version range (Masterminds semver constraint syntax).
    pub version: String,
    pub repository: String,
    /// Comma-separated value paths that resolve to a bool.
    pub condition: String,
    pub tags: Vec<String>,
    pub enabled: bool,
    /// Raw items: strings (`exports.<name>`) or `{child, parent}` tables.
    /// After dependency processing every item is a `{child, parent}` table of
    /// strings, as Helm rewrites them.
    pub import_values: Vec<Json>,
    pub alias: String,
}

/// The contents of `Chart.yaml` (Helm's `chart.Metadata`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub home: String,
    pub sources: Vec<String>,
    pub version: String,
    pub description: String,
    pub keywords: Vec<String>,
    /// `None` entries are `null` list items, which validation rejects.
    pub maintainers: Vec<Option<Maintainer>>,
    pub icon: String,
    pub api_version: String,
    pub condition: String,
    pub tags: String,
    pub app_version: String,
    pub deprecated: bool,
    /// `None` when `Chart.yaml` has no annotations (Go's nil map).
    pub annotations: Option<BTreeMap<String, String>>,
    pub kube_version: String,
    /// `None` entries are `null` list items, which validation rejects.
    pub dependencies: Vec<Option<Dependency>>,
    pub chart_type: String,
}

/// `Chart.lock` / `requirements.lock`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lock {
    /// The `generated` timestamp, as written.
    pub generated: String,
    pub digest: String,
    pub dependencies: Vec<Option<Dependency>>,
}

impl Metadata {
    /// Parses `Chart.yaml` text. An absent `apiVersion` means v1, as in Helm.
    pub fn parse(text: &str) -> Result<Metadata, ChartfileError> {
        let mut md = Metadata::default();
        md.merge_yaml(text, "Chart.yaml")?;
        if md.api_version.is_empty() {
            md.api_version = API_VERSION_V1.to_string();
        }
        Ok(md)
    }

    /// Decodes YAML over this metadata, as Go's `yaml.Unmarshal` into an
    /// existing struct does (Helm reads `requirements.yaml` into the same
    /// struct as `Chart.yaml`).
    pub(crate) fn merge_yaml(&mut self, text: &str, file: &str) -> Result<(), ChartfileError> {
        let doc = parse_yaml(text, file)?;
        let Some(obj) = object_or_null(&doc, "Metadata", file)? else {
            return Ok(());
        };
        let d = Decoder {
            file,
            strukt: "Metadata".into(),
        };
        for (key, val) in fields(obj) {
            match key.as_str() {
                "name" => d.string(&key, val, &mut self.name)?,
                "home" => d.string(&key, val, &mut self.home)?,
                "sources" => d.strings(&key, val, &mut self.sources)?,
                "version" => d.string(&key, val, &mut self.version)?,
                "description" => d.string(&key, val, &mut self.description)?,
                "keywords" => d.strings(&key, val, &mut self.keywords)?,
                "maintainers" => self.maintainers = d.maintainers(val)?,
                "icon" => d.string(&key, val, &mut self.icon)?,
                "apiversion" => d.string(&key, val, &mut self.api_version)?,
                "condition" => d.string(&key, val, &mut self.condition)?,
                "tags" => d.string(&key, val, &mut self.tags)?,
                "appversion" => d.string(&key, val, &mut self.app_version)?,
                "deprecated" => d.boolean(&key, val, &mut self.deprecated)?,
                "annotations" => d.string_map(&key, val, &mut self.annotations)?,
                "kubeversion" => d.string(&key, val, &mut self.kube_version)?,
                "dependencies" => self.dependencies = d.dependencies(val)?,
                "type" => d.string(&key, val, &mut self.chart_type)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Helm's `Metadata.Validate`: sanitises strings in place and checks the
    /// required fields, the chart type, maintainers and dependency aliases.
    pub fn validate(&mut self) -> Result<(), ChartfileError> {
        let v = |m: &str| ChartfileError::Validation(m.to_string());
        for s in [
            &mut self.name,
            &mut self.description,
            &mut self.home,
            &mut self.icon,
            &mut self.condition,
            &mut self.tags,
            &mut self.app_version,
            &mut self.kube_version,
        ] {
            *s = sanitize(s);
        }
        for s in self.sources.iter_mut().chain(self.keywords.iter_mut()) {
            *s = sanitize(s);
        }
        if self.api_version.is_empty() {
            return Err(v("chart.metadata.apiVersion is required"));
        }
        if self.name.is_empty() {
            return Err(v("chart.metadata.name is required"));
        }
        if self.name != go_base(&self.name) {
            return Err(v(&format!(
                "chart.metadata.name {:?} is invalid",
                self.name
            )));
        }
        if self.version.is_empty() {
            return Err(v("chart.metadata.version is required"));
        }
        if sprig::parse_version(&self.version).is_err() {
            return Err(v(&format!(
                "chart.metadata.version {:?} is invalid",
                self.version
            )));
        }
        if !matches!(self.chart_type.as_str(), "" | "application" | "library") {
            return Err(v("chart.metadata.type must be application or library"));
        }
        for m in &mut self.maintainers {
            let Some(m) = m else {
                return Err(v("maintainers must not contain empty or null nodes"));
            };
            m.name = sanitize(&m.name);
            m.email = sanitize(&m.email);
            m.url = sanitize(&m.url);
        }
        let mut seen = std::collections::BTreeSet::new();
        for d in &mut self.dependencies {
            let Some(d) = d else {
                return Err(v("dependencies must not contain empty or null nodes"));
            };
            d.validate()?;
            let key = if d.alias.is_empty() {
                d.name.clone()
            } else {
                d.alias.clone()
            };
            if !seen.insert(key.clone()) {
                return Err(v(&format!(
                    "more than one dependency with name or alias {key:?}. Try using distinct aliases for dependencies with the same chart name."
                )));
            }
        }
        Ok(())
    }

    /// Whether this is a library chart (`type: library`, any case).
    pub fn is_library(&self) -> bool {
        self.chart_type.eq_ignore_ascii_case("library")
    }

    /// The declared dependencies, without the `null` items (which validation
    /// rejects anyway).
    pub fn deps(&self) -> impl Iterator<Item = &Dependency> {
        self.dependencies.iter().flatten()
    }

    /// The `.Chart` object as JSON: Helm converts the `Metadata` struct to a
    /// map keyed by Go field names, and adds `IsRoot`. See
    /// [`Metadata::template_value`] for the exact Go types.
    #[cfg(test)]
    pub(crate) fn to_template_json(&self, is_root: bool) -> Json {
        self.template_value(is_root).to_json()
    }

    /// The `.Chart` object with the Go types Helm gives it: a
    /// `map[string]interface {}` keyed by the Go field names (`Name`,
    /// `Version`, `AppVersion`, `APIVersion`, `Annotations`, ...), where every
    /// slice becomes `[]interface {}`, structs become maps, `Annotations` is
    /// a `map[string]string`, and `IsRoot` tells whether this is the top chart.
    pub(crate) fn template_value(&self, is_root: bool) -> gotmpl::Value {
        use gotmpl::value::{MapKind, MapRef};
        use gotmpl::Value;
        let s = |x: &str| Value::str(x);
        let strs = |xs: &[String]| Value::list(xs.iter().map(|x| s(x)).collect());
        let mut m = gotmpl::value::Map::new();
        m.insert("Name".into(), s(&self.name));
        m.insert("Home".into(), s(&self.home));
        m.insert("Sources".into(), strs(&self.sources));
        m.insert("Version".into(), s(&self.version));
        m.insert("Description".into(), s(&self.description));
        m.insert("Keywords".into(), strs(&self.keywords));
        let maintainers = self
            .maintainers
            .iter()
            .map(|mt| match mt {
                None => Value::Nil,
                Some(mt) => {
                    let mut mm = gotmpl::value::Map::new();
                    mm.insert("Name".into(), s(&mt.name));
                    mm.insert("Email".into(), s(&mt.email));
                    mm.insert("URL".into(), s(&mt.url));
                    Value::map(mm)
                }
            })
            .collect();
        m.insert("Maintainers".into(), Value::list(maintainers));
        m.insert("Icon".into(), s(&self.icon));
        m.insert("APIVersion".into(), s(&self.api_version));
        m.insert("Condition".into(), s(&self.condition));
        m.insert("Tags".into(), s(&self.tags));
        m.insert("AppVersion".into(), s(&self.app_version));
        m.insert("Deprecated".into(), Value::Bool(self.deprecated));
        let ann = match &self.annotations {
            Some(a) => MapRef::with_kind(
                a.iter().map(|(k, v)| (k.clone(), s(v))).collect(),
                MapKind::String,
            ),
            None => MapRef::nil_of(MapKind::String),
        };
        m.insert("Annotations".into(), Value::Map(ann));
        m.insert("KubeVersion".into(), s(&self.kube_version));
        let deps = self
            .dependencies
            .iter()
            .map(|d| match d {
                None => Value::Nil,
                Some(d) => d.template_value(),
            })
            .collect();
        m.insert("Dependencies".into(), Value::list(deps));
        m.insert("Type".into(), s(&self.chart_type));
        m.insert("IsRoot".into(), Value::Bool(is_root));
        Value::map(m)
    }
}

impl Dependency {
    /// Helm's `Dependency.Validate`: sanitises and checks the alias.
    pub fn validate(&mut self) -> Result<(), ChartfileError> {
        self.name = sanitize(&self.name);
        self.version = sanitize(&self.version);
        self.repository = sanitize(&self.repository);
        self.condition = sanitize(&self.condition);
        for t in &mut self.tags {
            *t = sanitize(t);
        }
        if !self.alias.is_empty()
            && !self
                .alias
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(ChartfileError::Validation(format!(
                "dependency {:?} has disallowed characters in the alias",
                self.name
            )));
        }
        Ok(())
    }

    fn template_value(&self) -> gotmpl::Value {
        use gotmpl::value::{MapKind, MapRef};
        use gotmpl::Value;
        let mut m = gotmpl::value::Map::new();
        m.insert("Name".into(), Value::str(&self.name));
        m.insert("Version".into(), Value::str(&self.version));
        m.insert("Repository".into(), Value::str(&self.repository));
        m.insert("Condition".into(), Value::str(&self.condition));
        m.insert(
            "Tags".into(),
            Value::list(self.tags.iter().map(|t| Value::str(t)).collect()),
        );
        m.insert("Enabled".into(), Value::Bool(self.enabled));
        // Processed import-values are Go `map[string]string`s.
        let ivs = self
            .import_values
            .iter()
            .map(|iv| match iv {
                Json::Object(o) if o.values().all(|v| v.is_string()) => {
                    let mm = o
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::str(v.as_str().unwrap_or_default())))
                        .collect();
                    Value::Map(MapRef::with_kind(mm, MapKind::String))
                }
                other => Value::from_json(other),
            })
            .collect();
        m.insert("ImportValues".into(), Value::list(ivs));
        m.insert("Alias".into(), Value::str(&self.alias));
        Value::map(m)
    }

    fn decode(val: &Json, file: &str, strukt: &str) -> Result<Option<Dependency>, ChartfileError> {
        let Some(obj) = object_or_null(val, strukt, file)? else {
            return Ok(None);
        };
        // Go names the innermost struct, then the whole field path.
        let d = Decoder {
            file,
            strukt: match strukt.split_once('.') {
                Some((_, path)) => format!("Dependency.{path}"),
                None => strukt.to_string(),
            },
        };
        let mut dep = Dependency::default();
        for (key, val) in fields(obj) {
            match key.as_str() {
                "name" => d.string(&key, val, &mut dep.name)?,
                "version" => d.string(&key, val, &mut dep.version)?,
                "repository" => d.string(&key, val, &mut dep.repository)?,
                "condition" => d.string(&key, val, &mut dep.condition)?,
                "tags" => d.strings(&key, val, &mut dep.tags)?,
                "enabled" => d.boolean(&key, val, &mut dep.enabled)?,
                "import-values" => match val {
                    Json::Null => dep.import_values.clear(),
                    Json::Array(a) => dep.import_values = a.clone(),
                    other => return Err(d.mismatch(&key, other, "[]interface {}")),
                },
                "alias" => d.string(&key, val, &mut dep.alias)?,
                _ => {}
            }
        }
        Ok(Some(dep))
    }
}

impl Lock {
    /// Parses `Chart.lock` or `requirements.lock` (named by `file`).
    pub fn parse(text: &str, file: &str) -> Result<Lock, ChartfileError> {
        let doc = parse_yaml(text, file)?;
        let mut lock = Lock::default();
        let Some(obj) = object_or_null(&doc, "Lock", file)? else {
            return Ok(lock);
        };
        let d = Decoder {
            file,
            strukt: "Lock".into(),
        };
        for (key, val) in fields(obj) {
            match key.as_str() {
                "generated" => match val {
                    Json::Null => {}
                    Json::String(s) => lock.generated = s.clone(),
                    other => return Err(d.mismatch(&key, other, "Time")),
                },
                "digest" => d.string(&key, val, &mut lock.digest)?,
                "dependencies" => lock.dependencies = d.dependencies(val)?,
                _ => {}
            }
        }
        Ok(lock)
    }
}

fn parse_yaml(text: &str, file: &str) -> Result<Json, ChartfileError> {
    use std::cell::RefCell;
    type Parsed = Result<Json, gocodec::yaml::YamlError>;
    // Every load of a chart reads the same `Chart.yaml` of each subchart.
    thread_local! {
        static MEMO: RefCell<gocodec::memo::Memo<Parsed>> = RefCell::new(gocodec::memo::Memo::new(4 << 20));
    }
    let parsed = match MEMO.with(|m| m.borrow().get(text.as_bytes())) {
        Some(p) => p,
        None => {
            let p = gocodec::yaml::parse_yaml_to_json(text);
            MEMO.with(|m| m.borrow_mut().put(text.as_bytes(), p.clone()));
            p
        }
    };
    // The YAML error already says "error converting YAML to JSON".
    parsed.map_err(|e| ChartfileError::Decode {
        file: file.to_string(),
        message: e.to_string(),
    })
}

fn object_or_null<'a>(
    v: &'a Json,
    strukt: &str,
    file: &str,
) -> Result<Option<&'a Map<String, Json>>, ChartfileError> {
    match v {
        Json::Null => Ok(None),
        Json::Object(o) => Ok(Some(o)),
        other => Err(ChartfileError::Decode {
            file: file.to_string(),
            message: format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type v2.{strukt}",
                json_kind(other)
            ),
        }),
    }
}

/// The object's entries with their keys lowered, in a stable order, the way
/// Go's `encoding/json` matches struct fields (case-insensitively; an exact
/// match comes last here so that it wins).
fn fields(obj: &Map<String, Json>) -> Vec<(String, &Json)> {
    let mut out: Vec<(String, &Json, bool)> = obj
        .iter()
        .map(|(k, v)| (k.to_lowercase(), v, k.chars().any(|c| c.is_uppercase())))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.2.cmp(&a.2)));
    out.into_iter().map(|(k, v, _)| (k, v)).collect()
}

pub(crate) fn json_kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "bool",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

struct Decoder<'a> {
    file: &'a str,
    /// Go's error context: the innermost struct's name, then the JSON path
    /// down to it (`Dependency.dependencies`).
    strukt: String,
}

/// The JSON tag of a field [`fields`] matched under its lowered name, as Go
/// names it in decode errors.
fn json_tag(lowered: &str) -> &str {
    match lowered {
        "apiversion" => "apiVersion",
        "appversion" => "appVersion",
        "kubeversion" => "kubeVersion",
        other => other,
    }
}

/// sigs.k8s.io/yaml converts a YAML scalar decoded into a Go string field
/// to text before the JSON step (why `appVersion: 1.10` reads as "1.1"):
/// floats the way `strconv.FormatFloat(f, 'g', -1, 32)` writes them.
fn scalar_text(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Bool(b) => Some(b.to_string()),
        Json::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => gostd::strconv::format_float(f, b'g', -1, 32),
            (None, None, None) => n.to_string(),
        }),
        _ => None,
    }
}

impl Decoder<'_> {
    fn mismatch(&self, field: &str, got: &Json, want: &str) -> ChartfileError {
        ChartfileError::Decode {
            file: self.file.to_string(),
            message: format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                json_kind(got),
                self.strukt,
                json_tag(field),
                want
            ),
        }
    }

    fn string(&self, field: &str, v: &Json, out: &mut String) -> Result<(), ChartfileError> {
        match v {
            Json::Null => Ok(()),
            other => match scalar_text(other) {
                Some(s) => {
                    *out = s;
                    Ok(())
                }
                None => Err(self.mismatch(field, other, "string")),
            },
        }
    }

    fn boolean(&self, field: &str, v: &Json, out: &mut bool) -> Result<(), ChartfileError> {
        match v {
            Json::Null => Ok(()),
            Json::Bool(b) => {
                *out = *b;
                Ok(())
            }
            other => Err(self.mismatch(field, other, "bool")),
        }
    }

    fn strings(&self, field: &str, v: &Json, out: &mut Vec<String>) -> Result<(), ChartfileError> {
        match v {
            Json::Null => {
                out.clear();
                Ok(())
            }
            Json::Array(items) => {
                let mut res = Vec::with_capacity(items.len());
                for it in items {
                    match it {
                        Json::Null => res.push(String::new()),
                        other => match scalar_text(other) {
                            Some(s) => res.push(s),
                            None => return Err(self.mismatch(field, other, "string")),
                        },
                    }
                }
                *out = res;
                Ok(())
            }
            other => Err(self.mismatch(field, other, "[]string")),
        }
    }

    fn string_map(
        &self,
        field: &str,
        v: &Json,
        out: &mut Option<BTreeMap<String, String>>,
    ) -> Result<(), ChartfileError> {
        match v {
            Json::Null => {
                *out = None;
                Ok(())
            }
            Json::Object(o) => {
                let m = out.get_or_insert_with(BTreeMap::new);
                for (k, val) in o {
                    match val {
                        Json::Null => {
                            m.insert(k.clone(), String::new());
                        }
                        other => match scalar_text(other) {
                            Some(s) => {
                                m.insert(k.clone(), s);
                            }
                            None => return Err(self.mismatch(field, other, "string")),
                        },
                    }
                }
                Ok(())
            }
            other => Err(self.mismatch(field, other, "map[string]string")),
        }
    }

    fn maintainers(&self, v: &Json) -> Result<Vec<Option<Maintainer>>, ChartfileError> {
        let items = match v {
            Json::Null => return Ok(Vec::new()),
            Json::Array(a) => a,
            other => return Err(self.mismatch("maintainers", other, "[]*v2.Maintainer")),
        };
        let mut out = Vec::new();
        for it in items {
            let Some(obj) = object_or_null(it, "Maintainer", self.file)? else {
                out.push(None);
                continue;
            };
            let d = Decoder {
                file: self.file,
                strukt: "Maintainer.maintainers".into(),
            };
            let mut m = Maintainer::default();
            for (key, val) in fields(obj) {
                match key.as_str() {
                    "name" => d.string(&key, val, &mut m.name)?,
                    "email" => d.string(&key, val, &mut m.email)?,
                    "url" => d.string(&key, val, &mut m.url)?,
                    _ => {}
                }
            }
            out.push(Some(m));
        }
        Ok(out)
    }

    fn dependencies(&self, v: &Json) -> Result<Vec<Option<Dependency>>, ChartfileError> {
        match v {
            Json::Null => Ok(Vec::new()),
            Json::Array(a) => {
                let strukt = format!("{}.dependencies", self.strukt);
                a.iter()
                    .map(|it| Dependency::decode(it, self.file, &strukt))
                    .collect()
            }
            other => Err(self.mismatch("dependencies", other, "[]*v2.Dependency")),
        }
    }
}

/// Helm's `sanitizeString`: every kind of space becomes a plain space and
/// characters that are not printable are dropped.
pub(crate) fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control()
                || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
            {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// Go's `filepath.Base` on a Unix system.
fn go_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_chart_yaml() {
        let md = Metadata::parse(
            "apiVersion: v2\nname: demo\nversion: 1.2.3\nappVersion: \"1.0\"\ntype: application\n\
             keywords: [a, b]\nannotations:\n  x: z\nmaintainers:\n  - name: me\n    email: m@e\n\
             dependencies:\n  - name: sub\n    version: 1.x\n    repository: file://sub\n    condition: sub.enabled\n    tags: [t1]\n    alias: other\n    import-values:\n      - data\n      - child: a\n        parent: b\n",
        )
        .unwrap();
        assert_eq!(md.name, "demo");
        assert_eq!(md.app_version, "1.0");
        assert_eq!(md.keywords, vec!["a", "b"]);
        let d = md.deps().next().unwrap();
        assert_eq!(d.alias, "other");
        assert_eq!(d.tags, vec!["t1"]);
        assert_eq!(d.import_values.len(), 2);
        assert_eq!(md.maintainers[0].as_ref().unwrap().email, "m@e");
    }

    #[test]
    fn missing_api_version_means_v1() {
        let md = Metadata::parse("name: x\nversion: 1.0.0\n").unwrap();
        assert_eq!(md.api_version, "v1");
    }

    #[test]
    fn validation_errors_match_helm() {
        let err = |y: &str| {
            Metadata::parse(y)
                .unwrap()
                .validate()
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err("apiVersion: v2\nversion: 1.0.0\n"),
            "validation: chart.metadata.name is required"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\n"),
            "validation: chart.metadata.version is required"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\nversion: one\n"),
            "validation: chart.metadata.version \"one\" is invalid"
        );
        assert_eq!(
            err("apiVersion: v2\nname: x\nversion: 1.0.0\ntype: foo\n"),
            "validation: chart.metadata.type must be application or library"
        );
        assert_eq!(
            err("apiVersion: v2\nname: a/b\nversion: 1.0.0\n"),
            "validation: chart.metadata.name \"a/b\" is invalid"
        );
        assert!(err(
            "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n  alias: b.c\n"
        )
        .contains("disallowed characters in the alias"));
        assert!(err(
            "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n- name: a\n"
        )
        .contains("more than one dependency with name or alias \"a\""));
    }

    #[test]
    fn wrong_types_are_decode_errors() {
        let e = Metadata::parse("apiVersion: v2\nname: x\nappVersion: [1]\n").unwrap_err();
        assert!(e.to_string().contains(
            "cannot unmarshal array into Go struct field Metadata.appVersion of type string"
        ));
        let e = Metadata::parse("name: x\ndependencies: [{name: a, version: {}}]\n").unwrap_err();
        assert!(e.to_string().contains(
            "cannot unmarshal object into Go struct field Dependency.dependencies.version of type string"
        ));
        let e = Metadata::parse("name: x\nmaintainers: [{name: [1]}]\n").unwrap_err();
        assert!(e
            .to_string()
            .contains("Go struct field Maintainer.maintainers.name of type string"));
    }

    #[test]
    fn scalars_in_string_fields_become_text() {
        let md = Metadata::parse(
            "name: x\nversion: 1.0\nappVersion: 1.10\nkubeVersion: 3.14159265358979\n\
             home: true\nicon: 0x10\ndescription: 1e-7\nkeywords: [1, 2.50]\n\
             annotations: {a: 12345678901234567890}\ndependencies: [{name: d, version: 0.1}]\n",
        )
        .unwrap();
        assert_eq!(md.version, "1");
        assert_eq!(md.app_version, "1.1");
        assert_eq!(md.kube_version, "3.1415927");
        assert_eq!(md.home, "true");
        assert_eq!(md.icon, "16");
        assert_eq!(md.description, "1e-07");
        assert_eq!(md.keywords, vec!["1", "2.5"]);
        assert_eq!(md.annotations.unwrap()["a"], "12345678901234567890");
        assert_eq!(md.dependencies[0].as_ref().unwrap().version, "0.1");
    }

    #[test]
    fn absent_annotations_are_a_nil_map() {
        let md = Metadata::parse("apiVersion: v2\nname: t\nversion: 0.1.0\n").unwrap();
        let v = md.template_value(true);
        let ann = v.as_map().unwrap().get("Annotations").unwrap();
        assert_eq!(gocodec::json::to_json(&ann).unwrap(), "null");
        assert_eq!(gocodec::yaml::to_yaml(&ann).unwrap(), "null");
        assert_eq!(gotmpl::fmt::format_value(&ann), "map[]");
        let md = Metadata::parse("name: t\nannotations: {}\n").unwrap();
        let ann = md
            .template_value(true)
            .as_map()
            .unwrap()
            .get("Annotations")
            .unwrap();
        assert_eq!(gocodec::json::to_json(&ann).unwrap(), "{}");
    }

    #[test]
    fn chart_object_has_go_field_names() {
        let md = Metadata::parse("apiVersion: v2\nname: t\nversion: 0.1.0\n").unwrap();
        let j = md.to_template_json(true);
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        let mut want = vec![
            "APIVersion",
            "Annotations",
            "AppVersion",
            "Condition",
            "Dependencies",
            "Deprecated",
            "Description",
            "Home",
            "Icon",
            "IsRoot",
            "Keywords",
            "KubeVersion",
            "Maintainers",
            "Name",
            "Sources",
            "Tags",
            "Type",
            "Version",
        ];
        want.sort();
        let mut keys: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
        keys.sort();
        assert_eq!(keys, want);
        let v = md.template_value(true);
        let gotmpl::Value::Map(m) = v else { panic!() };
        assert_eq!(
            m.borrow().get("Annotations").unwrap().type_name(),
            "map[string]string"
        );
    }

    #[test]
    fn lock_files_parse() {
        let l = Lock::parse(
            "dependencies:\n- name: common\n  repository: oci://x\n  version: 2.31.4\ndigest: sha256:abc\ngenerated: \"2025-01-01T00:00:00Z\"\n",
            "Chart.lock",
        )
        .unwrap();
        assert_eq!(l.digest, "sha256:abc");
        assert_eq!(l.dependencies.len(), 1);
    }
}
