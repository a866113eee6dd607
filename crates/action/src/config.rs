//! [`ActionConfig`]: what every action works with, like Helm's `action.Configuration`:
//! the cluster client, the release storage (its driver chosen once), the per-release
//! locks and what discovery found (shared between actions when the caller keeps a
//! cache with a TTL).
//!
//! One `ActionConfig` serves every namespace: storage and locks are per namespace and
//! built from it on demand, so an operator keeps one per watched kind.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use release::cache::RecordCaches;
use release::driver::{RecordStamp, WriteMeta};
use release::lock::RecordLocks;
use release::{Release, Storage, StorageDriver};

use chart::render::Rendered;

use crate::error::Result;
use crate::kube::discovery::DiscoveryCache;
use crate::kube::KubeClient;
use crate::lock::{self, Backend, Held, LockCell, ReleaseLock};
use crate::options::ActionOptions;
use crate::render::{self, Input, Revision};

/// The configuration every action verb is built from.
#[derive(Clone)]
pub struct ActionConfig {
    client: Client,
    driver: StorageDriver,
    discovery: Arc<DiscoveryCache>,
    /// Where record metadata is read from instead of the API server, when the
    /// caller keeps watches of them (the operator); see `release::cache`.
    records: RecordCaches,
}

/// What the records of a locked action carry: the caller's owner reference and the
/// action's lock.
struct ActionStamp {
    owner: Option<OwnerReference>,
    lock: Arc<LockCell>,
}

impl RecordStamp for ActionStamp {
    fn meta(&self, rel: &Release) -> WriteMeta {
        let lock = self.lock.annotation(rel.version);
        WriteMeta {
            owner_references: self.owner.iter().cloned().collect(),
            // Only the newest record holds the lock, so only there does another
            // holder's live lock mean ours was lost; older records may keep a stale
            // lock of an earlier action (the one that wrote a newer revision).
            holder: self
                .lock
                .on_newest(rel.version)
                .then(|| self.lock.holder().to_string()),
            annotations: lock.into_iter().collect(),
        }
    }

    fn written(&self, rel: &Release) {
        self.lock.written(rel.version);
    }
}

impl std::fmt::Debug for ActionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionConfig")
            .field("driver", &self.driver.name())
            .field("discovery_ttl", &self.discovery.ttl())
            .finish_non_exhaustive()
    }
}

impl ActionConfig {
    /// Helm's defaults: records as Secrets (each release's lock on its newest record),
    /// discovery afresh for every render (as `helm` does; a group version whose
    /// discovery failed is not asked again for a few seconds).
    pub fn new(client: Client) -> ActionConfig {
        ActionConfig {
            client,
            driver: StorageDriver::Secret,
            discovery: Arc::new(DiscoveryCache::new(Duration::ZERO)),
            records: RecordCaches::default(),
        }
    }

    /// Reads the labels, locks and versions of release records from `caches` (kept
    /// by the caller's watches), which wait for this configuration's own writes;
    /// record contents are still read from the API server, one GET per record an
    /// action decodes.
    pub fn with_record_caches(mut self, caches: RecordCaches) -> ActionConfig {
        self.records = caches;
        self
    }

    /// Keeps release records with `driver` (see [`StorageDriver::from_helm_driver`]).
    pub fn with_driver(mut self, driver: StorageDriver) -> ActionConfig {
        self.driver = driver;
        self
    }

    /// Shares `cache` between actions, so a controller's many releases do not each
    /// discover the cluster again.
    pub fn with_discovery(mut self, cache: Arc<DiscoveryCache>) -> ActionConfig {
        self.discovery = cache;
        self
    }

    /// What discovery found, as the actions use it.
    pub fn discovery(&self) -> &Arc<DiscoveryCache> {
        &self.discovery
    }

    /// The cluster client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The storage driver records are kept with.
    pub fn driver(&self) -> &StorageDriver {
        &self.driver
    }

    /// The release storage of `namespace` (Helm's default history limit).
    pub fn storage(&self, namespace: &str) -> Storage {
        self.driver
            .cached_storage(&self.client, namespace, &self.records)
    }

    /// The storage a locked action writes the release `opts` names with: pruned to its
    /// `max_history`, every record carrying the lock `held` and `opts.record_owner`.
    pub(crate) fn release_storage(&self, opts: &ActionOptions, held: &Held) -> Storage {
        self.locked_storage(&opts.namespace, opts.record_owner.clone(), held)
            .with_max_history(opts.max_history)
    }

    /// The storage of `namespace` for an action holding `held`.
    pub(crate) fn locked_storage(
        &self,
        namespace: &str,
        owner: Option<OwnerReference>,
        held: &Held,
    ) -> Storage {
        let stamp = ActionStamp {
            owner,
            lock: held.cell(),
        };
        self.storage(namespace).with_stamp(Arc::new(stamp))
    }

    /// Deletes old records of release `name` in `namespace` until at most `max` remain
    /// (what [`release::storage::prunable`] allows: superseded, failed and abandoned
    /// pending ones, never the deployed, the newest or the last failed one), holding
    /// the release's lock so no action reads a revision while it goes. Returns the
    /// deleted versions; [`crate::Error::Locked`] while another action holds it.
    pub async fn prune_history(&self, namespace: &str, name: &str, max: usize) -> Result<Vec<i64>> {
        self.with_lock(namespace, name, |held| async move {
            self.locked_storage(namespace, None, &held)
                .remove_least_recent(name, max)
                .await
                .map_err(|e| crate::Error::storage(name, e))
        })
        .await
    }

    /// A cluster client for one action: its own resource mappings (kinds planned from
    /// the chart's CRDs stay with the action) over the shared discovery cache.
    pub(crate) fn kube(&self) -> KubeClient {
        KubeClient::with_discovery(self.client.clone(), self.discovery.clone())
    }

    /// Renders as Helm's install and upgrade do: against this cluster. Also returns
    /// the digest of what the render's `lookup` calls returned (`None`: none made).
    pub(crate) async fn render_in_cluster(
        &self,
        input: Input,
        opts: &ActionOptions,
        revision: Revision,
    ) -> Result<(Rendered, Option<String>)> {
        let discovery = &self.discovery;
        render::render_in_cluster(&self.client, discovery, input, opts, revision).await
    }

    fn lock_backend(&self, namespace: &str) -> Backend {
        Arc::new(RecordLocks::new(self.storage(namespace).driver().clone()))
    }

    /// Takes the lock of `release` in `namespace`, or fails with
    /// [`crate::Error::Locked`].
    pub(crate) async fn lock(&self, namespace: &str, release: &str) -> Result<ReleaseLock> {
        lock::acquire(self.lock_backend(namespace), release).await
    }

    /// Runs `action` holding the release's lock and gives the lock back afterwards,
    /// whatever the outcome.
    pub(crate) async fn with_lock<T, F, Fut>(
        &self,
        namespace: &str,
        release: &str,
        action: F,
    ) -> Result<T>
    where
        F: FnOnce(Held) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let lock = self.lock(namespace, release).await?;
        let result = action(lock.held()).await;
        lock.release().await;
        result
    }
}
