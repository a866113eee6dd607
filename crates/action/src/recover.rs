//! Recovery of a release left `pending-*` (or `uninstalling`) by a crashed process:
//! when no live lock holds it (and it is not another tool's recent record, see
//! `store::recover_leftover`), every such record is marked failed ("interrupted: ...")
//! and all but the newest `deployed` record superseded, so the next action can
//! proceed; nothing in the cluster is touched. Every verb does this
//! itself after locking; [`Recover`] does only this.

use release::record::Release;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::options::ActionOptions;
use crate::store;

/// The `recover` verb (rudder's own; Helm refuses pending releases instead).
pub struct Recover<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> Recover<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Recover<'a> {
        Recover { cfg, opts }
    }

    /// Returns the recovered record; `None` when there was nothing to recover or a
    /// live action holds the lock (that action's record is not a leftover).
    /// [`Error::PendingElsewhere`] when the pending record is another tool's, written
    /// too recently to take it for interrupted.
    pub async fn run(&self) -> Result<Option<Release>> {
        let opts = &self.opts;
        let recovered = self
            .cfg
            .with_lock(&opts.namespace, &opts.name, |held| async move {
                let store = self.cfg.release_storage(opts, &held);
                store::recover_leftover(&store, &opts.name, &held).await
            })
            .await;
        match recovered {
            Err(Error::Locked { .. }) => Ok(None),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{memory_config, opts, NS};
    use release::record::Status;

    async fn leave(cfg: &ActionConfig, version: i64, status: Status, description: &str) {
        let mut rel = Release {
            name: "p".into(),
            namespace: NS.into(),
            version,
            ..Release::default()
        };
        rel.set_status(status, description);
        crate::testing::leave_crashed(cfg, &rel).await;
    }

    #[tokio::test]
    async fn a_crashed_actions_leftover_becomes_failed_once() {
        let (cfg, cluster) = memory_config();
        leave(&cfg, 1, Status::Deployed, "Install complete").await;
        leave(&cfg, 2, Status::PendingUpgrade, "Preparing upgrade").await;
        let rel = Recover::new(&cfg, opts("p"))
            .run()
            .await
            .expect("recover")
            .expect("recovered");
        assert_eq!((rel.version, rel.status()), (2, Status::Failed));
        assert_eq!(
            rel.info.map(|i| i.description).as_deref(),
            Some("interrupted: Preparing upgrade")
        );
        let stored = cfg.storage(NS).get("p", 2).await.expect("read");
        assert_eq!(stored.status(), Status::Failed);
        // The deployed revision is untouched, and nothing asked the cluster.
        assert_eq!(
            cfg.storage(NS).get("p", 1).await.unwrap().status(),
            Status::Deployed
        );
        assert!(
            cluster.requests("").is_empty(),
            "{:?}",
            cluster.requests("")
        );
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_live_lock_means_the_pending_record_is_not_a_leftover() {
        let (cfg, _) = memory_config();
        leave(&cfg, 1, Status::PendingInstall, "Initial install underway").await;
        let lock = cfg.lock(NS, "p").await.expect("lock");
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_none());
        assert_eq!(
            cfg.storage(NS).get("p", 1).await.unwrap().status(),
            Status::PendingInstall
        );
        // Given back with the record still pending, the lock stays on it, expired:
        // a rudder action left it, so it is recovered at once.
        lock.release().await;
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_pending_record_another_tool_is_writing_is_left_alone() {
        let (cfg, _) = memory_config();
        leave(&cfg, 1, Status::Superseded, "Install complete").await;
        leave(&cfg, 2, Status::Deployed, "Upgrade complete").await;
        // `helm rollback 1` has written its first record and not its last: a record
        // without rudder's lock, written just now.
        let mut helm = Release {
            name: "p".into(),
            namespace: NS.into(),
            version: 3,
            ..Release::default()
        };
        helm.set_status(Status::PendingRollback, "Rollback to 1");
        cfg.storage(NS).create(&helm).await.expect("helm's record");
        let err = Recover::new(&cfg, opts("p")).run().await.unwrap_err();
        assert!(
            matches!(err, Error::PendingElsewhere { version: 3, ref status, .. } if status == "pending-rollback"),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("another operation (pending-rollback, revision 3"),
            "{err}"
        );
        let err = crate::Upgrade::new(&cfg, opts("p"))
            .run(&crate::testing::demo_chart(), Default::default())
            .await
            .unwrap_err();
        assert!(matches!(err, Error::PendingElsewhere { .. }), "{err}");
        // Each try gave helm's record back as it found it: without a lock.
        let metas = cfg.storage(NS).history_meta("p").await.unwrap();
        let newest = metas.iter().find(|m| m.version == 3).expect("revision 3");
        assert!(newest.annotations.is_empty(), "{:?}", newest.annotations);
        assert_eq!(
            statuses(&cfg).await,
            [
                (1, Status::Superseded),
                (2, Status::Deployed),
                (3, Status::PendingRollback)
            ]
        );
        // helm finishes: nothing is left to recover.
        helm.set_status(Status::Deployed, "Rollback to 1");
        let store = cfg.storage(NS);
        let mut old = store.get("p", 2).await.unwrap();
        old.set_status(Status::Superseded, "Upgrade complete");
        store.update(&old).await.unwrap();
        store.update(&helm).await.unwrap();
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn uninstalling_leftovers_are_recovered_too() {
        let (cfg, _) = memory_config();
        leave(&cfg, 1, Status::Uninstalling, "Deletion in progress").await;
        let rel = Recover::new(&cfg, opts("p")).run().await.unwrap();
        assert_eq!(rel.map(|r| r.status()), Some(Status::Failed));
        leave(&cfg, 2, Status::Failed, "Upgrade failed").await;
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_none());
    }

    async fn statuses(cfg: &ActionConfig) -> Vec<(i64, Status)> {
        let history = cfg.storage(NS).history("p").await.expect("history");
        history.iter().map(|r| (r.version, r.status())).collect()
    }

    #[tokio::test]
    async fn every_pending_record_is_recovered_not_only_the_newest() {
        let (cfg, _) = memory_config();
        leave(&cfg, 1, Status::Deployed, "Install complete").await;
        leave(&cfg, 2, Status::PendingUpgrade, "Preparing upgrade").await;
        leave(&cfg, 3, Status::PendingUpgrade, "Preparing upgrade").await;
        leave(&cfg, 4, Status::Deployed, "Upgrade complete").await;
        let rel = Recover::new(&cfg, opts("p")).run().await.unwrap();
        // The newest changed record is reported; v4 stays the deployed one.
        assert_eq!(
            rel.map(|r| (r.version, r.status())),
            Some((3, Status::Failed))
        );
        assert_eq!(
            statuses(&cfg).await,
            [
                (1, Status::Superseded),
                (2, Status::Failed),
                (3, Status::Failed),
                (4, Status::Deployed)
            ]
        );
        assert!(Recover::new(&cfg, opts("p")).run().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_crash_between_two_record_writes_leaves_one_deployed_after_recovery() {
        let (cfg, _) = memory_config();
        leave(&cfg, 1, Status::Deployed, "Install complete").await;
        leave(&cfg, 2, Status::Deployed, "Upgrade complete").await;
        let rel = Recover::new(&cfg, opts("p")).run().await.unwrap();
        assert_eq!(
            rel.map(|r| (r.version, r.status())),
            Some((1, Status::Superseded))
        );
        let stored = cfg.storage(NS).get("p", 1).await.unwrap();
        // As Helm supersedes: the description stays.
        assert_eq!(
            stored.info.map(|i| i.description).as_deref(),
            Some("Install complete")
        );
        assert_eq!(
            statuses(&cfg).await,
            [(1, Status::Superseded), (2, Status::Deployed)]
        );
    }
}
