//! The cluster's `.Capabilities`, discovered the way Helm's install and upgrade do
//! (`Configuration.getCapabilities` / `GetVersionSet`): the Kubernetes version from
//! `/version`, and every served `group/version` plus `group/version/Kind` from
//! discovery (`/api`, `/apis` and each group version's resource list).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use kube::discovery::ApiResource;
use kube::Client;
use release::api_error::describe;

/// `(apiVersion, kind)` → the API resource and whether it is namespaced.
pub(crate) type Mapping = (ApiResource, bool);
type MappingKey = (String, String);

/// What templates see as `.Capabilities` when rendering against a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The server's `gitVersion`, e.g. `v1.33.0`.
    pub kube_version: String,
    /// Served `group/version` and `group/version/Kind` entries (core: `v1`, `v1/Pod`),
    /// sorted and without duplicates.
    pub api_versions: Vec<String>,
}

/// Why the cluster's capabilities could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("could not get server version from Kubernetes: {}", describe(.0))]
    Version(#[source] kube::Error),
    #[error(
        "could not get apiVersions from Kubernetes ({what}): {}",
        describe(source)
    )]
    ApiVersions {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// Asks the API server for its version and served API versions and kinds.
///
/// Like Helm, a group version whose resource list cannot be read (typically an
/// aggregated API whose backing service is down) is logged and skipped: its
/// `group/version` entry stays, its kinds are missing. Failing to read `/version`,
/// `/api` or `/apis` is an error.
pub async fn discover(client: &Client) -> Result<Capabilities, DiscoveryError> {
    let info = client
        .apiserver_version()
        .await
        .map_err(DiscoveryError::Version)?;
    let core =
        client
            .list_core_api_versions()
            .await
            .map_err(|source| DiscoveryError::ApiVersions {
                what: "/api",
                source,
            })?;
    let groups = client
        .list_api_groups()
        .await
        .map_err(|source| DiscoveryError::ApiVersions {
            what: "/apis",
            source,
        })?;

    let mut set = BTreeSet::new();
    let mut group_versions = Vec::new();
    for v in &core.versions {
        set.insert(v.clone());
        group_versions.push((true, v.clone()));
    }
    for g in &groups.groups {
        for v in &g.versions {
            set.insert(v.group_version.clone());
            group_versions.push((false, v.group_version.clone()));
        }
    }
    // One request per group version; a real cluster serves dozens, so ask concurrently.
    let mut lists = tokio::task::JoinSet::new();
    for (is_core, gv) in group_versions {
        let client = client.clone();
        lists.spawn(async move {
            let listed = if is_core {
                client.list_core_api_resources(&gv).await
            } else {
                client.list_api_group_resources(&gv).await
            };
            (gv, listed)
        });
    }
    while let Some(joined) = lists.join_next().await {
        let Ok((gv, listed)) = joined else {
            // A panicked or cancelled task: treat like a group that failed discovery.
            tracing::warn!("an API discovery request did not finish");
            continue;
        };
        match listed {
            // Helm joins the list's groupVersion with each resource's kind, subresources
            // included (`pods/status` is `v1/Pod` again, `pods/eviction` `v1/Eviction`).
            Ok(list) => {
                for r in &list.resources {
                    if !r.kind.is_empty() {
                        set.insert(format!("{}/{}", list.group_version, r.kind));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(group_version = %gv, error = %e, "cannot discover the kinds of an API group version (orphaned API service?); templates will not see them in .Capabilities.APIVersions");
            }
        }
    }
    Ok(Capabilities {
        kube_version: info.git_version,
        api_versions: set.into_iter().collect(),
    })
}

/// Discovery results reused for a while, so that a controller upgrading many
/// releases does not send one request per served group version for each of
/// them (the Go helm-operator keeps a memory-cached discovery client for the
/// same reason). Release upgrades are decided by their inputs, not by the
/// cluster's APIs, so an API that appears is seen by the next action after
/// the cache expires.
///
/// It also remembers how each object kind maps to an API resource, which
/// every action otherwise looks up again (one request per group version).
#[derive(Debug)]
pub struct DiscoveryCache {
    ttl: Duration,
    slot: tokio::sync::Mutex<Option<(Instant, Capabilities)>>,
    mappings: std::sync::Mutex<HashMap<MappingKey, (Instant, Mapping)>>,
}

impl DiscoveryCache {
    pub fn new(ttl: Duration) -> Self {
        DiscoveryCache {
            ttl,
            slot: tokio::sync::Mutex::new(None),
            mappings: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// A remembered resource mapping younger than the TTL.
    pub(crate) fn mapping(&self, key: &MappingKey) -> Option<Mapping> {
        let mappings = self.mappings.lock().ok()?;
        let (at, hit) = mappings.get(key)?;
        (at.elapsed() < self.ttl).then(|| hit.clone())
    }

    pub(crate) fn remember_mapping(&self, key: MappingKey, hit: Mapping) {
        if let Ok(mut m) = self.mappings.lock() {
            m.insert(key, (Instant::now(), hit));
        }
    }

    /// The cluster's capabilities: remembered ones while younger than the
    /// TTL, else discovered afresh. Concurrent callers share one discovery.
    pub async fn get(&self, client: &Client) -> Result<Capabilities, DiscoveryError> {
        let mut slot = self.slot.lock().await;
        if let Some((at, caps)) = slot.as_ref() {
            if at.elapsed() < self.ttl {
                return Ok(caps.clone());
            }
        }
        let caps = discover(client).await?;
        *slot = Some((Instant::now(), caps.clone()));
        Ok(caps)
    }

    /// Forgets what was discovered (after a CRD was installed, say).
    pub async fn invalidate(&self) {
        *self.slot.lock().await = None;
        if let Ok(mut m) = self.mappings.lock() {
            m.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn mappings_expire_with_the_ttl_and_on_invalidate() {
        let gvk = kube::api::GroupVersionKind::gvk("", "v1", "ConfigMap");
        let hit = (ApiResource::from_gvk(&gvk), true);
        let key = ("v1".to_string(), "ConfigMap".to_string());

        let expired = DiscoveryCache::new(Duration::ZERO);
        expired.remember_mapping(key.clone(), hit.clone());
        assert!(expired.mapping(&key).is_none());

        let kept = DiscoveryCache::new(Duration::from_secs(3600));
        kept.remember_mapping(key.clone(), hit.clone());
        assert_eq!(
            kept.mapping(&key).map(|m| m.0.plural),
            Some("configmaps".into())
        );
        kept.invalidate().await;
        assert!(kept.mapping(&key).is_none());
    }

    #[test]
    fn discovery_errors_name_the_endpoint() {
        let e = DiscoveryError::ApiVersions {
            what: "/apis",
            source: kube::Error::LinesCodecMaxLineLengthExceeded,
        };
        assert!(e.to_string().contains("(/apis)"), "{e}");
    }
}
