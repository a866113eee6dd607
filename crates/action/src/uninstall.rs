//! `helm uninstall`: run pre-delete hooks, delete the manifest's objects in uninstall
//! order (keeping `helm.sh/resource-policy: keep`), wait until they are gone (with
//! `wait`), run post-delete hooks, and delete the records, or keep them marked
//! `uninstalled` with `keep_history`.
//!
//! The lock is an annotation on an existing record, which a namespace being deleted
//! still accepts, so the release's finalizer never blocks the namespace deletion.

use chart::manifest::UNINSTALL_ORDER;
use release::record::{Release, Status};
use release::Time;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::kube::{is_kept, owned_by, wait, KubeClient, Object, ObjectRef, Owner};
use crate::lock::Held;
use crate::options::UninstallOptions;
use crate::plan;
use crate::record::sort_by_kind;
use crate::store;

/// The `uninstall` verb.
pub struct Uninstall<'a> {
    cfg: &'a ActionConfig,
    opts: UninstallOptions,
}

impl<'a> Uninstall<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: UninstallOptions) -> Uninstall<'a> {
        Uninstall { cfg, opts }
    }

    /// Uninstalls the release; returns its last record as uninstalled.
    pub async fn run(&self) -> Result<Release> {
        let opts = &self.opts;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| {
                self.uninstall_locked(held)
            })
            .await
    }

    /// After an uninstall: deletes again whatever of `manifest` still exists and still
    /// belongs to this release (objects kept by `helm.sh/resource-policy: keep` and
    /// objects now owned by someone else are left alone), and returns what still
    /// exists. Empty once everything is gone. Needs no records: the manifest is the
    /// caller's (the operator keeps it in the CR's status). Deletes without waiting,
    /// as the Go helm-operator's `CleanupRelease`.
    pub async fn leftovers(&self, manifest: &str) -> Result<Vec<ObjectRef>> {
        let opts = &self.opts;
        let kube = KubeClient::new(self.cfg.client().clone());
        let owner = Owner {
            name: opts.name.clone(),
            namespace: opts.namespace.clone(),
            report: Default::default(),
            writes: Default::default(),
        };
        let mut objects = plan::stored_objects(&kube, &owner, manifest).await?;
        sort_by_kind(&mut objects, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
        let mut left = Vec::new();
        for o in &objects {
            if is_kept(&o.object) {
                continue;
            }
            let Some(live) = kube.get(&owner, o).await? else {
                continue;
            };
            if is_kept(&live) || !owned_by(&live, &owner) {
                continue;
            }
            if live.metadata.deletion_timestamp.is_none() {
                kube.delete(&owner, o).await?;
            }
            left.push(o.reference.clone());
        }
        Ok(left)
    }

    async fn uninstall_locked(&self, held: Held) -> Result<Release> {
        let opts = &self.opts;
        let store = self
            .cfg
            .locked_storage(&opts.namespace, opts.record_owner.clone(), &held)
            .with_max_history(0);
        let name = &opts.name;
        store::recover_leftover(&store, name, &held).await?;
        let mut rel = store
            .last(name)
            .await
            .map_err(|e| Error::storage(name, e))?
            .ok_or_else(|| Error::NotDeployed {
                release: name.clone(),
            })?;
        // As Helm: uninstalling an uninstalled release only purges its kept history.
        if rel.status() == Status::Uninstalled {
            if opts.keep_history {
                return Err(Error::AlreadyUninstalled {
                    release: name.clone(),
                    version: rel.version,
                });
            }
            store::purge(&store, name).await?;
            return Ok(rel);
        }
        // Kinds resolve afresh: what the cluster serves now decides what is deleted.
        let kube = KubeClient::new(self.cfg.client().clone());
        let owner = Owner {
            name: name.clone(),
            namespace: opts.namespace.clone(),
            report: Default::default(),
            writes: Default::default(),
        };
        let hook_objects = if opts.disable_hooks {
            Vec::new()
        } else {
            plan::prepare_hooks(&kube, &owner, &rel.hooks, None).await?
        };
        rel.set_status(
            Status::Uninstalling,
            "Deletion in progress (or silently failed)",
        );
        if let Some(info) = rel.info.as_mut() {
            info.deleted = Some(Time::now());
        }
        store::save(&store, &rel).await?;

        let result = self
            .cluster_changes(&kube, &owner, &mut rel, &hook_objects, &held)
            .await;
        if let Err(err) = result {
            let description = format!(
                "uninstallation completed with 1 error(s): {}",
                release::api_error::Chain(&err)
            );
            return Err(store::fail(&store, &mut rel, description, err).await);
        }
        let description = opts
            .description
            .as_deref()
            .unwrap_or("Uninstallation complete");
        rel.set_status(Status::Uninstalled, description);
        if opts.keep_history {
            store::save(&store, &rel).await?;
            return Ok(rel);
        }
        store::purge(&store, name).await?;
        Ok(rel)
    }

    async fn cluster_changes(
        &self,
        kube: &KubeClient,
        owner: &Owner,
        rel: &mut Release,
        hook_objects: &[Option<Object>],
        held: &Held,
    ) -> Result<()> {
        let opts = &self.opts;
        let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
        plan::run_hooks(kube, owner, rel, hook_objects, "pre-delete", no_hooks, t).await?;
        let mut objects = plan::stored_objects(kube, owner, &rel.manifest).await?;
        sort_by_kind(&mut objects, UNINSTALL_ORDER, |o| o.reference.kind.as_str());
        let mut deleted = Vec::new();
        for o in &objects {
            if plan::delete_unless_kept(kube, owner, o).await? {
                deleted.push(o);
            }
        }
        if opts.wait {
            wait::wait_deleted(kube, owner, &deleted, t).await?;
        }
        plan::run_hooks(kube, owner, rel, hook_objects, "post-delete", no_hooks, t).await?;
        held.check()
    }
}
