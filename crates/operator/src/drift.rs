//! What one watch knows about its releases' objects between full applies, so a
//! periodic reconcile of an unchanged release can leave it alone: which revision this
//! process last applied for each CR and when, whether a dependent watch has seen one
//! of its objects change or go since, and since when every kind of it has been
//! watched without a gap. [`decide`](crate::reconcile::decide::decide) turns that
//! into "repair" or "unchanged"; this module only keeps the facts.
//!
//! Nothing survives a restart: the first reconcile of each CR after a start applies
//! its release in full, as the dependent watches' first list only records what exists.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use kube::api::GroupVersionKind;

use crate::reconcile::decide::Applied;

/// A CR of the watch: namespace and name.
pub(crate) type CrKey = (String, String);

/// The facts of one watch; shared by its controllers, its dependent watches and every
/// reconcile (and kept across chart reloads).
#[derive(Debug, Default)]
pub(crate) struct DriftTracker {
    crs: Mutex<HashMap<CrKey, Tracked>>,
    kinds: Mutex<Kinds>,
    /// Status writes of ours the CR watch has not delivered yet, by CR. A reconcile
    /// starting meanwhile would read the status as it was before and take the release
    /// for not deployed.
    statuses: Mutex<HashMap<CrKey, StatusWrite>>,
    status_seen: tokio::sync::Notify,
}

/// A status write of ours, until the CR watch delivers it.
#[derive(Debug)]
enum StatusWrite {
    /// Sent, not answered yet: the versions the watch delivered meanwhile (the write's
    /// own may come before its answer).
    InFlight(Vec<String>),
    /// Answered with this resourceVersion, not delivered yet.
    Awaiting(String),
}

#[derive(Debug, Default)]
struct Tracked {
    /// Bumped by every drift report of a dependent watch.
    drifts: u64,
    applied: Option<AppliedRelease>,
    /// This process's recent writes to the release's objects, which the dependent
    /// watches will report and which are no drift.
    own: Vec<OwnWrite>,
    /// Writes to the release's objects sent and not answered yet, and the events of
    /// them the watches delivered meanwhile (our write's own may come before its
    /// answer): `(object, version)`.
    writing: u32,
    raced: Vec<(ObjectKey, Option<String>)>,
}

/// An object of a release: group, kind, namespace, name.
type ObjectKey = (String, String, Option<String>, String);

/// One write of ours to a release object: the object (group, kind, namespace, name)
/// and the resourceVersion it left (`None`: deleted), and when.
#[derive(Debug)]
struct OwnWrite {
    object: ObjectKey,
    version: Option<String>,
    at: std::time::Instant,
}

/// How long a write of ours is remembered for its watch event to come back: a write
/// that changed nothing has no event, and is forgotten after this.
const OWN_WRITES_KEPT: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Debug)]
struct AppliedRelease {
    uid: String,
    applied: Applied,
    /// `drifts` when the apply started: later reports are drift since.
    drifts_seen: u64,
    kinds: Arc<[GroupVersionKind]>,
}

/// The dependent watches' coverage, per kind.
#[derive(Debug, Default)]
struct Kinds {
    /// Per kind, one slot per watch of it (one per namespace, or one for all): when
    /// that watch last completed a list and has had no error since (Unix ms).
    synced: HashMap<GroupVersionKind, Vec<Option<i64>>>,
    /// The distinct kind lists releases have, shared between CRs.
    interned: HashSet<Arc<[GroupVersionKind]>>,
}

/// When a full apply started, and which drift reports it already covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApplyStart {
    at: i64,
    drifts_seen: u64,
}

/// What the tracker says about one CR, for the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Seen {
    pub(crate) applied: Option<Applied>,
    pub(crate) drifted: bool,
    pub(crate) watched_since: Option<i64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DriftTracker {
    pub(crate) fn new() -> DriftTracker {
        DriftTracker::default()
    }

    /// This process is about to write `object` of `cr`'s release.
    pub(crate) fn own_write_sending(&self, cr: &CrKey) {
        lock(&self.crs).entry(cr.clone()).or_default().writing += 1;
    }

    /// This process's write of `object` of `cr`'s release ended: it left the object
    /// at `version` (`Some(None)`: deleted it), or failed (`None`). Events the watches
    /// delivered while it was in flight other than its own were someone else's:
    /// drift, once no write is in flight any more.
    pub(crate) fn own_write_done(
        &self,
        cr: &CrKey,
        object: ObjectKey,
        version: Option<Option<String>>,
    ) {
        let mut crs = lock(&self.crs);
        let t = crs.entry(cr.clone()).or_default();
        t.writing = t.writing.saturating_sub(1);
        let now = std::time::Instant::now();
        if let Some(version) = version {
            let came = t
                .raced
                .iter()
                .position(|(o, v)| *o == object && *v == version);
            match came {
                Some(i) => {
                    t.raced.remove(i);
                }
                None => {
                    t.own
                        .retain(|w| w.object != object && now - w.at < OWN_WRITES_KEPT);
                    t.own.push(OwnWrite {
                        object,
                        version,
                        at: now,
                    });
                }
            }
        }
        if t.writing == 0 && !t.raced.is_empty() {
            t.raced = Vec::new();
            t.drifts += 1;
        }
    }

    /// Whether a dependent watch's event of `object` at `version` (`None`: its
    /// deletion), an object of `crs`' releases, is one of this process's own writes
    /// coming back (then that write is forgotten), or arrived while a write to the
    /// release is in flight (then the write's answer tells, see
    /// [`DriftTracker::own_write_done`]).
    pub(crate) fn own_event(
        &self,
        crs: &[CrKey],
        object: (&str, &str, Option<&str>, &str),
        version: Option<&str>,
    ) -> bool {
        let mut all = lock(&self.crs);
        let now = std::time::Instant::now();
        let mut own = false;
        let same =
            |o: &ObjectKey| (o.0.as_str(), o.1.as_str(), o.2.as_deref(), o.3.as_str()) == object;
        for cr in crs {
            let Some(t) = all.get_mut(cr) else {
                continue;
            };
            let before = t.own.len();
            t.own.retain(|w| {
                let ours = same(&w.object) && w.version.as_deref() == version;
                !ours && now - w.at < OWN_WRITES_KEPT
            });
            if t.own.len() < before {
                own = true;
            } else if t.writing > 0 {
                let key = (
                    object.0.to_string(),
                    object.1.to_string(),
                    object.2.map(str::to_string),
                    object.3.to_string(),
                );
                t.raced.push((key, version.map(str::to_string)));
                own = true;
            }
            if t.own.is_empty() {
                t.own = Vec::new();
            }
        }
        own
    }

    /// A dependent watch saw an object of `cr`'s release change or go.
    pub(crate) fn drifted(&self, cr: &CrKey) {
        // Counted even before a first apply finished: one may be under way.
        lock(&self.crs).entry(cr.clone()).or_default().drifts += 1;
    }

    /// A full apply of `cr` starts now (`now_ms`).
    pub(crate) fn apply_started(&self, cr: &CrKey, now_ms: i64) -> ApplyStart {
        let crs = lock(&self.crs);
        ApplyStart {
            at: now_ms,
            drifts_seen: crs.get(cr).map_or(0, |t| t.drifts),
        }
    }

    /// The apply begun at `start` left revision `version` of `cr` (uid `uid`) deployed,
    /// with objects of `kinds`.
    pub(crate) fn applied(
        &self,
        cr: &CrKey,
        uid: &str,
        version: i64,
        start: ApplyStart,
        kinds: &[GroupVersionKind],
    ) {
        let kinds = self.intern(kinds);
        let mut crs = lock(&self.crs);
        let t = crs.entry(cr.clone()).or_default();
        t.applied = Some(AppliedRelease {
            uid: uid.to_string(),
            applied: Applied {
                version,
                at: start.at,
            },
            drifts_seen: start.drifts_seen,
            kinds,
        });
    }

    /// Forgets `cr` (deleted, or its apply failed: the next reconcile applies in full).
    pub(crate) fn forget(&self, cr: &CrKey) {
        lock(&self.statuses).remove(cr);
        lock(&self.crs).remove(cr);
    }

    /// This process is about to write `cr`'s status.
    pub(crate) fn status_writing(&self, cr: &CrKey) {
        lock(&self.statuses).insert(cr.clone(), StatusWrite::InFlight(Vec::new()));
    }

    /// The status write of `cr` ended: the API server answered with `version`
    /// (`None`: nothing was written, or the write failed).
    pub(crate) fn status_written(&self, cr: &CrKey, version: Option<String>) {
        let mut statuses = lock(&self.statuses);
        let delivered = match (statuses.get(cr), &version) {
            (Some(StatusWrite::InFlight(seen)), Some(v)) => seen.contains(v),
            _ => true,
        };
        match version {
            Some(v) if !delivered => {
                statuses.insert(cr.clone(), StatusWrite::Awaiting(v));
            }
            _ => {
                statuses.remove(cr);
            }
        }
    }

    /// The CR watch delivered `cr` at `version`.
    pub(crate) fn cr_seen(&self, cr: &CrKey, version: Option<&str>) {
        let Some(version) = version else {
            return;
        };
        let mut statuses = lock(&self.statuses);
        match statuses.get_mut(cr) {
            Some(StatusWrite::InFlight(seen)) => seen.push(version.to_string()),
            Some(StatusWrite::Awaiting(v)) if v == version => {
                statuses.remove(cr);
                drop(statuses);
                self.status_seen.notify_waiters();
            }
            _ => {}
        }
    }

    /// The CR watch listed again: what it listed is newer than every write before.
    pub(crate) fn crs_relisted(&self) {
        lock(&self.statuses).clear();
        self.status_seen.notify_waiters();
    }

    /// Waits (at most `wait`) until the CR watch has delivered this process's last
    /// status write of `cr`, so a reconcile reads the status it wrote, not an older one.
    pub(crate) async fn status_delivered(&self, cr: &CrKey, wait: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.status_seen.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !matches!(lock(&self.statuses).get(cr), Some(StatusWrite::Awaiting(_))) {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::debug!(namespace = %cr.0, name = %cr.1,
                    "the custom resource watch has not delivered our status write; reading the cache as it is");
                lock(&self.statuses).remove(cr);
                return;
            }
        }
    }

    /// What is known about `cr` with uid `uid`; nothing for another CR of that name.
    pub(crate) fn seen(&self, cr: &CrKey, uid: &str) -> Seen {
        let (applied, drifted, kinds) = {
            let crs = lock(&self.crs);
            let Some(t) = crs.get(cr) else {
                return Seen::default();
            };
            let Some(a) = t.applied.as_ref().filter(|a| a.uid == uid) else {
                return Seen::default();
            };
            (a.applied, t.drifts != a.drifts_seen, Arc::clone(&a.kinds))
        };
        Seen {
            applied: Some(applied),
            drifted,
            watched_since: self.watched_since(&kinds),
        }
    }

    /// Whether `cr` (uid `uid`) was applied in full by this process.
    pub(crate) fn known(&self, cr: &CrKey, uid: &str) -> bool {
        lock(&self.crs)
            .get(cr)
            .and_then(|t| t.applied.as_ref())
            .is_some_and(|a| a.uid == uid)
    }

    /// A kind gets `watches` watches (slots `0..watches`), none synced yet.
    pub(crate) fn watching(&self, kind: &GroupVersionKind, watches: usize) {
        lock(&self.kinds)
            .synced
            .insert(kind.clone(), vec![None; watches]);
    }

    /// Watch `slot` of `kind` completed a list at `now_ms`; it counts from its first
    /// list after an error (a later relist changes nothing: it compares, so no change
    /// is lost).
    pub(crate) fn synced(&self, kind: &GroupVersionKind, slot: usize, now_ms: i64) {
        let mut kinds = lock(&self.kinds);
        if let Some(s) = kinds.synced.get_mut(kind).and_then(|v| v.get_mut(slot)) {
            if s.is_none() {
                *s = Some(now_ms);
            }
        }
    }

    /// Watch `slot` of `kind` failed or stopped: until it lists again, changes of that
    /// kind may go unseen.
    pub(crate) fn unsynced(&self, kind: &GroupVersionKind, slot: usize) {
        let mut kinds = lock(&self.kinds);
        if let Some(s) = kinds.synced.get_mut(kind).and_then(|v| v.get_mut(slot)) {
            *s = None;
        }
    }

    /// A kind's watch could not start: it is not watched.
    pub(crate) fn not_watching(&self, kind: &GroupVersionKind) {
        lock(&self.kinds).synced.remove(kind);
    }

    fn watched_since(&self, release_kinds: &[GroupVersionKind]) -> Option<i64> {
        let kinds = lock(&self.kinds);
        let mut since = 0i64;
        for kind in release_kinds {
            let slots = kinds.synced.get(kind)?;
            if slots.is_empty() {
                return None;
            }
            for s in slots {
                since = since.max((*s)?);
            }
        }
        Some(since)
    }

    fn intern(&self, kinds: &[GroupVersionKind]) -> Arc<[GroupVersionKind]> {
        let mut k = lock(&self.kinds);
        if let Some(found) = k.interned.get(kinds) {
            return Arc::clone(found);
        }
        let new: Arc<[GroupVersionKind]> = kinds.into();
        k.interned.insert(Arc::clone(&new));
        new
    }
}

/// The time as the tracker counts it: Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(k: &str) -> GroupVersionKind {
        GroupVersionKind::gvk("apps", "v1", k)
    }

    fn key(name: &str) -> CrKey {
        ("ns".into(), name.into())
    }

    #[test]
    fn drift_after_an_apply_started_is_drift() {
        let t = DriftTracker::new();
        let cr = key("a");
        t.drifted(&cr);
        let start = t.apply_started(&cr, 1_000);
        t.applied(&cr, "u1", 2, start, &[]);
        let seen = t.seen(&cr, "u1");
        assert_eq!(
            seen.applied,
            Some(Applied {
                version: 2,
                at: 1_000
            })
        );
        assert!(!seen.drifted, "drift before the apply is repaired by it");
        // Drift reported while an apply runs is not covered by it.
        let start = t.apply_started(&cr, 2_000);
        t.drifted(&cr);
        t.applied(&cr, "u1", 2, start, &[]);
        assert!(t.seen(&cr, "u1").drifted);
        // Another CR of the same name is not this one.
        assert_eq!(t.seen(&cr, "u2"), Seen::default());
        assert!(t.known(&cr, "u1") && !t.known(&cr, "u2"));
        t.forget(&cr);
        assert_eq!(t.seen(&cr, "u1"), Seen::default());
    }

    #[test]
    fn own_writes_coming_back_are_no_drift() {
        let t = DriftTracker::new();
        let cr = key("a");
        let start = t.apply_started(&cr, 1_000);
        let cm = || {
            (
                "".to_string(),
                "ConfigMap".to_string(),
                Some("ns".to_string()),
                "a-cfg".to_string(),
            )
        };
        let event = ("", "ConfigMap", Some("ns"), "a-cfg");
        let crs = [cr.clone()];
        // The answer first, then the event.
        t.own_write_sending(&cr);
        t.own_write_done(&cr, cm(), Some(Some("5".into())));
        assert!(t.own_event(&crs, event, Some("5")));
        assert!(
            !t.own_event(&crs, event, Some("6")),
            "someone else's is not"
        );
        // The event first (while the write is in flight), then the answer.
        t.own_write_sending(&cr);
        assert!(t.own_event(&crs, event, Some("7")));
        t.own_write_done(&cr, cm(), Some(Some("7".into())));
        // A deletion of ours.
        t.own_write_sending(&cr);
        t.own_write_done(&cr, cm(), Some(None));
        assert!(t.own_event(&crs, event, None));
        t.applied(&cr, "u", 1, start, &[]);
        assert!(!t.seen(&cr, "u").drifted);

        // Someone else's write delivered while ours was in flight is drift.
        let start = t.apply_started(&cr, 2_000);
        t.own_write_sending(&cr);
        assert!(t.own_event(&crs, event, Some("8")));
        assert!(t.own_event(&crs, event, Some("9")));
        t.own_write_done(&cr, cm(), Some(Some("8".into())));
        t.applied(&cr, "u", 1, start, &[]);
        assert!(t.seen(&cr, "u").drifted);
    }

    #[test]
    fn a_status_write_is_awaited_until_the_watch_delivers_it() {
        let t = DriftTracker::new();
        let cr = key("a");
        let pending =
            |t: &DriftTracker| matches!(lock(&t.statuses).get(&cr), Some(StatusWrite::Awaiting(_)));
        t.status_writing(&cr);
        t.status_written(&cr, Some("3".into()));
        assert!(pending(&t));
        t.cr_seen(&cr, Some("2"));
        assert!(pending(&t));
        t.cr_seen(&cr, Some("3"));
        assert!(!pending(&t));
        // Delivered before the answer came back.
        t.status_writing(&cr);
        t.cr_seen(&cr, Some("4"));
        t.status_written(&cr, Some("4".into()));
        assert!(!pending(&t));
        // Nothing written: nothing to wait for.
        t.status_writing(&cr);
        t.status_written(&cr, None);
        assert!(lock(&t.statuses).is_empty());
    }

    #[test]
    fn a_release_is_watched_from_when_all_its_kinds_are() {
        let t = DriftTracker::new();
        let cr = key("a");
        let kinds = [kind("Deployment"), kind("StatefulSet")];
        let start = t.apply_started(&cr, 1_000);
        t.applied(&cr, "u", 1, start, &kinds);
        assert_eq!(t.seen(&cr, "u").watched_since, None, "not watched at all");
        t.watching(&kinds[0], 2);
        t.watching(&kinds[1], 1);
        t.synced(&kinds[0], 0, 500);
        t.synced(&kinds[1], 0, 700);
        assert_eq!(t.seen(&cr, "u").watched_since, None, "one watch not listed");
        t.synced(&kinds[0], 1, 600);
        assert_eq!(t.seen(&cr, "u").watched_since, Some(700));
        // A relist keeps the time; an error restarts it.
        t.synced(&kinds[0], 1, 900);
        assert_eq!(t.seen(&cr, "u").watched_since, Some(700));
        t.unsynced(&kinds[1], 0);
        assert_eq!(t.seen(&cr, "u").watched_since, None);
        t.synced(&kinds[1], 0, 1_500);
        assert_eq!(t.seen(&cr, "u").watched_since, Some(1_500));
        t.not_watching(&kinds[1]);
        assert_eq!(t.seen(&cr, "u").watched_since, None);
        // A release without objects has nothing to watch.
        let empty = key("b");
        let start = t.apply_started(&empty, 1_000);
        t.applied(&empty, "u", 1, start, &[]);
        assert_eq!(t.seen(&empty, "u").watched_since, Some(0));
    }
}
