//! The CR's finalizer: added before the first install, so deleting the CR uninstalls
//! its release first, and removed once the release is gone. A hand-written merge
//! patch rather than `kube::runtime::finalizer`, because the Go helm-operator's legacy
//! finalizer name counts (and goes) too.

use action::UninstallOptions;
use kube::api::{Patch, PatchParams};
use kube::Resource;
use serde_json::json;

use super::report::Step;
use super::{Outcome, ReconcileError, Run};
use crate::annotations::{self as ann, FINALIZER, LEGACY_FINALIZER};
use crate::status as st;

fn ours(finalizer: &str) -> bool {
    finalizer == FINALIZER || finalizer == LEGACY_FINALIZER
}

impl Run {
    /// Changes the CR's finalizers with an optimistic-concurrency patch, re-reading the
    /// CR on conflict.
    async fn edit_finalizers(
        &self,
        edit: impl Fn(&mut Vec<String>) -> bool,
    ) -> Result<(), ReconcileError> {
        let kube_err = |source| ReconcileError::Kube {
            cr: self.cr_id.clone(),
            action: "update the finalizers of",
            source,
        };
        let mut current = (*self.cr).clone();
        for attempt in 0..5 {
            let mut fins = current.meta().finalizers.clone().unwrap_or_default();
            if !edit(&mut fins) {
                return Ok(());
            }
            let patch = json!({"metadata": {
                "finalizers": fins,
                "resourceVersion": current.meta().resource_version,
            }});
            match self
                .api
                .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 && attempt < 4 => {
                    current = match self.api.get_opt(&self.name).await.map_err(kube_err)? {
                        Some(cr) => cr,
                        None => return Ok(()),
                    };
                }
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                Err(e) => return Err(kube_err(e)),
            }
        }
        Ok(())
    }

    /// Adds our finalizer unless the CR carries it (or the legacy one) already.
    pub(super) async fn ensure_finalizer(&self) -> Result<(), ReconcileError> {
        self.edit_finalizers(|fins| {
            if fins.iter().any(|f| ours(f)) {
                return false;
            }
            fins.push(FINALIZER.to_string());
            true
        })
        .await
    }

    /// Deletion: uninstall the release, then let the CR go.
    pub(super) async fn finalize(&mut self) -> Result<Outcome, ReconcileError> {
        let fins = self.cr.meta().finalizers.clone().unwrap_or_default();
        if !fins.iter().any(|f| ours(f)) {
            tracing::info!(cr = %self.cr_id, "resource is terminated, skipping reconciliation");
            return Ok(Outcome::default());
        }
        if let Err(e) = self.migrate().await {
            let msg = e.to_string();
            return Err(self.fail(Step::Uninstall, msg, e).await);
        }
        let a = self.annotations();
        let mut opts = UninstallOptions::new(&self.name, &self.namespace);
        opts.disable_hooks = a.bool_or(ann::UNINSTALL_DISABLE_HOOKS, false);
        opts.wait = a.bool_or(ann::UNINSTALL_WAIT, false);
        opts.description = a.text(ann::UNINSTALL_DESCRIPTION);
        match self.ctx.actions.uninstall(opts).await {
            Ok(rel) => {
                tracing::info!(cr = %self.cr_id, release = %self.name, "uninstalled release");
                self.status.remove(st::RELEASE_FAILED);
                self.status
                    .set(st::DEPLOYED, st::FALSE, st::UNINSTALL_SUCCESSFUL, "");
                self.status.deployed_release = None;
                self.events
                    .normal(
                        st::UNINSTALL_SUCCESSFUL,
                        format!(
                            "Uninstalled release {} (revision {})",
                            self.name, rel.version
                        ),
                    )
                    .await;
            }
            Err(action::Error::NotDeployed { .. }) => {
                tracing::info!(cr = %self.cr_id, release = %self.name, "release not found");
                self.status.remove(st::RELEASE_FAILED);
            }
            Err(source) => {
                let msg = format!("failed to uninstall release: {source}");
                return Err(self.action_failed(Step::Uninstall, source, None, msg).await);
            }
        }
        self.write_status().await?;
        self.edit_finalizers(|fins| {
            let before = fins.len();
            fins.retain(|f| !ours(f));
            fins.len() != before
        })
        .await?;
        self.set_release_metric(None);
        Ok(Outcome::default())
    }
}
