//! `helm rollback`: re-apply the manifest of an earlier revision as a new revision,
//! delete objects the current revision has and the target does not, run
//! pre/post-rollback hooks, and supersede the previously deployed revision.

use release::record::{Release, Status};
use release::{Storage, Time};

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::kube::KubeClient;
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::plan;
use crate::record::{install_ordered_documents, record_labels, APPLY_METHOD_SSA};
use crate::store;
use crate::transition::{Change, Steps};

/// The `rollback` verb.
pub struct Rollback<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> Rollback<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Rollback<'a> {
        Rollback { cfg, opts }
    }

    /// Rolls back to revision `to` (0: the one before the newest).
    pub async fn run(&self, to: i64) -> Result<Release> {
        let opts = &self.opts;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| async move {
                let store = self.cfg.release_storage(opts, &held);
                let kube = self.cfg.kube();
                store::recover_leftover(&store, &opts.name, &held).await?;
                rollback_steps(&store, &kube, to, opts, &held).await
            })
            .await
    }
}

/// The rollback itself, under a lock the caller holds (also after a failed upgrade).
pub(crate) async fn rollback_steps(
    store: &Storage,
    kube: &KubeClient,
    to: i64,
    opts: &ActionOptions,
    held: &Held,
) -> Result<Release> {
    let name = &opts.name;
    let owner = opts.owner();
    let last = store::current(store, name).await?;
    let to = if to == 0 { last.version - 1 } else { to };
    let target = match store.get(name, to).await {
        Ok(r) => r,
        Err(e) if e.is_not_found() => {
            return Err(Error::RevisionNotFound {
                release: name.clone(),
                version: to,
            })
        }
        Err(e) => return Err(Error::storage(name, e)),
    };
    // What may be live now: the deployed revision's objects and, after a failed
    // action, the objects of the newest revision (which never became deployed).
    let deployed_rel = store::deployed_known(store, name, &[&last, &target]).await?;
    let mut previous_manifests = vec![last.manifest.clone()];
    if let Some(d) = deployed_rel.as_ref().filter(|d| d.version != last.version) {
        previous_manifests.push(d.manifest.clone());
    }
    let docs = install_ordered_documents(&target.manifest);
    let plan = plan::plan(kube, opts, &[], &docs, &target.hooks).await?;
    let mut old = Vec::new();
    for m in &previous_manifests {
        old.extend(plan::stored_objects(kube, &owner, m).await?);
    }

    let version = last.version + 1;
    let mut rel = target.clone();
    rel.version = version;
    // The objects are applied server-side whatever the target revision used (Helm's
    // `rollback --server-side=true`), so the record says so and Helm's `auto`
    // applies the next upgrade server-side too.
    rel.apply_method = APPLY_METHOD_SSA.to_string();
    rel.labels = record_labels(&target.labels, opts, version);
    let first = last.info.as_ref().and_then(|i| i.first_deployed);
    if let Some(info) = rel.info.as_mut() {
        info.first_deployed = first;
        info.last_deployed = Some(Time::now());
        info.deleted = None;
    }
    for h in &mut rel.hooks {
        h.last_run = Default::default();
    }
    let description = format!("Rollback to {to}");
    rel.set_status(Status::PendingRollback, description.clone());
    store
        .create(&rel)
        .await
        .map_err(|e| Error::storage(name, e))?;

    let change = Change {
        kube,
        opts,
        plan: &plan,
        old: &old,
        steps: Steps::ROLLBACK,
    };
    let result = match change.run(&mut rel, held).await {
        Ok(()) => {
            let description = opts.description.as_deref().unwrap_or(&description);
            let known: Vec<&Release> = deployed_rel.iter().collect();
            store::finish_deployed(store, &mut rel, description, held, &known).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Ok(rel),
        Err(err) => {
            let description = format!(
                "Rollback {name:?} failed: {}",
                release::api_error::Chain(&err)
            );
            Err(store::fail(store, &mut rel, description, err).await)
        }
    }
}
