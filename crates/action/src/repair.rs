//! Repair (rudder's own; Helm has none): re-apply the deployed revision's manifest
//! (transformed) so objects changed or deleted out of band come back, without writing
//! a new revision or running hooks. The operator repairs a release whose inputs did
//! not change instead of upgrading it.

use std::collections::BTreeMap;

use release::record::Release;

use crate::config::ActionConfig;
use crate::error::Result;
use crate::kube::wait::{readiness, Readiness};
use crate::kube::{check_live_ownership, ObjectRef};
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::plan;
use crate::record::install_ordered_documents;
use crate::store;

/// What [`Repair::run`] re-applied, and what it found not ready.
#[derive(Debug, Clone, Default)]
pub struct RepairReport {
    /// Objects that were missing or differed from the deployed manifest.
    pub repaired: Vec<ObjectRef>,
    /// Objects not ready (as `wait` judges them) as the apply left them, each as
    /// `Kind namespace/name: why`.
    pub not_ready: Vec<String>,
}

/// The `repair` verb.
pub struct Repair<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
    labels: BTreeMap<String, String>,
}

impl<'a> Repair<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Repair<'a> {
        Repair {
            cfg,
            opts,
            labels: BTreeMap::new(),
        }
    }

    /// Labels the deployed record must carry; written on it (without a new revision)
    /// when it lacks them, e.g. the operator's inputs digest on a record `helm` made.
    /// With the options' `revision_label`, the record also gets its own revision
    /// under that label (replacing one another tool copied from an older record).
    pub fn ensure_labels(mut self, labels: BTreeMap<String, String>) -> Repair<'a> {
        self.labels = labels;
        self
    }

    /// Re-applies the deployed revision; returns it (as stored after any label
    /// change) with the objects that were missing or that the apply changed.
    /// [`crate::Error::NotDeployed`] without a deployed revision.
    pub async fn run(&self) -> Result<(Release, RepairReport)> {
        let opts = &self.opts;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| self.repair_locked(held))
            .await
    }

    async fn repair_locked(&self, held: Held) -> Result<(Release, RepairReport)> {
        let opts = &self.opts;
        let store = self.cfg.release_storage(opts, &held);
        let mut rel = store::deployed(&store, &opts.name).await?;
        let kube = self.cfg.kube();
        let owner = opts.owner();
        let docs = install_ordered_documents(&rel.manifest);
        let plan = plan::plan(&kube, opts, &[], &docs, &[]).await?;
        let mut live = Vec::with_capacity(plan.objects.len());
        for o in &plan.objects {
            let found = kube.get(&owner, o).await?;
            if let Some(found) = &found {
                check_live_ownership(&owner, o, found, &opts.apply())?;
            }
            live.push(found);
        }
        let mut report = RepairReport::default();
        for (o, live) in plan.objects.iter().zip(live) {
            let mut before = live
                .as_ref()
                .and_then(|l| l.metadata.resource_version.clone());
            if let Some(live) = &live {
                // Taking over field ownership is no repair of the object.
                if let Some(rv) = kube.take_over_fields(&owner, o, live).await? {
                    before = Some(rv);
                }
            }
            let after = kube
                .apply_or_replace(&owner, o, None, opts.force, opts.timeout)
                .await?;
            if before.is_none() || before != after.metadata.resource_version {
                tracing::info!(release = %opts.name, object = %o.reference, "repaired");
                report.repaired.push(o.reference.clone());
            }
            let r = &o.reference;
            match readiness(r.group(), &r.kind, &after, false) {
                Readiness::Ready => {}
                Readiness::Pending(why) | Readiness::Failed(why) => {
                    report.not_ready.push(format!("{r}: {why}"))
                }
            }
        }
        let mut wanted = self.labels.clone();
        if let Some(label) = &opts.revision_label {
            wanted.insert(label.clone(), rel.version.to_string());
        }
        let missing = wanted.iter().any(|(k, v)| rel.labels.get(k) != Some(v));
        if missing {
            rel.labels.extend(wanted);
            store::save(&store, &rel).await?;
        }
        Ok((rel, report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chart, configmap_path, memory_config, opts, CONFIGMAP, NS};
    use crate::{Error, Install, Uninstall, UninstallOptions};
    use serde_json::Map;

    #[tokio::test]
    async fn repair_brings_back_what_was_deleted_and_stamps_labels_once() {
        let (cfg, cluster) = memory_config();
        let err = Repair::new(&cfg, opts("web"))
            .run()
            .await
            .expect_err("nothing deployed");
        assert!(matches!(err, Error::NotDeployed { .. }), "{err}");
        let c = chart("greeting: hello\n", &[("cm.yaml", CONFIGMAP)]);
        Install::new(&cfg, opts("web"))
            .run(&c, Map::new())
            .await
            .expect("install");
        let path = configmap_path("web-cfg");
        // Nothing drifted: nothing to report.
        let (_, report) = Repair::new(&cfg, opts("web")).run().await.expect("repair");
        assert!(report.repaired.is_empty(), "{report:?}");
        // Someone deletes the object: it comes back.
        cluster.remove(&path);
        let labels = BTreeMap::from([("rudder.dev/inputs-digest".to_string(), "abc".to_string())]);
        let (rel, report) = Repair::new(&cfg, opts("web"))
            .ensure_labels(labels.clone())
            .run()
            .await
            .expect("repair");
        assert_eq!(report.repaired.len(), 1, "{report:?}");
        assert_eq!(rel.version, 1, "no new revision");
        assert_eq!(
            rel.labels
                .get("rudder.dev/inputs-digest")
                .map(String::as_str),
            Some("abc")
        );
        let stored = cfg.storage(NS).get("web", 1).await.unwrap();
        assert_eq!(stored.labels, rel.labels);
        assert_eq!(cluster.object(&path).unwrap()["data"]["greeting"], "hello");

        let rel = Uninstall::new(&cfg, UninstallOptions::new("web", NS))
            .run()
            .await
            .expect("uninstall");
        assert_eq!(rel.status(), release::record::Status::Uninstalled);
        assert!(cluster.object(&path).is_none());
        assert!(cfg.storage(NS).last("web").await.unwrap().is_none());
    }
}
