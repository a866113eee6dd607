//! [`DiscoveryCache`]: what discovery found, kept for a while and shared, so that a
//! controller rendering many releases does not discover the cluster again for each of
//! them (the Go helm-operator keeps a memory-cached discovery client for the same
//! reason), and so that an unavailable API costs one failed request per refresh
//! instead of one per render, per `lookup` and per object.
//!
//! Two things are kept: the `.Capabilities` of the last full discovery, and each group
//! version's resource list (or why it has none), from which object kinds resolve to
//! their API resources. Both are refreshed when older than the cache's TTL, lazily, by
//! the first caller that needs them; a kind that is not found refreshes its group
//! version once, at most every [`MISS_REFRESH`] (a CRD installed meanwhile). A group
//! version whose discovery failed is not asked again before [`MISS_REFRESH`] has passed
//! even when the TTL is zero, and is warned about once, when it becomes unavailable.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;

use super::capabilities::{
    self, apiservice_name, warn_unavailable, Capabilities, DiscoveryError, GroupVersionState,
    WARNING_LOG_TARGET,
};

/// The shortest time between two discoveries of one group version prompted by a kind
/// it did not have (or by its discovery failing).
pub const MISS_REFRESH: Duration = Duration::from_secs(5);

/// An object kind's API resource and whether it is namespaced.
pub(crate) type Mapping = (ApiResource, bool);

/// Why an object kind has no API resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// The server does not serve the group version (no such group or version).
    #[error(
        "the cluster does not serve {api_version} {kind}: no such resource type (is its CustomResourceDefinition installed?)"
    )]
    NotServed { api_version: String, kind: String },
    /// The group version is served, without that kind.
    #[error("the cluster does not serve {api_version} {kind}: {api_version} has no kind {kind}")]
    MissingKind { api_version: String, kind: String },
    /// The group version's discovery failed: usually an aggregated API whose service
    /// is down (its APIService is not Available).
    #[error(
        "the API {api_version} (kind {kind}) is unavailable: {reason}; its APIService {apiservice} is probably not available (`kubectl get apiservice {apiservice}` says why)"
    )]
    Unavailable {
        api_version: String,
        kind: String,
        apiservice: String,
        reason: String,
    },
}

#[derive(Debug)]
struct Entry {
    at: Instant,
    state: GroupVersionState,
}

/// One group version's entry; locked while it is being discovered, so concurrent
/// callers share one request.
type Slot = Arc<tokio::sync::Mutex<Option<Entry>>>;

/// Discovery results reused for a while; see the module docs.
#[derive(Debug)]
pub struct DiscoveryCache {
    ttl: Duration,
    capabilities: tokio::sync::Mutex<Option<(Instant, Capabilities)>>,
    group_versions: Mutex<HashMap<String, Slot>>,
    /// Group versions found unavailable and warned about.
    unavailable: Mutex<HashSet<String>>,
}

impl DiscoveryCache {
    /// A cache whose entries are reused while younger than `ttl` (zero: every render
    /// discovers afresh, as `helm` does).
    pub fn new(ttl: Duration) -> Self {
        DiscoveryCache {
            ttl,
            capabilities: tokio::sync::Mutex::new(None),
            group_versions: Mutex::new(HashMap::new()),
            unavailable: Mutex::new(HashSet::new()),
        }
    }

    /// How long entries are reused.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The cluster's capabilities: remembered ones while younger than the TTL, else
    /// discovered afresh. Concurrent callers share one discovery.
    pub async fn get(&self, client: &Client) -> Result<Capabilities, DiscoveryError> {
        let mut slot = self.capabilities.lock().await;
        if let Some((at, caps)) = slot.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(caps.clone());
            }
        }
        let found = capabilities::discover_all(client).await?;
        let now = Instant::now();
        for (gv, state) in found.group_versions {
            self.note(&gv, &state);
            // A group version being discovered right now gets an answer as fresh.
            if let Ok(mut entry) = self.slot(&gv).try_lock() {
                *entry = Some(Entry { at: now, state });
            }
        }
        *slot = Some((now, found.capabilities.clone()));
        Ok(found.capabilities)
    }

    /// The API resource of `kind` in `api_version` and whether it is namespaced, from
    /// the group version's remembered resource list, discovered when missing or stale.
    pub async fn resolve(
        &self,
        client: &Client,
        api_version: &str,
        kind: &str,
    ) -> Result<(ApiResource, bool), KindError> {
        let slot = self.slot(api_version);
        let mut entry = slot.lock().await;
        let fresh = entry
            .as_ref()
            .is_some_and(|e| e.at.elapsed() < self.freshness(&e.state));
        if !fresh {
            *entry = Some(self.fetch(client, api_version).await);
        }
        let found = find(entry.as_ref(), api_version, kind);
        let retry = fresh
            && found.is_err()
            && entry
                .as_ref()
                .is_some_and(|e| e.at.elapsed() >= MISS_REFRESH);
        if !retry {
            return found;
        }
        *entry = Some(self.fetch(client, api_version).await);
        find(entry.as_ref(), api_version, kind)
    }

    /// Forgets what was discovered (after a CRD was installed, say).
    pub async fn invalidate(&self) {
        *self.capabilities.lock().await = None;
        if let Ok(mut map) = self.group_versions.lock() {
            map.clear();
        }
    }

    /// Forgets what was found of `group_versions` and the capabilities (CRDs serving
    /// them were just installed), so the next caller discovers them.
    pub(crate) async fn forget(&self, group_versions: &[String]) {
        *self.capabilities.lock().await = None;
        if let Ok(mut map) = self.group_versions.lock() {
            for gv in group_versions {
                map.remove(gv);
            }
        }
    }

    fn slot(&self, gv: &str) -> Slot {
        let mut map = self
            .group_versions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(gv.to_string()).or_default().clone()
    }

    fn freshness(&self, state: &GroupVersionState) -> Duration {
        match state {
            GroupVersionState::Unavailable(_) => self.ttl.max(MISS_REFRESH),
            _ => self.ttl,
        }
    }

    async fn fetch(&self, client: &Client, gv: &str) -> Entry {
        let state = capabilities::fetch_group_version(client, gv).await;
        self.note(gv, &state);
        Entry {
            at: Instant::now(),
            state,
        }
    }

    /// Warns once when a group version becomes unavailable; says when it is back.
    fn note(&self, gv: &str, state: &GroupVersionState) {
        let mut warned = self.unavailable.lock().unwrap_or_else(|e| e.into_inner());
        match state {
            GroupVersionState::Unavailable(reason) => {
                if warned.insert(gv.to_string()) {
                    warn_unavailable(gv, reason);
                } else {
                    tracing::debug!(group_version = %gv, %reason, "API group version still unavailable");
                }
            }
            GroupVersionState::Served(_) => {
                if warned.remove(gv) {
                    tracing::info!(target: WARNING_LOG_TARGET, "API group version {gv} answers its discovery again");
                }
            }
            GroupVersionState::NotServed => {
                warned.remove(gv);
            }
        }
    }
}

/// `kind` in a group version's entry.
fn find(entry: Option<&Entry>, api_version: &str, kind: &str) -> Result<Mapping, KindError> {
    let not_served = || KindError::NotServed {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
    };
    let Some(entry) = entry else {
        return Err(not_served());
    };
    match &entry.state {
        GroupVersionState::Served(list) => list
            .resources
            .iter()
            // Subresources (`deployments/scale`) share kinds with their parents.
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .map(|r| {
                let (group, version) = match api_version.split_once('/') {
                    Some((g, v)) => (g, v),
                    None => ("", api_version),
                };
                let gvk = GroupVersionKind::gvk(group, version, kind);
                (
                    ApiResource::from_gvk_with_plural(&gvk, &r.name),
                    r.namespaced,
                )
            })
            .ok_or_else(|| KindError::MissingKind {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            }),
        GroupVersionState::NotServed => Err(not_served()),
        GroupVersionState::Unavailable(reason) => Err(KindError::Unavailable {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            apiservice: apiservice_name(api_version),
            reason: reason.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster serving `v1` (ConfigMap) and listing `broken.example.com/v1`, whose
    /// discovery answers 503 as kube-apiserver does for an unavailable APIService;
    /// counts the requests for each path.
    fn cluster() -> (Client, Arc<Mutex<HashMap<String, usize>>>) {
        let counts = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
        let seen = counts.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let path = req.uri().path().to_string();
            *seen.lock().unwrap().entry(path.clone()).or_default() += 1;
            async move {
                let json = |v: serde_json::Value| (200, "application/json", v.to_string());
                let (code, ctype, body) = match path.as_str() {
                    "/version" => json(serde_json::json!({"major": "1", "minor": "36",
                        "gitVersion": "v1.36.0", "gitCommit": "", "gitTreeState": "",
                        "buildDate": "", "goVersion": "", "compiler": "", "platform": ""})),
                    "/api" => json(serde_json::json!({"versions": ["v1"],
                        "serverAddressByClientCIDRs": []})),
                    "/apis" => json(serde_json::json!({"groups": [{"name": "broken.example.com",
                        "versions": [{"groupVersion": "broken.example.com/v1", "version": "v1"}]}]})),
                    "/api/v1" => json(serde_json::json!({"groupVersion": "v1", "resources": [
                        {"name": "configmaps", "singularName": "configmap", "namespaced": true,
                         "kind": "ConfigMap", "verbs": ["get"]}]})),
                    "/apis/broken.example.com/v1" => (
                        503,
                        "text/plain; charset=utf-8",
                        "service unavailable\n".into(),
                    ),
                    _ => (404, "text/plain", "404 page not found\n".into()),
                };
                http::Response::builder()
                    .status(code)
                    .header("content-type", ctype)
                    .body(kube::client::Body::from(body.into_bytes()))
                    .map_err(|e| kube::Error::Service(e.into()))
            }
        });
        (Client::new(svc, "default"), counts)
    }

    fn count(counts: &Mutex<HashMap<String, usize>>, path: &str) -> usize {
        counts
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn an_unavailable_group_costs_one_request_per_refresh() {
        let (client, counts) = cluster();
        let cache = DiscoveryCache::new(Duration::from_secs(60));
        let caps = cache.get(&client).await.expect("discovery");
        assert_eq!(caps.unavailable, ["broken.example.com/v1"]);
        assert!(caps.api_versions.iter().any(|v| v == "v1/ConfigMap"));
        assert!(caps
            .api_versions
            .iter()
            .any(|v| v == "broken.example.com/v1"));
        for _ in 0..3 {
            let err = cache
                .resolve(&client, "broken.example.com/v1", "Widget")
                .await
                .expect_err("unavailable");
            assert!(matches!(err, KindError::Unavailable { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains("APIService v1.broken.example.com is probably not available"),
                "{err}"
            );
            cache.get(&client).await.expect("cached");
        }
        assert_eq!(count(&counts, "/apis/broken.example.com/v1"), 1);
        let (resource, namespaced) = cache
            .resolve(&client, "v1", "ConfigMap")
            .await
            .expect("served");
        assert_eq!((resource.plural.as_str(), namespaced), ("configmaps", true));
        assert_eq!(count(&counts, "/api/v1"), 1, "resolved from the discovery");

        cache.invalidate().await;
        cache.get(&client).await.expect("discovery again");
        assert_eq!(count(&counts, "/apis/broken.example.com/v1"), 2);
    }

    #[tokio::test]
    async fn without_a_ttl_kinds_resolve_afresh_but_failures_are_remembered_briefly() {
        let (client, counts) = cluster();
        let cache = DiscoveryCache::new(Duration::ZERO);
        for _ in 0..2 {
            cache
                .resolve(&client, "v1", "ConfigMap")
                .await
                .expect("served");
            let missing = cache
                .resolve(&client, "v1", "Gizmo")
                .await
                .expect_err("no kind");
            assert!(
                matches!(missing, KindError::MissingKind { .. }),
                "{missing}"
            );
            cache
                .resolve(&client, "broken.example.com/v1", "Widget")
                .await
                .expect_err("unavailable");
        }
        // Each served lookup asks again; the failed group version is not asked again
        // within MISS_REFRESH.
        assert_eq!(count(&counts, "/api/v1"), 4);
        assert_eq!(count(&counts, "/apis/broken.example.com/v1"), 1);
        let err = cache
            .resolve(&client, "nope.example.com/v1", "Thing")
            .await
            .expect_err("not served");
        assert!(matches!(err, KindError::NotServed { .. }), "{err}");
    }
}
