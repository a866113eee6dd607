//! Release records that older helm-operators kept inside the custom resource's `status`,
//! and their conversion into Helm v3/v4 records.
//!
//! operator-sdk's helm-operator stored the whole Helm v2 release (`hapi.release.Release`,
//! marshalled with Go's `encoding/json`, so enums are numbers and timestamps are
//! `{seconds, nanos}`) in `status.release` at first, then inside the `Deployed`
//! condition (`status.conditions[].release`), and from spring 2019 on only
//! `status.deployedRelease {name, manifest}`, with the records in Secrets. A release
//! object in Helm v3's own JSON shape under `status.release` is accepted as well.
//! `docs/storage-migration.md` lists the accepted fields.

use std::fmt;

use release::record::{Chart, File, Hook, HookExecution, Info, Metadata, Release, Status};
use release::Time;
use serde_json::{Map, Value};

/// Where in the CR's status a legacy release was found.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// `status.release`.
    StatusRelease,
    /// `status.conditions[i].release`.
    Condition(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::StatusRelease => f.write_str("status.release"),
            Location::Condition(i) => write!(f, "status.conditions[{i}].release"),
        }
    }
}

/// Which JSON layout a legacy release has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// Helm v2's `hapi.release.Release`.
    HelmV2,
    /// Helm v3's `release.Release` (the layout of today's records).
    HelmV3,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Shape::HelmV2 => "Helm v2",
            Shape::HelmV3 => "Helm v3",
        })
    }
}

/// Whether a status value looks like a release object rather than some unrelated field
/// that happens to be called `release`.
fn is_release_object(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    obj.get("manifest").is_some_and(Value::is_string)
        || obj.get("chart").is_some_and(Value::is_object)
        || obj.get("info").is_some_and(Value::is_object)
}

/// Every legacy release in a CR's `status`, with where it sits.
pub(super) fn find(status: Option<&Value>) -> Vec<(Location, &Value)> {
    let Some(status) = status.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(rel) = status.get("release").filter(|v| is_release_object(v)) {
        out.push((Location::StatusRelease, rel));
    }
    if let Some(conds) = status.get("conditions").and_then(Value::as_array) {
        for (i, c) in conds.iter().enumerate() {
            if let Some(rel) = c.get("release").filter(|v| is_release_object(v)) {
                out.push((Location::Condition(i), rel));
            }
        }
    }
    out
}

/// What the conversion needs besides the legacy JSON.
pub(super) struct Context<'a> {
    /// The release name the operator uses now (records are stored under it).
    pub release: &'a str,
    /// The CR's namespace, where the record is written.
    pub namespace: &'a str,
    /// The CR's spec: the values when the legacy record has none.
    pub spec: &'a Map<String, Value>,
    /// The watch's chart: chart metadata when the legacy record has none.
    pub chart: Option<&'a chart::loader::Chart>,
    /// `status.release of Kind ns/name`, for the record's description.
    pub origin: String,
}

/// A converted legacy release.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Converted {
    pub record: Release,
    pub shape: Shape,
    /// The release name the legacy record carried (may differ from the current one).
    pub original_name: String,
    /// The status the legacy record carried, in Helm v3 words.
    pub original_status: String,
}

/// Tells the two layouts apart by fields whose JSON types differ between them.
pub(super) fn shape_of(raw: &Value) -> Shape {
    let info = raw.get("info");
    let v2 = info
        .and_then(|i| i.get("status"))
        .is_some_and(Value::is_object)
        || info
            .and_then(|i| i.get("first_deployed").or_else(|| i.get("last_deployed")))
            .is_some_and(Value::is_object)
        || info.is_some_and(|i| i.get("Description").is_some())
        || raw
            .get("config")
            .is_some_and(|c| c.get("raw").is_some_and(Value::is_string))
        || raw
            .pointer("/chart/values")
            .is_some_and(|c| c.get("raw").is_some_and(Value::is_string))
        || raw
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|hs| {
                hs.iter().any(|h| {
                    h.get("events")
                        .and_then(Value::as_array)
                        .is_some_and(|e| e.iter().any(Value::is_number))
                        || h.get("last_run")
                            .is_some_and(|l| l.get("seconds").is_some())
                })
            });
    if v2 {
        Shape::HelmV2
    } else {
        Shape::HelmV3
    }
}

/// Converts a legacy release into a record for revision `version` of `ctx.release`,
/// status deployed. The conversion is deterministic (no clock reads), so converting the
/// same legacy data again gives an equal record: a migration interrupted after writing
/// the Secret recognises its own copy on the next run.
pub(super) fn convert(raw: &Value, ctx: &Context<'_>) -> Result<Converted, String> {
    if !raw.is_object() {
        return Err("it is not a JSON object".into());
    }
    let shape = shape_of(raw);
    let (mut record, original_status, original_description) = match shape {
        Shape::HelmV2 => convert_v2(raw)?,
        Shape::HelmV3 => {
            let rel: Release = serde_json::from_value(raw.clone())
                .map_err(|e| format!("it is not a readable Helm v3 release: {e}"))?;
            let st = rel.status().as_str().to_string();
            let desc = rel
                .info
                .as_ref()
                .map(|i| i.description.clone())
                .unwrap_or_default();
            (rel, st, desc)
        }
    };
    let original_name = if record.name.is_empty() {
        ctx.release.to_string()
    } else {
        record.name.clone()
    };
    record.name = ctx.release.to_string();
    record.namespace = ctx.namespace.to_string();
    record.version = record.version.max(1);
    record.labels.clear();
    if record.config.is_empty() {
        record.config = ctx.spec.clone();
    }
    let has_metadata = record.chart.as_ref().is_some_and(|c| c.metadata.is_some());
    if !has_metadata {
        record.chart = Some(fallback_chart(ctx));
    }
    let mut description = format!(
        "Migrated from {} ({shape} release {original_name:?}, revision {}, status {original_status})",
        ctx.origin, record.version
    );
    if !original_description.is_empty() {
        description.push_str(": ");
        description.push_str(&original_description);
    }
    record.set_status(Status::Deployed, description);
    Ok(Converted {
        record,
        shape,
        original_name,
        original_status,
    })
}

/// The chart part when the legacy record has none: the watch's chart, or a placeholder
/// naming the release so `helm list` still has something to print.
fn fallback_chart(ctx: &Context<'_>) -> Chart {
    match ctx.chart {
        Some(c) => action::chart_record(c),
        None => Chart {
            metadata: Some(Metadata {
                name: ctx.release.to_string(),
                version: "0.0.0".into(),
                api_version: "v2".into(),
                description: "chart unknown: migrated from a custom resource's status".into(),
                ..Metadata::default()
            }),
            ..Chart::default()
        },
    }
}

/// Helm v2's `Status_Code` (number or enum name) in Helm v3 words.
fn v2_status(code: Option<&Value>) -> String {
    const NAMES: [&str; 9] = [
        "unknown",
        "deployed",
        "uninstalled",
        "superseded",
        "failed",
        "uninstalling",
        "pending-install",
        "pending-upgrade",
        "pending-rollback",
    ];
    match code {
        // `code` is `omitempty`: absent means UNKNOWN (0).
        None | Some(Value::Null) => NAMES[0].into(),
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|i| NAMES.get(i as usize))
            .map_or_else(|| format!("unknown ({n})"), |s| s.to_string()),
        Some(Value::String(s)) => match s.to_ascii_uppercase().as_str() {
            "DELETED" => "uninstalled".into(),
            "DELETING" => "uninstalling".into(),
            other => other.to_ascii_lowercase().replace('_', "-"),
        },
        Some(other) => format!("unknown ({other})"),
    }
}

/// Helm v2's `Hook_Event` in Helm v3 words; `None` for events Helm v3 no longer has.
fn v2_hook_event(v: &Value) -> Option<String> {
    const NAMES: [&str; 12] = [
        "UNKNOWN",
        "PRE_INSTALL",
        "POST_INSTALL",
        "PRE_DELETE",
        "POST_DELETE",
        "PRE_UPGRADE",
        "POST_UPGRADE",
        "PRE_ROLLBACK",
        "POST_ROLLBACK",
        "RELEASE_TEST_SUCCESS",
        "RELEASE_TEST_FAILURE",
        "CRD_INSTALL",
    ];
    let name = match v {
        Value::Number(n) => NAMES.get(n.as_u64()? as usize)?.to_string(),
        Value::String(s) => s.to_ascii_uppercase().replace('-', "_"),
        _ => return None,
    };
    match name.as_str() {
        "UNKNOWN" | "CRD_INSTALL" => None,
        "RELEASE_TEST_SUCCESS" | "TEST_SUCCESS" | "TEST" => Some("test".into()),
        "RELEASE_TEST_FAILURE" | "TEST_FAILURE" => Some("test-failure".into()),
        other => Some(other.to_ascii_lowercase().replace('_', "-")),
    }
}

/// Helm v2's `Hook_DeletePolicy` in Helm v3 words.
fn v2_delete_policy(v: &Value) -> Option<String> {
    const NAMES: [&str; 3] = ["hook-succeeded", "hook-failed", "before-hook-creation"];
    match v {
        Value::Number(n) => NAMES.get(n.as_u64()? as usize).map(|s| s.to_string()),
        Value::String(s) => Some(match s.to_ascii_uppercase().as_str() {
            "SUCCEEDED" => "hook-succeeded".into(),
            "FAILED" => "hook-failed".into(),
            other => other.to_ascii_lowercase().replace('_', "-"),
        }),
        _ => None,
    }
}

/// A `google.protobuf.Timestamp` (`{seconds, nanos}`) or RFC 3339 text.
fn v2_time(v: Option<&Value>, what: &str) -> Result<Option<Time>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Time::parse(s).map(Some).map_err(|e| format!("{what}: {e}")),
        Some(Value::Object(o)) => {
            let secs = o.get("seconds").map_or(Some(0), Value::as_i64);
            let nanos = o.get("nanos").map_or(Some(0), Value::as_i64);
            let (Some(secs), Some(nanos)) = (secs, nanos) else {
                return Err(format!("{what}: seconds and nanos must be integers"));
            };
            if secs == 0 && nanos == 0 {
                return Ok(None);
            }
            let nanos = i32::try_from(nanos).map_err(|_| format!("{what}: nanos out of range"))?;
            jiff::Timestamp::new(secs, nanos)
                .map(|ts| Some(Time::from_timestamp(ts)))
                .map_err(|e| format!("{what}: {e}"))
        }
        Some(other) => Err(format!("{what}: unexpected value {other}")),
    }
}

/// Parses a Helm v2 `Config` (`{raw: "<yaml>"}`) into values.
fn v2_config(v: Option<&Value>, what: &str) -> Result<Map<String, Value>, String> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(Map::new());
    };
    // A plain map is accepted too, for hand-written or re-encoded records.
    if let Some(obj) = v.as_object().filter(|o| !o.contains_key("raw")) {
        return Ok(obj.clone());
    }
    let raw = v.get("raw").and_then(Value::as_str).unwrap_or_default();
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    match gocodec::yaml::parse_yaml_to_json(raw) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!("{what}.raw is YAML but not a mapping: {other}")),
        Err(e) => Err(format!("{what}.raw is not valid YAML: {e}")),
    }
}

fn str_field(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Helm v2 `hapi.chart.Chart` to the record's chart.
fn v2_chart(v: &Value) -> Result<Chart, String> {
    let mut metadata = match v.get("metadata") {
        Some(Value::Object(m)) => {
            let mut m = m.clone();
            // Tiller-only fields Helm v3 dropped.
            m.remove("engine");
            m.remove("tillerVersion");
            let meta: Metadata = serde_json::from_value(Value::Object(m))
                .map_err(|e| format!("chart.metadata: {e}"))?;
            Some(meta)
        }
        _ => None,
    };
    if let Some(m) = metadata.as_mut() {
        if m.api_version.is_empty() {
            m.api_version = "v1".into();
        }
    }
    let templates = match v.get("templates") {
        Some(Value::Array(ts)) => ts
            .iter()
            .map(|t| {
                serde_json::from_value::<File>(serde_json::json!({
                    "name": str_field(t, "name"),
                    "data": t.get("data").cloned().unwrap_or(Value::Null),
                }))
                .map_err(|e| format!("chart.templates: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    // `google.protobuf.Any {type_url, value}`: Helm v2 kept the file path in type_url.
    let files = match v.get("files") {
        Some(Value::Array(fs)) => fs
            .iter()
            .map(|f| {
                serde_json::from_value::<File>(serde_json::json!({
                    "name": str_field(f, "type_url"),
                    "data": f.get("value").cloned().unwrap_or(Value::Null),
                }))
                .map_err(|e| format!("chart.files: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    let values = v2_config(v.get("values"), "chart.values")?;
    Ok(Chart {
        metadata,
        templates,
        values: Some(values),
        files,
        ..Chart::default()
    })
}

/// Helm v2 `hapi.release.Hook` to the record's hook.
fn v2_hook(h: &Value) -> Result<Hook, String> {
    let last = v2_time(h.get("last_run"), "hooks[].last_run")?;
    Ok(Hook {
        name: str_field(h, "name"),
        kind: str_field(h, "kind"),
        path: str_field(h, "path"),
        manifest: str_field(h, "manifest"),
        events: h
            .get("events")
            .and_then(Value::as_array)
            .map(|es| es.iter().filter_map(v2_hook_event).collect())
            .unwrap_or_default(),
        last_run: HookExecution {
            started_at: last,
            completed_at: last,
            // Helm v2 kept only when a hook last ran, not how it ended.
            phase: if last.is_some() {
                release::record::hook_phase::UNKNOWN.into()
            } else {
                String::new()
            },
            ..HookExecution::default()
        },
        weight: h.get("weight").and_then(Value::as_i64).unwrap_or(0),
        delete_policies: h
            .get("delete_policies")
            .and_then(Value::as_array)
            .map(|ps| ps.iter().filter_map(v2_delete_policy).collect())
            .unwrap_or_default(),
        ..Hook::default()
    })
}

/// Helm v2 release to (record, original status, original description).
fn convert_v2(raw: &Value) -> Result<(Release, String, String), String> {
    let info_v = raw.get("info").cloned().unwrap_or(Value::Null);
    let status_v = info_v.get("status").cloned().unwrap_or(Value::Null);
    let original_status = v2_status(status_v.get("code"));
    let description = info_v
        .get("Description")
        .or_else(|| info_v.get("description"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let info = Info {
        first_deployed: v2_time(info_v.get("first_deployed"), "info.first_deployed")?,
        last_deployed: v2_time(info_v.get("last_deployed"), "info.last_deployed")?,
        deleted: v2_time(info_v.get("deleted"), "info.deleted")?,
        notes: str_field(&status_v, "notes"),
        ..Info::default()
    };
    let chart = match raw.get("chart") {
        Some(c) if c.is_object() => Some(v2_chart(c)?),
        _ => None,
    };
    let hooks = match raw.get("hooks") {
        Some(Value::Array(hs)) => hs.iter().map(v2_hook).collect::<Result<Vec<_>, _>>()?,
        _ => Vec::new(),
    };
    let version = match raw.get("version") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| format!("version {v} is not an integer"))?,
    };
    let rel = Release {
        name: str_field(raw, "name"),
        info: Some(info),
        chart,
        config: v2_config(raw.get("config"), "config")?,
        manifest: str_field(raw, "manifest"),
        hooks,
        version,
        namespace: str_field(raw, "namespace"),
        ..Release::default()
    };
    Ok((rel, original_status, description))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx<'a>(spec: &'a Map<String, Value>) -> Context<'a> {
        Context {
            release: "web",
            namespace: "apps",
            spec,
            chart: None,
            origin: "status.release of Web apps/web".into(),
        }
    }

    fn v2_sample() -> Value {
        json!({
            "name": "web-3x8k",
            "namespace": "apps",
            "version": 2,
            "info": {
                "status": {"code": 1, "notes": "hello"},
                "first_deployed": {"seconds": 1546300800},
                "last_deployed": {"seconds": 1546304400, "nanos": 500000000},
                "Description": "Upgrade complete"
            },
            "chart": {
                "metadata": {"name": "web", "version": "0.1.0", "engine": "gotpl", "appVersion": "1.0"},
                "templates": [{"name": "templates/cm.yaml", "data": "a2luZDogQ29uZmlnTWFw"}],
                "values": {"raw": "replicas: 1\nimage: nginx\n"},
                "files": [{"type_url": "README.md", "value": "aGk="}]
            },
            "config": {"raw": "replicas: 3\n"},
            "manifest": "---\n# Source: web/templates/cm.yaml\nkind: ConfigMap\n",
            "hooks": [{
                "name": "web-migrate", "kind": "Job", "path": "web/templates/job.yaml",
                "manifest": "kind: Job", "events": [1, 5], "last_run": {"seconds": 1546304400},
                "weight": -1, "delete_policies": [0, 2]
            }]
        })
    }

    #[test]
    fn finds_release_in_status_and_conditions() {
        let status = json!({
            "release": {"name": "a", "manifest": ""},
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "Deployed", "status": "True", "release": {"name": "a", "manifest": "x"}}
            ],
            "deployedRelease": {"name": "a", "manifest": "x"}
        });
        let found = find(Some(&status));
        let locs: Vec<_> = found.iter().map(|(l, _)| l.clone()).collect();
        assert_eq!(locs, [Location::StatusRelease, Location::Condition(1)]);
        assert_eq!(
            Location::Condition(1).to_string(),
            "status.conditions[1].release"
        );
    }

    #[test]
    fn unrelated_release_fields_are_left_alone() {
        assert!(find(Some(&json!({"release": "v1.2.3"}))).is_empty());
        assert!(find(Some(&json!({"release": {"channel": "stable"}}))).is_empty());
        assert!(find(None).is_empty());
    }

    #[test]
    fn converts_helm_v2() {
        let spec = Map::new();
        let out = convert(&v2_sample(), &ctx(&spec)).unwrap();
        assert_eq!(out.shape, Shape::HelmV2);
        assert_eq!(out.original_name, "web-3x8k");
        assert_eq!(out.original_status, "deployed");
        let r = &out.record;
        assert_eq!(
            (r.name.as_str(), r.namespace.as_str(), r.version),
            ("web", "apps", 2)
        );
        assert_eq!(r.status(), Status::Deployed);
        let info = r.info.as_ref().unwrap();
        assert_eq!(info.notes, "hello");
        assert!(
            info.description.ends_with(": Upgrade complete"),
            "{}",
            info.description
        );
        assert_eq!(
            info.last_deployed.unwrap().to_string(),
            "2019-01-01T01:00:00.5Z"
        );
        assert_eq!(
            r.config,
            json!({"replicas": 3}).as_object().unwrap().clone()
        );
        let chart = r.chart.as_ref().unwrap();
        let meta = chart.metadata.as_ref().unwrap();
        assert_eq!(
            (meta.name.as_str(), meta.api_version.as_str()),
            ("web", "v1")
        );
        assert!(meta.extra.is_empty(), "Tiller-only fields dropped");
        assert_eq!(
            chart.templates[0].data.as_deref(),
            Some(&b"kind: ConfigMap"[..])
        );
        assert_eq!(chart.files[0].name, "README.md");
        assert_eq!(chart.values.as_ref().unwrap()["image"], "nginx");
        let hook = &r.hooks[0];
        assert_eq!(hook.events, ["pre-install", "pre-upgrade"]);
        assert_eq!(
            hook.delete_policies,
            ["hook-succeeded", "before-hook-creation"]
        );
        assert_eq!(hook.weight, -1);
        // Deterministic: converting twice gives the same record.
        assert_eq!(convert(&v2_sample(), &ctx(&spec)).unwrap(), out);
    }

    #[test]
    fn v2_enum_names_are_accepted() {
        let mut v = v2_sample();
        v["info"]["status"]["code"] = json!("SUPERSEDED");
        v["hooks"][0]["events"] = json!(["POST_INSTALL", "RELEASE_TEST_SUCCESS", "CRD_INSTALL"]);
        let spec = Map::new();
        let out = convert(&v, &ctx(&spec)).unwrap();
        assert_eq!(out.original_status, "superseded");
        assert_eq!(out.record.hooks[0].events, ["post-install", "test"]);
    }

    #[test]
    fn missing_config_and_chart_fall_back() {
        let spec = json!({"replicas": 5}).as_object().unwrap().clone();
        let raw = json!({"name": "web", "info": {"status": {"code": 1}}, "manifest": "m"});
        let out = convert(&raw, &ctx(&spec)).unwrap();
        assert_eq!(out.record.config, spec);
        assert_eq!(out.record.version, 1);
        let meta = out.record.chart.unwrap().metadata.unwrap();
        assert_eq!(meta.name, "web");
    }

    #[test]
    fn converts_helm_v3_shape() {
        let raw = json!({
            "name": "web", "namespace": "other", "version": 4,
            "info": {"status": "deployed", "description": "Install complete",
                     "first_deployed": "2024-01-01T00:00:00Z"},
            "chart": {"metadata": {"name": "web", "version": "1.0.0", "apiVersion": "v2"},
                      "templates": null, "values": {"a": 1}},
            "config": {"a": 2},
            "manifest": "---\nkind: X\n"
        });
        let spec = Map::new();
        let out = convert(&raw, &ctx(&spec)).unwrap();
        assert_eq!(out.shape, Shape::HelmV3);
        assert_eq!(out.record.namespace, "apps");
        assert_eq!(out.record.version, 4);
        assert_eq!(out.record.config["a"], 2);
        assert_eq!(out.record.status(), Status::Deployed);
    }

    #[test]
    fn bad_data_is_an_error_not_a_panic() {
        let spec = Map::new();
        let raw = json!({"manifest": "m", "config": {"raw": "a: [unclosed"}});
        assert!(convert(&raw, &ctx(&spec)).is_err());
        let raw = json!({"manifest": "m", "info": {"status": {"code": 1}}, "version": "x"});
        assert!(convert(&raw, &ctx(&spec)).is_err());
        let raw = json!({"manifest": "m", "info": {"first_deployed": {"seconds": "x"}}});
        assert!(convert(&raw, &ctx(&spec)).is_err());
    }
}
