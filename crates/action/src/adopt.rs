//! Adoption: when a release's records are gone (deleted by accident, lost with a backup
//! restore) but its objects still run, write a fresh record over the live objects
//! instead of installing anew. A fresh install would run install hooks again and, on
//! any failure, might leave the workload in doubt; adoption keeps every object (same
//! UIDs: server-side apply patches in place), runs no hooks and deletes nothing.
//!
//! [`crate::Install::run_or_adopt`] adopts from the install's own render; [`Adopt`]
//! adopts or writes nothing.

use chart::loader::Chart;
use chart::values::Values;
use kube::api::DynamicObject;
use release::record::Release;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::install::Install;
use crate::kube::{KubeClient, Object, ObjectRef, Owner};
use crate::kube::{RELEASE_NAMESPACE_ANNOTATION, RELEASE_NAME_ANNOTATION};
use crate::options::ActionOptions;
use crate::plan;
use crate::render::Revision;

/// Whether an install looks for live objects of a release without records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Adoption {
    /// A plain install.
    Off,
    /// Adopt when live objects of the release exist, else install.
    IfLive,
    /// Adopt when live objects of the release exist, else write nothing.
    Only,
}

/// What the live cluster holds of a rendered release.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Objects carrying this release's ownership annotations.
    pub owned: Vec<ObjectRef>,
    /// Objects that exist without this release's ownership (another release's or none).
    pub foreign: Vec<ObjectRef>,
}

/// The `adopt` verb (rudder's own; Helm has none).
pub struct Adopt<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> Adopt<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Adopt<'a> {
        Adopt { cfg, opts }
    }

    /// For a release without records: when live objects carry its ownership, records a
    /// new release over them without hooks and returns the record; otherwise (no such
    /// objects, or the release has records) writes nothing and returns `None`. Objects
    /// of another release are refused by the ownership check ([`Error::Adopt`]);
    /// nothing is ever deleted, also not on failure.
    pub async fn run(&self, chart: &Chart, values: Values) -> Result<Option<Release>> {
        let install = Install::new(self.cfg, self.opts.clone());
        let installed = install.locked(chart, values, Adoption::Only).await?;
        Ok(installed.map(|i| i.release))
    }

    /// Renders the release and reads every manifest object (not hooks, not CRDs) from
    /// the cluster, sorting the existing ones by ownership. Writes nothing.
    pub async fn live_objects(&self, chart: &Chart, values: Values) -> Result<LiveObjects> {
        let opts = &self.opts;
        let (rendered, _) = self
            .cfg
            .render_in_cluster(chart.clone(), values, opts, Revision::install(1))
            .await?;
        let kube = self.cfg.kube();
        let owner = opts.owner();
        let mut objects = Vec::new();
        for (source, doc) in plan::rendered_docs(&rendered) {
            match kube.prepare(&owner, &source, &doc).await {
                Ok(Some(o)) => objects.push(o),
                Ok(None) => {}
                // A kind the cluster does not serve has no live objects.
                Err(Error::UnknownKind { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(live_objects(&kube, &owner, &objects).await?.0)
    }
}

/// Reads `objects` from the cluster and sorts the existing ones by ownership; also
/// returns what was read, in order, so the install applies from the same reads.
pub(crate) async fn live_objects(
    kube: &KubeClient,
    owner: &Owner,
    objects: &[Object],
) -> Result<(LiveObjects, Vec<Option<DynamicObject>>)> {
    let mut live = LiveObjects::default();
    let mut read = Vec::with_capacity(objects.len());
    for object in objects {
        let found = kube.get(owner, object).await?;
        if let Some(found) = &found {
            let ann = found.metadata.annotations.as_ref();
            let says = |k: &str| ann.and_then(|a| a.get(k));
            let ours = says(RELEASE_NAME_ANNOTATION) == Some(&owner.name)
                && says(RELEASE_NAMESPACE_ANNOTATION) == Some(&owner.namespace);
            if ours {
                live.owned.push(object.reference.clone());
            } else {
                live.foreign.push(object.reference.clone());
            }
        }
        read.push(found);
    }
    Ok((live, read))
}

/// The options an adopting install runs with: no hooks (they ran when the release was
/// made), never undone (undoing would uninstall the live workload), and a description
/// that says what happened.
pub(crate) fn adoption_options(opts: &ActionOptions, live: &LiveObjects) -> ActionOptions {
    let found = live.owned.len();
    tracing::info!(
        release = %opts.name,
        namespace = %opts.namespace,
        found,
        foreign = live.foreign.len(),
        "release has no records but its objects exist; adopting them"
    );
    let mut adopt = opts.clone();
    adopt.disable_hooks = true;
    adopt.rollback_on_failure = false;
    adopt.description = Some(format!(
        "Adopted {found} existing objects after the release records were lost"
    ));
    adopt
}

/// The error of a failed adoption: how many objects were found, and one of them.
pub(crate) fn failed(opts: &ActionOptions, live: &LiveObjects, source: Error) -> Error {
    Error::Adopt {
        release: opts.name.clone(),
        namespace: opts.namespace.clone(),
        found: live.owned.len(),
        example: live
            .owned
            .first()
            .map(ToString::to_string)
            .unwrap_or_default(),
        source: Box::new(source),
    }
}
