//! The seam between the reconciler and the release actions, like helm-operator-plugins'
//! `ActionInterface`: everything the reconciler asks of a release goes through
//! [`ActionClient`], so its decisions can be tested against a fake, without an API
//! server. [`Actions`] is the real one, over one `action::ActionConfig` per watch.

use std::collections::BTreeMap;
use std::sync::Arc;

use action::{
    ActionConfig, ActionOptions, DiscoveryCache, Install, Installed, ObjectRef, Recover, Repair,
    RepairReport, Rollback, Uninstall, UninstallOptions, Upgrade, UpgradeDiff,
};
use async_trait::async_trait;
use chart::loader::Chart;
use chart::values::Values;
use kube::Client;
use release::record::Release;
use release::RecordMeta;

/// The release actions one reconcile may take. The release is the one `opts` names.
#[async_trait]
pub trait ActionClient: Send + Sync {
    /// What the records' labels say about every revision, oldest first (no decoding).
    async fn history(&self, namespace: &str, name: &str)
        -> Result<Vec<RecordMeta>, release::Error>;

    /// Installs, or records a release over live objects of one whose records were lost.
    async fn install(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<Installed>;

    async fn upgrade(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<Release>;

    /// What an upgrade would change, writing nothing.
    async fn diff_upgrade(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<UpgradeDiff>;

    async fn rollback(&self, to: i64, opts: ActionOptions) -> action::Result<Release>;

    /// Re-applies the deployed revision, first adding `labels` to its record when it
    /// lacks them; returns the record with what was repaired.
    async fn repair(
        &self,
        opts: ActionOptions,
        labels: BTreeMap<String, String>,
    ) -> action::Result<(Release, RepairReport)>;

    /// Marks a crashed action's leftover failed; `None` when there is none or a live
    /// action holds the release.
    async fn recover(&self, opts: ActionOptions) -> action::Result<Option<Release>>;

    async fn uninstall(&self, opts: UninstallOptions) -> action::Result<Release>;

    /// The chart name of the release's deployed revision (else its newest), decoding
    /// that one record; `None` when it has no chart metadata or no records.
    async fn release_chart(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, release::Error>;

    /// Deletes old records of the release until at most `max` remain (superseded,
    /// failed and abandoned pending ones, oldest first; never the deployed, the newest
    /// or the last failed one), holding the release's lock; returns the deleted
    /// versions.
    async fn prune(&self, namespace: &str, name: &str, max: usize) -> action::Result<Vec<i64>>;

    /// After an uninstall: deletes again what of `manifest` still exists and returns
    /// it (empty once everything is gone); see `action::Uninstall::leftovers`.
    async fn leftovers(
        &self,
        opts: UninstallOptions,
        manifest: &str,
    ) -> action::Result<Vec<ObjectRef>>;
}

/// The real actions: the `action` verbs over one configuration (Secret records, each
/// release's lock on its newest record, and the watch's discovery cache).
pub struct Actions {
    cfg: ActionConfig,
}

impl Actions {
    /// Actions through `client`, sharing `discovery` between this watch's releases.
    pub fn new(client: Client, discovery: Arc<DiscoveryCache>) -> Actions {
        Actions::with_config(ActionConfig::new(client).with_discovery(discovery))
    }

    /// Actions with a configuration of the caller's (another storage driver, memory
    /// locks).
    pub fn with_config(cfg: ActionConfig) -> Actions {
        Actions { cfg }
    }
}

#[async_trait]
impl ActionClient for Actions {
    async fn history(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<RecordMeta>, release::Error> {
        self.cfg.storage(namespace).history_meta(name).await
    }

    async fn install(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<Installed> {
        Install::new(&self.cfg, opts)
            .run_or_adopt(chart, values)
            .await
    }

    async fn upgrade(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<Release> {
        Upgrade::new(&self.cfg, opts).run(chart, values).await
    }

    async fn diff_upgrade(
        &self,
        chart: &Arc<Chart>,
        values: Values,
        opts: ActionOptions,
    ) -> action::Result<UpgradeDiff> {
        Upgrade::new(&self.cfg, opts).diff(chart, values).await
    }

    async fn rollback(&self, to: i64, opts: ActionOptions) -> action::Result<Release> {
        Rollback::new(&self.cfg, opts).run(to).await
    }

    async fn repair(
        &self,
        opts: ActionOptions,
        labels: BTreeMap<String, String>,
    ) -> action::Result<(Release, RepairReport)> {
        Repair::new(&self.cfg, opts)
            .ensure_labels(labels)
            .run()
            .await
    }

    async fn recover(&self, opts: ActionOptions) -> action::Result<Option<Release>> {
        Recover::new(&self.cfg, opts).run().await
    }

    async fn uninstall(&self, opts: UninstallOptions) -> action::Result<Release> {
        Uninstall::new(&self.cfg, opts).run().await
    }

    async fn release_chart(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<String>, release::Error> {
        let storage = self.cfg.storage(namespace);
        let rel = match storage.deployed(name).await? {
            Some(rel) => Some(rel),
            None => storage.last(name).await?,
        };
        Ok(rel
            .and_then(|r| r.chart)
            .and_then(|c| c.metadata)
            .map(|m| m.name)
            .filter(|n| !n.is_empty()))
    }

    async fn prune(&self, namespace: &str, name: &str, max: usize) -> action::Result<Vec<i64>> {
        self.cfg.prune_history(namespace, name, max).await
    }

    async fn leftovers(
        &self,
        opts: UninstallOptions,
        manifest: &str,
    ) -> action::Result<Vec<ObjectRef>> {
        Uninstall::new(&self.cfg, opts).leftovers(manifest).await
    }
}
