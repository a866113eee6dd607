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
}

#[derive(Debug, Default)]
struct Tracked {
    /// Bumped by every drift report of a dependent watch.
    drifts: u64,
    applied: Option<AppliedRelease>,
}

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
        lock(&self.crs).remove(cr);
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
