//! When the reconciler looks at a release again: the backoff of release actions that
//! keep failing with unchanged inputs, and the polls while a release is busy or
//! becoming ready. A failed reconcile that names no delay of its own backs off per CR
//! in the controller instead ([`runtime::Backoff::RECONCILE`]).

use std::time::Duration;

use runtime::Backoff;

/// Between attempts of a release action that wrote a failed revision and keeps
/// failing with unchanged inputs; the attempts are counted on the records, so the
/// delay survives restarts and a failing chart does not write a revision on every
/// retry.
pub(crate) const RELEASE_BACKOFF: Backoff = Backoff {
    base: Duration::from_secs(10),
    max: Duration::from_secs(600),
};

/// From which consecutive failed attempt with the same inputs an install or upgrade
/// shows `Stalled` (kstatus: Failed) rather than `Reconciling` (retrying): about 30 s
/// of retries (10 s, then 20 s of [`RELEASE_BACKOFF`]). The operator keeps retrying
/// at the backoff's pace; the first success clears it.
pub(crate) const STALLED_AFTER: u32 = 3;

/// How soon to check again while a release's workloads become ready.
pub(crate) const READINESS_POLL: Duration = Duration::from_secs(5);
/// How long `install-wait`/`upgrade-wait` wait by default (Helm's `--timeout`).
pub(crate) const READINESS_TIMEOUT: Duration = Duration::from_secs(300);

/// How soon to look again while another operation holds the release.
pub(crate) const IN_PROGRESS_RETRY: Duration = Duration::from_secs(10);

/// The delay a failed release action names for its retry: one that wrote a failed
/// revision backs off on the records ([`RELEASE_BACKOFF`]); one that changed nothing
/// (a render error, a refused object) names none, so the controller's per-CR
/// [`Backoff::RECONCILE`] applies and grows with every failure.
pub(crate) fn action_retry(attempt: u32, wrote_revision: bool) -> Option<Duration> {
    wrote_revision.then(|| RELEASE_BACKOFF.delay(attempt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_backoff_doubles_up_to_ten_minutes() {
        assert_eq!(RELEASE_BACKOFF.delay(1), Duration::from_secs(10));
        assert_eq!(RELEASE_BACKOFF.delay(2), Duration::from_secs(20));
        assert_eq!(RELEASE_BACKOFF.delay(4), Duration::from_secs(80));
        assert_eq!(RELEASE_BACKOFF.delay(7), Duration::from_secs(600));
        assert_eq!(RELEASE_BACKOFF.delay(100), Duration::from_secs(600));
    }

    #[test]
    fn only_failures_that_wrote_a_revision_back_off_on_records() {
        assert_eq!(action_retry(3, true), Some(RELEASE_BACKOFF.delay(3)));
        assert_eq!(action_retry(3, false), None);
    }
}
