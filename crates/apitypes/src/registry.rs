//! The table of served resource types: the built-in Kubernetes kinds plus
//! the kinds that CustomResourceDefinitions add at run time.

use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// One served resource at one group/version.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status_subresource: bool,
    pub scale_subresource: bool,
    /// Set for kinds served because of a CRD (by the CRD's name).
    pub crd: Option<String>,
    /// The CRD version's structural schema (built-in kinds use the
    /// generated table).
    pub schema: Option<Arc<crate::schema::Schema>>,
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group`, the name used in error messages and CRD names.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Stable prefix of storage keys; shared by all versions of a kind.
    /// `events.k8s.io` Events are stored with the core ones (see
    /// [`is_events_api`]).
    pub fn key_prefix(&self) -> String {
        format!("{}/{}/", self.storage_group(), self.plural)
    }

    pub fn key(&self, namespace: &str, name: &str) -> String {
        format!(
            "{}/{}/{}/{}",
            self.storage_group(),
            self.plural,
            namespace,
            name
        )
    }

    fn storage_group(&self) -> &str {
        if is_events_api(&self.group, &self.plural) {
            ""
        } else {
            &self.group
        }
    }
}

/// Whether a resource type is the `events.k8s.io` view of core Events: one
/// resource behind two APIs, stored once in the core shape under the core
/// key, as kube-apiserver stores them.
pub fn is_events_api(group: &str, plural: &str) -> bool {
    group == "events.k8s.io" && plural == "events"
}

// (group, version, kind, plural, short names, namespaced, status, categories)
type Row = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    bool,
    bool,
    &'static [&'static str],
);

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

const BUILTINS: &[Row] = &[
    (
        "",
        "v1",
        "Namespace",
        "namespaces",
        &["ns"],
        false,
        true,
        NONE,
    ),
    (
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        &["cm"],
        true,
        false,
        NONE,
    ),
    ("", "v1", "Secret", "secrets", NONE, true, false, NONE),
    ("", "v1", "Service", "services", &["svc"], true, true, ALL),
    (
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        &["sa"],
        true,
        false,
        NONE,
    ),
    ("", "v1", "Pod", "pods", &["po"], true, true, ALL),
    (
        "",
        "v1",
        "Endpoints",
        "endpoints",
        &["ep"],
        true,
        false,
        NONE,
    ),
    ("", "v1", "Event", "events", &["ev"], true, false, NONE),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        &["pvc"],
        true,
        true,
        NONE,
    ),
    (
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        &["pv"],
        false,
        true,
        NONE,
    ),
    ("", "v1", "Node", "nodes", &["no"], false, true, NONE),
    (
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        &["quota"],
        true,
        true,
        NONE,
    ),
    (
        "",
        "v1",
        "LimitRange",
        "limitranges",
        &["limits"],
        true,
        false,
        NONE,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        &["ev"],
        true,
        false,
        NONE,
    ),
    (
        "apps",
        "v1",
        "Deployment",
        "deployments",
        &["deploy"],
        true,
        true,
        ALL,
    ),
    (
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        &["sts"],
        true,
        true,
        ALL,
    ),
    (
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        &["ds"],
        true,
        true,
        ALL,
    ),
    (
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        &["rs"],
        true,
        true,
        ALL,
    ),
    (
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        NONE,
        true,
        false,
        NONE,
    ),
    ("batch", "v1", "Job", "jobs", NONE, true, true, ALL),
    (
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        &["cj"],
        true,
        true,
        ALL,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        &["ing"],
        true,
        true,
        NONE,
    ),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        &["netpol"],
        true,
        false,
        NONE,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        &["pdb"],
        true,
        true,
        NONE,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        &["hpa"],
        true,
        true,
        ALL,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        NONE,
        true,
        false,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        NONE,
        true,
        false,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        NONE,
        true,
        false,
        NONE,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
        false,
        true,
        NONE,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        NONE,
        false,
        true,
        NONE,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        &["pc"],
        false,
        false,
        NONE,
    ),
    (
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        &["sc"],
        false,
        false,
        NONE,
    ),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        NONE,
        true,
        false,
        NONE,
    ),
    // Reviews are answered, never stored.
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        NONE,
        false,
        false,
        NONE,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        NONE,
        false,
        false,
        NONE,
    ),
];

fn builtins() -> Vec<Arc<ResourceType>> {
    BUILTINS
        .iter()
        .map(
            |&(group, version, kind, plural, short, namespaced, status, cats)| {
                Arc::new(ResourceType {
                    group: group.into(),
                    version: version.into(),
                    kind: kind.into(),
                    plural: plural.into(),
                    singular: kind.to_lowercase(),
                    short_names: short.iter().map(|s| s.to_string()).collect(),
                    categories: cats.iter().map(|s| s.to_string()).collect(),
                    namespaced,
                    status_subresource: status,
                    scale_subresource: matches!(kind, "Deployment" | "StatefulSet" | "ReplicaSet"),
                    crd: None,
                    schema: None,
                })
            },
        )
        .collect()
}

/// A group and its served versions, preferred first.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub name: String,
    pub versions: Vec<String>,
}

/// Thread-safe set of served types; `generation` changes whenever CRDs do.
pub struct Registry {
    types: RwLock<Vec<Arc<ResourceType>>>,
    generation: AtomicU64,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            types: RwLock::new(builtins()),
            generation: AtomicU64::new(1),
        }
    }
}

impl Registry {
    pub fn all(&self) -> Vec<Arc<ResourceType>> {
        match self.types.read() {
            Ok(t) => t.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Relaxed)
    }

    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.all()
            .into_iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// Any served version of a group/plural (for GC and namespace cleanup).
    pub fn find_any_version(&self, group: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.all()
            .into_iter()
            .find(|t| t.group == group && t.plural == plural)
    }

    pub fn groups(&self) -> Vec<GroupInfo> {
        let mut out: Vec<GroupInfo> = Vec::new();
        for t in self.all() {
            match out.iter_mut().find(|g| g.name == t.group) {
                Some(g) => {
                    if !g.versions.contains(&t.version) {
                        g.versions.push(t.version.clone());
                    }
                }
                None => out.push(GroupInfo {
                    name: t.group.clone(),
                    versions: vec![t.version.clone()],
                }),
            }
        }
        out
    }

    /// Serves the kinds a CRD declares (replacing what it served before).
    pub fn install_crd(&self, crd: &Value) -> Result<(), String> {
        let types = crd_types(crd)?;
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut guard = match self.types.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        guard.retain(|t| t.crd.as_deref() != Some(name.as_str()));
        guard.extend(types.into_iter().map(Arc::new));
        self.generation.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub fn remove_crd(&self, name: &str) {
        let mut guard = match self.types.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        guard.retain(|t| t.crd.as_deref() != Some(name));
        self.generation.fetch_add(1, Ordering::Relaxed);
    }
}

/// Validates a CRD and derives the served types; the error is user-facing.
pub fn crd_types(crd: &Value) -> Result<Vec<ResourceType>, String> {
    let spec = crd.get("spec").ok_or("spec: Required value")?;
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
        .ok_or("spec.group: Required value")?;
    let names = spec.get("names").ok_or("spec.names: Required value")?;
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .ok_or("spec.names.plural: Required value")?;
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .ok_or("spec.names.kind: Required value")?;
    let expected = format!("{plural}.{group}");
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != expected {
        return Err(format!(
            "metadata.name: Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"
        ));
    }
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => true,
        Some("Cluster") => false,
        other => {
            return Err(format!(
                "spec.scope: Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
            ))
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .filter(|v| !v.is_empty())
        .ok_or(
            "spec.versions: Invalid value: must have exactly one version marked as storage version",
        )?;
    let storage_count = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if storage_count != 1 {
        return Err(
            "spec.versions: Invalid value: must have exactly one version marked as storage version"
                .into(),
        );
    }
    let mut out = Vec::new();
    for v in versions {
        let vname = v
            .get("name")
            .and_then(Value::as_str)
            .ok_or("spec.versions[].name: Required value")?;
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        let sub = v.get("subresources");
        out.push(ResourceType {
            group: group.into(),
            version: vname.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: singular.clone(),
            short_names: crate::strings(names.get("shortNames")),
            categories: crate::strings(names.get("categories")),
            namespaced,
            status_subresource: sub.and_then(|s| s.get("status")).is_some(),
            scale_subresource: sub.and_then(|s| s.get("scale")).is_some(),
            crd: Some(name.to_string()),
            schema: v
                .pointer("/schema/openAPIV3Schema")
                .map(|s| Arc::new(crate::schema::compile_crd(s, kind))),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_install_and_remove() {
        let r = Registry::default();
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1beta1", "served": true, "storage": false}
                ]}
        });
        r.install_crd(&crd).unwrap();
        let t = r.find("example.com", "v1", "widgets").unwrap();
        assert!(t.status_subresource);
        assert!(
            !r.find("example.com", "v1beta1", "widgets")
                .unwrap()
                .status_subresource
        );
        assert_eq!(r.groups().last().unwrap().versions, vec!["v1", "v1beta1"]);
        r.remove_crd("widgets.example.com");
        assert!(r.find("example.com", "v1", "widgets").is_none());
    }

    #[test]
    fn every_stored_builtin_kind_has_a_schema() {
        for t in Registry::default().all() {
            let review =
                t.group.starts_with("authorization.") || t.group.starts_with("authentication.");
            if review {
                continue;
            }
            assert!(
                crate::schema::builtin(&t.api_version(), &t.kind).is_some(),
                "{} {} has no schema",
                t.api_version(),
                t.kind
            );
        }
    }

    #[test]
    fn crd_name_must_match() {
        let crd = json!({"metadata": {"name": "x"}, "spec": {"group": "g.io", "scope": "Cluster",
            "names": {"plural": "ws", "kind": "W"}, "versions": [{"name": "v1", "served": true, "storage": true}]}});
        assert!(crd_types(&crd).is_err());
    }
}
