//! What the server knows of aggregated APIs: the `APIService`s
//! (`apiregistration.k8s.io/v1`) stored in it, read as kube-aggregator
//! reads them. kube-apiserver builds `/apis` from every APIService, serves
//! a local one (`spec.service: null`) itself and proxies a group version
//! whose APIService names a Service to that Service.
//!
//! The embedded server never runs an aggregated API server and cannot reach
//! one, so every group version with a Service behind it is *unavailable*
//! here, whatever the Service: its discovery and every request under it
//! answer 503 as kube-aggregator answers for an APIService that is not
//! Available (`http/aggregator.rs`), the availability controller says why
//! in its status (`controllers/apiservices.rs`), and namespace deletion
//! waits for its discovery as kube-controller-manager's does
//! (`controllers/gc.rs`).

use crate::App;
use serde_json::Value;
use std::cmp::Ordering;

/// The storage prefix of APIServices.
pub(crate) const PREFIX: &str = "apiregistration.k8s.io/apiservices/";

/// One registered APIService, as discovery and routing read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiService {
    /// `version.group`, which validation makes its name.
    pub(crate) name: String,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) group_priority: i64,
    pub(crate) version_priority: i64,
    /// `spec.service` is set: served by another server, never by this one.
    pub(crate) remote: bool,
}

impl ApiService {
    fn from_stored(obj: &Value) -> Option<ApiService> {
        let spec = obj.get("spec")?;
        let text = |k: &str| {
            spec.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let int = |k: &str| spec.get(k).and_then(Value::as_i64).unwrap_or_default();
        Some(ApiService {
            name: obj.pointer("/metadata/name")?.as_str()?.to_string(),
            group: text("group"),
            version: text("version"),
            group_priority: int("groupPriorityMinimum"),
            version_priority: int("versionPriority"),
            remote: spec.get("service").is_some_and(Value::is_object),
        })
    }

    /// `group/version`.
    pub(crate) fn group_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// Every APIService of a named group (the legacy core one is not listed
/// under `/apis`), in kube-aggregator's order: groups by
/// `groupPriorityMinimum` (highest first, then by name), versions within a
/// group by `versionPriority` and then Kubernetes' version order.
pub(crate) fn registered(app: &App) -> Vec<ApiService> {
    let mut all: Vec<ApiService> = app
        .store
        .entries(PREFIX)
        .iter()
        .filter_map(|(_, stored)| ApiService::from_stored(&stored.value()))
        .filter(|s| !s.group.is_empty())
        .collect();
    all.sort_by(|a, b| {
        b.group_priority
            .cmp(&a.group_priority)
            .then_with(|| a.name.cmp(&b.name))
    });
    // Grouped in the order each group first appears.
    let mut groups: Vec<Vec<ApiService>> = Vec::new();
    for s in all {
        match groups.iter_mut().find(|g| g[0].group == s.group) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    for g in &mut groups {
        g.sort_by(|a, b| {
            b.version_priority
                .cmp(&a.version_priority)
                .then_with(|| compare_versions(&a.version, &b.version))
        });
    }
    groups.into_iter().flatten().collect()
}

/// Whether an APIService sends `group/version` to another server.
pub(crate) fn is_remote(app: &App, group: &str, version: &str) -> bool {
    app.store
        .get(&format!("{PREFIX}/{version}.{group}"))
        .and_then(|stored| ApiService::from_stored(&stored))
        .is_some_and(|s| s.remote && s.group == group && s.version == version)
}

/// The group versions whose discovery fails (every remote one, see the
/// module docs), sorted.
pub(crate) fn unavailable(app: &App) -> Vec<String> {
    let mut gvs: Vec<String> = registered(app)
        .iter()
        .filter(|s| s.remote)
        .map(ApiService::group_version)
        .collect();
    gvs.sort();
    gvs.dedup();
    gvs
}

/// A version's place in Kubernetes' order (apimachinery's
/// `CompareKubeAwareVersionStrings`): GA before beta before alpha, higher
/// major, then higher minor first; anything else after them, by name.
fn kube_version(v: &str) -> Option<(u8, u64, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let major: u64 = rest.get(..digits)?.parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((2, major, 0));
    }
    let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stability, major, minor.parse().ok()?))
}

/// `Less` when `a` comes first.
fn compare_versions(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_kubernetes_sorts_them() {
        let mut vs = vec![
            "foo10",
            "v1",
            "v3beta1",
            "v10beta3",
            "v2",
            "foo1",
            "v11alpha2",
            "v12alpha1",
            "v11beta2",
            "v10",
        ];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            vs,
            [
                "v10",
                "v2",
                "v1",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v12alpha1",
                "v11alpha2",
                "foo1",
                "foo10"
            ]
        );
    }
}
