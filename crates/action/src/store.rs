//! Reading and writing release records the way every verb does: refusing a pending
//! release, the deployed revision, marking records failed or superseded, turning a
//! crashed action's leftover into `failed`, and purging a release's history.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use release::record::{Release, Status};
use release::{RecordMeta, Storage};

use crate::error::{Error, Result};
use crate::lock::Held;

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
        tracing::warn!(release = %rel.name, error = %release::api_error::Chain(&e), "cannot record the failed release; the next action recovers it");
    }
    err
}

/// How long a `pending-*` record that a tool which does not take rudder's lock
/// (the `helm` CLI) wrote is taken for that tool still at work: Helm's default
/// `--timeout`, the longest a `helm` action waits on hooks and resources unless told
/// otherwise.
pub(crate) const FOREIGN_PENDING_GRACE: Duration = Duration::from_secs(5 * 60);

/// Repairs what crashed actions left in a release's history; the caller holds the
/// lock, so no live rudder action owns any record. Found from the records' labels
/// alone: every `pending-*` or `uninstalling` record (not only the newest) becomes
/// `failed`, and of several `deployed` records (a crash between writing a new one and
/// superseding the old) all but the newest become `superseded`. Only those records
/// are decoded. Returns the newest record changed, `None` when none needed it.
///
/// A newest record that carried no lock when `held` was taken was written last by a
/// tool that does not take rudder's lock; if it is pending and was written less than
/// [`FOREIGN_PENDING_GRACE`] ago, that tool may still be at work (a `helm rollback`
/// between its first and last record write), and this fails with
/// [`Error::PendingElsewhere`] rather than mark its record failed. A crashed rudder
/// action's record carries its dead holder's lock and is recovered at once.
pub(crate) async fn recover_leftover(
    store: &Storage,
    name: &str,
    held: &Held,
) -> Result<Option<Release>> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    if let Some(busy) = pending_elsewhere(&history, held.found_unlocked(), Timestamp::now()) {
        return Err(busy);
    }
    let newest_deployed = history
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .map(|m| m.version)
        .max();
    let mut repaired = None;
    for meta in &history {
        let leftover = meta.status.is_under_way();
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
        match save(store, &rel).await {
            // The action that deployed the newer one supersedes it after giving its
            // lock back: whichever write comes second finds it changed, and done.
            Err(Error::Storage {
                source: release::Error::Conflict(_),
                ..
            }) if stale_deployed && !still_deployed(store, name, meta.version).await? => continue,
            other => other?,
        }
        repaired = Some(rel);
    }
    Ok(repaired)
}

/// [`Error::PendingElsewhere`] when the newest record is revision `found_unlocked`
/// (it carried no lock when ours was taken), is pending, and was written less than
/// [`FOREIGN_PENDING_GRACE`] before `now`. A record without a readable write time
/// (Helm's `modifiedAt`, else `createdAt` label) counts as old.
fn pending_elsewhere(
    history: &[RecordMeta],
    found_unlocked: Option<i64>,
    now: Timestamp,
) -> Option<Error> {
    let newest = history.iter().max_by_key(|m| m.version)?;
    if Some(newest.version) != found_unlocked || !newest.status.is_under_way() {
        return None;
    }
    let written = ["modifiedAt", "createdAt"]
        .iter()
        .find_map(|k| newest.labels.get(*k)?.parse::<i64>().ok())
        .and_then(|secs| Timestamp::from_second(secs).ok())?;
    let until = written.checked_add(FOREIGN_PENDING_GRACE).ok()?;
    (until > now).then(|| Error::PendingElsewhere {
        release: newest.name.clone(),
        version: newest.version,
        status: newest.status.to_string(),
        recover_after: until.to_string(),
    })
}

/// Whether revision `version`'s labels still say `deployed`.
async fn still_deployed(store: &Storage, name: &str, version: i64) -> Result<bool> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    Ok(history
        .iter()
        .any(|m| m.version == version && m.status == Status::Deployed))
}

/// The record of revision `version`: one of `known` (already decoded by the
/// caller), else read.
async fn get_known(
    store: &Storage,
    name: &str,
    version: i64,
    known: &[&Release],
) -> Result<Release> {
    match known.iter().find(|r| r.version == version) {
        Some(r) => Ok((*r).clone()),
        None => store
            .get(name, version)
            .await
            .map_err(|e| Error::storage(name, e)),
    }
}

/// Marks every deployed revision other than `keep` superseded, found by the
/// records' labels; only those records are read (or taken from `known`).
pub(crate) async fn supersede_others(
    store: &Storage,
    name: &str,
    keep: i64,
    known: &[&Release],
) -> Result<()> {
    let history = store
        .history_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    for meta in history {
        if meta.version == keep || meta.status != Status::Deployed {
            continue;
        }
        let mut old = get_known(store, name, meta.version, known).await?;
        // Helm changes only the status; the description ("Upgrade complete", ...)
        // stays what it was.
        old.info.get_or_insert_with(Default::default).status = Some(Status::Superseded);
        save(store, &old).await?;
    }
    Ok(())
}

/// Records `rel` deployed, then supersedes the others (`known`: records the caller
/// has decoded already). In this order a crash in between leaves two deployed
/// records (the newest wins), never none. Writing `rel` is the action's last write
/// under its lock, so it gives the lock back (`held`); superseding follows, as the
/// recovery every later action starts with would do it (a race with one is settled
/// by the records' resourceVersions: one write wins, both say "superseded").
pub(crate) async fn finish_deployed(
    store: &Storage,
    rel: &mut Release,
    description: &str,
    held: &Held,
    known: &[&Release],
) -> Result<()> {
    rel.set_status(Status::Deployed, description);
    held.release_with_next_write();
    save(store, rel).await?;
    if let Err(e) = supersede_others(store, &rel.name, rel.version, known).await {
        tracing::warn!(release = %rel.name, error = %release::api_error::Chain(&e), "cannot mark older revisions superseded; the newest deployed revision wins");
    }
    Ok(())
}

/// The deployed revision, or `None`; one of `known` when it is among them, so a
/// record the caller has decoded is not read again.
pub(crate) async fn deployed_known(
    store: &Storage,
    name: &str,
    known: &[&Release],
) -> Result<Option<Release>> {
    let meta = store
        .deployed_meta(name)
        .await
        .map_err(|e| Error::storage(name, e))?;
    match meta {
        Some(m) => get_known(store, name, m.version, known).await.map(Some),
        None => Ok(None),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: i64, status: Status, label: (&str, i64)) -> RecordMeta {
        RecordMeta {
            key: release::make_key("p", version),
            name: "p".into(),
            version,
            status,
            labels: [(label.0.to_string(), label.1.to_string())].into(),
            ..RecordMeta::default()
        }
    }

    #[test]
    fn only_a_recent_pending_newest_record_without_our_lock_is_someone_elses() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let secs = now.as_second();
        let history = [
            meta(1, Status::Deployed, ("modifiedAt", secs - 900)),
            meta(2, Status::PendingUpgrade, ("createdAt", secs - 10)),
        ];
        let busy = pending_elsewhere(&history, Some(2), now).expect("helm at work");
        assert!(
            matches!(busy, Error::PendingElsewhere { version: 2, ref recover_after, .. }
                if recover_after.as_str() == "2027-01-15T08:04:50Z"),
            "{busy}"
        );
        // Our lock was on it (a crashed rudder action), or it is not the newest.
        assert!(pending_elsewhere(&history, None, now).is_none());
        assert!(pending_elsewhere(&history, Some(1), now).is_none());
        // Written longer ago than Helm's default timeout: a leftover.
        let old = [meta(2, Status::PendingUpgrade, ("createdAt", secs - 301))];
        assert!(pending_elsewhere(&old, Some(2), now).is_none());
        // modifiedAt (an update) counts over createdAt; no time at all counts as old.
        let mut updated = meta(2, Status::Uninstalling, ("createdAt", secs - 3_000));
        updated
            .labels
            .insert("modifiedAt".into(), (secs - 5).to_string());
        assert!(pending_elsewhere(&[updated], Some(2), now).is_some());
        let untimed = [meta(2, Status::PendingInstall, ("team", 1))];
        assert!(pending_elsewhere(&untimed, Some(2), now).is_none());
        // Not pending.
        let done = [meta(2, Status::Failed, ("modifiedAt", secs))];
        assert!(pending_elsewhere(&done, Some(2), now).is_none());
    }
}
