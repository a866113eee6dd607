//! The opt-in readiness mode (`install-wait`/`upgrade-wait` annotations, `installWait`/
//! `upgradeWait` in `watches.yaml`): after an install or upgrade, `Deployed` stays
//! `False/AwaitingReadiness` until every workload of the release is ready, checked on
//! reconciles a few seconds apart (never by holding a worker), and a release still not
//! ready `wait-timeout` (default 5m) after it was deployed gets `ReleaseFailed`. The
//! release itself is not touched by the wait: its record stays `deployed`, as with
//! `helm install` without `--wait`, so nothing is retried or rolled back because of it.
//!
//! The state lives in the status: waiting is `Deployed`'s reason being
//! `AwaitingReadiness`, so a restart resumes the wait where it was. For kstatus the
//! wait is `Reconciling=True/AwaitingReadiness`, and a timeout `Stalled`.

use std::time::Duration;

use release::record::Release;

use super::decide::{self, Readiness};
use super::report::{notes, ready_message, reason_by_version, Step};
use super::timing::READINESS_TIMEOUT;
use super::Run;
use crate::annotations::{self as ann, AnnotationError};
use crate::status::{self as st, Standing};

/// How many not-ready objects a message names.
const NAMED: usize = 5;

impl Run {
    /// `wait-timeout` (annotation, else `waitTimeout` of the watch, else 5m).
    pub(super) fn readiness_timeout(&self) -> Result<Duration, AnnotationError> {
        Ok(self
            .annotations()
            .duration(ann::WAIT_TIMEOUT)?
            .or(self.ctx.watch.wait_timeout)
            .unwrap_or(READINESS_TIMEOUT))
    }

    /// Whether `step`'s success waits for readiness before `Deployed`.
    pub(super) fn waits_for_readiness(&self, step: Step) -> bool {
        let a = self.annotations();
        let w = &self.ctx.watch;
        match step {
            Step::Install => a.bool_or(ann::INSTALL_WAIT, w.install_wait),
            Step::Upgrade => a.bool_or(ann::UPGRADE_WAIT, w.upgrade_wait),
            Step::Reconcile | Step::Uninstall => false,
        }
    }

    /// The status says a release is waiting for its workloads (and the CR still asks
    /// for a wait at all: removing both annotations ends it).
    pub(super) fn awaiting_readiness(&self) -> bool {
        let waiting = self
            .status
            .condition(st::DEPLOYED)
            .is_some_and(|c| c.reason == st::AWAITING_READINESS);
        waiting
            && (self.waits_for_readiness(Step::Install) || self.waits_for_readiness(Step::Upgrade))
    }

    /// `Deployed=False/AwaitingReadiness` for `rel`, and a check again soon.
    pub(super) fn await_readiness(&mut self, rel: &Release, not_ready: &[String]) {
        let timeout = self.readiness_timeout().unwrap_or(READINESS_TIMEOUT);
        let what = if not_ready.is_empty() {
            "its workloads".to_string()
        } else {
            named(not_ready)
        };
        let message = format!(
            "Revision {} of release {} is deployed; waiting up to {} for {what} to be ready",
            rel.version,
            rel.name,
            go_duration(timeout)
        );
        self.status.set(
            st::DEPLOYED,
            st::FALSE,
            st::AWAITING_READINESS,
            message.clone(),
        );
        self.status
            .stand(Standing::Progressing, st::AWAITING_READINESS, message);
        self.poll_soon = true;
    }

    /// A repair of a release that waits for readiness found `not_ready`: `Deployed`
    /// once all are ready, `ReleaseFailed` once past the timeout.
    pub(super) fn check_readiness(&mut self, rel: &Release, not_ready: &[String]) {
        let timeout = self.readiness_timeout().unwrap_or(READINESS_TIMEOUT);
        let deployed_at = rel
            .info
            .as_ref()
            .and_then(|i| i.last_deployed.as_ref())
            .map(|t| t.unix_seconds());
        match decide::readiness(
            not_ready.is_empty(),
            deployed_at,
            timeout,
            super::unix_now(),
        ) {
            Readiness::Ready => {
                tracing::info!(cr = %self.cr_id, release = %rel.name, version = rel.version, "release workloads are ready");
                self.status.remove(st::RELEASE_FAILED);
                self.status
                    .set(st::DEPLOYED, st::TRUE, reason_by_version(rel), notes(rel));
                let message = format!("{}; its workloads are ready", ready_message(rel));
                self.status
                    .stand(Standing::Ready, reason_by_version(rel), message);
            }
            Readiness::Waiting => self.await_readiness(rel, not_ready),
            Readiness::TimedOut => {
                let step = if rel.version == 1 {
                    Step::Install
                } else {
                    Step::Upgrade
                };
                let (condition, reason) = step.failure();
                let message = format!(
                    "release {} revision {} is not ready {} after it was deployed: {}",
                    rel.name,
                    rel.version,
                    go_duration(timeout),
                    named(not_ready)
                );
                tracing::error!(cr = %self.cr_id, release = %rel.name, error = %message, "release failed");
                self.status
                    .set(condition, st::TRUE, reason, message.clone());
                // Still waiting, at the usual pace: it may become ready after all.
                self.await_readiness(rel, not_ready);
                self.poll_soon = false;
                // A wait past its timeout is what kstatus calls stalled.
                self.status.stand(Standing::Stalled, reason, message);
            }
        }
    }
}

fn named(not_ready: &[String]) -> String {
    let mut out = not_ready
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if not_ready.len() > NAMED {
        out.push_str(&format!(" (and {} more)", not_ready.len() - NAMED));
    }
    out
}

/// A duration as Go prints it (`5m0s`, `90s` as `1m30s`), in whole seconds.
fn go_duration(d: Duration) -> String {
    gostd::time::Duration::from_std(Duration::from_secs(d.as_secs())).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(7)), "7s");
        assert_eq!(go_duration(Duration::from_secs(3661)), "1h1m1s");
    }

    #[test]
    fn long_lists_are_cut() {
        let items: Vec<String> = (0..7).map(|i| format!("o{i}")).collect();
        assert_eq!(named(&items), "o0; o1; o2; o3; o4 (and 2 more)");
    }
}
