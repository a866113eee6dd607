//! Rendered output to Kubernetes manifests, as Helm's `releaseutil`:
//! splitting files into YAML documents, separating hooks (`helm.sh/hook`)
//! from the release manifest, and sorting by kind in install order.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Helm's install order of kinds; unknown kinds go last, sorted by name.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Helm's uninstall order of kinds.
pub const UNINSTALL_ORDER: &[&str] = &[
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "APIService",
    "Ingress",
    "IngressClass",
    "Service",
    "CronJob",
    "Job",
    "StatefulSet",
    "HorizontalPodAutoscaler",
    "Deployment",
    "ReplicaSet",
    "ReplicationController",
    "Pod",
    "DaemonSet",
    "RoleBindingList",
    "RoleBinding",
    "RoleList",
    "Role",
    "ClusterRoleBindingList",
    "ClusterRoleBinding",
    "ClusterRoleList",
    "ClusterRole",
    "CustomResourceDefinition",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "ConfigMap",
    "SecretList",
    "Secret",
    "ServiceAccount",
    "PodDisruptionBudget",
    "PodSecurityPolicy",
    "LimitRange",
    "ResourceQuota",
    "NetworkPolicy",
    "Namespace",
    "PriorityClass",
];

pub(crate) const HOOK_ANNOTATION: &str = "helm.sh/hook";
pub(crate) const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
pub(crate) const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
pub(crate) const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";

/// The hook events Helm knows.
pub(crate) const HOOK_EVENTS: &[&str] = &[
    "pre-install",
    "post-install",
    "pre-delete",
    "post-delete",
    "pre-upgrade",
    "post-upgrade",
    "pre-rollback",
    "post-rollback",
    "test",
    "test-success",
];

/// The identifying head of a manifest document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub annotations: BTreeMap<String, String>,
}

/// One document of the release manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The template it came from (`<chart>/templates/x.yaml`).
    pub source: String,
    pub content: String,
    pub head: Head,
}

/// A hook document, in Helm's release-record shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    pub name: String,
    pub kind: String,
    pub path: String,
    pub manifest: String,
    pub events: Vec<String>,
    pub weight: i64,
    pub delete_policies: Vec<String>,
    pub output_log_policies: Vec<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("YAML parse error on {path}: {message}")]
pub struct ManifestError {
    pub path: String,
    pub message: String,
}

/// Splits a rendered file into YAML documents as Helm's `SplitManifests`
/// does: on `---` lines, trimming each document, dropping empty ones.
pub fn split_documents(text: &str) -> Vec<String> {
    let t = text.trim();
    let mut docs = Vec::new();
    let mut cur = String::new();
    let mut first = true;
    for line in t.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with("---") && bare[3..].trim().is_empty() {
            docs.push(std::mem::take(&mut cur));
            first = false;
            continue;
        }
        cur.push_str(line);
    }
    let _ = first;
    docs.push(cur);
    docs.into_iter()
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect()
}

fn head_of(doc: &serde_json::Value) -> Head {
    let s =
        |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let md = doc.get("metadata");
    Head {
        api_version: s(doc.get("apiVersion")),
        kind: s(doc.get("kind")),
        name: s(md.and_then(|m| m.get("name"))),
        namespace: s(md.and_then(|m| m.get("namespace"))),
        annotations: md
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.as_object())
            .map(|a| {
                a.iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str()
                                .map(String::from)
                                .unwrap_or_else(|| v.to_string()),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Hooks and manifests of a render, each sorted in install order.
#[derive(Debug, Clone, Default)]
pub struct Sorted {
    pub hooks: Vec<Hook>,
    pub manifests: Vec<Manifest>,
}

/// Helm's `SortManifests`: files in path order, partials and empty files
/// skipped, documents split, hooks separated, both sorted by kind.
pub fn sort_manifests(
    files: &BTreeMap<String, String>,
    order: &[&str],
) -> Result<Sorted, ManifestError> {
    let mut out = Sorted::default();
    for (path, content) in files {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        if path.ends_with("NOTES.txt") {
            continue;
        }
        for doc in split_documents(content) {
            let parsed = gocodec::yaml::parse_yaml_to_json(&doc).map_err(|e| ManifestError {
                path: path.clone(),
                message: e.to_string(),
            })?;
            let head = head_of(&parsed);
            let Some(hook_types) = head.annotations.get(HOOK_ANNOTATION).cloned() else {
                out.manifests.push(Manifest {
                    source: path.clone(),
                    content: doc,
                    head,
                });
                continue;
            };
            let mut events = Vec::new();
            let mut unknown = false;
            for t in hook_types.split(',') {
                let t = t.trim().to_ascii_lowercase();
                if HOOK_EVENTS.contains(&t.as_str()) {
                    events.push(t);
                } else {
                    unknown = true;
                    break;
                }
            }
            if unknown {
                continue;
            }
            let weight = head
                .annotations
                .get(HOOK_WEIGHT_ANNOTATION)
                .and_then(|w| w.trim().parse::<i64>().ok())
                .unwrap_or(0);
            let list = |key: &str| -> Vec<String> {
                head.annotations
                    .get(key)
                    .map(|v| {
                        v.split(',')
                            .map(|s| s.trim().to_string())
                            .filter(|s| !s.is_empty())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            out.hooks.push(Hook {
                name: head.name.clone(),
                kind: head.kind.clone(),
                path: path.clone(),
                manifest: doc,
                events,
                weight,
                delete_policies: list(HOOK_DELETE_ANNOTATION),
                output_log_policies: list(HOOK_OUTPUT_LOG_ANNOTATION),
            });
        }
    }
    let rank = |k: &str| order.iter().position(|o| *o == k);
    let less = |a: &str, b: &str| -> std::cmp::Ordering {
        match (rank(a), rank(b)) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.cmp(b),
        }
    };
    out.manifests
        .sort_by(|a, b| less(&a.head.kind, &b.head.kind));
    // Helm sorts hooks by weight, then kind, then name.
    out.hooks.sort_by(|a, b| {
        a.weight
            .cmp(&b.weight)
            .then_with(|| less(&a.kind, &b.kind))
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(out)
}

/// The release manifest text: every document with its `# Source:` header.
pub fn manifest_text(manifests: &[Manifest]) -> String {
    let mut s = String::new();
    for m in manifests {
        s.push_str("---\n# Source: ");
        s.push_str(&m.source);
        s.push('\n');
        s.push_str(&m.content);
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_sorts() {
        let mut files = BTreeMap::new();
        files.insert(
            "c/templates/a.yaml".to_string(),
            "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Service\nmetadata:\n  name: s\n"
                .to_string(),
        );
        files.insert(
            "c/templates/h.yaml".to_string(),
            "kind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n".to_string(),
        );
        files.insert("c/templates/NOTES.txt".to_string(), "hi".to_string());
        let s = sort_manifests(&files, INSTALL_ORDER).expect("sorts");
        let kinds: Vec<_> = s.manifests.iter().map(|m| m.head.kind.as_str()).collect();
        assert_eq!(kinds, vec!["Service", "Deployment"]);
        assert_eq!(s.hooks.len(), 1);
        assert_eq!(s.hooks[0].events, vec!["pre-install", "post-upgrade"]);
        assert_eq!(s.hooks[0].weight, -5);
    }

    #[test]
    fn separators_need_their_own_line() {
        assert_eq!(split_documents("a: 1\n---\nb: 2\n--- \n\n---\n").len(), 2);
        assert_eq!(split_documents("a: '---x'").len(), 1);
    }
}
