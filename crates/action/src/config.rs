//! [`ActionConfig`]: what every action works with, like Helm's `action.Configuration`:
//! the cluster client, the release storage (its driver chosen once), the per-release
//! locks and, when the caller keeps one, a discovery cache shared between actions.
//!
//! One `ActionConfig` serves every namespace: storage and locks are per namespace and
//! built from it on demand, so an operator keeps one per watched kind.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use kube::Client;
use release::lock::{KubeLocks, LockBackend, MemoryLocks};
use release::{Storage, StorageDriver};

use chart::loader::Chart;
use chart::render::Rendered;
use chart::values::Values;

use crate::error::Result;
use crate::kube::capabilities::DiscoveryCache;
use crate::kube::KubeClient;
use crate::lock::{self, Backend, Held, ReleaseLock};
use crate::options::ActionOptions;
use crate::render::{self, Revision};

/// Where the per-release locks live.
#[derive(Clone)]
enum Locks {
    /// A `coordination.k8s.io/v1` Lease per release in its namespace.
    Leases,
    /// Process memory, one table per namespace (tests, single-process tools).
    Memory(Arc<Mutex<HashMap<String, Arc<MemoryLocks>>>>),
}

/// The configuration every action verb is built from.
#[derive(Clone)]
pub struct ActionConfig {
    client: Client,
    driver: StorageDriver,
    locks: Locks,
    discovery: Option<Arc<DiscoveryCache>>,
}

impl std::fmt::Debug for ActionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionConfig")
            .field("driver", &self.driver.name())
            .field("shared_discovery", &self.discovery.is_some())
            .finish_non_exhaustive()
    }
}

impl ActionConfig {
    /// Helm's defaults: records as Secrets, locks as Leases, discovery afresh for every
    /// action (as `helm` does).
    pub fn new(client: Client) -> ActionConfig {
        ActionConfig {
            client,
            driver: StorageDriver::Secret,
            locks: Locks::Leases,
            discovery: None,
        }
    }

    /// Keeps release records with `driver` (see [`StorageDriver::from_helm_driver`]).
    pub fn with_driver(mut self, driver: StorageDriver) -> ActionConfig {
        self.driver = driver;
        self
    }

    /// Shares `cache` between actions, so a controller's many releases do not each
    /// discover the cluster again.
    pub fn with_discovery(mut self, cache: Arc<DiscoveryCache>) -> ActionConfig {
        self.discovery = Some(cache);
        self
    }

    /// Keeps the per-release locks in process memory instead of Leases (tests, or one
    /// process that is the only writer).
    pub fn with_memory_locks(mut self) -> ActionConfig {
        self.locks = Locks::Memory(Arc::default());
        self
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
        self.driver.storage(&self.client, namespace)
    }

    /// The storage of the release `opts` names, pruned to its `max_history`.
    pub(crate) fn release_storage(&self, opts: &ActionOptions) -> Storage {
        self.storage(&opts.namespace)
            .with_max_history(opts.max_history)
    }

    /// A cluster client for one action: its own resource mappings (kinds planned from
    /// the chart's CRDs stay with the action) over the shared discovery cache.
    pub(crate) fn kube(&self) -> KubeClient {
        KubeClient::with_discovery(self.client.clone(), self.discovery.clone())
    }

    /// Renders as Helm's install and upgrade do: against this cluster.
    pub(crate) async fn render_in_cluster(
        &self,
        chart: Chart,
        values: Values,
        opts: &ActionOptions,
        revision: Revision,
    ) -> Result<Rendered> {
        let discovery = self.discovery.as_deref();
        render::render_in_cluster(&self.client, discovery, chart, values, opts, revision).await
    }

    fn lock_backend(&self, namespace: &str) -> Backend {
        match &self.locks {
            Locks::Leases => Arc::new(KubeLocks::new(self.client.clone(), namespace)),
            Locks::Memory(tables) => {
                let mut tables = tables.lock().unwrap_or_else(|e| e.into_inner());
                let table = tables.entry(namespace.to_string()).or_default().clone();
                table as Arc<dyn LockBackend>
            }
        }
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
