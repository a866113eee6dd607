//! A release record as Helm's Go structs show it to a template: `get all
//! --template` runs the user's template (Go's text/template, no extra
//! functions) on `{"Release": <*release.Release>}`, so fields go by their Go
//! names (`.Release.Chart.Metadata.Version`, `.Release.Info.Status`), every
//! field is there even when empty, and times print as Go's `time.Time` does.
//!
//! Structs are maps here: a field prints as Go prints it; a whole struct
//! prints as a map (`map[Name:…]`) rather than Go's `{…}`.

use std::rc::Rc;

use gotmpl::{Map, Value};
use release::record::Release;
use serde_json::Value as Json;

/// What a Go struct field holds.
enum Field {
    Str,
    Int,
    Bool,
    /// A `time.Time`, printed as its `String()`.
    Time,
    /// A list of strings (`[]string`, `[]HookEvent`).
    Strings,
    /// A map or untyped value, as decoded (`Config`, `Values`, `Annotations`).
    Raw,
    Struct(&'static [(&'static str, &'static str, Field)]),
    /// A slice of pointers to a struct.
    Structs(&'static [(&'static str, &'static str, Field)]),
}

use Field::{Bool, Int, Raw, Str, Strings, Struct, Structs, Time};

/// (Go field, JSON key, kind) of `release.Release`'s fields, `Labels` aside
/// (a `json:"-"` field, filled from the record's labels).
const RELEASE: &[(&str, &str, Field)] = &[
    ("Name", "name", Str),
    ("Info", "info", Struct(INFO)),
    ("Chart", "chart", Struct(CHART)),
    ("Config", "config", Raw),
    ("Manifest", "manifest", Str),
    ("Hooks", "hooks", Structs(HOOK)),
    ("Version", "version", Int),
    ("Namespace", "namespace", Str),
    ("ApplyMethod", "apply_method", Str),
];

const INFO: &[(&str, &str, Field)] = &[
    ("FirstDeployed", "first_deployed", Time),
    ("LastDeployed", "last_deployed", Time),
    ("Deleted", "deleted", Time),
    ("Description", "description", Str),
    ("Status", "status", Str),
    ("Notes", "notes", Str),
];

const CHART: &[(&str, &str, Field)] = &[
    ("Metadata", "metadata", Struct(METADATA)),
    ("Values", "values", Raw),
];

const METADATA: &[(&str, &str, Field)] = &[
    ("Name", "name", Str),
    ("Home", "home", Str),
    ("Sources", "sources", Strings),
    ("Version", "version", Str),
    ("Description", "description", Str),
    ("Keywords", "keywords", Strings),
    ("Maintainers", "maintainers", Structs(MAINTAINER)),
    ("Icon", "icon", Str),
    ("APIVersion", "apiVersion", Str),
    ("Condition", "condition", Str),
    ("Tags", "tags", Str),
    ("AppVersion", "appVersion", Str),
    ("Deprecated", "deprecated", Bool),
    ("Annotations", "annotations", Raw),
    ("KubeVersion", "kubeVersion", Str),
    ("Dependencies", "dependencies", Structs(DEPENDENCY)),
    ("Type", "type", Str),
];

const MAINTAINER: &[(&str, &str, Field)] = &[
    ("Name", "name", Str),
    ("Email", "email", Str),
    ("URL", "url", Str),
];

const DEPENDENCY: &[(&str, &str, Field)] = &[
    ("Name", "name", Str),
    ("Version", "version", Str),
    ("Repository", "repository", Str),
    ("Condition", "condition", Str),
    ("Tags", "tags", Strings),
    ("Enabled", "enabled", Bool),
    ("ImportValues", "import-values", Raw),
    ("Alias", "alias", Str),
];

const HOOK: &[(&str, &str, Field)] = &[
    ("Name", "name", Str),
    ("Kind", "kind", Str),
    ("Path", "path", Str),
    ("Manifest", "manifest", Str),
    ("Events", "events", Strings),
    ("LastRun", "last_run", Struct(HOOK_RUN)),
    ("Weight", "weight", Int),
    ("DeletePolicies", "delete_policies", Strings),
    ("OutputLogPolicies", "output_log_policies", Strings),
];

const HOOK_RUN: &[(&str, &str, Field)] = &[
    ("StartedAt", "started_at", Time),
    ("CompletedAt", "completed_at", Time),
    ("Phase", "phase", Str),
];

/// Runs `text` as Helm's `tpl` does (a template named `_`, Go's built-in
/// functions only) on the release.
pub(super) fn execute(text: &str, rel: &Release) -> anyhow::Result<String> {
    let mut set = gotmpl::Templates::new(Rc::new(gotmpl::FuncMap::new()));
    set.parse("_", text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut data = Map::new();
    data.insert("Release".into(), release_value(rel)?);
    Rc::new(set)
        .execute("_", &Value::map(data))
        .map_err(|e| anyhow::anyhow!("{e}"))
}

fn release_value(rel: &Release) -> anyhow::Result<Value> {
    let json = serde_json::to_value(rel)?;
    let Value::Map(m) = structure(&json, RELEASE) else {
        anyhow::bail!("a release record is an object");
    };
    let labels = rel
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::str(v)))
        .collect();
    m.insert("Labels", Value::map(labels));
    Ok(Value::Map(m))
}

/// A JSON object as the Go struct `fields` describe: every field present.
fn structure(json: &Json, fields: &[(&str, &str, Field)]) -> Value {
    let mut m = Map::new();
    for (go, key, kind) in fields {
        m.insert((*go).into(), field(json.get(*key), kind));
    }
    Value::map(m)
}

fn field(v: Option<&Json>, kind: &Field) -> Value {
    match kind {
        Str => Value::str(v.and_then(Json::as_str).unwrap_or_default()),
        Int => Value::int(v.and_then(Json::as_i64).unwrap_or_default()),
        Bool => Value::Bool(v.and_then(Json::as_bool).unwrap_or_default()),
        Time => {
            let t = v
                .and_then(Json::as_str)
                .and_then(|s| release::Time::parse(s).ok())
                .unwrap_or(release::Time::ZERO);
            Value::string(super::format::go_time(&t))
        }
        Strings => Value::string_list(
            v.and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect(),
        ),
        Raw => v.map(Value::from_json).unwrap_or(Value::Nil),
        Struct(fields) => structure(v.unwrap_or(&Json::Null), fields),
        Structs(fields) => Value::list(
            v.and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|item| structure(item, fields))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Release {
        serde_json::from_value(json!({
            "name": "elevated-turkey", "namespace": "default", "version": 1,
            "info": {"status": "deployed", "last_deployed": "2016-01-16T00:00:00Z"},
            "chart": {"metadata": {"name": "foo", "version": "0.1.0-beta.1", "apiVersion": "v1"}},
            "config": {"name": "value"},
            "hooks": [{"name": "pre-install-hook", "kind": "Job", "events": ["pre-install"], "weight": -5}]
        }))
        .expect("record")
    }

    #[test]
    fn fields_go_by_their_go_names() {
        let run = |t: &str| execute(t, &record()).expect("runs");
        assert_eq!(run("{{.Release.Chart.Metadata.Version}}"), "0.1.0-beta.1");
        assert_eq!(
            run("{{.Release.Name}}/{{.Release.Version}}/{{.Release.Info.Status}}"),
            "elevated-turkey/1/deployed"
        );
        assert_eq!(
            run("{{.Release.Info.LastDeployed}}"),
            "2016-01-16 00:00:00 +0000 UTC"
        );
        assert_eq!(
            run("{{.Release.Info.Deleted}}"),
            "0001-01-01 00:00:00 +0000 UTC"
        );
        assert_eq!(run("[{{.Release.Chart.Metadata.Home}}]"), "[]");
        assert_eq!(run("{{.Release.Config.name}}"), "value");
        assert_eq!(
            run("{{range .Release.Hooks}}{{.Name}} {{.Weight}} {{index .Events 0}}{{end}}"),
            "pre-install-hook -5 pre-install"
        );
        assert_eq!(run("{{len .Release.Labels}}"), "0");
    }

    #[test]
    fn template_errors_are_reported() {
        assert!(execute("{{.Release.Name", &record()).is_err());
        assert!(
            execute("{{toYaml .}}", &record()).is_err(),
            "no Sprig or Helm functions"
        );
    }
}
