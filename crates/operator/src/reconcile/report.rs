//! How each step of a reconcile ends, told the way the Go helm-operator tells it: a
//! status condition on the CR, an Event, a log line and the release-status metric.
//! One place, so every step reports success and failure alike. Each Go condition set
//! here comes with where the reconcile stands for kstatus and Flux ([`Standing`]), and
//! the status written at the end of a reconcile carries `observedGeneration`.

use std::time::Duration;

use action::RepairReport;
use release::record::Release;

use super::events;
use super::log::FailedStep;
use super::timing::STALLED_AFTER;
use super::{Outcome, ReconcileError, Run};
use crate::status::{self as st, DeployedRelease, Standing};

/// A reconcile step, as the status, Events and errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Install,
    Upgrade,
    /// Repairing an unchanged release, and inputs that cannot be used at all.
    Reconcile,
    Uninstall,
}

impl Step {
    /// The action in a [`ReconcileError::Action`].
    fn action(self) -> &'static str {
        match self {
            Step::Install => "install",
            Step::Upgrade => "upgrade",
            Step::Reconcile => "repair",
            Step::Uninstall => "uninstall",
        }
    }

    /// The `Deployed` condition's reason when the step changed the release (a repair
    /// changes no revision and reports by version instead).
    fn success(self) -> &'static str {
        match self {
            Step::Install => st::INSTALL_SUCCESSFUL,
            Step::Upgrade | Step::Reconcile => st::UPGRADE_SUCCESSFUL,
            Step::Uninstall => st::UNINSTALL_SUCCESSFUL,
        }
    }

    /// The condition the step sets when it fails, and that condition's reason.
    pub(super) fn failure(self) -> (&'static str, &'static str) {
        match self {
            Step::Install => (st::RELEASE_FAILED, st::INSTALL_ERROR),
            Step::Upgrade => (st::RELEASE_FAILED, st::UPGRADE_ERROR),
            Step::Reconcile => (st::IRRECONCILABLE, st::RECONCILE_ERROR),
            Step::Uninstall => (st::RELEASE_FAILED, st::UNINSTALL_ERROR),
        }
    }
}

/// The release's notes, as the `Deployed` condition's message.
pub(super) fn notes(rel: &Release) -> String {
    rel.info
        .as_ref()
        .map(|i| i.notes.clone())
        .unwrap_or_default()
}

/// `Ready`'s message once `rel` is deployed.
pub(super) fn ready_message(rel: &Release) -> String {
    format!("Release {} revision {} is deployed", rel.name, rel.version)
}

/// Whether a failure of an install or upgrade will recur however often it is retried
/// with the same inputs: they cannot be used (the spec, the render, objects refused
/// before anything was applied). Other failures count as lasting from the
/// [`STALLED_AFTER`]th attempt on.
fn will_recur(err: &ReconcileError) -> bool {
    match err {
        ReconcileError::InvalidSpec { .. } => true,
        ReconcileError::Action { source, .. } => matches!(
            **source,
            action::Error::Render { .. }
                | action::Error::RenderAborted { .. }
                | action::Error::InvalidDocument { .. }
                | action::Error::UnknownKind { .. }
                | action::Error::Transform { .. }
                | action::Error::Conflict { .. }
                | action::Error::InvalidReleaseName { .. }
        ),
        _ => false,
    }
}

/// The `Deployed` reason of a release that was not changed now: as Go says it, by
/// whether the deployed revision is the first.
pub(super) fn reason_by_version(rel: &Release) -> &'static str {
    if rel.version == 1 {
        st::INSTALL_SUCCESSFUL
    } else {
        st::UPGRADE_SUCCESSFUL
    }
}

impl Run {
    /// Writes the status if it changed since the start of this reconcile.
    pub(super) async fn write_status(&mut self) -> Result<(), ReconcileError> {
        let room = st::MAX_OBJECT_BYTES.saturating_sub(self.cr.weight_without_status());
        self.status.fit(room);
        // The next reconcile waits for the CR watch to bring this write back.
        self.ctx.drift.status_writing(&self.key());
        let on_main = &self.ctx.status_on_main;
        let written =
            st::write_if_changed(&self.api, &self.name, &self.original, &self.status, on_main)
                .await;
        let version = match &written {
            Ok(st::Written::At(version)) => version.clone(),
            _ => None,
        };
        self.ctx.drift.status_written(&self.key(), version);
        match written {
            Ok(_) => {
                self.original = self.status.clone();
                Ok(())
            }
            Err(source) => Err(ReconcileError::Kube {
                cr: self.cr_id.clone(),
                action: "update the status of",
                source,
            }),
        }
    }

    pub(super) fn set_release_metric(&self, status: Option<&str>) {
        self.ctx
            .metrics()
            .set_status(&self.gvk, &self.namespace, &self.name, status);
    }

    /// `step` failed: sets its failure condition, records a Warning Event, writes the
    /// status and returns `err`.
    pub(super) async fn fail(
        &mut self,
        step: Step,
        message: String,
        err: ReconcileError,
    ) -> ReconcileError {
        let log = self.log();
        match step {
            Step::Install | Step::Upgrade => log.release_failed(&message),
            Step::Reconcile => log.reconcile_failed(&message),
            Step::Uninstall => log.uninstall_failed(&message),
        }
        self.record_failure(step, message, err).await
    }

    /// Sets `step`'s failure condition and where that leaves the CR, records a
    /// Warning Event and writes the status: the end of this generation's reconcile.
    async fn record_failure(
        &mut self,
        step: Step,
        message: String,
        err: ReconcileError,
    ) -> ReconcileError {
        let (condition, reason) = step.failure();
        self.status
            .set(condition, st::TRUE, reason, message.clone());
        // The notes do not change from one attempt to the next, so a retry that fails
        // the same way writes nothing.
        let attempt = self.attempt;
        let (standing, note) = match step {
            Step::Reconcile => (Standing::Stalled, message.clone()),
            Step::Uninstall => (Standing::Retrying, message.clone()),
            Step::Install | Step::Upgrade if attempt >= STALLED_AFTER => (
                Standing::Stalled,
                format!(
                    "{message} (failed {STALLED_AFTER} times or more with these inputs; \
                     retried with a backoff while they stay as they are)"
                ),
            ),
            Step::Install | Step::Upgrade if will_recur(&err) => {
                (Standing::Stalled, message.clone())
            }
            Step::Install | Step::Upgrade => (
                Standing::Retrying,
                format!("{message} (retrying with a backoff)"),
            ),
        };
        self.status.stand(standing, reason, note);
        self.observe();
        self.events.warning(reason, message).await;
        if let Err(e) = self.write_status().await {
            let after = match step {
                Step::Install => FailedStep::Install,
                Step::Upgrade => FailedStep::Sync,
                Step::Reconcile => FailedStep::Reconcile,
                Step::Uninstall => FailedStep::Uninstall,
            };
            self.log().status_update_failed(after, &e);
        }
        err
    }

    /// The CR's inputs cannot be used: `Irreconcilable`.
    pub(super) async fn irreconcilable(
        &mut self,
        message: String,
        err: ReconcileError,
    ) -> ReconcileError {
        self.log().sync_failed(&message);
        self.record_failure(Step::Reconcile, message, err).await
    }

    /// A failed release action on this CR, retried after `retry_in` (the controller's
    /// backoff when `None`).
    pub(super) fn action_error(
        &self,
        action: &'static str,
        source: action::Error,
        retry_in: Option<Duration>,
    ) -> ReconcileError {
        ReconcileError::Action {
            cr: self.cr_id.clone(),
            action,
            source: Box::new(source),
            retry_in,
        }
    }

    /// The release action of `step` failed with `source`; `message` is what the status
    /// and the Event say.
    pub(super) async fn action_failed(
        &mut self,
        step: Step,
        source: action::Error,
        retry_in: Option<Duration>,
        message: String,
    ) -> ReconcileError {
        let err = self.action_error(step.action(), source, retry_in);
        self.fail(step, message, err).await
    }

    /// `step` changed the release to `rel`: `Deployed` (or, in readiness mode, waiting
    /// for the workloads first) and a Normal Event with `note`.
    pub(super) async fn succeeded(&mut self, rel: &Release, step: Step, note: String) {
        if self.waits_for_readiness(step) {
            self.status.remove(st::RELEASE_FAILED);
            self.await_readiness(rel, &[]);
        } else {
            self.status
                .set(st::DEPLOYED, st::TRUE, step.success(), notes(rel));
            self.status
                .stand(Standing::Ready, step.success(), ready_message(rel));
        }
        self.events.normal(step.success(), note).await;
    }

    /// A release without records was recorded over its `found` live objects.
    pub(super) async fn adopted(&mut self, rel: &Release, found: usize) {
        self.log().adopted(rel.version, found);
        self.events
            .normal(
                events::ADOPTED,
                format!(
                    "Recorded release {} revision {} over its existing objects",
                    self.name, rel.version
                ),
            )
            .await;
        if self.waits_for_readiness(Step::Install) {
            self.await_readiness(rel, &[]);
        } else {
            self.status
                .set(st::DEPLOYED, st::TRUE, reason_by_version(rel), notes(rel));
            self.status
                .stand(Standing::Ready, reason_by_version(rel), ready_message(rel));
        }
    }

    /// The unchanged release `rel` was applied again; `report` says what had drifted.
    pub(super) async fn repaired(&mut self, rel: &Release, report: &RepairReport) {
        if !report.repaired.is_empty() {
            let objects: Vec<String> = report.repaired.iter().map(|o| o.to_string()).collect();
            self.log().repaired(&objects);
            self.events
                .normal(
                    events::REPAIRED,
                    format!(
                        "Re-applied {} object(s) of release {} revision {}: {}",
                        objects.len(),
                        self.name,
                        rel.version,
                        objects.join(", ")
                    ),
                )
                .await;
        }
        if self.awaiting_readiness() {
            self.check_readiness(rel, &report.not_ready);
            return;
        }
        self.log().reconciled();
        self.status
            .set(st::DEPLOYED, st::TRUE, reason_by_version(rel), notes(rel));
        self.status
            .stand(Standing::Ready, reason_by_version(rel), ready_message(rel));
    }

    /// The last `attempts` with these inputs failed and their backoff has not passed:
    /// the status keeps the last failure, the error says when to retry.
    pub(super) async fn backing_off(
        &mut self,
        attempts: u32,
        retry_in: Duration,
    ) -> ReconcileError {
        let failed = self.status.condition(st::RELEASE_FAILED).cloned();
        let last = failed
            .as_ref()
            .map(|c| c.message.clone())
            .unwrap_or_default();
        // The last failure's report stands; a generation not seen yet (a spec changed
        // back to inputs still backing off), a status without it, or one a pause
        // left, gets one.
        let paused_before = self
            .status
            .condition(st::RECONCILING)
            .is_some_and(|c| c.reason == st::RECONCILE_PAUSED);
        if !self.generation_observed() || !self.status.is_true(st::RELEASE_FAILED) || paused_before
        {
            let reason = match &failed {
                Some(c) => c.reason.clone(),
                None if self.status.deployed_release.is_some() => st::UPGRADE_ERROR.into(),
                None => st::INSTALL_ERROR.into(),
            };
            let standing = if attempts >= STALLED_AFTER {
                Standing::Stalled
            } else {
                Standing::Retrying
            };
            let message = format!(
                "the last {attempts} attempt(s) with these inputs failed; retrying with a backoff: {last}"
            );
            self.status.stand(standing, &reason, message);
            self.observe();
        }
        if let Err(e) = self.write_status().await {
            return e;
        }
        ReconcileError::BackingOff {
            cr: self.cr_id.clone(),
            attempts,
            retry_in,
            last,
        }
    }

    /// The release is deployed as `rel`: the status shows it, the metric too, and the
    /// controller learns when to come back and which kinds to watch.
    pub(super) async fn deployed(
        &mut self,
        rel: Release,
        requeue_after: Option<Duration>,
    ) -> Result<Outcome, ReconcileError> {
        self.status.remove(st::IRRECONCILABLE);
        // A readiness timeout stays until the workloads are ready.
        if !self.awaiting_readiness() {
            self.status.remove(st::RELEASE_FAILED);
        }
        self.status.deployed_release = Some(DeployedRelease {
            name: rel.name.clone(),
            manifest: self.ctx.status_manifest.shown(&rel.manifest),
        });
        // The end of this generation's reconcile.
        self.observe();
        self.write_status().await?;
        self.set_release_metric(Some(rel.status().as_str()));
        let dependents = if self.ctx.watch.watch_dependent_resources {
            action::manifest_kinds(&rel.name, &rel.manifest)
        } else {
            Vec::new()
        };
        // Only dependent watches can tell that objects stayed as applied.
        match self.apply_start {
            Some(start) if self.ctx.watch.watch_dependent_resources => {
                let uid = self.uid().to_string();
                self.ctx
                    .drift
                    .applied(&self.key(), &uid, rel.version, start, &dependents);
            }
            _ => self.ctx.drift.forget(&self.key()),
        }
        Ok(Outcome {
            requeue_after,
            dependents,
        })
    }

    /// One `OverrideValuesInUse` warning per override, as Go records them before an
    /// install or upgrade: the value shown unless `--suppress-override-values`.
    pub(super) async fn warn_overrides(&self) {
        let suppress = self.ctx.suppress_override_values;
        for (key, value) in &self.ctx.watch.override_values {
            let shown = if suppress { "****" } else { value.as_str() };
            // Go's `%q`.
            let note = format!(
                "Chart value {} overridden to {} by operator's watches.yaml",
                gostd::strconv::quote(key),
                gostd::strconv::quote(shown)
            );
            self.events
                .warning(events::OVERRIDE_VALUES_IN_USE, note)
                .await;
        }
    }
}
