//! The CR's finalizer: added before the first install, so deleting the CR uninstalls
//! its release first, and removed once the release (and, with `uninstall-wait`, every
//! object of it) is gone. Deleting never gets stuck on what no retry can fix: a name no
//! release can have, records that cannot be read (then the objects of the manifest in
//! the status are deleted) or a failed migration; an event says what was left behind.
//! A hand-written merge
//! patch rather than `kube::runtime::finalizer`, because the Go helm-operator's legacy
//! finalizer name counts (and goes) too.

use action::UninstallOptions;
use kube::api::{Patch, PatchParams};
use kube::Resource;
use release::api_error::Chain;
use serde_json::json;

use std::time::Duration;

use super::events;
use super::ownership::Owner;
use super::report::Step;
use super::{Outcome, ReconcileError, Run};
use crate::annotations::{self as ann, FINALIZER, LEGACY_FINALIZER};
use crate::status::{self as st, Standing};

/// How soon `uninstall-wait` looks again when no reconcile period is set.
const UNINSTALL_WAIT_POLL: Duration = Duration::from_secs(10);

/// The longest label value Kubernetes allows; record labels carry the release name.
const MAX_LABEL_VALUE: usize = 63;

/// A failure no retry can fix: a record that cannot be decoded.
fn unreadable(e: &action::Error) -> bool {
    matches!(
        e,
        action::Error::Storage {
            source: release::Error::Decode { .. } | release::Error::Chunk { .. },
            ..
        }
    )
}

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
            self.log().adding_finalizer(FINALIZER);
            fins.push(FINALIZER.to_string());
            true
        })
        .await
        .inspect_err(|_| self.log().add_finalizer_failed())
    }

    /// The manifest `status.deployedRelease` keeps, read from the API server when the
    /// cached CR holds only its stand-in.
    async fn deployed_manifest(&self) -> Result<Option<String>, ReconcileError> {
        let Some(d) = self.status.deployed_release.as_ref() else {
            return Ok(None);
        };
        if let Some(m) = d.manifest() {
            return Ok(Some(m.to_string()).filter(|m| !m.is_empty()));
        }
        let fresh = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|source| ReconcileError::Kube {
                cr: self.cr_id.clone(),
                action: "read the deployed manifest of",
                source,
            })?;
        Ok(fresh
            .map(|cr| st::HelmAppStatus::of(&cr))
            .and_then(|s| s.deployed_release)
            .and_then(|d| d.manifest().map(str::to_string))
            .filter(|m| !m.is_empty()))
    }

    /// Deletion: uninstall the release, then let the CR go. With `uninstall-wait`, as
    /// the Go operator: the release is uninstalled at once (its records deleted), and
    /// the finalizer stays, `Deployed=False/UninstallSuccessful` "Waiting until all
    /// resources are deleted.", until nothing of the manifest kept in
    /// `status.deployedRelease` exists any more; each reconcile (one per period, never
    /// a held worker) deletes what is left again.
    pub(super) async fn finalize(&mut self) -> Result<Outcome, ReconcileError> {
        let fins = self.cr.meta().finalizers.clone().unwrap_or_default();
        if !fins.iter().any(|f| ours(f)) {
            self.log().terminated();
            return Ok(Outcome::default());
        }
        if self.name.len() > MAX_LABEL_VALUE {
            // Every record carries the release name in a label, so no record (and no
            // release) can exist under this name: nothing to uninstall.
            self.log().release_not_found();
            return self.remove_finalizer().await;
        }
        let mut left_behind = Vec::new();
        if let Err(e) = self.migrate().await {
            // Deleting never waits on a migration: the uninstall reads the records
            // that are Secrets already.
            left_behind.push(format!(
                "the release's old records were not moved to Secrets and stay as they are ({})",
                Chain(&e)
            ));
        }
        let history = self
            .ctx
            .actions
            .history(&self.namespace, &self.name)
            .await
            .map_err(|e| self.storage_err(e))?;
        if let Owner::Theirs(err) = self.release_owner(&history).await? {
            // Never this CR's release: nothing to uninstall, and the other release
            // stays exactly as it is.
            tracing::info!(cr = %self.cr_id, reason = %Chain(&err), "the release is another chart's; removing the finalizer without uninstalling it");
            let message = format!(
                "Removed the finalizer without uninstalling release {}, which is left as it is: {}",
                self.name,
                super::err_message(&err)
            );
            self.events.normal(events::NOT_UNINSTALLED, message).await;
            return self.remove_finalizer().await;
        }
        let a = self.annotations();
        let wait = a.bool_or(ann::UNINSTALL_WAIT, false);
        let mut opts = UninstallOptions::new(&self.name, &self.namespace);
        opts.disable_hooks = a.bool_or(ann::UNINSTALL_DISABLE_HOOKS, false);
        opts.description = a.text(ann::UNINSTALL_DESCRIPTION);
        opts.record_owner = Some(self.owner_reference());
        // What the uninstall deleted, for `uninstall-wait`'s first look: the status may
        // hold no manifest (`--status-manifest=none`).
        let mut uninstalled = None;
        match self.ctx.actions.uninstall(opts.clone()).await {
            Ok(rel) => {
                self.log().uninstalled();
                uninstalled = Some(rel.manifest.clone()).filter(|m| !m.is_empty());
                self.status.remove(st::RELEASE_FAILED);
                if !wait {
                    self.status
                        .set(st::DEPLOYED, st::FALSE, st::UNINSTALL_SUCCESSFUL, "");
                    self.status.deployed_release = None;
                }
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
                self.log().release_not_found();
                self.status.remove(st::RELEASE_FAILED);
            }
            Err(source) if unreadable(&source) => {
                // Retrying cannot help: uninstall what the CR's status still knows of.
                left_behind.push(self.uninstall_from_status(opts.clone(), &source).await);
                self.status.remove(st::RELEASE_FAILED);
                self.status.deployed_release = None;
            }
            Err(source) => {
                let msg = format!("failed to uninstall release: {}", Chain(&source));
                return Err(self.action_failed(Step::Uninstall, source, None, msg).await);
            }
        }
        if wait {
            self.status.set(
                st::DEPLOYED,
                st::FALSE,
                st::UNINSTALL_SUCCESSFUL,
                st::WAITING_FOR_DELETION,
            );
            self.status.stand(
                Standing::Progressing,
                st::UNINSTALLING,
                st::WAITING_FOR_DELETION,
            );
        } else {
            let message = format!("Uninstalled release {}", self.name);
            self.status
                .stand(Standing::Progressing, st::UNINSTALLING, message);
        }
        if !left_behind.is_empty() {
            let message = format!(
                "Removed the finalizer of release {}, leaving behind: {}",
                self.name,
                left_behind.join("; ")
            );
            tracing::warn!(cr = %self.cr_id, "{message}");
            self.events.warning(st::UNINSTALL_ERROR, message).await;
        }
        self.write_status()
            .await
            .inspect_err(|_| self.log().cr_status_update_failed())?;
        let manifest = match (wait, uninstalled) {
            (false, _) => None,
            (true, Some(m)) => Some(m),
            (true, None) => self.deployed_manifest().await?,
        };
        if let (true, Some(manifest)) = (wait, manifest) {
            self.log().uninstall_wait();
            match self.ctx.actions.leftovers(opts, &manifest).await {
                Err(source) => {
                    let msg = Chain(&source).to_string();
                    return Err(self.action_failed(Step::Uninstall, source, None, msg).await);
                }
                Ok(left) if !left.is_empty() => {
                    let left: Vec<String> = left.iter().map(ToString::to_string).collect();
                    tracing::debug!(cr = %self.cr_id, left = ?left, "objects of the uninstalled release still exist");
                    self.log().waiting_for_deletion();
                    let again = self.requeue_after().ok().flatten();
                    return Ok(Outcome {
                        requeue_after: Some(again.unwrap_or(UNINSTALL_WAIT_POLL)),
                        dependents: Vec::new(),
                    });
                }
                Ok(_) => {
                    self.status.remove(st::RELEASE_FAILED);
                    self.write_status()
                        .await
                        .inspect_err(|_| self.log().cr_status_update_failed())?;
                }
            }
        }
        self.remove_finalizer().await
    }

    /// The release's records cannot be read (`cause`): deletes the objects of the
    /// manifest kept in `status.deployedRelease` instead, and says what stays.
    async fn uninstall_from_status(&self, opts: UninstallOptions, cause: &action::Error) -> String {
        let records = format!(
            "its records, which cannot be read ({}): delete them with \
             `kubectl delete secret -n {} -l owner=helm,name={}`",
            Chain(cause),
            self.namespace,
            self.name
        );
        let manifest = self
            .status
            .deployed_release
            .as_ref()
            .map(|d| d.manifest.as_str())
            .filter(|m| !m.is_empty());
        let Some(manifest) = manifest else {
            return format!(
                "{records}; and its objects, which no status names, to Kubernetes' \
                 garbage collection of what the custom resource owns"
            );
        };
        match self.ctx.actions.leftovers(opts, manifest).await {
            Ok(left) if left.is_empty() => records,
            Ok(left) => {
                let left: Vec<String> = left.iter().map(ToString::to_string).collect();
                format!(
                    "{records}; and these objects, still being deleted: {}",
                    left.join(", ")
                )
            }
            Err(e) => format!(
                "{records}; and the objects of its last deployed manifest, which could not be \
                 deleted ({})",
                Chain(&e)
            ),
        }
    }

    async fn remove_finalizer(&mut self) -> Result<Outcome, ReconcileError> {
        self.log().removing_finalizer();
        self.edit_finalizers(|fins| {
            let before = fins.len();
            fins.retain(|f| !ours(f));
            fins.len() != before
        })
        .await
        .inspect_err(|_| self.log().remove_finalizer_failed())?;
        self.set_release_metric(None);
        Ok(Outcome::default())
    }
}
