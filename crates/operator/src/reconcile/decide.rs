//! What a reconcile does next, decided from the release's history alone: a pure
//! function of the records' labels (never their contents), the inputs digest and the
//! time, like helm-operator-plugins' `getReleaseState`. The labels are those of
//! [`labels`](super::labels); the backoff of failing release actions it reads from
//! them is [`RELEASE_BACKOFF`].

use std::time::Duration;

use release::record::Status;
use release::RecordMeta;

use super::digest;
use super::labels::{ATTEMPT_LABEL, LOOKUPS_LABEL, REVISION_LABEL, ROLLBACK_OF_LABEL};
use super::timing::RELEASE_BACKOFF;
use crate::annotations::CHART_LABEL;

/// The deployed revision a decision builds on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deployed {
    pub version: i64,
    /// Its inputs digest, when rudder wrote it.
    pub digest: Option<String>,
    /// The newest revision of any status, for telling later whether an action wrote one.
    pub newest: i64,
}

/// What the reconcile does with the release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A record is `pending-*`, or two are `deployed`, as a crashed action leaves
    /// them: recover if no action holds the release (then decide again), else wait.
    Recover { version: i64, status: Status },
    /// No deployed revision: install (adopting live objects of a release whose records
    /// are all gone). `attempt` counts this inputs' failures so far, plus one.
    Install { attempt: u32 },
    /// The inputs changed since the deployed revision.
    Upgrade { attempt: u32, deployed: Deployed },
    /// The deployed revision was made outside the operator: `helm` wrote it, with no
    /// inputs digest (`helm install`, or a release the operator takes over) or with
    /// the operator's labels copied from an older record (`helm upgrade`, `helm
    /// rollback` of the CR's release). Compare renders: when the CR's spec renders to
    /// the deployed manifest, adopt it (stamp the digest and repair), else upgrade to
    /// the CR's spec, restoring what the CR declares. Either way the next reconcile
    /// finds a digest of its own and stops.
    StampDigest { attempt: u32, deployed: Deployed },
    /// The inputs match the deployed revision: make the cluster match it again;
    /// `reason` says why it cannot be left alone (for the debug log).
    Repair { reason: &'static str },
    /// The inputs match the deployed revision, the operator applied that revision
    /// itself within the reapply period, and the dependent watches saw none of its
    /// objects move since: nothing to render, apply or write.
    Unchanged,
    /// The last `attempts` actions with these inputs failed: wait before the next.
    BackOff { attempts: u32, retry_in: Duration },
}

/// What the operator knows, besides the records, about the release's objects: when it
/// last applied them and whether they may have moved since. Times are Unix
/// milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Objects {
    /// The revision this process last applied in full (installed, upgraded or
    /// repaired) for this very CR (same uid), and when that apply started.
    pub applied: Option<Applied>,
    /// A dependent watch reported a change or deletion of one of the release's
    /// objects since that apply started.
    pub drifted: bool,
    /// Since when every kind of the applied release has been watched without a gap
    /// (`None`: some kind is not watched, or dependent watches are off); a change
    /// before this instant may have gone unseen.
    pub watched_since: Option<i64>,
    /// The CR's status already shows the deployed release as a full reconcile would
    /// leave it (`Deployed=True`, no failure, not waiting for readiness).
    pub status_current: bool,
    /// The chart calls `lookup`: only a render can tell whether its inputs changed.
    pub uses_lookup: bool,
    /// `--reapply-period`: the longest an unchanged release goes without a full
    /// re-apply, as a safety net for changes no watch reported (zero: every time).
    pub reapply_period: Duration,
}

/// A full apply of one revision by this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Applied {
    pub version: i64,
    /// When the apply started (Unix milliseconds).
    pub at: i64,
}

impl Objects {
    /// Nothing known about the objects: every unchanged release is repaired.
    #[cfg(test)]
    pub(crate) const UNKNOWN: Objects = Objects {
        applied: None,
        drifted: false,
        watched_since: None,
        status_current: false,
        uses_lookup: false,
        reapply_period: Duration::ZERO,
    };

    /// Why the deployed revision `version` needs a full re-apply at `now_ms`, if it
    /// does (`None`: it may be left alone).
    fn repair_reason(&self, version: i64, now_ms: i64) -> Option<&'static str> {
        let Some(applied) = self.applied else {
            return Some("not applied by this process since it started");
        };
        let period = i64::try_from(self.reapply_period.as_millis()).unwrap_or(i64::MAX);
        if applied.version != version {
            Some("the deployed revision is not the one this process applied")
        } else if self.drifted {
            Some("a dependent watch saw one of its objects change or go")
        } else if !self.status_current {
            Some("the status does not show the release deployed")
        } else if self.uses_lookup {
            Some("the chart calls lookup")
        } else if self.watched_since.is_none() {
            Some("not every kind of its objects is watched")
        } else if self.watched_since.is_some_and(|since| since > applied.at) {
            Some("a dependent watch restarted since the last apply")
        } else if now_ms.saturating_sub(applied.at) >= period {
            Some("the reapply period has passed")
        } else {
            None
        }
    }
}

/// Decides from `history` (oldest first, as `History::meta` returns it), the inputs
/// `digest`, `now` (Unix seconds) and what is known of the release's `objects`.
pub(crate) fn decide(
    history: &[RecordMeta],
    digest: &str,
    now: i64,
    objects: &Objects,
) -> Decision {
    if let Some(leftover) = leftover(history) {
        return Decision::Recover {
            version: leftover.version,
            status: leftover.status.clone(),
        };
    }
    let deployed = history
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .max_by_key(|m| m.version)
        .map(|m| Deployed {
            version: m.version,
            digest: own_label(m, digest::LABEL).map(str::to_string),
            newest: history.last().map_or(m.version, |n| n.version),
        });
    if let Some(d) = deployed
        .as_ref()
        .filter(|d| d.digest.as_deref() == Some(digest))
    {
        return match objects.repair_reason(d.version, now.saturating_mul(1000)) {
            None => Decision::Unchanged,
            Some(reason) => Decision::Repair { reason },
        };
    }
    let failures = failures_with(history, digest);
    let attempt = failures.as_ref().map_or(1, |f| f.attempts + 1);
    if let Some(f) = &failures {
        if let Some(retry_in) = f.remaining(now) {
            return Decision::BackOff {
                attempts: f.attempts,
                retry_in,
            };
        }
    }
    match deployed {
        None => Decision::Install { attempt },
        Some(d) if d.digest.is_some() => Decision::Upgrade {
            attempt,
            deployed: d,
        },
        Some(d) => Decision::StampDigest {
            attempt,
            deployed: d,
        },
    }
}

/// What a crashed action left, by the labels alone: the newest `pending-*` record,
/// else a `deployed` record older than another `deployed` one (a kill between two
/// record writes).
fn leftover(history: &[RecordMeta]) -> Option<&RecordMeta> {
    let newest_deployed = history
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .map(|m| m.version)
        .max();
    history
        .iter()
        .rev()
        .find(|m| m.status.is_pending())
        .or_else(|| {
            history
                .iter()
                .find(|m| m.status == Status::Deployed && Some(m.version) != newest_deployed)
        })
}

/// Which chart a release's records say they are of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReleaseChart {
    /// No records: the name is free.
    Free,
    /// The newest record carrying the chart label names this chart.
    Labelled(String),
    /// Records without the label (Helm or an older rudder made them): decode one.
    Unknown,
}

/// Which chart the release of `history` belongs to, as far as the labels tell. A CR
/// must never take over a release of another chart that happens to have its name.
pub(crate) fn release_chart(history: &[RecordMeta]) -> ReleaseChart {
    if history.is_empty() {
        return ReleaseChart::Free;
    }
    history
        .iter()
        .rev()
        .find_map(|m| m.labels.get(CHART_LABEL))
        .map_or(ReleaseChart::Unknown, |c| ReleaseChart::Labelled(c.clone()))
}

/// What a reconcile with unchanged inputs does for a chart that calls `lookup`, once a
/// fresh render said what its lookups return now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookups {
    /// The looked-up objects are as they were (or their change is still backing off
    /// after a failed upgrade), or they changed but the release renders as deployed:
    /// repair, recording the new digest on the deployed record (no new revision).
    Repair { stamp: Option<String> },
    /// A looked-up object changed since the deployed revision, and so did the render:
    /// upgrade.
    Upgrade { attempt: u32, deployed: Deployed },
}

/// Decides, for a history whose deployed revision has inputs `digest`, whether the
/// lookups digest `now_lookups` of a fresh render means an upgrade: only when the
/// render itself differs from the deployed release (`rendered_changed`: manifest,
/// hooks or notes), so a chart that looks up what it created itself (a generated
/// password it keeps) does not write a revision that changes nothing. A record
/// without a lookups digest, or whose render is unchanged, gets the current one, and
/// failed upgrades of these inputs back off as any other.
pub(crate) fn lookups(
    history: &[RecordMeta],
    digest: &str,
    now_lookups: Option<&str>,
    rendered_changed: bool,
    now: i64,
) -> Lookups {
    let deployed = history
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .max_by_key(|m| m.version);
    let Some(d) = deployed else {
        return Lookups::Repair { stamp: None };
    };
    let recorded = own_label(d, LOOKUPS_LABEL);
    match (recorded, now_lookups) {
        (None, now) => {
            return Lookups::Repair {
                stamp: now.map(str::to_string),
            }
        }
        (Some(r), Some(n)) if r == n => return Lookups::Repair { stamp: None },
        (Some(_), now) if !rendered_changed => {
            return Lookups::Repair {
                stamp: now.map(str::to_string),
            }
        }
        _ => {}
    }
    let failures = failures_with(history, digest);
    if failures
        .as_ref()
        .is_some_and(|f| f.remaining(now).is_some())
    {
        return Lookups::Repair { stamp: None };
    }
    Lookups::Upgrade {
        attempt: failures.map_or(1, |f| f.attempts + 1),
        deployed: Deployed {
            version: d.version,
            digest: own_label(d, digest::LABEL).map(str::to_string),
            newest: history.last().map_or(d.version, |n| n.version),
        },
    }
}

/// Where a release waiting for its workloads stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    Ready,
    /// Not ready yet; look again after [`READINESS_POLL`](super::timing::READINESS_POLL).
    Waiting,
    /// Not ready `timeout` after the revision was deployed.
    TimedOut,
}

/// Whether a release whose objects are `ready` (or not), deployed at `deployed_at`
/// (Unix seconds), is ready, still waiting, or past `timeout` at `now`.
pub(crate) fn readiness(
    ready: bool,
    deployed_at: Option<i64>,
    timeout: Duration,
    now: i64,
) -> Readiness {
    if ready {
        return Readiness::Ready;
    }
    match deployed_at {
        Some(at) if now.saturating_sub(at) >= timeout.as_secs() as i64 => Readiness::TimedOut,
        _ => Readiness::Waiting,
    }
}

/// A label rudder wrote for this very record: `None` when the record carries the
/// label copied from another revision (see [`REVISION_LABEL`]). Records written before
/// rudder stamped revisions count as its own; their first repair stamps them.
fn own_label<'a>(m: &'a RecordMeta, key: &str) -> Option<&'a str> {
    let copied = m
        .labels
        .get(REVISION_LABEL)
        .is_some_and(|r| r.parse::<i64>().ok() != Some(m.version));
    if copied {
        return None;
    }
    m.labels.get(key).map(String::as_str)
}

/// Consecutive failures with the current inputs, read from the newest records.
#[derive(Debug, Clone, PartialEq)]
struct Failures {
    attempts: u32,
    /// When the newest of them ended (Unix seconds).
    at: Option<i64>,
}

impl Failures {
    /// How much of the backoff is left at `now`; `None` once it has passed.
    fn remaining(&self, now: i64) -> Option<Duration> {
        let wait = RELEASE_BACKOFF.delay(self.attempts);
        match self.at.map(|at| (now - at).max(0) as u64) {
            Some(e) if e < wait.as_secs() => Some(Duration::from_secs(wait.as_secs() - e)),
            Some(_) => None,
            // No time on the records: wait a full period rather than loop.
            None => Some(wait),
        }
    }
}

/// When a record last changed, from the driver's `modifiedAt`/`createdAt` labels.
fn record_time(m: &RecordMeta) -> Option<i64> {
    m.labels
        .get("modifiedAt")
        .or_else(|| m.labels.get("createdAt"))
        .and_then(|v| v.parse().ok())
}

/// The failures with inputs `digest` at the top of the history (newest first): failed
/// records labelled with the digest and the rollbacks that undid them. `None` when the
/// newest relevant record is not such a failure.
fn failures_with(metas: &[RecordMeta], digest: &str) -> Option<Failures> {
    let mut count = 0u32;
    let mut attempts: Option<u32> = None;
    let mut at: Option<i64> = None;
    let mut iter = metas.iter().rev().peekable();
    while let Some(m) = iter.next() {
        let failed_here = m.status == Status::Failed && own_label(m, digest::LABEL) == Some(digest);
        let rollback_of_it = own_label(m, ROLLBACK_OF_LABEL) == Some(digest);
        // A rollback record without our labels right after a failure of these inputs
        // (an action layer that drops labels on rollback, or `helm rollback`).
        let bare_rollback = own_label(m, digest::LABEL).is_none()
            && own_label(m, ROLLBACK_OF_LABEL).is_none()
            && iter.peek().is_some_and(|p| {
                p.status == Status::Failed && own_label(p, digest::LABEL) == Some(digest)
            });
        if failed_here {
            count += 1;
        } else if !(rollback_of_it || bare_rollback) {
            break;
        }
        if attempts.is_none() {
            attempts = own_label(m, ATTEMPT_LABEL).and_then(|v| v.parse().ok());
        }
        if at.is_none() {
            at = record_time(m);
        }
    }
    if count == 0 {
        return None;
    }
    Some(Failures {
        attempts: attempts.unwrap_or(count).max(count).max(1),
        at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a release this process has not applied yet gets.
    const REPAIR_AFTER_START: Decision = Decision::Repair {
        reason: "not applied by this process since it started",
    };

    const D: &str = "abc";

    fn meta(version: i64, status: Status, labels: &[(&str, &str)]) -> RecordMeta {
        RecordMeta {
            key: format!("sh.helm.release.v1.r.v{version}"),
            name: "r".into(),
            version,
            status,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..RecordMeta::default()
        }
    }

    fn deployed(version: i64, digest: Option<&str>, newest: i64) -> Deployed {
        Deployed {
            version,
            digest: digest.map(str::to_string),
            newest,
        }
    }

    #[test]
    fn no_history_installs() {
        assert_eq!(
            decide(&[], D, 0, &Objects::UNKNOWN),
            Decision::Install { attempt: 1 }
        );
        // After an uninstall with kept history, or a failed install of other inputs.
        let history = [
            meta(1, Status::Uninstalled, &[(digest::LABEL, "old")]),
            meta(
                2,
                Status::Failed,
                &[(digest::LABEL, "other"), ("modifiedAt", "5")],
            ),
        ];
        assert_eq!(
            decide(&history, D, 10, &Objects::UNKNOWN),
            Decision::Install { attempt: 1 }
        );
    }

    #[test]
    fn same_digest_repairs_and_changed_digest_upgrades() {
        let history = [
            meta(1, Status::Superseded, &[(digest::LABEL, "old")]),
            meta(2, Status::Deployed, &[(digest::LABEL, D)]),
        ];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            REPAIR_AFTER_START
        );
        assert_eq!(
            decide(&history, "new", 0, &Objects::UNKNOWN),
            Decision::Upgrade {
                attempt: 1,
                deployed: deployed(2, Some(D), 2)
            }
        );
    }

    /// Objects applied at 1,000 ms as revision 2, watched since 500 ms, status current.
    fn quiet() -> Objects {
        Objects {
            applied: Some(Applied {
                version: 2,
                at: 1_000,
            }),
            drifted: false,
            watched_since: Some(500),
            status_current: true,
            uses_lookup: false,
            reapply_period: Duration::from_secs(3_600),
        }
    }

    #[test]
    fn an_unchanged_release_nobody_touched_is_left_alone() {
        let history = [
            meta(1, Status::Superseded, &[(digest::LABEL, "old")]),
            meta(2, Status::Deployed, &[(digest::LABEL, D)]),
        ];
        assert_eq!(decide(&history, D, 60, &quiet()), Decision::Unchanged);
        // Changed inputs are never skipped.
        assert!(matches!(
            decide(&history, "new", 60, &quiet()),
            Decision::Upgrade { .. }
        ));
        // Each of these needs the full re-apply.
        let repairs: [(&str, Objects); 8] = [
            (
                "a dependent watch saw drift",
                Objects {
                    drifted: true,
                    ..quiet()
                },
            ),
            (
                "never applied by this process",
                Objects {
                    applied: None,
                    ..quiet()
                },
            ),
            (
                "another revision was applied (helm changed the release)",
                Objects {
                    applied: Some(Applied {
                        version: 1,
                        at: 1_000,
                    }),
                    ..quiet()
                },
            ),
            (
                "a kind is not watched",
                Objects {
                    watched_since: None,
                    ..quiet()
                },
            ),
            (
                "the watch started after the apply: a change in between went unseen",
                Objects {
                    watched_since: Some(1_001),
                    ..quiet()
                },
            ),
            (
                "the status is not as a reconcile leaves it",
                Objects {
                    status_current: false,
                    ..quiet()
                },
            ),
            (
                "lookups are only known by rendering",
                Objects {
                    uses_lookup: true,
                    ..quiet()
                },
            ),
            (
                "no reapply period: every time",
                Objects {
                    reapply_period: Duration::ZERO,
                    ..quiet()
                },
            ),
        ];
        let mut reasons = std::collections::HashSet::new();
        for (why, objects) in repairs {
            match decide(&history, D, 60, &objects) {
                Decision::Repair { reason } => reasons.insert(reason),
                other => panic!("{why}: {other:?}"),
            };
        }
        assert_eq!(reasons.len(), 8, "each cause has its own words");
        // The safety period ran out: 3,600 s after the apply started.
        assert_eq!(decide(&history, D, 3_600, &quiet()), Decision::Unchanged);
        assert_eq!(
            decide(&history, D, 3_601, &quiet()),
            Decision::Repair {
                reason: "the reapply period has passed"
            }
        );
        // A pending newest record is recovered whatever the objects say.
        let pending = [
            meta(2, Status::Deployed, &[(digest::LABEL, D)]),
            meta(3, Status::PendingUpgrade, &[(digest::LABEL, D)]),
        ];
        assert!(matches!(
            decide(&pending, D, 60, &quiet()),
            Decision::Recover { version: 3, .. }
        ));
        // A revision helm made (no own digest) is compared by render, never skipped.
        let helms = [meta(2, Status::Deployed, &[])];
        assert!(matches!(
            decide(&helms, D, 60, &quiet()),
            Decision::StampDigest { .. }
        ));
    }

    #[test]
    fn a_record_helm_made_is_compared_by_render() {
        let history = [meta(1, Status::Deployed, &[])];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            Decision::StampDigest {
                attempt: 1,
                deployed: deployed(1, None, 1)
            }
        );
    }

    #[test]
    fn labels_helm_copied_onto_a_later_record_are_not_trusted() {
        let ours = |v: i64, d: &str| {
            let r = v.to_string();
            meta(
                v,
                Status::Superseded,
                &[(digest::LABEL, d), (REVISION_LABEL, &r)],
            )
        };
        // `helm rollback 1` after the operator deployed D as revision 2: revision 3
        // carries revision 1's labels, digest "old" included.
        let mut rolled_back = ours(1, "old");
        rolled_back.version = 3;
        rolled_back.status = Status::Deployed;
        let history = [ours(1, "old"), ours(2, D), rolled_back.clone()];
        let out_of_band = Decision::StampDigest {
            attempt: 1,
            deployed: deployed(3, None, 3),
        };
        assert_eq!(decide(&history, D, 0, &Objects::UNKNOWN), out_of_band);
        // Even when the copied digest is the CR's own (`helm upgrade` copies the last
        // record's labels whatever it deploys).
        let mut upgraded = ours(2, D);
        upgraded.version = 3;
        upgraded.status = Status::Deployed;
        assert_eq!(
            decide(
                &[ours(1, "old"), ours(2, D), upgraded],
                D,
                0,
                &Objects::UNKNOWN
            ),
            out_of_band
        );
        // A record with its own revision is trusted; one from before revisions were
        // stamped too.
        let mut own = ours(3, D);
        own.status = Status::Deployed;
        assert_eq!(
            decide(&[ours(1, "old"), own], D, 0, &Objects::UNKNOWN),
            REPAIR_AFTER_START
        );
        let legacy = meta(3, Status::Deployed, &[(digest::LABEL, D)]);
        assert_eq!(
            decide(&[legacy], D, 0, &Objects::UNKNOWN),
            REPAIR_AFTER_START
        );
        // Copied failure labels count no failure.
        let mut failed = ours(2, D);
        failed.status = Status::Failed;
        failed.labels.insert("modifiedAt".into(), "100".into());
        let mut copy = failed.clone();
        copy.version = 4;
        assert_eq!(
            failures_with(&[ours(1, "old"), failed.clone()], D).map(|f| f.attempts),
            Some(1)
        );
        assert_eq!(failures_with(&[ours(1, "old"), copy], D), None);
    }

    #[test]
    fn a_pending_newest_record_is_recovered_first() {
        let history = [
            meta(1, Status::Deployed, &[(digest::LABEL, D)]),
            meta(2, Status::PendingUpgrade, &[(digest::LABEL, "new")]),
        ];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            Decision::Recover {
                version: 2,
                status: Status::PendingUpgrade
            }
        );
    }

    #[test]
    fn older_pending_records_and_a_second_deployed_one_are_recovered_by_labels() {
        let ours = |v, s| meta(v, s, &[(digest::LABEL, D)]);
        let history = [
            ours(1, Status::Superseded),
            ours(2, Status::PendingUpgrade),
            ours(3, Status::Deployed),
        ];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            Decision::Recover {
                version: 2,
                status: Status::PendingUpgrade
            }
        );
        // A kill between writing v2 and superseding v1: the no-op reconcile repairs it.
        let history = [ours(1, Status::Deployed), ours(2, Status::Deployed)];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            Decision::Recover {
                version: 1,
                status: Status::Deployed
            }
        );
        let history = [ours(1, Status::Superseded), ours(2, Status::Deployed)];
        assert_eq!(
            decide(&history, D, 0, &Objects::UNKNOWN),
            REPAIR_AFTER_START
        );
    }

    #[test]
    fn failures_back_off_until_their_delay_passed() {
        let history = [
            meta(1, Status::Deployed, &[(digest::LABEL, "old")]),
            meta(
                2,
                Status::Failed,
                &[
                    (digest::LABEL, D),
                    (ATTEMPT_LABEL, "2"),
                    ("modifiedAt", "100"),
                ],
            ),
        ];
        // Two attempts: 20 s from the failure.
        assert_eq!(
            decide(&history, D, 105, &Objects::UNKNOWN),
            Decision::BackOff {
                attempts: 2,
                retry_in: Duration::from_secs(15)
            }
        );
        assert_eq!(
            decide(&history, D, 120, &Objects::UNKNOWN),
            Decision::Upgrade {
                attempt: 3,
                deployed: deployed(1, Some("old"), 2)
            }
        );
        // Other inputs are tried at once.
        assert!(matches!(
            decide(&history, "fresh", 105, &Objects::UNKNOWN),
            Decision::Upgrade { attempt: 1, .. }
        ));
        // A failed install waits too, a full period when the record has no time.
        let install = [meta(1, Status::Failed, &[(digest::LABEL, D)])];
        assert_eq!(
            decide(&install, D, 1_000, &Objects::UNKNOWN),
            Decision::BackOff {
                attempts: 1,
                retry_in: Duration::from_secs(10)
            }
        );
    }

    #[test]
    fn the_chart_of_a_release_is_read_from_its_labels() {
        assert_eq!(release_chart(&[]), ReleaseChart::Free);
        let helms = [meta(1, Status::Deployed, &[])];
        assert_eq!(release_chart(&helms), ReleaseChart::Unknown);
        let ours = [
            meta(1, Status::Superseded, &[(CHART_LABEL, "old")]),
            meta(2, Status::Deployed, &[(CHART_LABEL, "demo")]),
            meta(3, Status::Failed, &[]),
        ];
        assert_eq!(release_chart(&ours), ReleaseChart::Labelled("demo".into()));
    }

    #[test]
    fn a_changed_lookup_upgrades_once_and_backs_off_after_failing() {
        let deployed_with = |l: &[(&str, &str)]| {
            let mut labels = vec![(digest::LABEL, D)];
            labels.extend_from_slice(l);
            [meta(1, Status::Deployed, &labels)]
        };
        // A record without the lookups digest gets it; nothing is upgraded.
        assert_eq!(
            lookups(&deployed_with(&[]), D, Some("l1"), true, 0),
            Lookups::Repair {
                stamp: Some("l1".into())
            }
        );
        let history = deployed_with(&[(LOOKUPS_LABEL, "l1")]);
        assert_eq!(
            lookups(&history, D, Some("l1"), true, 0),
            Lookups::Repair { stamp: None }
        );
        assert_eq!(
            lookups(&history, D, Some("l2"), true, 0),
            Lookups::Upgrade {
                attempt: 1,
                deployed: deployed(1, Some(D), 1)
            }
        );
        // Lookups that stopped happening are a change too.
        assert!(matches!(
            lookups(&history, D, None, true, 0),
            Lookups::Upgrade { .. }
        ));
        // A digest `helm upgrade` copied onto its own revision is not this record's:
        // it is stamped afresh, never taken for a change.
        let copied = [meta(
            2,
            Status::Deployed,
            &[
                (digest::LABEL, D),
                (LOOKUPS_LABEL, "l1"),
                (REVISION_LABEL, "1"),
            ],
        )];
        assert_eq!(
            lookups(&copied, D, Some("l2"), true, 0),
            Lookups::Repair {
                stamp: Some("l2".into())
            }
        );
        // The upgrade failed and was rolled back: wait for its backoff.
        let failed = [
            meta(
                1,
                Status::Superseded,
                &[(digest::LABEL, D), (LOOKUPS_LABEL, "l1")],
            ),
            meta(
                2,
                Status::Failed,
                &[
                    (digest::LABEL, D),
                    (ATTEMPT_LABEL, "1"),
                    ("modifiedAt", "100"),
                ],
            ),
            meta(
                3,
                Status::Deployed,
                &[
                    (digest::LABEL, D),
                    (ROLLBACK_OF_LABEL, D),
                    (LOOKUPS_LABEL, "l1"),
                    ("modifiedAt", "101"),
                ],
            ),
        ];
        assert_eq!(
            lookups(&failed, D, Some("l2"), true, 105),
            Lookups::Repair { stamp: None }
        );
        assert!(matches!(
            lookups(&failed, D, Some("l2"), true, 200),
            Lookups::Upgrade { attempt: 2, .. }
        ));
    }

    #[test]
    fn a_changed_lookup_that_renders_the_same_only_records_its_digest() {
        // A chart that looks up the Secret it created (a generated password it keeps):
        // after the install the lookup finds it, and the render is what was deployed.
        let history = [meta(
            1,
            Status::Deployed,
            &[(digest::LABEL, D), (LOOKUPS_LABEL, "nothing-found")],
        )];
        assert_eq!(
            lookups(&history, D, Some("found"), false, 0),
            Lookups::Repair {
                stamp: Some("found".into())
            }
        );
        // Once recorded, nothing more to do; a render that changes does upgrade.
        let stamped = [meta(
            1,
            Status::Deployed,
            &[(digest::LABEL, D), (LOOKUPS_LABEL, "found")],
        )];
        assert_eq!(
            lookups(&stamped, D, Some("found"), false, 0),
            Lookups::Repair { stamp: None }
        );
        assert!(matches!(
            lookups(&stamped, D, Some("changed"), true, 0),
            Lookups::Upgrade { attempt: 1, .. }
        ));
    }

    #[test]
    fn readiness_times_out_from_the_deployment() {
        let t = Duration::from_secs(60);
        assert_eq!(readiness(true, Some(0), t, 1_000), Readiness::Ready);
        assert_eq!(readiness(false, Some(0), t, 59), Readiness::Waiting);
        assert_eq!(readiness(false, Some(0), t, 60), Readiness::TimedOut);
        assert_eq!(readiness(false, None, t, 1_000), Readiness::Waiting);
    }

    #[test]
    fn counts_failures_of_the_same_inputs() {
        let metas = vec![
            meta(1, Status::Superseded, &[(digest::LABEL, "old")]),
            meta(
                2,
                Status::Failed,
                &[
                    (digest::LABEL, D),
                    (ATTEMPT_LABEL, "1"),
                    ("modifiedAt", "100"),
                ],
            ),
            meta(
                3,
                Status::Deployed,
                &[
                    (digest::LABEL, "old"),
                    (ROLLBACK_OF_LABEL, D),
                    ("modifiedAt", "110"),
                ],
            ),
            meta(
                4,
                Status::Failed,
                &[
                    (digest::LABEL, D),
                    (ATTEMPT_LABEL, "2"),
                    ("modifiedAt", "200"),
                ],
            ),
            meta(5, Status::Deployed, &[("modifiedAt", "210")]),
        ];
        let f = failures_with(&metas, D).unwrap();
        assert_eq!(f.attempts, 2);
        assert_eq!(f.at, Some(210));
        assert_eq!(failures_with(&metas, "other"), None);
        let fine = vec![meta(1, Status::Deployed, &[(digest::LABEL, D)])];
        assert_eq!(failures_with(&fine, D), None);
        let install_failed = vec![meta(
            1,
            Status::Failed,
            &[(digest::LABEL, D), ("createdAt", "5")],
        )];
        assert_eq!(
            failures_with(&install_failed, D),
            Some(Failures {
                attempts: 1,
                at: Some(5)
            })
        );
    }
}
