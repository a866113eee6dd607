//! Reading and writing release records the way every verb does: refusing a pending
//! release, the deployed revision, marking records failed or superseded, turning a
//! crashed action's leftover into `failed`, and purging a release's history.

use release::record::{Release, Status};
use release::Storage;

use crate::error::{Error, Result};

pub(crate) async fn save(store: &Storage, rel: &Release) -> Result<()> {
    store
        .update(rel)
        .await
        .map_err(|e| Error::storage(&rel.name, e))
}

/// Marks `rel` failed with `description`, then returns `err`.
pub(crate) async fn fail(
    store: &Storage,
    rel: &mut Release,
    description: String,
    err: Error,
) -> Error {
    rel.set_status(Status::Failed, description);
    if let Err(e) = save(store, rel).await {
        tracing::warn!(release = %rel.name, error = %e, "cannot record the failed release; the next action recovers it");
    }
    err
}

/// Repairs what crashed actions left in a release's history; the caller holds the
/// lock, so no live action owns any record. Found from the records' labels alone:
/// every `pending-*` or `uninstalling` record (not only the newest) becomes `failed`,
/// and of several `deployed` records (a crash between writing a new one and
/// superseding the old) all but the newest become `superseded`. Only those records
/// are decoded. Returns the newest record changed, `None` when none needed it.
pub(crate) async fn recover_leftover(store: &Storage, name: &str) -> Result<Option<Release>> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    let newest_deployed = history
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .map(|m| m.version)
        .max();
    let mut repaired = None;
    for meta in &history {
        let leftover = meta.status.is_pending() || meta.status == Status::Uninstalling;
        let stale_deployed =
            meta.status == Status::Deployed && Some(meta.version) != newest_deployed;
        if !leftover && !stale_deployed {
            continue;
        }
        let mut rel = store
            .get(name, meta.version)
            .await
            .map_err(|e| Error::storage(name, e))?;
        if leftover {
            let old = rel
                .info
                .as_ref()
                .map(|i| i.description.clone())
                .unwrap_or_default();
            tracing::warn!(release = %name, version = rel.version, status = %meta.status, "recovering a release left behind by an interrupted action");
            rel.set_status(Status::Failed, format!("interrupted: {old}"));
        } else {
            tracing::warn!(release = %name, version = rel.version, "an interrupted action left two deployed revisions; marking the older one superseded");
            rel.info.get_or_insert_with(Default::default).status = Some(Status::Superseded);
        }
        save(store, &rel).await?;
        repaired = Some(rel);
    }
    Ok(repaired)
}

/// Marks every deployed revision other than `keep` superseded.
pub(crate) async fn supersede_others(store: &Storage, name: &str, keep: i64) -> Result<()> {
    let history = store
        .history(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for mut old in history {
        if old.version != keep && old.status() == Status::Deployed {
            // Helm changes only the status; the description ("Upgrade complete", ...)
            // stays what it was.
            old.info.get_or_insert_with(Default::default).status = Some(Status::Superseded);
            save(store, &old).await?;
        }
    }
    Ok(())
}

/// Records `rel` deployed, then supersedes the others. In this order a crash in
/// between leaves two deployed records (the newest wins), never none.
pub(crate) async fn finish_deployed(
    store: &Storage,
    rel: &mut Release,
    description: &str,
) -> Result<()> {
    rel.set_status(Status::Deployed, description);
    save(store, rel).await?;
    if let Err(e) = supersede_others(store, &rel.name, rel.version).await {
        tracing::warn!(release = %rel.name, error = %e, "cannot mark older revisions superseded; the newest deployed revision wins");
    }
    Ok(())
}

/// The newest revision, refusing while another action is pending on it.
pub(crate) async fn current(store: &Storage, name: &str) -> Result<Release> {
    let last = store
        .last(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.to_string(),
        })?;
    if last.status().is_pending() {
        return Err(Error::InUse {
            release: name.to_string(),
            version: last.version,
            status: last.status().to_string(),
        });
    }
    Ok(last)
}

/// The deployed revision, or [`Error::NotDeployed`].
pub(crate) async fn deployed(store: &Storage, name: &str) -> Result<Release> {
    store
        .deployed(name)
        .await
        .map_err(|e| Error::storage(name, e))?
        .ok_or_else(|| Error::NotDeployed {
            release: name.to_string(),
        })
}

/// Deletes every record of the release.
pub(crate) async fn purge(store: &Storage, name: &str) -> Result<()> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for meta in history {
        store
            .delete(name, meta.version)
            .await
            .map_err(|e| Error::storage(name, e))?;
    }
    Ok(())
}
