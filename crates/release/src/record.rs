//! The Helm release record (`helm.sh/helm/v4/pkg/release/v1.Release`) with serde laid out
//! exactly as Helm's Go structs marshal it: same field names, same order, same
//! omit-when-empty rules.
//!
//! Every struct keeps fields it does not know in `extra`, so a record written by a newer
//! Helm survives a decode/encode round trip undamaged.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::time::{self, Time};

/// Unknown JSON fields kept verbatim.
pub type Extra = Map<String, Value>;

/// A deployment of a chart: the chart, the values used and what was rendered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Release {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<Info>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<Chart>,
    /// User-supplied values (Helm omits an empty map).
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_default"
    )]
    pub config: Map<String, Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub hooks: Vec<Hook>,
    /// The revision, starting at 1.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub version: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// `"ssa"` or `"csa"`; empty means client-side apply (Helm v3 records).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub apply_method: String,
    /// Custom labels. Helm keeps them on the storage object, never in the JSON.
    #[serde(skip)]
    pub labels: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Release {
    /// The status, or `Unknown` when the record has no info.
    pub fn status(&self) -> Status {
        self.info
            .as_ref()
            .and_then(|i| i.status.clone())
            .unwrap_or(Status::Unknown)
    }

    /// Sets status and description, like Helm's `SetStatus`.
    pub fn set_status(&mut self, status: Status, description: impl Into<String>) {
        let info = self.info.get_or_insert_with(Info::default);
        info.status = Some(status);
        info.description = description.into();
    }
}

/// Release information: timestamps, status, notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Info {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub first_deployed: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub last_deployed: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub deleted: Option<Time>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "status_opt"
    )]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    #[serde(
        default,
        skip_serializing_if = "Map::is_empty",
        deserialize_with = "null_default"
    )]
    pub resources: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A release status, with Helm's strings. Strings Helm may add later are kept in `Other`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Status {
    Unknown,
    Deployed,
    Uninstalled,
    Superseded,
    Failed,
    Uninstalling,
    PendingInstall,
    PendingUpgrade,
    PendingRollback,
    Other(String),
}

impl Status {
    /// Helm's string for this status.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
            Status::Other(s) => s,
        }
    }

    /// Whether this status is a transition (an action is under way).
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }

    /// Whether an action is at work on the record, or was when it stopped: a
    /// `pending-*` status or `uninstalling`.
    pub fn is_under_way(&self) -> bool {
        self.is_pending() || *self == Status::Uninstalling
    }
}

impl From<&str> for Status {
    fn from(s: &str) -> Self {
        match s {
            "unknown" => Status::Unknown,
            "deployed" => Status::Deployed,
            "uninstalled" => Status::Uninstalled,
            "superseded" => Status::Superseded,
            "failed" => Status::Failed,
            "uninstalling" => Status::Uninstalling,
            "pending-install" => Status::PendingInstall,
            "pending-upgrade" => Status::PendingUpgrade,
            "pending-rollback" => Status::PendingRollback,
            other => Status::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Status::from(s.as_str()))
    }
}

/// A chart as Helm stores it inside a release (`pkg/chart/v2.Chart`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    /// Contents of `Chart.yaml`; Go writes `null` when absent.
    #[serde(default)]
    pub metadata: Option<Metadata>,
    /// Contents of `Chart.lock`.
    #[serde(default)]
    pub lock: Option<Lock>,
    /// Written as `null` when empty, like the nil slice Helm's loader leaves.
    #[serde(
        default,
        deserialize_with = "null_default",
        serialize_with = "nil_if_empty"
    )]
    pub templates: Vec<File>,
    /// Default values; Go writes `null` when the chart has none.
    #[serde(default)]
    pub values: Option<Map<String, Value>>,
    /// `values.schema.json` bytes, base64 in JSON.
    #[serde(default, with = "b64_opt")]
    pub schema: Option<Vec<u8>>,
    /// Always written by Helm v4, as the zero time when there is no schema.
    #[serde(default, with = "time::required_ser")]
    pub schemamodtime: Time,
    /// Written as `null` when empty, like the nil slice Helm's loader leaves.
    #[serde(
        default,
        deserialize_with = "null_default",
        serialize_with = "nil_if_empty"
    )]
    pub files: Vec<File>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub modtime: Option<Time>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A file in a chart: a path and its bytes (base64 in JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct File {
    #[serde(default)]
    pub name: String,
    #[serde(default, with = "b64_opt")]
    pub data: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub modtime: Option<Time>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl File {
    /// A file with the given path and contents.
    pub fn new(name: impl Into<String>, data: impl Into<Vec<u8>>) -> File {
        File {
            name: name.into(),
            data: Some(data.into()),
            ..File::default()
        }
    }
}

/// `Chart.yaml` (`pkg/chart/v2.Metadata`); every field is omitted when empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub home: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub sources: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub keywords: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub maintainers: Vec<Maintainer>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub icon: String,
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    #[serde(
        rename = "appVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub app_version: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub deprecated: bool,
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub annotations: BTreeMap<String, String>,
    #[serde(
        rename = "kubeVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub kube_version: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub dependencies: Vec<Dependency>,
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub chart_type: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A chart maintainer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A chart dependency (`pkg/chart/v2.Dependency`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dependency {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    #[serde(default)]
    pub repository: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub enabled: bool,
    #[serde(
        rename = "import-values",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub import_values: Vec<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
    #[serde(
        rename = "depends-on",
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub depends_on: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `Chart.lock` (`pkg/chart/v2.Lock`); Go writes every field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    #[serde(default, with = "time::required_ser")]
    pub generated: Time,
    #[serde(default)]
    pub digest: String,
    /// `None` is Go's nil slice, written as `null`.
    #[serde(default)]
    pub dependencies: Option<Vec<Dependency>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A hook declared by the chart (`pkg/release/v1.Hook`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The Kubernetes kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Chart-relative template path.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
    /// Events such as `pre-install`, `post-upgrade`, `test`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub events: Vec<String>,
    /// Go's `omitempty` has no effect on a struct, so this is always written.
    #[serde(default)]
    pub last_run: HookExecution,
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub weight: i64,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub delete_policies: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub output_log_policies: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The last run of a hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HookExecution {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub started_at: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "time::opt")]
    pub completed_at: Option<Time>,
    /// `Unknown`, `Running`, `Succeeded`, `Failed`, or empty when never run.
    #[serde(default, deserialize_with = "null_default")]
    pub phase: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Hook phases as Helm writes them.
pub mod hook_phase {
    pub const UNKNOWN: &str = "Unknown";
    pub const RUNNING: &str = "Running";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

fn is_false(v: &bool) -> bool {
    !*v
}

/// Go reads `null` into a nil slice or map; treat it as empty.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Go writes a nil slice as `null`.
fn nil_if_empty<S: Serializer, T: Serialize>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    if v.is_empty() {
        s.serialize_none()
    } else {
        v.serialize(s)
    }
}

fn status_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Status>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    Ok(s.filter(|s| !s.is_empty())
        .map(|s| Status::from(s.as_str())))
}

/// Go's `[]byte` in JSON: standard base64, `null` for nil.
mod b64_opt {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(bytes) => {
                s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
            }
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<u8>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => base64::engine::general_purpose::STANDARD
                .decode(text.as_bytes())
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("invalid base64 bytes: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_strings_match_helm() {
        let all = [
            (Status::Unknown, "unknown"),
            (Status::Deployed, "deployed"),
            (Status::Uninstalled, "uninstalled"),
            (Status::Superseded, "superseded"),
            (Status::Failed, "failed"),
            (Status::Uninstalling, "uninstalling"),
            (Status::PendingInstall, "pending-install"),
            (Status::PendingUpgrade, "pending-upgrade"),
            (Status::PendingRollback, "pending-rollback"),
        ];
        for (status, text) in all {
            assert_eq!(status.as_str(), text);
            assert_eq!(Status::from(text), status);
            assert_eq!(
                serde_json::to_string(&status).unwrap(),
                format!("\"{text}\"")
            );
        }
        assert_eq!(Status::from("future"), Status::Other("future".into()));
    }

    #[test]
    fn empty_release_is_empty_object() {
        assert_eq!(serde_json::to_string(&Release::default()).unwrap(), "{}");
    }

    #[test]
    fn field_order_and_omission_follow_go() {
        let mut rel = Release {
            name: "web".into(),
            version: 3,
            namespace: "prod".into(),
            manifest: "---\nkind: X\n".into(),
            apply_method: "ssa".into(),
            ..Release::default()
        };
        rel.set_status(Status::Deployed, "Upgrade complete");
        rel.chart = Some(Chart {
            metadata: Some(Metadata {
                name: "web".into(),
                version: "1.0.0".into(),
                api_version: "v2".into(),
                ..Metadata::default()
            }),
            templates: vec![File::new("templates/a.yaml", "a: 1\n")],
            ..Chart::default()
        });
        rel.hooks.push(Hook {
            name: "h".into(),
            events: vec!["pre-install".into()],
            ..Hook::default()
        });
        let json = serde_json::to_string(&rel).unwrap();
        assert_eq!(
            json,
            concat!(
                r#"{"name":"web","info":{"description":"Upgrade complete","status":"deployed"},"#,
                r#""chart":{"metadata":{"name":"web","version":"1.0.0","apiVersion":"v2"},"lock":null,"#,
                r#""templates":[{"name":"templates/a.yaml","data":"YTogMQo="}],"values":null,"schema":null,"#,
                r#""schemamodtime":"0001-01-01T00:00:00Z","files":null},"#,
                r#""manifest":"---\nkind: X\n","hooks":[{"name":"h","events":["pre-install"],"last_run":{"phase":""}}],"#,
                r#""version":3,"namespace":"prod","apply_method":"ssa"}"#
            )
        );
    }

    #[test]
    fn unknown_fields_survive() {
        let text = r#"{"name":"a","info":{"status":"deployed","future_info":1},"chart":{"metadata":{"name":"c","x-new":true},"lock":null,"templates":null,"values":null,"schema":null,"schemamodtime":"0001-01-01T00:00:00Z","files":null,"newfield":[1]},"hooks":[{"name":"h","last_run":{"phase":"","extra":"y"},"new_hook_field":"z"}],"version":1,"top_level_new":{"k":"v"}}"#;
        let rel: Release = serde_json::from_str(text).unwrap();
        assert_eq!(
            rel.extra.get("top_level_new"),
            Some(&serde_json::json!({"k":"v"}))
        );
        let back = serde_json::to_value(&rel).unwrap();
        assert_eq!(back["top_level_new"]["k"], "v");
        assert_eq!(back["info"]["future_info"], 1);
        assert_eq!(back["chart"]["metadata"]["x-new"], true);
        assert_eq!(back["chart"]["newfield"][0], 1);
        assert_eq!(back["hooks"][0]["new_hook_field"], "z");
        assert_eq!(back["hooks"][0]["last_run"]["extra"], "y");
    }

    #[test]
    fn helm_v3_empty_times_read_as_absent() {
        let text = r#"{"info":{"first_deployed":"2020-01-01T00:00:00.5+01:00","last_deployed":"","deleted":"0001-01-01T00:00:00Z","status":""}}"#;
        let rel: Release = serde_json::from_str(text).unwrap();
        let info = rel.info.unwrap();
        assert_eq!(
            info.first_deployed.map(|t| t.to_string()).as_deref(),
            Some("2020-01-01T00:00:00.5+01:00")
        );
        assert!(info.last_deployed.is_none());
        assert!(info.deleted.is_none());
        assert!(info.status.is_none());
    }

    #[test]
    fn bad_base64_is_an_error_not_a_panic() {
        let text = r#"{"chart":{"templates":[{"name":"a","data":"!!"}]}}"#;
        assert!(serde_json::from_str::<Release>(text).is_err());
    }
}
