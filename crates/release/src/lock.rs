//! A per-release lock so two actions on one release never interleave, kept on the
//! release's own newest record as the annotation [`LOCK_ANNOTATION`]: no other object
//! and no extra RBAC rule (Go's helm-operator scaffold grants Secrets everywhere, but
//! Leases only in the operator's namespace). The `helm` CLI ignores the annotation.
//!
//! # Protocol
//!
//! The lock of release `R` is held by `H` when the newest record of `R` (highest
//! revision) carries a lock naming `H` that has not expired (`renewed` plus
//! `durationSeconds`).
//!
//! * **Take**: read the newest record's lock and resource version. A live lock of
//!   another holder refuses ([`LockError::Held`]). Otherwise write our lock onto that
//!   record, conditional on the resource version read: of two contenders one write
//!   wins, the other gets [`LockError::Contended`] and reads again.
//! * **No records**: a release without records has nothing to put the lock on; the
//!   lock is taken at once, and its first write (creating revision 1) is atomic on the
//!   record's name, so of two installers only one creates it.
//! * **Hold**: every record the holder writes carries its lock (see
//!   [`crate::driver::WriteMeta`]): a new revision takes the lock along, and an update
//!   of a record locked by another live holder is refused. The holder renews the lock
//!   (a conditional write again) well within its duration.
//! * **Give back**: remove the annotation from the newest record if it still names us;
//!   on a record still `pending-*` that we wrote, leave it there expired instead, so
//!   the next holder can tell a rudder action's leftover from a record the `helm` CLI
//!   (which takes no lock) is still working on.
//! * **Crash**: a dead holder's lock expires `durationSeconds` after its last renewal.
//! * **Lost**: when the newest record names another holder, or carries no lock while
//!   records exist (someone else wrote a newer revision), the lock is lost and renewal
//!   says so ([`LockError::Lost`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use serde_json::{json, Value};

use crate::driver::{selector, Driver, WriteMeta, OWNER_HELM};
use crate::error::Error;

/// The annotation on a release record that holds the release's lock.
pub const LOCK_ANNOTATION: &str = "rudder.dev/lock";

/// Why a lock could not be taken or kept.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else holds a live lock.
    #[error("release {release:?} is locked by {holder:?} until {expires}; retry after that")]
    Held {
        release: String,
        holder: String,
        acquired: Timestamp,
        expires: Timestamp,
    },
    /// Another contender wrote the record between our read and our write.
    #[error("lock for release {0:?} was taken concurrently; retry")]
    Contended(String),
    /// Our lock expired and was taken over, or a newer record was written without it.
    #[error("lock for release {0:?} is no longer held by us")]
    Lost(String),
    /// Reading or writing the record failed.
    #[error("lock for release {release:?}")]
    Storage {
        release: String,
        #[source]
        source: Box<Error>,
    },
}

/// A lock as the annotation stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    pub holder: String,
    pub acquired: Timestamp,
    pub renewed: Timestamp,
    pub duration_seconds: i64,
}

impl LockState {
    /// When the lock lapses unless renewed.
    pub fn expires(&self) -> Timestamp {
        self.renewed
            .checked_add(jiff::SignedDuration::from_secs(self.duration_seconds))
            .unwrap_or(Timestamp::MAX)
    }

    /// A lock of `holder` that lapsed at `at`: one given back on a record an action
    /// left pending (the module's "Give back"), or a crashed holder's.
    pub fn expired(holder: impl Into<String>, at: Timestamp) -> LockState {
        LockState {
            holder: holder.into(),
            acquired: at,
            renewed: at,
            duration_seconds: 0,
        }
    }

    /// Whether the lock still holds at `now`.
    pub(crate) fn is_live(&self, now: Timestamp) -> bool {
        !self.holder.is_empty() && self.expires() > now
    }

    /// The annotation's value: `{"holder":…,"acquired":…,"renewed":…,"durationSeconds":…}`.
    pub fn encode(&self) -> String {
        json!({
            "holder": self.holder,
            "acquired": self.acquired.to_string(),
            "renewed": self.renewed.to_string(),
            "durationSeconds": self.duration_seconds,
        })
        .to_string()
    }

    /// Reads an annotation value; `None` for anything unreadable (treated as no lock,
    /// so a damaged annotation cannot block a release forever).
    pub fn decode(value: &str) -> Option<LockState> {
        let v: Value = serde_json::from_str(value).ok()?;
        let time = |k: &str| v.get(k)?.as_str()?.parse::<Timestamp>().ok();
        Some(LockState {
            holder: v.get("holder")?.as_str()?.to_string(),
            acquired: time("acquired")?,
            renewed: time("renewed")?,
            duration_seconds: v.get("durationSeconds")?.as_i64()?,
        })
    }

    /// The lock in a record's annotations.
    pub fn of(annotations: &BTreeMap<String, String>) -> Option<LockState> {
        annotations
            .get(LOCK_ANNOTATION)
            .and_then(|v| LockState::decode(v))
    }
}

/// Refuses a write for `meta.holder` over a record whose annotations hold another
/// holder's live lock.
pub(crate) fn check_not_held_by_other(
    key: &str,
    annotations: &BTreeMap<String, String>,
    meta: &WriteMeta,
) -> Result<(), Error> {
    let Some(ours) = &meta.holder else {
        return Ok(());
    };
    match LockState::of(annotations) {
        Some(l) if l.holder != *ours && l.is_live(Timestamp::now()) => Err(Error::Locked {
            key: key.to_string(),
            holder: l.holder,
        }),
        _ => Ok(()),
    }
}

/// The record a lock lives on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    pub key: String,
    pub version: i64,
    pub resource_version: Option<String>,
    /// Its status is `pending-*` or `uninstalling`: an action is (or was) at work.
    pub pending: bool,
}

/// Where a release's lock is: its newest record (none for a release without records)
/// and the lock that record carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LockSlot {
    pub record: Option<RecordRef>,
    pub lock: Option<LockState>,
}

/// Where locks are kept.
#[async_trait]
pub trait LockBackend: Send + Sync {
    /// The release's lock slot, read now (possibly from a cache that is at least as
    /// new as this process's own writes).
    async fn read(&self, release: &str) -> Result<LockSlot, LockError>;
    /// The release's lock slot as the API server has it now: after a read from a
    /// cache lost a race, or before acting on what it said of others' writes.
    async fn read_fresh(&self, release: &str) -> Result<LockSlot, LockError> {
        self.read(release).await
    }
    /// Puts `lock` (or, with `None`, no lock) on the slot's record if it is unchanged
    /// since `slot` was read ([`LockError::Contended`] otherwise). A slot without a
    /// record writes nothing.
    async fn write(
        &self,
        release: &str,
        slot: &LockSlot,
        lock: Option<&LockState>,
    ) -> Result<(), LockError>;
}

/// Locks on the newest release record, through a storage driver.
#[derive(Clone)]
pub struct RecordLocks {
    driver: Arc<dyn Driver>,
}

impl RecordLocks {
    pub fn new(driver: Arc<dyn Driver>) -> RecordLocks {
        RecordLocks { driver }
    }
}

fn storage_err(release: &str, e: Error) -> LockError {
    LockError::Storage {
        release: release.to_string(),
        source: Box::new(e),
    }
}

/// The lock slot of a release whose records are `metas`: its newest record.
fn slot_of(metas: Vec<crate::RecordMeta>) -> LockSlot {
    match metas.into_iter().max_by_key(|m| m.version) {
        None => LockSlot::default(),
        Some(m) => LockSlot {
            lock: LockState::of(&m.annotations),
            record: Some(RecordRef {
                pending: m.status.is_under_way(),
                key: m.key,
                version: m.version,
                resource_version: m.resource_version,
            }),
        },
    }
}

#[async_trait]
impl LockBackend for RecordLocks {
    async fn read(&self, release: &str) -> Result<LockSlot, LockError> {
        self.driver
            .query_meta(&selector([("name", release), ("owner", OWNER_HELM)]))
            .await
            .map(slot_of)
            .map_err(|e| storage_err(release, e))
    }

    async fn read_fresh(&self, release: &str) -> Result<LockSlot, LockError> {
        self.driver
            .query_meta_fresh(&selector([("name", release), ("owner", OWNER_HELM)]))
            .await
            .map(slot_of)
            .map_err(|e| storage_err(release, e))
    }

    async fn write(
        &self,
        release: &str,
        slot: &LockSlot,
        lock: Option<&LockState>,
    ) -> Result<(), LockError> {
        let Some(record) = &slot.record else {
            return Ok(());
        };
        let value = lock.map(LockState::encode);
        match self
            .driver
            .annotate(
                &record.key,
                record.resource_version.as_deref(),
                LOCK_ANNOTATION,
                value.as_deref(),
            )
            .await
        {
            Ok(()) => Ok(()),
            // Changed or deleted since we read it: read again.
            Err(Error::Conflict(_)) | Err(Error::NotFound(_)) => {
                Err(LockError::Contended(release.to_string()))
            }
            Err(e) => Err(storage_err(release, e)),
        }
    }
}

/// Shares one backend between several lock owners (e.g. in tests).
#[async_trait]
impl<T: LockBackend + ?Sized> LockBackend for Arc<T> {
    async fn read(&self, release: &str) -> Result<LockSlot, LockError> {
        (**self).read(release).await
    }

    async fn read_fresh(&self, release: &str) -> Result<LockSlot, LockError> {
        (**self).read_fresh(release).await
    }

    async fn write(
        &self,
        release: &str,
        slot: &LockSlot,
        lock: Option<&LockState>,
    ) -> Result<(), LockError> {
        (**self).write(release, slot, lock).await
    }
}

/// A lock we hold: the release, our lock as last written, and the record it was on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHandle {
    pub release: String,
    pub state: LockState,
    pub slot: LockSlot,
    /// The revision of the newest record when the lock was taken, if it carried no
    /// lock then: whoever wrote it last does not take this lock (the `helm` CLI).
    pub found_unlocked: Option<i64>,
}

/// How often a conditional write is retried after losing a race before giving up.
const RETRIES: usize = 3;
/// How often, and how far apart, a read that shows an older newest record than one
/// the holder wrote is repeated before the lock gives up (a lagging cache or list).
const STALE_READS: u32 = 5;
const STALE_READ_PAUSE: Duration = Duration::from_millis(200);

/// Takes, renews and gives back per-release locks for one holder identity.
pub struct ReleaseLocks<B> {
    backend: B,
    holder: String,
    duration: Duration,
}

impl<B: LockBackend> ReleaseLocks<B> {
    /// Locks held as `holder` (e.g. `host/pid/random`), valid `duration` after each
    /// renewal.
    pub fn new(backend: B, holder: impl Into<String>, duration: Duration) -> Self {
        ReleaseLocks {
            backend,
            holder: holder.into(),
            duration,
        }
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn holder(&self) -> &str {
        &self.holder
    }

    fn duration_seconds(&self) -> i64 {
        i64::try_from(self.duration.as_secs().max(1)).unwrap_or(i64::MAX)
    }

    /// Takes the lock now, or fails with [`LockError::Held`].
    pub async fn try_acquire(&self, release: &str) -> Result<LockHandle, LockError> {
        self.try_acquire_at(release, Timestamp::now(), None).await
    }

    /// Takes the lock as of `now`. A lock of our own identity is taken again (we
    /// restarted); an expired lock, or the lock of `dead` (a holder known to be gone),
    /// is taken over.
    pub async fn try_acquire_at(
        &self,
        release: &str,
        now: Timestamp,
        dead: Option<&str>,
    ) -> Result<LockHandle, LockError> {
        let state = LockState {
            holder: self.holder.clone(),
            acquired: now,
            renewed: now,
            duration_seconds: self.duration_seconds(),
        };
        // A read from a cache may be behind others' writes: a lock it shows is
        // confirmed, and a write that lost a race tried once more, on a fresh read.
        let mut fresh = false;
        loop {
            let slot = if fresh {
                self.backend.read_fresh(release).await?
            } else {
                self.backend.read(release).await?
            };
            if let Some(current) = &slot.lock {
                let ours = current.holder == self.holder;
                let gone = dead == Some(current.holder.as_str());
                if !ours && !gone && current.is_live(now) {
                    if !fresh {
                        fresh = true;
                        continue;
                    }
                    return Err(LockError::Held {
                        release: release.to_string(),
                        holder: current.holder.clone(),
                        acquired: current.acquired,
                        expires: current.expires(),
                    });
                }
            }
            match self.backend.write(release, &slot, Some(&state)).await {
                Err(LockError::Contended(_)) if !fresh => fresh = true,
                Err(e) => return Err(e),
                Ok(()) => {
                    return Ok(LockHandle {
                        release: release.to_string(),
                        state,
                        found_unlocked: match (&slot.record, &slot.lock) {
                            (Some(newest), None) => Some(newest.version),
                            _ => None,
                        },
                        slot,
                    })
                }
            }
        }
    }

    /// The slot of `release`, whose newest record is at least revision `newest` (one
    /// the holder wrote itself): a read that shows an older one is behind (a cache, or
    /// a list a server answered from a lagging cache) and is repeated from the server,
    /// so the lock never lands on a record that is no longer the newest. `fresh`
    /// reads from the server from the start.
    async fn read_at_least(
        &self,
        release: &str,
        newest: i64,
        fresh: bool,
    ) -> Result<LockSlot, LockError> {
        let mut slot = if fresh {
            self.backend.read_fresh(release).await?
        } else {
            self.backend.read(release).await?
        };
        let mut tries = 0;
        while slot.record.as_ref().is_some_and(|r| r.version < newest) {
            tries += 1;
            if tries > STALE_READS {
                return Err(LockError::Contended(release.to_string()));
            }
            if tries > 1 {
                tokio::time::sleep(STALE_READ_PAUSE).await;
            }
            slot = self.backend.read_fresh(release).await?;
        }
        Ok(slot)
    }

    /// Extends a held lock; [`LockError::Lost`] if it was taken over meanwhile.
    pub async fn renew(&self, handle: &LockHandle) -> Result<LockHandle, LockError> {
        self.renew_at(handle, Timestamp::now()).await
    }

    /// Extends a held lock as of `now`, on whichever record is newest now (the holder
    /// may have written a new revision since).
    pub async fn renew_at(
        &self,
        handle: &LockHandle,
        now: Timestamp,
    ) -> Result<LockHandle, LockError> {
        let newest = handle.slot.record.as_ref().map_or(0, |r| r.version);
        self.renew_written(handle, now, newest).await
    }

    /// [`ReleaseLocks::renew_at`] by a holder that has written revision `newest`
    /// since: the lock is renewed on that record or a newer one, never on an older
    /// one a lagging read still shows as the newest (that would leave the real newest
    /// record with a lock that expires while the holder still works).
    pub async fn renew_written(
        &self,
        handle: &LockHandle,
        now: Timestamp,
        newest: i64,
    ) -> Result<LockHandle, LockError> {
        let lost = || LockError::Lost(handle.release.clone());
        let mut fresh = false;
        for _ in 0..RETRIES {
            let slot = self.read_at_least(&handle.release, newest, fresh).await?;
            match &slot.lock {
                Some(l) if l.holder == self.holder => {}
                // The release has no records (any more): nothing to hold on to, and
                // nothing anyone could take from us.
                None if slot.record.is_none() => {
                    return Ok(LockHandle {
                        slot,
                        ..handle.clone()
                    })
                }
                // Lost, unless a read from a cache was behind: ask the server.
                _ if !fresh => {
                    fresh = true;
                    continue;
                }
                _ => return Err(lost()),
            }
            let state = LockState {
                renewed: now,
                ..handle.state.clone()
            };
            match self
                .backend
                .write(&handle.release, &slot, Some(&state))
                .await
            {
                Ok(()) => {
                    return Ok(LockHandle {
                        release: handle.release.clone(),
                        state,
                        slot,
                        found_unlocked: handle.found_unlocked,
                    })
                }
                Err(LockError::Contended(_)) => fresh = true,
                Err(e) => return Err(e),
            }
        }
        Err(LockError::Contended(handle.release.clone()))
    }

    /// Gives the lock back. Succeeds if it is already gone or was taken over.
    pub async fn release(&self, handle: LockHandle) -> Result<(), LockError> {
        let newest = handle.slot.record.as_ref().map_or(0, |r| r.version);
        self.release_written(handle, newest).await
    }

    /// [`ReleaseLocks::release`] by a holder that has written revision `newest`.
    pub async fn release_written(&self, handle: LockHandle, newest: i64) -> Result<(), LockError> {
        self.give_back(handle, newest).await
    }

    /// Removes our lock from the newest record (at least revision `newest`), if it is
    /// still ours. A record still `pending-*` that we wrote or found locked (the
    /// action's last write failed) keeps the lock, expired: whoever comes next takes
    /// it at once and sees that a rudder action left the record pending. One that
    /// carried no lock when we took it (another tool at work) gets none back.
    async fn give_back(&self, handle: LockHandle, newest: i64) -> Result<(), LockError> {
        let mut fresh = false;
        for _ in 0..RETRIES {
            let slot = self.read_at_least(&handle.release, newest, fresh).await?;
            match &slot.lock {
                Some(l) if l.holder == self.holder => {}
                _ => return Ok(()),
            }
            let expired = slot
                .record
                .as_ref()
                .filter(|r| r.pending && handle.found_unlocked != Some(r.version))
                .map(|_| LockState {
                    acquired: handle.state.acquired,
                    ..LockState::expired(&self.holder, Timestamp::now())
                });
            match self
                .backend
                .write(&handle.release, &slot, expired.as_ref())
                .await
            {
                Err(LockError::Contended(_)) => fresh = true,
                other => return other,
            }
        }
        Err(LockError::Contended(handle.release))
    }
}

/// Locks in process memory, for the unit tests: one slot per release, always there,
/// with a version for conditional writes.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct MemoryLocks {
    inner: std::sync::Mutex<BTreeMap<String, (u64, Option<LockState>)>>,
}

#[cfg(test)]
impl MemoryLocks {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (u64, Option<LockState>)>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
#[async_trait]
impl LockBackend for MemoryLocks {
    async fn read(&self, release: &str) -> Result<LockSlot, LockError> {
        let inner = self.lock();
        let (version, lock) = inner.get(release).cloned().unwrap_or((0, None));
        Ok(LockSlot {
            record: Some(RecordRef {
                key: release.to_string(),
                version: 0,
                resource_version: Some(version.to_string()),
                pending: false,
            }),
            lock,
        })
    }

    async fn write(
        &self,
        release: &str,
        slot: &LockSlot,
        lock: Option<&LockState>,
    ) -> Result<(), LockError> {
        let mut inner = self.lock();
        let entry = inner.entry(release.to_string()).or_insert((0, None));
        let read = slot
            .record
            .as_ref()
            .and_then(|r| r.resource_version.clone());
        if read != Some(entry.0.to_string()) {
            return Err(LockError::Contended(release.to_string()));
        }
        *entry = (entry.0 + 1, lock.cloned());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::MemoryDriver;
    use crate::record::{Release, Status};
    use crate::Storage;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    fn locks<B: LockBackend>(holder: &str, backend: B) -> ReleaseLocks<B> {
        ReleaseLocks::new(backend, holder, Duration::from_secs(30))
    }

    async fn record(storage: &Storage, version: i64) {
        let mut rel = Release {
            name: "web".into(),
            namespace: "ns".into(),
            version,
            ..Release::default()
        };
        rel.set_status(Status::Deployed, "Install complete");
        storage.create(&rel).await.unwrap();
    }

    #[test]
    fn lock_annotations_round_trip_and_damage_reads_as_none() {
        let l = LockState {
            holder: "pod-a/1/ff".into(),
            acquired: at(0),
            renewed: at(5),
            duration_seconds: 30,
        };
        assert_eq!(LockState::decode(&l.encode()), Some(l.clone()));
        assert_eq!(l.expires(), at(35));
        assert!(l.is_live(at(34)) && !l.is_live(at(35)));
        assert_eq!(LockState::decode("not json"), None);
        assert_eq!(LockState::decode(r#"{"holder":"x"}"#), None);
    }

    #[tokio::test]
    async fn the_lock_lives_on_the_newest_record() {
        let driver = Arc::new(MemoryDriver::new());
        let storage = Storage::new(driver.clone());
        let backend = RecordLocks::new(driver.clone());
        let a = locks("a", backend.clone());
        let b = locks("b", backend.clone());
        // No records: taken at once by anyone, nothing written.
        let virtual_lock = a.try_acquire_at("web", at(0), None).await.unwrap();
        assert_eq!(virtual_lock.slot.record, None);
        b.try_acquire_at("web", at(0), None).await.unwrap();

        record(&storage, 1).await;
        record(&storage, 2).await;
        let held = a.try_acquire_at("web", at(0), None).await.unwrap();
        assert_eq!(held.slot.record.as_ref().map(|r| r.version), Some(2));
        let on_v2 = driver.annotations_of("sh.helm.release.v1.web.v2").unwrap();
        assert!(on_v2[LOCK_ANNOTATION].contains("\"holder\":\"a\""));
        assert!(driver
            .annotations_of("sh.helm.release.v1.web.v1")
            .unwrap()
            .is_empty());
        match b.try_acquire_at("web", at(10), None).await {
            Err(LockError::Held {
                holder, expires, ..
            }) => assert_eq!((holder.as_str(), expires), ("a", at(30))),
            other => panic!("expected Held, got {other:?}"),
        }
        // Renewal pushes expiry out; past it, b takes over and a has lost it.
        let held = a.renew_at(&held, at(20)).await.unwrap();
        assert!(b.try_acquire_at("web", at(40), None).await.is_err());
        let taken = b.try_acquire_at("web", at(51), None).await.unwrap();
        assert!(matches!(
            a.renew_at(&held, at(52)).await,
            Err(LockError::Lost(_))
        ));
        // a's release must not drop b's lock; b's does.
        a.release(held).await.unwrap();
        assert!(backend.read("web").await.unwrap().lock.is_some());
        b.release(taken).await.unwrap();
        assert_eq!(backend.read("web").await.unwrap().lock, None);
    }

    #[tokio::test]
    async fn a_lock_given_back_on_a_pending_record_stays_expired() {
        let driver = Arc::new(MemoryDriver::new());
        let storage = Storage::new(driver.clone());
        record(&storage, 1).await;
        let mut pending = storage.get("web", 1).await.unwrap();
        pending.version = 2;
        pending.set_status(Status::PendingUpgrade, "Preparing upgrade");
        storage.create(&pending).await.unwrap();
        let backend = RecordLocks::new(driver.clone());
        // `helm upgrade` at work: its record carries no lock, and gets none back.
        let a = locks("a", backend.clone());
        let held = a.try_acquire_at("web", at(0), None).await.unwrap();
        assert_eq!(held.found_unlocked, Some(2));
        assert_eq!(held.slot.record.as_ref().map(|r| r.pending), Some(true));
        a.release(held).await.unwrap();
        assert_eq!(backend.read("web").await.unwrap().lock, None);
        // A rudder action whose last write failed: its record stays pending with its
        // lock, which no longer holds anyone off.
        let key = "sh.helm.release.v1.web.v2";
        let annotation = LockState::expired("crashed", at(0)).encode();
        driver
            .annotate(key, None, LOCK_ANNOTATION, Some(&annotation))
            .await
            .unwrap();
        let held = a.try_acquire_at("web", at(100), None).await.unwrap();
        assert_eq!(held.found_unlocked, None);
        a.release(held).await.unwrap();
        let left = backend
            .read("web")
            .await
            .unwrap()
            .lock
            .expect("expired lock");
        assert_eq!(left.holder, "a");
        assert!(!left.is_live(Timestamp::now()));
        let b = locks("b", backend.clone());
        let taken = b
            .try_acquire_at("web", Timestamp::now(), None)
            .await
            .unwrap();
        assert_eq!(
            taken.slot.lock.as_ref().map(|l| l.holder.as_str()),
            Some("a")
        );
    }

    #[tokio::test]
    async fn a_newer_record_without_the_lock_means_it_was_lost() {
        let driver = Arc::new(MemoryDriver::new());
        let storage = Storage::new(driver.clone());
        record(&storage, 1).await;
        let a = locks("a", RecordLocks::new(driver.clone()));
        let held = a.try_acquire_at("web", at(0), None).await.unwrap();
        // `helm upgrade` writes revision 2, knowing nothing of the lock.
        record(&storage, 2).await;
        assert!(matches!(
            a.renew_at(&held, at(5)).await,
            Err(LockError::Lost(_))
        ));
    }

    #[tokio::test]
    async fn a_dead_holder_is_taken_over_and_our_own_lock_is_reentrant() {
        let driver = Arc::new(MemoryDriver::new());
        record(&Storage::new(driver.clone()), 1).await;
        let backend = RecordLocks::new(driver);
        let a = locks("a", backend.clone());
        let b = locks("b", backend.clone());
        a.try_acquire_at("web", at(0), None).await.unwrap();
        a.try_acquire_at("web", at(1), None).await.unwrap();
        assert!(b.try_acquire_at("web", at(2), Some("other")).await.is_err());
        b.try_acquire_at("web", at(2), Some("a")).await.unwrap();
    }

    #[tokio::test]
    async fn writes_of_another_live_holder_are_refused() {
        let driver = Arc::new(MemoryDriver::new());
        let storage = Storage::new(driver.clone());
        record(&storage, 1).await;
        let a = locks("a", RecordLocks::new(driver.clone()));
        a.try_acquire("web").await.unwrap();
        let mut rel = storage.get("web", 1).await.unwrap();
        rel.set_status(Status::Failed, "stale writer");
        let meta = WriteMeta {
            holder: Some("b".into()),
            ..WriteMeta::default()
        };
        let err = driver
            .update_with("sh.helm.release.v1.web.v1", &rel, &meta)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Locked { ref holder, .. } if holder == "a"),
            "{err}"
        );
        // Unlocked writers (the helm CLI's way) are not stopped.
        storage.update(&rel).await.unwrap();
    }

    /// Answers reads with an older view than the server has, as a lagging cache (or
    /// a list served from one) would: only fresh reads see every record.
    struct Lagging {
        records: RecordLocks,
        behind: LockSlot,
    }

    #[async_trait]
    impl LockBackend for Lagging {
        async fn read(&self, _: &str) -> Result<LockSlot, LockError> {
            Ok(self.behind.clone())
        }

        async fn read_fresh(&self, release: &str) -> Result<LockSlot, LockError> {
            self.records.read(release).await
        }

        async fn write(
            &self,
            release: &str,
            slot: &LockSlot,
            lock: Option<&LockState>,
        ) -> Result<(), LockError> {
            self.records.write(release, slot, lock).await
        }
    }

    #[tokio::test]
    async fn a_lagging_read_never_puts_the_lock_on_an_older_record() {
        let driver = Arc::new(MemoryDriver::new());
        let storage = Storage::new(driver.clone());
        record(&storage, 1).await;
        let records = RecordLocks::new(driver.clone());
        let a = locks("a", records.clone());
        let held = a.try_acquire_at("web", at(0), None).await.unwrap();
        // The holder writes revision 2 (carrying its lock); reads still show v1.
        let mut v2 = Release {
            name: "web".into(),
            namespace: "ns".into(),
            version: 2,
            ..Release::default()
        };
        v2.set_status(Status::PendingUpgrade, "Preparing upgrade");
        let meta = WriteMeta {
            annotations: BTreeMap::from([(LOCK_ANNOTATION.to_string(), held.state.encode())]),
            holder: Some("a".into()),
            ..WriteMeta::default()
        };
        driver
            .create_with("sh.helm.release.v1.web.v2", &v2, &meta)
            .await
            .unwrap();
        let lagging = locks(
            "a",
            Lagging {
                records,
                behind: held.slot.clone(),
            },
        );
        let renewed = lagging.renew_written(&held, at(10), 2).await.unwrap();
        assert_eq!(renewed.slot.record.as_ref().map(|r| r.version), Some(2));
        let on_v2 = driver.annotations_of("sh.helm.release.v1.web.v2").unwrap();
        assert!(
            on_v2[LOCK_ANNOTATION].contains("\"renewed\":\"2023-11-14T22:13:30Z\""),
            "{on_v2:?}"
        );
        // And a lock a lagging read shows as someone else's is confirmed first.
        let b = locks(
            "b",
            Lagging {
                records: RecordLocks::new(driver.clone()),
                behind: LockSlot {
                    record: held.slot.record.clone(),
                    lock: Some(LockState {
                        holder: "gone".into(),
                        ..held.state.clone()
                    }),
                },
            },
        );
        match b.try_acquire_at("web", at(11), None).await {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, "a"),
            other => panic!("expected a's lock, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn memory_locks_are_conditional() {
        let backend = MemoryLocks::default();
        let slot = backend.read("x").await.unwrap();
        backend.write("x", &slot, None).await.unwrap();
        assert!(matches!(
            backend.write("x", &slot, None).await,
            Err(LockError::Contended(_))
        ));
    }
}
