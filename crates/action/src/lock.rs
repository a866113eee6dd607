//! The per-release lock every action holds: an annotation on the release's newest
//! record (see `release::lock` for the protocol), renewed in the background while the
//! action runs and carried by every record the action writes, so two actions on one
//! release never interleave. [`crate::ActionConfig::with_lock`] is how verbs take it.
//!
//! Holder identities are `host/pid/random`. That lets a restarted process recover fast
//! instead of waiting for the lock to expire: a holder on this host whose process is
//! gone (or whose pid is ours but whose identity this process never handed out, i.e. a
//! previous incarnation in a container restarted as pid 1) is dead, and its lock is
//! taken over at once.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use release::lock::{LockBackend, LockError, LockHandle, LockState, ReleaseLocks, LOCK_ANNOTATION};

use crate::error::{Error, Result};

/// How long a lock stays valid after each renewal.
pub(crate) const LOCK_DURATION: Duration = Duration::from_secs(30);
/// How often a held lock is renewed.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(10);

/// Identities this process holds right now; a same-pid holder not in here is dead.
fn live() -> &'static Mutex<HashSet<String>> {
    static LIVE: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

fn with_live<T>(f: impl FnOnce(&mut HashSet<String>) -> T) -> T {
    let mut set = live().lock().unwrap_or_else(|e| e.into_inner());
    f(&mut set)
}

/// This machine's host name (the pod name inside Kubernetes).
pub fn hostname() -> String {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string())
    })
    .clone()
}

/// A fresh holder identity: `host/pid/random`.
pub(crate) fn new_identity() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!(
        "{}/{}/{:08x}",
        hostname(),
        std::process::id(),
        h.finish() as u32
    )
}

/// Splits `host/pid/random`; `None` for identities of another shape.
fn parse_identity(holder: &str) -> Option<(&str, u32)> {
    let mut parts = holder.rsplitn(3, '/');
    let _suffix = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let host = parts.next()?;
    Some((host, pid))
}

fn pid_alive(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    if !proc.join("self").exists() {
        // No procfs: we cannot tell, so assume alive and let the Lease expire.
        return true;
    }
    proc.join(pid.to_string()).exists()
}

/// Whether the holder is a process on this host that no longer runs.
pub(crate) fn holder_is_dead(holder: &str) -> bool {
    let Some((host, pid)) = parse_identity(holder) else {
        return false;
    };
    if host != hostname() {
        return false;
    }
    if pid == std::process::id() {
        return !with_live(|l| l.contains(holder));
    }
    !pid_alive(pid)
}

/// Where an action's locks live: on the release's records (see `release::lock`).
pub(crate) type Backend = Arc<dyn LockBackend>;

/// The lock as the action's record writes carry it: the holder, the lock as last
/// written, and the newest revision it is on (older records are written without it,
/// so superseded revisions do not keep a stale lock).
pub(crate) struct LockCell {
    holder: String,
    state: Mutex<LockState>,
    newest: AtomicI64,
    /// The action's next write of the newest record is its last: it leaves the lock
    /// out, giving it back without a write of its own.
    releasing: AtomicBool,
    /// That write happened: the lock is given back.
    released: AtomicBool,
    /// The newest record when the lock was taken, if it carried no lock: whoever
    /// wrote it last does not take rudder's lock (the `helm` CLI), so a `pending-*`
    /// status on it may be that tool at work rather than a crashed action's leftover.
    found_unlocked: Option<i64>,
}

impl LockCell {
    fn state(&self) -> LockState {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_state(&self, state: LockState) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// The holder this lock is for.
    pub(crate) fn holder(&self) -> &str {
        &self.holder
    }

    /// Whether a write of revision `version` is a write of the newest record, the
    /// one the lock lives on (then it must not overwrite another holder's lock).
    pub(crate) fn on_newest(&self, version: i64) -> bool {
        version >= self.newest.load(Ordering::SeqCst)
    }

    /// The lock annotation a write of revision `version` carries, if any: the newest
    /// record's, unless this write gives the lock back.
    pub(crate) fn annotation(&self, version: i64) -> Option<(String, String)> {
        (self.on_newest(version) && !self.releasing.load(Ordering::SeqCst))
            .then(|| (LOCK_ANNOTATION.to_string(), self.state().encode()))
    }

    /// Revision `version` was written (with the lock, or giving it back).
    pub(crate) fn written(&self, version: i64) {
        if self.on_newest(version) && self.releasing.load(Ordering::SeqCst) {
            self.released.store(true, Ordering::SeqCst);
        }
        self.newest.fetch_max(version, Ordering::SeqCst);
    }

    /// The newest revision the holder has written (or found) with the lock.
    fn newest(&self) -> i64 {
        self.newest.load(Ordering::SeqCst)
    }
}

/// A held release lock; give it back with [`ReleaseLock::release`].
pub(crate) struct ReleaseLock {
    locks: Arc<ReleaseLocks<Backend>>,
    handle: Arc<Mutex<LockHandle>>,
    lost: Arc<AtomicBool>,
    cell: Arc<LockCell>,
    renewer: tokio::task::JoinHandle<()>,
    identity: String,
}

/// What an action running under the lock may ask of it: whether it still holds it,
/// and the lock its record writes must carry. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Held {
    release: String,
    lost: Arc<AtomicBool>,
    cell: Arc<LockCell>,
}

impl Held {
    /// Fails when the lock was taken over, so a stale action never writes a final
    /// record over the one of the action that took over.
    pub(crate) fn check(&self) -> Result<()> {
        if self.lost.load(Ordering::SeqCst) {
            return Err(Error::lock(
                &self.release,
                LockError::Lost(self.release.clone()),
            ));
        }
        Ok(())
    }

    /// The lock the action's record writes carry.
    pub(crate) fn cell(&self) -> Arc<LockCell> {
        self.cell.clone()
    }

    /// The revision of the newest record when the lock was taken, if that record
    /// carried no lock (see [`LockCell`]'s `found_unlocked`).
    pub(crate) fn found_unlocked(&self) -> Option<i64> {
        self.cell.found_unlocked
    }

    /// The action's next write of the release's newest record is its last one under
    /// the lock: that write gives the lock back (it leaves the annotation out), which
    /// saves the separate write that would remove it. Renewal stops now; should the
    /// write fail, the lock is given back as usual when the action ends.
    pub(crate) fn release_with_next_write(&self) {
        self.cell.releasing.store(true, Ordering::SeqCst);
    }
}

impl ReleaseLock {
    /// The handle the locked action checks and writes its records with.
    pub(crate) fn held(&self) -> Held {
        Held {
            release: self.handle_release(),
            lost: self.lost.clone(),
            cell: self.cell.clone(),
        }
    }

    fn handle_release(&self) -> String {
        self.handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .release
            .clone()
    }

    /// Stops renewing and removes the lock from the release's newest record (if it is
    /// still ours).
    pub(crate) async fn release(self) {
        self.renewer.abort();
        if self.cell.released.load(Ordering::SeqCst) {
            // The action's last write gave it back.
            with_live(|l| l.remove(&self.identity));
            return;
        }
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let release = handle.release.clone();
        if let Err(e) = self.locks.release_written(handle, self.cell.newest()).await {
            tracing::warn!(%release, error = %release::api_error::Chain(&e), "cannot give the release lock back; it expires on its own");
        }
        with_live(|l| l.remove(&self.identity));
    }
}

impl Drop for ReleaseLock {
    fn drop(&mut self) {
        // An action future dropped mid-way: the lock stays until it expires, but this
        // process no longer counts as its live holder, so our next action takes it over.
        self.renewer.abort();
        with_live(|l| l.remove(&self.identity));
    }
}

fn locked(
    release: &str,
    holder: &str,
    acquired: Option<Timestamp>,
    expires: Option<Timestamp>,
) -> Error {
    Error::Locked {
        release: release.to_string(),
        holder: holder.to_string(),
        since: acquired
            .map(|t| t.to_string())
            .unwrap_or_else(|| "unknown".into()),
        retry_after: expires
            .map(|t| t.to_string())
            .unwrap_or_else(|| "a few seconds".into()),
    }
}

/// A concurrent action created the revision this one was about to create.
pub(crate) fn raced(release: &str) -> Error {
    locked(
        release,
        "another action creating the same revision",
        None,
        None,
    )
}

/// Takes the release's lock from `backend`, or fails with [`Error::Locked`].
pub(crate) async fn acquire(backend: Backend, release: &str) -> Result<ReleaseLock> {
    let identity = new_identity();
    let locks = Arc::new(ReleaseLocks::new(backend, identity.clone(), LOCK_DURATION));
    // Mark the identity live before a record names it, so no other action of this
    // process mistakes it for a dead one.
    with_live(|l| l.insert(identity.clone()));
    let mut attempts = 0;
    let mut dead: Option<String> = None;
    let handle = loop {
        attempts += 1;
        match locks
            .try_acquire_at(release, Timestamp::now(), dead.as_deref())
            .await
        {
            Ok(h) => break h,
            Err(LockError::Held { holder, .. }) if attempts < 4 && holder_is_dead(&holder) => {
                tracing::info!(%release, %holder, "taking over the lock of a process that no longer runs");
                // The takeover is a write conditional on the record as read: a live
                // contender's write wins.
                dead = Some(holder);
            }
            Err(LockError::Held {
                holder,
                acquired,
                expires,
                ..
            }) => {
                with_live(|l| l.remove(&identity));
                return Err(locked(release, &holder, Some(acquired), Some(expires)));
            }
            Err(LockError::Contended(_)) if attempts < 4 => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(LockError::Contended(_)) => {
                with_live(|l| l.remove(&identity));
                return Err(locked(release, "another contender", None, None));
            }
            Err(e) => {
                with_live(|l| l.remove(&identity));
                return Err(Error::lock(release, e));
            }
        }
    };
    let cell = Arc::new(LockCell {
        holder: identity.clone(),
        state: Mutex::new(handle.state.clone()),
        newest: AtomicI64::new(handle.slot.record.as_ref().map_or(0, |r| r.version)),
        releasing: AtomicBool::new(false),
        released: AtomicBool::new(false),
        found_unlocked: handle.found_unlocked,
    });
    let handle = Arc::new(Mutex::new(handle));
    let lost = Arc::new(AtomicBool::new(false));
    let renewer = tokio::spawn(renew_loop(
        locks.clone(),
        handle.clone(),
        lost.clone(),
        cell.clone(),
    ));
    Ok(ReleaseLock {
        locks,
        handle,
        lost,
        cell,
        renewer,
        identity,
    })
}

async fn renew_loop(
    locks: Arc<ReleaseLocks<Backend>>,
    handle: Arc<Mutex<LockHandle>>,
    lost: Arc<AtomicBool>,
    cell: Arc<LockCell>,
) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        if cell.releasing.load(Ordering::SeqCst) {
            // The action is writing its last record, which gives the lock back.
            return;
        }
        let current = handle.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let now = Timestamp::now();
        // The action's own writes carry the renewed lock from now on, so a write of
        // theirs racing this renewal cannot put an older expiry back.
        cell.set_state(LockState {
            renewed: now,
            ..current.state.clone()
        });
        // On the newest record the action wrote, never on an older one a lagging read
        // still shows as the newest.
        match locks.renew_written(&current, now, cell.newest()).await {
            Ok(next) => *handle.lock().unwrap_or_else(|e| e.into_inner()) = next,
            Err(LockError::Lost(_)) => {
                tracing::error!(release = %current.release, "the release lock was taken over while an action ran");
                lost.store(true, Ordering::SeqCst);
                return;
            }
            // A transient API error or a lost race: the next tick retries well before
            // the lock lapses.
            Err(e) => {
                tracing::warn!(release = %current.release, error = %release::api_error::Chain(&e), "cannot renew the release lock")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_parse_and_differ() {
        let a = new_identity();
        let b = new_identity();
        assert_ne!(a, b);
        let (host, pid) = parse_identity(&a).unwrap();
        assert_eq!(host, hostname());
        assert_eq!(pid, std::process::id());
        assert_eq!(parse_identity("pod-a/12/ab"), Some(("pod-a", 12)));
        assert_eq!(parse_identity("leader-election-id"), None);
    }

    #[test]
    fn dead_and_live_holders() {
        // Same pid, never handed out by this process: a previous incarnation.
        let stale = format!("{}/{}/deadbeef", hostname(), std::process::id());
        assert!(holder_is_dead(&stale));
        with_live(|l| l.insert(stale.clone()));
        assert!(!holder_is_dead(&stale));
        with_live(|l| l.remove(&stale));
        // Another host, or an identity we cannot parse: only expiry frees it.
        assert!(!holder_is_dead("elsewhere.example/1/x"));
        assert!(!holder_is_dead("some-operator"));
        // A pid that exited.
        if let Ok(mut child) = std::process::Command::new("true").spawn() {
            let pid = child.id();
            let _ = child.wait();
            let holder = format!("{}/{pid}/x", hostname());
            assert!(holder_is_dead(&holder));
        }
    }
}
