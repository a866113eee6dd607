//! Adoption: when a release's records are gone (deleted by accident, lost with a backup
//! restore) but its objects still run, write a fresh record over the live objects
//! instead of installing anew. A fresh install would run install hooks again and, on
//! any failure, might leave the workload in doubt; adoption keeps every object (same
//! UIDs: server-side apply patches in place), runs no hooks and deletes nothing.

use action::cluster::{Owner, RELEASE_NAMESPACE_ANNOTATION, RELEASE_NAME_ANNOTATION};
use action::{ActionOptions, Kube, ObjectRef};
use kube::Client;
use release::record::Release;

/// Why adoption failed. Nothing was deleted.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The chart could not be rendered, so the live objects cannot be looked up.
    #[error("release {namespace}/{release}: cannot render the chart to find its existing objects: {source}")]
    Render {
        release: String,
        namespace: String,
        #[source]
        source: action::Error,
    },
    /// Reading a live object failed.
    #[error("release {namespace}/{release}: cannot look up existing object: {source}")]
    Lookup {
        release: String,
        namespace: String,
        #[source]
        source: action::Error,
    },
    /// Recording the release over the live objects failed (for example because one of
    /// them belongs to another release). Nothing was deleted.
    #[error(
        "release {namespace}/{release}: found {found} existing object(s) of this release (e.g. {example}) but could not record a release over them; nothing was deleted: {source}"
    )]
    Install {
        release: String,
        namespace: String,
        found: usize,
        example: String,
        #[source]
        source: action::Error,
    },
}

/// What the live cluster holds of a rendered release.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Objects carrying this release's ownership annotations.
    pub owned: Vec<ObjectRef>,
    /// Objects that exist without this release's ownership (another release's or none).
    pub foreign: Vec<ObjectRef>,
}

/// Renders the release and reads every manifest object (not hooks, not CRDs) from the
/// cluster, sorting the existing ones by ownership. Writes nothing.
pub async fn find_live_objects(
    client: Client,
    chart: chart::loader::Chart,
    values: chart::loader::Values,
    opts: &ActionOptions,
) -> Result<LiveObjects, AdoptError> {
    let rendered = action::render(chart, values, opts, 1, false)
        .await
        .map_err(|source| AdoptError::Render {
            release: opts.name.clone(),
            namespace: opts.namespace.clone(),
            source,
        })?;
    let kube = Kube::new(client);
    let owner = Owner {
        name: opts.name.clone(),
        namespace: opts.namespace.clone(),
    };
    let lookup = |source| AdoptError::Lookup {
        release: opts.name.clone(),
        namespace: opts.namespace.clone(),
        source,
    };
    let mut live = LiveObjects::default();
    for m in &rendered.manifests {
        let object = match kube.prepare(&owner, &m.source, &m.content).await {
            Ok(Some(o)) => o,
            Ok(None) => continue,
            // A kind the cluster does not serve has no live objects; the install that
            // follows reports it properly.
            Err(action::Error::UnknownKind { .. }) => continue,
            Err(e) => return Err(lookup(e)),
        };
        let Some(found) = kube.get(&owner, &object).await.map_err(lookup)? else {
            continue;
        };
        let ann = found.metadata.annotations.unwrap_or_default();
        let ours = ann.get(RELEASE_NAME_ANNOTATION) == Some(&owner.name)
            && ann.get(RELEASE_NAMESPACE_ANNOTATION) == Some(&owner.namespace);
        if ours {
            live.owned.push(object.reference);
        } else {
            live.foreign.push(object.reference);
        }
    }
    Ok(live)
}

/// Called when the release has no records. Renders the chart and looks for live
/// objects carrying this release's ownership annotations: with none, returns `Ok(None)`
/// so the caller installs normally. Otherwise records a new release over them with
/// `action::install` without hooks (server-side apply keeps the objects and their UIDs)
/// and returns the record. Objects of another release are refused by apply's ownership
/// check and reported; nothing is ever deleted, also not on failure.
pub async fn adopt(
    client: Client,
    chart: chart::loader::Chart,
    values: chart::loader::Values,
    opts: &ActionOptions,
) -> Result<Option<Release>, AdoptError> {
    let live = find_live_objects(client.clone(), chart.clone(), values.clone(), opts).await?;
    let Some(example) = live.owned.first().map(ToString::to_string) else {
        return Ok(None);
    };
    let found = live.owned.len();
    tracing::info!(
        release = %opts.name,
        namespace = %opts.namespace,
        found,
        foreign = live.foreign.len(),
        "release has no records but its objects exist; adopting them"
    );
    let mut adopt_opts = opts.clone();
    adopt_opts.disable_hooks = true;
    // Undoing a failed adoption would uninstall the live workload.
    adopt_opts.rollback_on_failure = false;
    adopt_opts.description = Some(format!(
        "Adopted {found} existing objects after the release records were lost"
    ));
    action::install(client, chart, values, &adopt_opts)
        .await
        .map(Some)
        .map_err(|source| AdoptError::Install {
            release: opts.name.clone(),
            namespace: opts.namespace.clone(),
            found,
            example,
            source,
        })
}
