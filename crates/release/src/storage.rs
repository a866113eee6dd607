//! Release history on top of a [`Driver`], like Helm's `pkg/storage`: get a revision,
//! the deployed one, the latest one, the history, and prune old revisions on create.
//!
//! Finding the deployed or latest revision reads labels only (`name`, `owner=helm`,
//! `status=deployed`, `version`) and decodes just the one record it returns.
//!
//! [`StorageDriver`] is the one place a driver is chosen and a [`Storage`] built over
//! it (Helm's `Configuration.Init`), so the CLI, the actions and the operator cannot
//! disagree about where a release's records are.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use kube::Client;

use crate::cache::RecordCaches;
use crate::driver::{
    make_key, selector, ConfigMapDriver, Driver, Filter, MemoryDriver, RecordMeta, RecordStamp,
    SecretDriver, WriteMeta, OWNER_HELM,
};
use crate::error::{Error, Result};
use crate::lock::LockState;
use crate::record::{Release, Status};

/// Where release records are kept: Helm's `HELM_DRIVER` choices.
#[derive(Debug, Clone, Default)]
pub enum StorageDriver {
    /// Secrets in the release namespace (Helm's default).
    #[default]
    Secret,
    /// ConfigMaps in the release namespace.
    ConfigMap,
    /// Process memory, shared by every namespace (Helm's `memory` driver): for tests
    /// and dry runs; nothing survives the process.
    Memory(Arc<MemoryDriver>),
}

impl StorageDriver {
    /// The driver `HELM_DRIVER` names, as Helm reads it: empty, `secret` or `secrets`
    /// for Secrets, `configmap(s)`, or `memory`. Case does not matter.
    pub fn from_helm_driver(value: &str) -> Result<StorageDriver> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "secret" | "secrets" => Ok(StorageDriver::Secret),
            "configmap" | "configmaps" => Ok(StorageDriver::ConfigMap),
            "memory" => Ok(StorageDriver::Memory(Arc::new(MemoryDriver::new()))),
            _ => Err(Error::UnknownDriver(value.to_string())),
        }
    }

    /// The driver the `HELM_DRIVER` environment variable names (Secrets when unset).
    pub fn from_env() -> Result<StorageDriver> {
        StorageDriver::from_helm_driver(&std::env::var("HELM_DRIVER").unwrap_or_default())
    }

    /// Helm's name for the driver (`Secret`, `ConfigMap`, `Memory`).
    pub fn name(&self) -> &'static str {
        match self {
            StorageDriver::Secret => "Secret",
            StorageDriver::ConfigMap => "ConfigMap",
            StorageDriver::Memory(_) => "Memory",
        }
    }

    /// The release storage of `namespace` (Helm's default history limit).
    pub fn storage(&self, client: &Client, namespace: &str) -> Storage {
        self.cached_storage(client, namespace, &RecordCaches::default())
    }

    /// The release storage of `namespace`, reading record metadata from the cache
    /// of this driver's kind in `caches` when there is one (see [`crate::cache`]).
    pub fn cached_storage(
        &self,
        client: &Client,
        namespace: &str,
        caches: &RecordCaches,
    ) -> Storage {
        let client = client.clone();
        let driver: Arc<dyn Driver> = match (self, caches) {
            (
                StorageDriver::Secret,
                RecordCaches {
                    secrets: Some(c), ..
                },
            ) => Arc::new(SecretDriver::cached(client, namespace, c.clone())),
            (StorageDriver::Secret, _) => Arc::new(SecretDriver::for_namespace(client, namespace)),
            (
                StorageDriver::ConfigMap,
                RecordCaches {
                    configmaps: Some(c),
                    ..
                },
            ) => Arc::new(ConfigMapDriver::cached(client, namespace, c.clone())),
            (StorageDriver::ConfigMap, _) => {
                Arc::new(ConfigMapDriver::for_namespace(client, namespace))
            }
            (StorageDriver::Memory(m), _) => m.clone(),
        };
        Storage::new(driver)
    }

    /// The namespaces holding at least one release record, sorted (`helm list -A`).
    /// Reads object metadata only. The memory driver is not namespaced, so it looks
    /// at Secrets, as Helm's `list -A` does for the drivers it cannot list itself.
    pub async fn namespaces(&self, client: &Client) -> Result<Vec<String>> {
        let lp = ListParams::default().labels(&format!("owner={OWNER_HELM}"));
        let found = match self {
            StorageDriver::ConfigMap => Api::<ConfigMap>::all(client.clone())
                .list_metadata(&lp)
                .await
                .map_err(|e| Error::api("listing release ConfigMaps", e))?
                .items
                .into_iter()
                .filter_map(|m| m.metadata.namespace)
                .collect::<BTreeSet<_>>(),
            StorageDriver::Secret | StorageDriver::Memory(_) => Api::<Secret>::all(client.clone())
                .list_metadata(&lp)
                .await
                .map_err(|e| Error::api("listing release Secrets", e))?
                .items
                .into_iter()
                .filter_map(|m| m.metadata.namespace)
                .collect::<BTreeSet<_>>(),
        };
        Ok(found.into_iter().collect())
    }
}

/// Helm's default `--history-max`.
pub const DEFAULT_MAX_HISTORY: usize = 10;

/// Release storage over a driver.
#[derive(Clone)]
pub struct Storage {
    driver: Arc<dyn Driver>,
    /// Revisions kept per release, counting the newest; 0 means unlimited. Only what
    /// [`prunable`] names is deleted: never the deployed revision, the newest, or one
    /// under a live lock.
    pub max_history: usize,
    /// Owner references, annotations and the lock holder of every record written.
    stamp: Option<Arc<dyn RecordStamp>>,
}

impl Storage {
    /// Storage with Helm's default history limit of 10.
    pub fn new(driver: Arc<dyn Driver>) -> Storage {
        Storage {
            driver,
            max_history: DEFAULT_MAX_HISTORY,
            stamp: None,
        }
    }

    /// Writes every record with the metadata `stamp` chooses for it.
    pub fn with_stamp(mut self, stamp: Arc<dyn RecordStamp>) -> Storage {
        self.stamp = Some(stamp);
        self
    }

    fn write_meta(&self, rel: &Release) -> WriteMeta {
        self.stamp.as_ref().map(|s| s.meta(rel)).unwrap_or_default()
    }

    fn written(&self, rel: &Release) {
        if let Some(s) = &self.stamp {
            s.written(rel);
        }
    }

    /// Sets the history limit (0 = unlimited).
    pub fn with_max_history(mut self, max_history: usize) -> Storage {
        self.max_history = max_history;
        self
    }

    /// The underlying driver.
    pub fn driver(&self) -> &Arc<dyn Driver> {
        &self.driver
    }

    /// One revision.
    pub async fn get(&self, name: &str, version: i64) -> Result<Release> {
        self.driver.get(&make_key(name, version)).await
    }

    /// Stores a new revision, first pruning history to make room for it.
    pub async fn create(&self, rel: &Release) -> Result<()> {
        if self.max_history > 0 {
            self.remove_least_recent(&rel.name, self.max_history - 1)
                .await?;
        }
        let meta = self.write_meta(rel);
        self.driver
            .create_with(&make_key(&rel.name, rel.version), rel, &meta)
            .await?;
        self.written(rel);
        Ok(())
    }

    /// Rewrites an existing revision (e.g. to change its status).
    pub async fn update(&self, rel: &Release) -> Result<()> {
        let meta = self.write_meta(rel);
        self.driver
            .update_with(&make_key(&rel.name, rel.version), rel, &meta)
            .await?;
        self.written(rel);
        Ok(())
    }

    /// Deletes one revision and returns it.
    pub async fn delete(&self, name: &str, version: i64) -> Result<Release> {
        self.driver.delete(&make_key(name, version)).await
    }

    /// Every release record in the namespace.
    pub async fn list_releases(&self) -> Result<Vec<Release>> {
        self.driver.list(&|_| true).await
    }

    /// Records accepted by `filter`.
    pub async fn list(&self, filter: Filter<'_>) -> Result<Vec<Release>> {
        self.driver.list(filter).await
    }

    /// Every record with status `deployed`.
    pub async fn list_deployed(&self) -> Result<Vec<Release>> {
        self.driver.list(&|r| r.status() == Status::Deployed).await
    }

    /// Every record with status `uninstalled`.
    pub async fn list_uninstalled(&self) -> Result<Vec<Release>> {
        self.driver
            .list(&|r| r.status() == Status::Uninstalled)
            .await
    }

    /// Label metadata of every revision of `name`, oldest first, without decoding.
    pub async fn history_meta(&self, name: &str) -> Result<Vec<RecordMeta>> {
        let mut metas = self
            .driver
            .query_meta(&selector([("name", name), ("owner", OWNER_HELM)]))
            .await?;
        metas.sort_by_key(|m| m.version);
        Ok(metas)
    }

    /// Every revision of `name`, decoded, oldest first; empty when there is none
    /// (where Helm returns "not found").
    pub async fn history(&self, name: &str) -> Result<Vec<Release>> {
        match self
            .driver
            .query(&selector([("name", name), ("owner", OWNER_HELM)]))
            .await
        {
            Ok(mut rels) => {
                rels.sort_by_key(|r| r.version);
                Ok(rels)
            }
            Err(Error::NotFound(_)) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Metadata of the newest revision labelled deployed. Several can be labelled so
    /// after concurrent writers; like Helm, the newest wins.
    pub async fn deployed_meta(&self, name: &str) -> Result<Option<RecordMeta>> {
        let metas = self
            .driver
            .query_meta(&selector([
                ("name", name),
                ("owner", OWNER_HELM),
                ("status", Status::Deployed.as_str()),
            ]))
            .await?;
        Ok(metas.into_iter().max_by_key(|m| m.version))
    }

    /// The deployed revision, decoding only that record.
    pub async fn deployed(&self, name: &str) -> Result<Option<Release>> {
        match self.deployed_meta(name).await? {
            Some(meta) => self.driver.get(&meta.key).await.map(Some),
            None => Ok(None),
        }
    }

    /// The newest revision of any status, decoding only that record.
    pub async fn last(&self, name: &str) -> Result<Option<Release>> {
        let newest = self.history_meta(name).await?.into_iter().next_back();
        match newest {
            Some(meta) => self.driver.get(&meta.key).await.map(Some),
            None => Ok(None),
        }
    }

    /// The revision number the next action should use (1 for a new release).
    pub async fn next_version(&self, name: &str) -> Result<i64> {
        Ok(self
            .history_meta(name)
            .await?
            .last()
            .map_or(1, |m| m.version + 1))
    }

    /// Deletes the oldest revisions [`prunable`] names until at most `max` remain:
    /// superseded and failed ones, and `pending-*` ones no live lock holds; never the
    /// deployed one, the newest (it carries the release's lock) or the last failed
    /// one. Uses labels only and never decodes, so damaged revisions are pruned as
    /// well. Returns the deleted versions.
    pub async fn remove_least_recent(&self, name: &str, max: usize) -> Result<Vec<i64>> {
        let history = self.history_meta(name).await?;
        let doomed = prunable(&history, max, jiff::Timestamp::now());
        // Delete as many as possible; the next call retries whatever failed.
        let mut first_err = None;
        let mut deleted = Vec::new();
        for version in doomed {
            // Delete without decoding: a damaged old revision must not block pruning.
            match self.driver.remove(&make_key(name, version)).await {
                Ok(()) | Err(Error::NotFound(_)) => deleted.push(version),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }
}

/// The versions to delete, oldest first, so that at most `max` of `history` (one
/// release's records, oldest first) remain, judged by the labels and the lock at
/// `now`. Only superseded and failed records go, and `pending-*` ones that no live
/// lock holds (what a crashed writer left behind). Never deleted: a deployed record;
/// a record with a live lock on it; the newest record, which holds the release's lock
/// and numbers the next revision; the newest failed record, the last failure a
/// caller may still be backing off from (the operator counts its retries on it); and
/// records of other statuses (`uninstalled`, `unknown`), which are not ours to prune
/// silently. So more than `max` records remain when that many are kept.
pub fn prunable(history: &[RecordMeta], max: usize, now: jiff::Timestamp) -> Vec<i64> {
    let Some(excess) = history.len().checked_sub(max).filter(|e| *e > 0) else {
        return Vec::new();
    };
    let newest = history.iter().map(|m| m.version).max();
    let last_failure = history
        .iter()
        .filter(|m| m.status == Status::Failed)
        .map(|m| m.version)
        .max();
    history
        .iter()
        .filter(|m| Some(m.version) != newest && Some(m.version) != last_failure)
        .filter(|m| {
            let done = matches!(m.status, Status::Superseded | Status::Failed);
            let locked = LockState::of(&m.annotations).is_some_and(|l| l.is_live(now));
            (done || m.status.is_pending()) && !locked
        })
        .map(|m| m.version)
        .take(excess)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::LOCK_ANNOTATION;

    fn meta(version: i64, status: Status) -> RecordMeta {
        RecordMeta {
            key: make_key("app", version),
            name: "app".into(),
            version,
            status,
            ..RecordMeta::default()
        }
    }

    fn locked(mut m: RecordMeta, renewed: jiff::Timestamp) -> RecordMeta {
        let lock = LockState {
            holder: "other".into(),
            acquired: renewed,
            renewed,
            duration_seconds: 60,
        };
        m.annotations.insert(LOCK_ANNOTATION.into(), lock.encode());
        m
    }

    #[test]
    fn prunes_superseded_and_failed_oldest_first() {
        let now = jiff::Timestamp::now();
        let history = [
            meta(1, Status::Superseded),
            meta(2, Status::Failed),
            meta(3, Status::Superseded),
            meta(4, Status::Failed),
            meta(5, Status::Superseded),
            meta(6, Status::Deployed),
        ];
        assert_eq!(prunable(&history, 4, now), [1, 2]);
        // The last failure (4) stays, however low the limit.
        assert_eq!(prunable(&history, 1, now), [1, 2, 3, 5]);
        assert!(prunable(&history, 6, now).is_empty());
        assert!(prunable(&history, 10, now).is_empty());
    }

    #[test]
    fn never_prunes_the_deployed_the_newest_or_a_live_lock() {
        let now = jiff::Timestamp::now();
        let long_ago = now - jiff::SignedDuration::from_hours(1);
        let history = [
            meta(1, Status::Deployed),
            locked(meta(2, Status::PendingUpgrade), now),
            locked(meta(3, Status::PendingUpgrade), long_ago),
            meta(4, Status::Uninstalled),
            meta(5, Status::Unknown),
            meta(6, Status::Failed),
        ];
        // The deployed 1, the pending 2 under a live lock, the uninstalled 4, the
        // unreadable 5 and the newest 6 (also the last failure) stay, however low the
        // limit; the pending 3 whose lock lapsed is what a crashed writer left.
        assert_eq!(prunable(&history, 1, now), [3]);
        assert_eq!(prunable(&history, 0, now), [3]);
    }

    #[test]
    fn helm_driver_names() {
        for (value, name) in [
            ("", "Secret"),
            ("secret", "Secret"),
            ("Secrets", "Secret"),
            ("configmap", "ConfigMap"),
            (" ConfigMaps ", "ConfigMap"),
            ("memory", "Memory"),
        ] {
            let driver = StorageDriver::from_helm_driver(value).expect(value);
            assert_eq!(driver.name(), name, "{value:?}");
        }
        let err = StorageDriver::from_helm_driver("sql").unwrap_err();
        assert!(err.to_string().contains("HELM_DRIVER"), "{err}");
    }
}
