//! Helm's built-in template objects that are Go types with methods rather
//! than plain maps: `.Files` and `.Capabilities`.

use std::any::Any;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use gotmpl::{Func, List, ListKind, Map, Object, Ty, Value};

/// `.Files`: the chart's non-template files (Helm's `files`, a
/// `map[string][]byte` with methods). The contents are the loaded chart's,
/// shared: a template's value gets its own copy of a file only when it
/// takes one out as bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Files {
    files: Rc<BTreeMap<String, Arc<[u8]>>>,
}

impl Files {
    pub(crate) fn new(files: BTreeMap<String, Arc<[u8]>>) -> Self {
        Files {
            files: Rc::new(files),
        }
    }

    /// The files of a chart, sharing their contents.
    pub(crate) fn of(files: &[crate::loader::File]) -> Self {
        Files::new(
            files
                .iter()
                .map(|f| (f.name.clone(), f.data.clone()))
                .collect(),
        )
    }

    #[cfg(test)]
    pub(crate) fn from_pairs<I, S, B>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (S, B)>,
        S: Into<String>,
        B: AsRef<[u8]>,
    {
        Files::new(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), Arc::from(v.as_ref())))
                .collect(),
        )
    }

    fn as_value_map(&self) -> Value {
        let m: Map = self
            .files
            .iter()
            .map(|(k, v)| (k.clone(), bytes(v)))
            .collect();
        Value::map(m)
    }

    /// The files whose paths match a gobwas-style glob (`*` within a path
    /// segment, `**` across segments), as Helm's `Files.Glob`.
    pub(crate) fn glob(&self, pattern: &str) -> Files {
        let Some(re) = glob_regex(pattern) else {
            return Files::default();
        };
        Files::new(
            self.files
                .iter()
                .filter(|(k, _)| re.is_match(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }

    fn base_name_map(&self, f: impl Fn(&[u8]) -> String) -> Value {
        let m: Map = self
            .files
            .iter()
            .map(|(k, v)| {
                let base = k.rsplit('/').next().unwrap_or(k).to_string();
                (base, Value::string(f(v)))
            })
            .collect();
        Value::map(m)
    }
}

/// A file's contents as a template value (`[]byte`): the template
/// engine's values are the rendering thread's own, so this is a copy.
fn bytes(data: &[u8]) -> Value {
    Value::Bytes(Rc::from(data))
}

/// Translates a gobwas/glob pattern with `/` as separator into a regex.
fn glob_regex(pattern: &str) -> Option<regex::Regex> {
    let mut re = String::from("^");
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let mut in_alt = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                re.push_str(".*");
                i += 1;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let end = chars[i..].iter().position(|&x| x == ']')? + i;
                let mut class: String = chars[i + 1..end].iter().collect();
                if let Some(rest) = class.strip_prefix('!') {
                    class = format!("^{rest}");
                }
                re.push('[');
                re.push_str(&class.replace('\\', "\\\\"));
                re.push(']');
                i = end;
            }
            '{' => {
                in_alt += 1;
                re.push_str("(?:");
            }
            '}' if in_alt > 0 => {
                in_alt -= 1;
                re.push(')');
            }
            ',' if in_alt > 0 => re.push('|'),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                re.push_str(&regex::escape(&chars[i].to_string()));
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re).ok()
}

impl Object for Files {
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn kind(&self) -> gotmpl::Kind {
        gotmpl::Kind::Map
    }
    fn method(&self, name: &str) -> Option<Func> {
        let me = self.clone();
        Some(match name {
            "Get" => Func::new(&[Ty::String], move |_, a| {
                let p = a[0].as_str().unwrap_or_default();
                Ok(Value::string(
                    me.files
                        .get(p)
                        .map(|b| gotmpl::gostr::from_bytes(b).into_owned())
                        .unwrap_or_default(),
                ))
            }),
            "GetBytes" => Func::new(&[Ty::String], move |_, a| {
                let p = a[0].as_str().unwrap_or_default();
                Ok(me.files.get(p).map_or_else(|| bytes(b""), |b| bytes(b)))
            }),
            "Glob" => Func::new(&[Ty::String], move |_, a| {
                Ok(Value::object(me.glob(a[0].as_str().unwrap_or_default())))
            }),
            "Lines" => Func::new(&[Ty::String], move |_, a| {
                let p = a[0].as_str().unwrap_or_default();
                let Some(b) = me.files.get(p) else {
                    return Ok(Value::List(List::with_kind(vec![], ListKind::String)));
                };
                let mut s = gotmpl::gostr::from_bytes(b).into_owned();
                if s.ends_with('\n') {
                    s.pop();
                }
                Ok(Value::string_list(
                    s.split('\n').map(String::from).collect(),
                ))
            }),
            "AsConfig" => Func::new(&[], move |_, _| {
                let m = me.base_name_map(|b| crate::loader::utf8_lossy(b).into_owned());
                gocodec::yaml::to_yaml(&m)
                    .map(Value::string)
                    .or_else(|_| Ok(Value::str("")))
            }),
            "AsSecrets" => Func::new(&[], move |_, _| {
                use base64::Engine as _;
                let m = me.base_name_map(|b| base64::engine::general_purpose::STANDARD.encode(b));
                gocodec::yaml::to_yaml(&m)
                    .map(Value::string)
                    .or_else(|_| Ok(Value::str("")))
            }),
            _ => return None,
        })
    }
    fn format_v(&self) -> String {
        gotmpl::fmt::format_value(&self.as_value_map())
    }
    fn truthy(&self) -> bool {
        !self.files.is_empty()
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(self.as_value_map().to_json())
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.files
                .iter()
                .map(|(k, v)| (Value::str(k), bytes(v)))
                .collect(),
        )
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The Kubernetes version templates see (`.Capabilities.KubeVersion`).
#[derive(Debug, Clone)]
pub(crate) struct KubeVersion {
    pub version: String,
    pub major: String,
    pub minor: String,
}

impl KubeVersion {
    /// Parses `v1.29.0`, `1.29`, `v1.29.3-gke.1` into Helm's form.
    pub(crate) fn parse(s: &str) -> Option<KubeVersion> {
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.splitn(3, '.');
        let major = parts.next()?.to_string();
        let minor_raw = parts.next().unwrap_or("0");
        let minor: String = minor_raw
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if major.is_empty() || !major.chars().all(|c| c.is_ascii_digit()) || minor.is_empty() {
            return None;
        }
        let patch = parts.next().unwrap_or("0");
        Some(KubeVersion {
            version: format!("v{major}.{minor_raw}.{patch}"),
            major,
            minor,
        })
    }
}

impl Default for KubeVersion {
    fn default() -> Self {
        KubeVersion {
            version: "v1.36.0".into(),
            major: "1".into(),
            minor: "36".into(),
        }
    }
}

impl Object for KubeVersion {
    fn type_name(&self) -> String {
        "common.KubeVersion".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Version" => Value::str(&self.version),
            "Major" => Value::str(&self.major),
            "Minor" => Value::str(&self.minor),
            _ => return None,
        })
    }
    fn method(&self, name: &str) -> Option<Func> {
        let v = self.version.clone();
        match name {
            "String" | "GitVersion" => Some(Func::new(&[], move |_, _| Ok(Value::str(&v)))),
            _ => None,
        }
    }
    fn format_v(&self) -> String {
        self.version.clone()
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({"Version": self.version, "Major": self.major, "Minor": self.minor}))
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("Version", Value::str(&self.version)),
            ("Major", Value::str(&self.major)),
            ("Minor", Value::str(&self.minor)),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// `.Capabilities.APIVersions`: a list of group/versions with `Has`.
#[derive(Debug, Clone)]
pub(crate) struct VersionSet(pub Rc<Vec<String>>);

impl Object for VersionSet {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn kind(&self) -> gotmpl::Kind {
        gotmpl::Kind::Slice
    }
    fn method(&self, name: &str) -> Option<Func> {
        let me = self.0.clone();
        match name {
            "Has" => Some(Func::new(&[Ty::String], move |_, a| {
                let want = a[0].as_str().unwrap_or_default();
                Ok(Value::Bool(me.iter().any(|v| v == want)))
            })),
            _ => None,
        }
    }
    fn format_v(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn truthy(&self) -> bool {
        !self.0.is_empty()
    }
    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(
            self.0
                .iter()
                .map(|v| (Value::Invalid, Value::str(v)))
                .collect(),
        )
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!(self.0.as_ref()))
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The API group/versions Helm v4.2 assumes when no cluster is asked.
pub(crate) const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// `.Capabilities`.
#[derive(Debug, Clone)]
pub(crate) struct Capabilities {
    pub kube_version: KubeVersion,
    pub api_versions: VersionSet,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities::new(KubeVersion::default(), &[])
    }
}

impl Capabilities {
    /// The default API versions plus `extra` (`--api-versions`).
    pub(crate) fn new(kube_version: KubeVersion, extra: &[String]) -> Self {
        let mut v: Vec<String> = DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect();
        for e in extra {
            if !v.contains(e) {
                v.push(e.clone());
            }
        }
        Capabilities {
            kube_version,
            api_versions: VersionSet(Rc::new(v)),
        }
    }

    /// Its parts as plain (sendable) values: what [`Capabilities::exact`]
    /// takes to make it again.
    pub(crate) fn into_parts(self) -> (KubeVersion, Vec<String>) {
        let versions = Rc::try_unwrap(self.api_versions.0).unwrap_or_else(|v| (*v).clone());
        (self.kube_version, versions)
    }

    /// Exactly `api_versions` (a cluster's discovered set), without the defaults.
    pub(crate) fn exact(kube_version: KubeVersion, api_versions: Vec<String>) -> Self {
        Capabilities {
            kube_version,
            api_versions: VersionSet(Rc::new(api_versions)),
        }
    }
}

/// `.Capabilities.HelmVersion`.
#[derive(Debug, Clone)]
struct HelmVersion;

impl Object for HelmVersion {
    fn type_name(&self) -> String {
        "version.BuildInfo".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(Value::str(match name {
            "Version" => "v4.2",
            "GitCommit" | "GitTreeState" => "",
            "GoVersion" => "go1.26.6",
            "KubeClientVersion" => "v1.36",
            _ => return None,
        }))
    }
    fn format_v(&self) -> String {
        "{v4.2   go1.26.6 v1.36}".into()
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(
            serde_json::json!({"version": "v4.2", "go_version": "go1.26.6", "kube_client_version": "v1.36"}),
        )
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("version", Value::str("v4.2")),
            ("go_version", Value::str("go1.26.6")),
            ("kube_client_version", Value::str("v1.36")),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Object for Capabilities {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn kind(&self) -> gotmpl::Kind {
        gotmpl::Kind::Ptr
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "KubeVersion" => Value::object(self.kube_version.clone()),
            "APIVersions" => Value::object(self.api_versions.clone()),
            "HelmVersion" => Value::object(HelmVersion),
            _ => return None,
        })
    }
    fn format_v(&self) -> String {
        format!(
            "&{{{} {} {}}}",
            self.kube_version.format_v(),
            self.api_versions.format_v(),
            HelmVersion.format_v()
        )
    }
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(serde_json::json!({
            "KubeVersion": self.kube_version.to_json(),
            "APIVersions": self.api_versions.to_json(),
            "HelmVersion": HelmVersion.to_json(),
        }))
    }
    fn json_fields(&self) -> Option<Vec<(&'static str, Value)>> {
        Some(vec![
            ("KubeVersion", Value::object(self.kube_version.clone())),
            ("APIVersions", Value::object(self.api_versions.clone())),
            ("HelmVersion", Value::object(HelmVersion)),
        ])
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_keeps_the_bytes_of_binary_files() {
        let png: &[u8] = &[0x89, b'P', b'N', b'G', 0x00, 0xff];
        let f = Files::from_pairs([("logo.png", png)]);
        let get = f.method("Get").expect("Get");
        let v = (get.imp)(
            &mut gotmpl::CallCtx::detached(),
            vec![Value::str("logo.png")],
        )
        .expect("Get runs");
        let s = v.as_str().expect("a string");
        assert_eq!(gotmpl::gostr::to_bytes(s).as_ref(), png);
    }

    #[test]
    fn structs_encode_in_go_field_order() {
        let caps = Value::object(Capabilities::default());
        let j = gocodec::json::to_json(&caps).unwrap();
        assert!(
            j.starts_with(r#"{"KubeVersion":{"Version":"v1.36.0","Major":"1","Minor":"36"},"APIVersions":["v1","#),
            "{j}"
        );
        assert!(
            j.ends_with(r#""HelmVersion":{"version":"v4.2","go_version":"go1.26.6","kube_client_version":"v1.36"}}"#),
            "{j}"
        );
    }

    #[test]
    fn glob_like_gobwas() {
        let f = Files::from_pairs([
            ("config/a.txt", "a"),
            ("config/sub/c.txt", "c"),
            ("lines.txt", "l"),
        ]);
        let names = |p: &str| -> Vec<String> { f.glob(p).files.keys().cloned().collect() };
        assert_eq!(names("config/*"), vec!["config/a.txt"]);
        assert_eq!(names("**.txt").len(), 3);
        assert_eq!(names("**/*.txt"), vec!["config/a.txt", "config/sub/c.txt"]);
    }

    #[test]
    fn kube_version_parsing() {
        let k = KubeVersion::parse("v1.29.3").expect("parses");
        assert_eq!((k.major.as_str(), k.minor.as_str()), ("1", "29"));
        assert!(KubeVersion::parse("x").is_none());
    }
}
