//! The cluster's `.Capabilities`, discovered the way Helm's install and upgrade do
//! (`Configuration.getCapabilities` / `GetVersionSet`): the Kubernetes version from
//! `/version`, and every served `group/version` plus `group/version/Kind` from
//! discovery (`/api`, `/apis` and each group version's resource list).
//!
//! A group version whose resource list cannot be read is skipped at once with one
//! warning, as Helm does (client-go's `ErrGroupDiscoveryFailed`: "the kubernetes server
//! has an orphaned API service"): in practice an aggregated API (`APIService`) whose
//! service is down, which kube-apiserver lists in `/apis` but answers with 503. Such a
//! request is never retried (see `retry`), and every group version gets
//! [`GROUP_VERSION_TIMEOUT`] to answer, so one broken API costs one quick failed
//! request, not minutes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
use kube::Client;
use release::api_error::describe;

/// The log target of warnings meant for the person running rudder (an API group
/// skipped by discovery); the CLI prints them on stderr.
pub const WARNING_LOG_TARGET: &str = "rudder::warning";

/// How long one group version's discovery may take before it is skipped. kube-apiserver
/// gives an aggregated server 5 s to answer a discovery request before it answers 503.
pub const GROUP_VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `/version`, `/api` and `/apis` may take together, retries included.
pub const ROOT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// What templates see as `.Capabilities` when rendering against a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// The server's `gitVersion`, e.g. `v1.33.0`.
    pub kube_version: String,
    /// Served `group/version` and `group/version/Kind` entries (core: `v1`, `v1/Pod`),
    /// sorted and without duplicates.
    pub api_versions: Vec<String>,
    /// Group versions listed by the server whose kinds could not be discovered (their
    /// `group/version` entry is in `api_versions`, their kinds are not), sorted.
    pub unavailable: Vec<String>,
}

/// Why the cluster's capabilities could not be discovered.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("could not get server version from Kubernetes")]
    Version(#[source] kube::Error),
    #[error("could not get apiVersions from Kubernetes ({what})")]
    ApiVersions {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error(
        "could not get apiVersions from Kubernetes: /version, /api and /apis did not answer within {}s",
        timeout.as_secs()
    )]
    Timeout { timeout: Duration },
}

/// What discovery found for one group version.
#[derive(Debug, Clone)]
pub(crate) enum GroupVersionState {
    /// Served, with these resources (subresources included).
    Served(Arc<APIResourceList>),
    /// Not served: the server answered 404 (no such group or version).
    NotServed,
    /// Its discovery failed (503, a timeout, ...): skipped, with the reason.
    Unavailable(String),
}

/// One full discovery: the capabilities and each group version's state.
pub(crate) struct Discovered {
    pub(crate) capabilities: Capabilities,
    pub(crate) group_versions: Vec<(String, GroupVersionState)>,
}

/// Asks the API server for its version and served API versions and kinds.
///
/// Like Helm, a group version whose resource list cannot be read (typically an
/// aggregated API whose backing service is down) is skipped with a warning naming it
/// and its APIService: its `group/version` entry stays, its kinds are missing. Failing
/// to read `/version`, `/api` or `/apis` is an error.
pub async fn discover(client: &Client) -> Result<Capabilities, DiscoveryError> {
    let found = discover_all(client).await?;
    for (gv, state) in &found.group_versions {
        if let GroupVersionState::Unavailable(reason) = state {
            warn_unavailable(gv, reason);
        }
    }
    Ok(found.capabilities)
}

/// [`discover`] without the warnings, keeping each group version's state.
pub(crate) async fn discover_all(client: &Client) -> Result<Discovered, DiscoveryError> {
    let roots = async {
        let info = client
            .apiserver_version()
            .await
            .map_err(DiscoveryError::Version)?;
        let core = client.list_core_api_versions().await.map_err(|source| {
            DiscoveryError::ApiVersions {
                what: "/api",
                source,
            }
        })?;
        let groups =
            client
                .list_api_groups()
                .await
                .map_err(|source| DiscoveryError::ApiVersions {
                    what: "/apis",
                    source,
                })?;
        Ok::<_, DiscoveryError>((info, core, groups))
    };
    let (info, core, groups) = tokio::time::timeout(ROOT_DISCOVERY_TIMEOUT, roots)
        .await
        .map_err(|_| DiscoveryError::Timeout {
            timeout: ROOT_DISCOVERY_TIMEOUT,
        })??;

    let mut set = BTreeSet::new();
    let mut group_versions = Vec::new();
    for v in &core.versions {
        set.insert(v.clone());
        group_versions.push(v.clone());
    }
    for g in &groups.groups {
        for v in &g.versions {
            set.insert(v.group_version.clone());
            group_versions.push(v.group_version.clone());
        }
    }
    // One request per group version; a real cluster serves dozens, so ask concurrently.
    let mut lists = tokio::task::JoinSet::new();
    for gv in group_versions {
        let client = client.clone();
        lists.spawn(async move {
            let state = fetch_group_version(&client, &gv).await;
            (gv, state)
        });
    }
    let mut states = Vec::new();
    let mut unavailable = BTreeSet::new();
    while let Some(joined) = lists.join_next().await {
        let Ok((gv, state)) = joined else {
            // A panicked or cancelled task: its group version is simply not listed.
            tracing::warn!("an API discovery request did not finish");
            continue;
        };
        match &state {
            // Helm joins the list's groupVersion with each resource's kind, subresources
            // included (`pods/status` is `v1/Pod` again, `pods/eviction` `v1/Eviction`).
            GroupVersionState::Served(list) => {
                for r in &list.resources {
                    if !r.kind.is_empty() {
                        set.insert(format!("{}/{}", list.group_version, r.kind));
                    }
                }
            }
            GroupVersionState::Unavailable(_) => {
                unavailable.insert(gv.clone());
            }
            // Listed in /apis but gone by now (a CRD deleted meanwhile).
            GroupVersionState::NotServed => {}
        }
        states.push((gv, state));
    }
    states.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Discovered {
        capabilities: Capabilities {
            kube_version: info.git_version,
            api_versions: set.into_iter().collect(),
            unavailable: unavailable.into_iter().collect(),
        },
        group_versions: states,
    })
}

/// Reads one group version's resource list (`v1` is the core group's), within
/// [`GROUP_VERSION_TIMEOUT`] and without retries.
pub(crate) async fn fetch_group_version(client: &Client, gv: &str) -> GroupVersionState {
    let listed = async {
        if gv.contains('/') {
            client.list_api_group_resources(gv).await
        } else {
            client.list_core_api_resources(gv).await
        }
    };
    match tokio::time::timeout(GROUP_VERSION_TIMEOUT, listed).await {
        Ok(Ok(list)) => GroupVersionState::Served(Arc::new(list)),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => GroupVersionState::NotServed,
        Ok(Err(e)) => GroupVersionState::Unavailable(describe(&e)),
        Err(_) => GroupVersionState::Unavailable(format!(
            "no answer within {}s",
            GROUP_VERSION_TIMEOUT.as_secs()
        )),
    }
}

/// The name of the APIService that serves `gv`: `version.group` (`v1.` for the core
/// group), as kube-apiserver requires.
pub fn apiservice_name(gv: &str) -> String {
    match gv.split_once('/') {
        Some((group, version)) => format!("{version}.{group}"),
        None => format!("{gv}."),
    }
}

/// The one warning about a group version discovery skipped.
pub(crate) fn warn_unavailable(gv: &str, reason: &str) {
    let apiservice = apiservice_name(gv);
    tracing::warn!(
        target: WARNING_LOG_TARGET,
        "skipped API group version {gv}: its discovery failed ({reason}); templates do \
         not see its kinds in .Capabilities.APIVersions and objects of its kinds cannot be \
         applied. Its APIService {apiservice} is probably unavailable: \
         `kubectl get apiservice {apiservice}` says why"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apiservices_are_named_version_dot_group() {
        assert_eq!(
            apiservice_name("custom.metrics.k8s.io/v1beta1"),
            "v1beta1.custom.metrics.k8s.io"
        );
        assert_eq!(apiservice_name("v1"), "v1.");
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
