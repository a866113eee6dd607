//! What the cluster holds of a release that has no records: its rendered objects
//! read back and sorted by the ownership annotations, and how an install that adopts
//! them runs (no hooks, never undone) and fails. The install and the `adopt` verb
//! both use it.

use kube::api::DynamicObject;

use crate::error::{Error, Result};
use crate::kube::{KubeClient, Object, ObjectRef, Owner};
use crate::kube::{RELEASE_NAMESPACE_ANNOTATION, RELEASE_NAME_ANNOTATION};
use crate::options::ActionOptions;

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
