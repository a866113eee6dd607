//! Reconciles one custom resource into its Helm release, like the Go helm-operator
//! (finalizer, status conditions, annotations, install/upgrade/uninstall) but safer:
//! a failed install is never uninstalled, a failed upgrade is rolled back, an
//! unchanged release is repaired in place instead of upgraded (the inputs digest on
//! each record says whether anything changed), and failures back off exponentially
//! instead of writing a revision on every reconcile.
//!
//! This module is the flow only. What to do with the release is decided by
//! [`decide::decide`] from its history (the labels it reads are in `labels`, the
//! delays in `timing`); the release actions go through an
//! [`ActionClient`](crate::ActionClient); `finalize` handles deletion (and
//! `uninstall-wait`), `ownership` refuses a release of another chart, `history`
//! keeps the records within `--max-history`, `lookups` notices changed looked-up
//! objects, `readiness` holds `Deployed` back until the workloads are ready (opt-in),
//! `progress` shows what an install or upgrade is waiting for while it waits, and
//! `report` writes how each step ended into the status, an Event and the metrics.
//!
//! Status writes: work on a generation the status does not show yet begins with one
//! (`Reconciling=True`, [`Run::begin`]), and every reconcile that acts ends with one
//! (only when the status changed) that sets `observedGeneration`; a wait longer than
//! a few seconds adds its progress lines. Nothing else writes the status.

mod context;
pub(crate) mod decide;
pub(crate) mod digest;
mod error;
mod events;
mod finalize;
mod history;
mod labels;
mod log;
mod lookups;
mod ownership;
mod progress;
mod readiness;
mod report;
mod timing;
pub(crate) mod transform;
pub(crate) mod values;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use action::{ActionOptions, Installed};
use chart::values::Values;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, GroupVersionKind};
use kube::{Resource, ResourceExt};
use release::api_error::{chain, Chain};
use release::record::Release;

use crate::annotations::{self as ann, AnnotationError, Annotations};
use crate::cr::CustomResource;
use crate::drift::{self, ApplyStart, CrKey};
use crate::status::{self as st, HelmAppStatus, Standing};
use crate::watches::Watch;
pub use context::{Context, DISCOVERY_TTL};
use decide::{Decision, Deployed};
pub use error::ReconcileError;
use labels::{ATTEMPT_LABEL, LOOKUPS_LABEL, REVISION_LABEL, ROLLBACK_OF_LABEL};
use log::CrLog;
use report::Step;
use runtime::events::EventSink;
pub use values::{release_values, ValuesError};

/// One attempt at changing the release: the values, their inputs digest, and which
/// consecutive attempt with them this is.
struct Attempt<'a> {
    values: Values,
    digest: &'a str,
    number: u32,
}

impl<'a> Attempt<'a> {
    fn new(values: Values, digest: &'a str, number: u32) -> Attempt<'a> {
        Attempt {
            values,
            digest,
            number,
        }
    }
}

/// The work [`Run::begin`] announces.
#[derive(Debug, Clone, Copy)]
enum Work {
    Install,
    Upgrade,
    /// A revision another tool deployed is compared with the spec (then stamped, or
    /// upgraded).
    Compare,
}

/// What the controller should do after a successful reconcile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub requeue_after: Option<Duration>,
    /// Kinds of the deployed release's objects, for dependent watches (empty unless the
    /// watch has `watchDependentResources`).
    pub dependents: Vec<GroupVersionKind>,
}

/// Reconciles one CR: uninstalls on deletion, otherwise installs, upgrades or repairs
/// its release and reports the result in the CR status and Events.
pub async fn reconcile(
    cr: Arc<CustomResource>,
    ctx: Arc<Context>,
) -> Result<Outcome, ReconcileError> {
    let name = cr.name_any();
    let cr_id = cr.display_id(&ctx.resource.kind);
    let Some(namespace) = cr.namespace() else {
        return Err(ReconcileError::NoNamespace { cr: cr_id });
    };
    let r = &ctx.resource;
    CrLog::new(&namespace, &name, &r.api_version, &r.kind).reconciling();
    let api: Api<CustomResource> =
        Api::namespaced_with(ctx.client.clone(), &namespace, &ctx.resource);
    let events = EventSink::new(ctx.recorder.clone(), cr.object_ref(&ctx.resource));
    let status = HelmAppStatus::of(&cr);
    let mut run = Run {
        original: status.clone(),
        status,
        cr_id,
        name,
        namespace,
        api,
        events,
        gvk: gvk_label(&ctx.resource),
        cr,
        ctx,
        poll_soon: false,
        apply_start: None,
        attempt: 1,
    };
    if run.cr.meta().deletion_timestamp.is_some() {
        run.ctx.drift.forget(&run.key());
        return run.finalize().await;
    }
    if run.annotations().bool_or(ann::RECONCILE_PAUSED, false) {
        run.ctx.drift.forget(&run.key());
        return run.paused().await;
    }
    run.status.remove(st::PAUSED);
    let result = run.reconcile().await;
    if result.is_err() {
        // Whatever the failure left behind, the next reconcile applies in full.
        run.ctx.drift.forget(&run.key());
    }
    result
}

/// `group/version, Kind=Kind`, as the metrics label CR kinds.
fn gvk_label(r: &ApiResource) -> String {
    format!("{}, Kind={}", r.api_version, r.kind)
}

/// The state of one reconcile.
struct Run {
    cr: Arc<CustomResource>,
    ctx: Arc<Context>,
    cr_id: String,
    name: String,
    namespace: String,
    api: Api<CustomResource>,
    events: EventSink,
    original: HelmAppStatus,
    status: HelmAppStatus,
    gvk: String,
    /// Look again soon (a release waiting for its workloads), not only after the period.
    poll_soon: bool,
    /// When this reconcile's full apply of the release started, if it makes one.
    apply_start: Option<ApplyStart>,
    /// Which consecutive attempt with these inputs the install or upgrade is.
    attempt: u32,
}

impl Run {
    /// The Go reconciler's log context for this CR and its release.
    fn log(&self) -> CrLog<'_> {
        let r = &self.ctx.resource;
        CrLog::new(&self.namespace, &self.name, &r.api_version, &r.kind).release(&self.name)
    }

    /// The CR as the drift tracker knows it.
    fn key(&self) -> CrKey {
        (self.namespace.clone(), self.name.clone())
    }

    /// The CR's `metadata.generation`.
    fn generation(&self) -> Option<i64> {
        self.cr.meta().generation
    }

    /// The status shows the end of a reconcile of the CR's current generation (always,
    /// for a kind whose status cannot carry `observedGeneration`: see
    /// `status::write_if_changed`).
    fn generation_observed(&self) -> bool {
        self.status.observed_generation == self.generation()
            || self
                .ctx
                .status_on_main
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A reconcile of the CR's current generation ends: the status says which (not on
    /// a kind whose status cannot carry it).
    fn observe(&mut self) {
        let on_main = self
            .ctx
            .status_on_main
            .load(std::sync::atomic::Ordering::Relaxed);
        self.status.observed_generation = if on_main { None } else { self.generation() };
    }

    /// Work on a generation the status does not show yet begins: says so at once
    /// (`Reconciling=True`, with `Initialized`), so whoever waits on the CR sees it in
    /// progress while the release changes. kstatus tells a new generation of a CR it
    /// saw before by `observedGeneration` alone; a new CR looks current to it until
    /// this write. A later attempt of the same generation writes nothing here.
    async fn begin(&mut self, work: Work) {
        if self.generation_observed() {
            return;
        }
        let (name, generation) = (&self.name, self.generation().unwrap_or_default());
        let (reason, message) = match work {
            Work::Install => (
                st::INSTALLING,
                format!("Installing release {name} (generation {generation})"),
            ),
            Work::Upgrade => (
                st::UPGRADING,
                format!("Upgrading release {name} to generation {generation}"),
            ),
            Work::Compare => (
                st::UPGRADING,
                format!("Comparing release {name}, deployed by another tool, with generation {generation}"),
            ),
        };
        self.status.stand(Standing::Progressing, reason, message);
        // The reconcile's own end writes the status again; a missed start only shows
        // later.
        if let Err(e) = self.write_status().await {
            tracing::warn!(cr = %self.cr_id, error = %Chain(&e), "could not show the start of the work in the status");
        }
    }

    fn uid(&self) -> &str {
        self.cr.meta().uid.as_deref().unwrap_or_default()
    }

    /// What is known of the release's objects besides its records.
    fn objects(&self) -> decide::Objects {
        let seen = self.ctx.drift.seen(&self.key(), self.uid());
        decide::Objects {
            applied: seen.applied,
            drifted: seen.drifted,
            watched_since: seen.watched_since,
            status_current: self.status_current(),
            uses_lookup: self.ctx.chart_digest.uses_lookup(),
            reapply_period: self.ctx.reapply_period,
        }
    }

    /// The status needs no write: it shows the release deployed, with no failure, as a
    /// full reconcile of an unchanged release leaves it.
    fn status_current(&self) -> bool {
        self.status == self.original
            && self.generation_observed()
            && self.status.is_true(st::READY)
            && !self.awaiting_readiness()
            && self
                .status
                .condition(st::DEPLOYED)
                .is_some_and(|c| c.status == st::TRUE)
            && self.status.condition(st::RELEASE_FAILED).is_none()
            && self
                .status
                .deployed_release
                .as_ref()
                .is_some_and(|d| d.name == self.name)
    }

    fn annotations(&self) -> Annotations<'_> {
        Annotations::new(self.cr.meta().annotations.as_ref())
    }

    /// A release action that writes a revision failed: the release metric says so.
    fn marked_failed(&mut self) -> &mut Run {
        self.set_release_metric(Some(release::record::Status::Failed.as_str()));
        self
    }

    fn storage_err(&self, source: release::Error) -> ReconcileError {
        ReconcileError::Storage {
            cr: self.cr_id.clone(),
            release: self.name.clone(),
            source,
        }
    }

    fn requeue_after(&self) -> Result<Option<Duration>, AnnotationError> {
        Ok(self
            .annotations()
            .reconcile_period()?
            .or(self.ctx.reconcile_period))
    }

    async fn migrate(&self) -> Result<(), ReconcileError> {
        let records = crate::migrate::Records {
            client: &self.ctx.client,
            caches: self.ctx.records.clone(),
        };
        let report = crate::migrate::migrate_with(
            &records,
            &self.cr,
            &self.ctx.resource,
            &self.name,
            &self.namespace,
            None,
        )
        .await
        .map_err(|source| ReconcileError::Migrate {
            cr: self.cr_id.clone(),
            source: Box::new(source),
        })?;
        if !report.is_empty() {
            self.log().migrated(&report);
            self.events
                .normal(
                    events::MIGRATED,
                    format!(
                        "Moved the records of release {} to Secrets: {report:?}",
                        self.name
                    ),
                )
                .await;
        }
        Ok(())
    }

    /// The CR's `.spec` with the watch's overrides on top.
    fn values(&self) -> Result<Values, values::SpecError> {
        let mut values = values::spec_values(&self.cr)?;
        values::merge_overrides(&mut values, &self.ctx.overrides);
        Ok(values)
    }

    /// The labels every record of this CR's release carries besides the digest: the
    /// chart label, as on every other object of the release.
    fn chart_labels(&self) -> BTreeMap<String, String> {
        self.ctx
            .chart_label
            .iter()
            .map(|c| (ann::CHART_LABEL.to_string(), c.clone()))
            .collect()
    }

    fn action_options(&self, digest: &str, attempt: u32) -> ActionOptions {
        let mut opts = ActionOptions::new(&self.name, &self.namespace);
        // An upgrade inherits the previous record's labels; "null" drops a rollback
        // marker so this record is never mistaken for a rollback.
        opts.labels = BTreeMap::from([
            (digest::LABEL.to_string(), digest.to_string()),
            (ATTEMPT_LABEL.to_string(), attempt.to_string()),
            (ROLLBACK_OF_LABEL.to_string(), "null".to_string()),
        ]);
        opts.labels.extend(self.chart_labels());
        let policy = self.policy();
        opts.record_owner = Some(policy.owner.clone());
        opts.lookups_label = Some(LOOKUPS_LABEL.to_string());
        opts.transform = Some(transform::transform(Arc::new(policy)));
        opts.revision_label = Some(REVISION_LABEL.to_string());
        opts.max_history = self.ctx.max_history;
        opts.write_report = self.write_report();
        opts
    }

    /// Tells the drift tracker of the action's own writes to the release's objects,
    /// so the dependent watches do not take them for drift.
    fn write_report(&self) -> action::WriteReport {
        let (drift, key) = (Arc::clone(&self.ctx.drift), self.key());
        action::WriteReport::new(move |o, step| {
            let object = || {
                (
                    o.group().to_string(),
                    o.kind.clone(),
                    o.namespace.clone(),
                    o.name.clone(),
                )
            };
            match step {
                action::Write::Sending => drift.own_write_sending(&key),
                action::Write::Done(version) => {
                    drift.own_write_done(&key, object(), Some(version.map(str::to_string)))
                }
                action::Write::Failed => drift.own_write_done(&key, object(), None),
            }
        })
    }

    /// The CR as the owner of its release's objects and records (Go's
    /// `metav1.NewControllerRef`).
    fn owner_reference(&self) -> OwnerReference {
        let r = &self.ctx.resource;
        OwnerReference {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            name: self.name.clone(),
            uid: self.cr.meta().uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn policy(&self) -> transform::Policy {
        let r = &self.ctx.resource;
        let primary_type = if r.group.is_empty() {
            r.kind.clone()
        } else {
            format!("{}.{}", r.kind, r.group)
        };
        transform::Policy {
            owner: self.owner_reference(),
            namespace: self.namespace.clone(),
            primary_type,
            allow_cluster_scoped: self.ctx.watch.allow_cluster_scoped,
            allowed_namespaces: self.ctx.watch.allowed_namespaces.clone(),
            watch: watch_name(&self.ctx.watch),
            chart_label: self.ctx.chart_label.clone(),
        }
    }

    /// Values, records and annotations are usable (Go's `Sync`), or the reason they
    /// are not, reported as `Irreconcilable`.
    async fn prepare(&mut self) -> Result<(Values, Option<Duration>), ReconcileError> {
        // First, as Helm checks it before anything else: no later step can succeed.
        if let Err(problem) = action::validate_release_name(&self.name) {
            let err = ReconcileError::InvalidName {
                cr: self.cr_id.clone(),
                problem: Box::new(problem),
            };
            let msg = err_message(&err);
            return Err(self.irreconcilable(msg, err).await);
        }
        let requeue_after = match self.requeue_after() {
            Ok(p) => p,
            Err(problem) => {
                let err = ReconcileError::Annotation {
                    cr: self.cr_id.clone(),
                    problem,
                };
                let msg = err_message(&err);
                return Err(self.irreconcilable(msg, err).await);
            }
        };
        if let Err(problem) = self.readiness_timeout() {
            let err = ReconcileError::Annotation {
                cr: self.cr_id.clone(),
                problem,
            };
            let msg = err_message(&err);
            return Err(self.irreconcilable(msg, err).await);
        }
        let values = match self.values() {
            Ok(v) => v,
            Err(source) => {
                let unreadable = matches!(source, values::SpecError::Unreadable(_));
                let err = ReconcileError::InvalidSpec {
                    cr: self.cr_id.clone(),
                    message: source.to_string(),
                };
                let msg = err_message(&err);
                if !unreadable {
                    return Err(self.irreconcilable(msg, err).await);
                }
                // Values that cannot be read fail the install or upgrade they were for;
                // the deployed release, if any, stays as it is.
                let step = if self.status.deployed_release.is_some() {
                    Step::Upgrade
                } else {
                    Step::Install
                };
                return Err(self.fail(step, msg, err).await);
            }
        };
        // Once this process applied the CR's release, its records are where the
        // migration puts them; looking again is for the full applies.
        let migrated = self.ctx.drift.known(&self.key(), self.uid());
        if !migrated {
            if let Err(err) = self.migrate().await {
                let msg = chain(&err);
                return Err(self.irreconcilable(msg, err).await);
            }
        }
        Ok((values, requeue_after))
    }

    /// `reconcile-paused`: nothing is applied or changed but the `Paused` condition.
    async fn paused(&mut self) -> Result<Outcome, ReconcileError> {
        tracing::info!(cr = %self.cr_id, "Reconciliation is paused");
        let message = format!(
            "Reconciliation is paused: remove the annotation {}{} (or set it to \"false\") to resume",
            ann::PREFIX,
            ann::RECONCILE_PAUSED
        );
        self.status
            .set(st::PAUSED, st::TRUE, st::RECONCILE_PAUSED, message.clone());
        // A change waiting on the pause is not done (nor is work the pause stopped):
        // kstatus keeps counting it in progress. A CR at rest stays as it was.
        if !self.generation_observed() || self.status.is_true(st::RECONCILING) {
            self.status
                .stand(Standing::Progressing, st::RECONCILE_PAUSED, message);
        }
        self.write_status().await?;
        Ok(Outcome::default())
    }

    async fn reconcile(&mut self) -> Result<Outcome, ReconcileError> {
        let (values, requeue_after) = self.prepare().await?;
        let digest = self.ctx.chart_digest.with_values(&values);
        let actions = Arc::clone(&self.ctx.actions);
        let history = actions
            .history(&self.namespace, &self.name)
            .await
            .map_err(|e| self.storage_err(e))?;
        // Before the finalizer: a CR refused here must never uninstall that release.
        self.check_owner(&history).await?;
        let mut history = self.prune_history(history).await;
        self.ensure_finalizer().await?;
        self.status.set(st::INITIALIZED, st::TRUE, "", "");
        self.status.remove(st::IRRECONCILABLE);
        let mut recovered = false;
        self.apply_start = Some(self.ctx.drift.apply_started(&self.key(), drift::now_ms()));
        let rel = loop {
            let decision = decide::decide(&history, &digest, unix_now(), &self.objects());
            tracing::debug!(cr = %self.cr_id, ?decision, "decided");
            match decision {
                Decision::Recover { version, status } => {
                    let opts = self.action_options(&digest, 1);
                    let err = || ReconcileError::InProgress {
                        cr: self.cr_id.clone(),
                        release: self.name.clone(),
                        version,
                        status: status.to_string(),
                    };
                    match actions.recover(opts).await {
                        Ok(Some(rel)) if !recovered => {
                            self.log().recovered(rel.version);
                            recovered = true;
                            history = actions
                                .history(&self.namespace, &self.name)
                                .await
                                .map_err(|e| self.storage_err(e))?;
                        }
                        // Another rudder action holds the lock, or another tool (helm) is
                        // still at work on the release: its own record write brings
                        // the CR back.
                        Ok(_)
                        | Err(action::Error::Locked { .. })
                        | Err(action::Error::PendingElsewhere { .. }) => return Err(err()),
                        Err(source) => {
                            return Err(self.action_error(
                                "recovering the interrupted operation",
                                source,
                                None,
                            ))
                        }
                    }
                }
                Decision::BackOff { attempts, retry_in } => {
                    return Err(self.backing_off(attempts, retry_in).await);
                }
                Decision::Install { attempt } => {
                    self.begin(Work::Install).await;
                    break self.install(Attempt::new(values, &digest, attempt)).await?;
                }
                Decision::Upgrade { attempt, deployed } => {
                    self.begin(Work::Upgrade).await;
                    let attempt = Attempt::new(values, &digest, attempt);
                    break self.upgrade(attempt, &deployed).await?;
                }
                Decision::StampDigest { attempt, deployed } => {
                    self.begin(Work::Compare).await;
                    let attempt = Attempt::new(values, &digest, attempt);
                    break self.compare_renders(attempt, &deployed).await?;
                }
                Decision::Repair { .. } if self.ctx.chart_digest.uses_lookup() => {
                    break self.refresh_lookups(values, &digest, &history).await?;
                }
                Decision::Repair { reason } => {
                    self.log().repairing(reason);
                    break self.repair(&digest, self.chart_labels()).await?;
                }
                Decision::Unchanged => {
                    self.log().reconciled();
                    return Ok(Outcome {
                        requeue_after,
                        dependents: Vec::new(),
                    });
                }
            }
        };
        let requeue_after = if self.poll_soon {
            Some(requeue_after.map_or(timing::READINESS_POLL, |p| p.min(timing::READINESS_POLL)))
        } else {
            requeue_after
        };
        self.deployed(rel, requeue_after).await
    }

    /// A record without our digest whose render matches gets the digest once, so it is
    /// not rendered again on every reconcile; otherwise the inputs changed.
    async fn compare_renders(
        &mut self,
        attempt: Attempt<'_>,
        deployed: &Deployed,
    ) -> Result<Release, ReconcileError> {
        let opts = self.action_options(attempt.digest, attempt.number);
        let diff = Arc::clone(&self.ctx.actions)
            .diff_upgrade(&self.ctx.chart, attempt.values.clone(), opts)
            .await;
        match diff {
            Ok(diff) if diff.changed => {
                tracing::info!(cr = %self.cr_id, release = %self.name, version = deployed.version,
                    "the deployed revision was made outside the operator and differs from the CR's spec: upgrading to the spec");
                self.upgrade(attempt, deployed).await
            }
            Ok(diff) => {
                let digest = attempt.digest;
                let mut stamp = self.chart_labels();
                stamp.insert(digest::LABEL.to_string(), digest.to_string());
                if let Some(l) = diff.lookups {
                    stamp.insert(LOOKUPS_LABEL.to_string(), l);
                }
                self.repair(digest, stamp).await
            }
            Err(source) => Err(self.candidate_failed(source).await),
        }
    }

    /// The upgrade's candidate release could not be built (Go's `Sync`): the inputs
    /// are `Irreconcilable`, the deployed release and its `Deployed` stay as they are.
    async fn candidate_failed(&mut self, source: action::Error) -> ReconcileError {
        let msg = format!("failed to get candidate release: {}", Chain(&source));
        let err = self.action_error("upgrade", source, None);
        self.irreconcilable(msg, err).await
    }

    async fn install(&mut self, attempt: Attempt<'_>) -> Result<Release, ReconcileError> {
        self.attempt = attempt.number;
        let mut opts = self.action_options(attempt.digest, attempt.number);
        let a = self.annotations();
        opts.disable_hooks = a.bool_or(ann::INSTALL_DISABLE_HOOKS, false);
        opts.description = a.text(ann::INSTALL_DESCRIPTION);
        // As Go: before every install attempt.
        self.warn_overrides().await;
        let waits = progress::report_waits(&mut opts);
        let ctx = Arc::clone(&self.ctx);
        let install = ctx.actions.install(&ctx.chart, attempt.values, opts);
        let installed = self.while_waiting(waits, install).await;
        match installed {
            Ok(Installed {
                release,
                adopted: Some(found),
            }) => {
                self.adopted(&release, found).await;
                Ok(release)
            }
            Ok(Installed { release, .. }) => {
                self.log().installed();
                let note = format!(
                    "Installed release {} (revision {})",
                    release.name, release.version
                );
                self.succeeded(&release, Step::Install, note).await;
                Ok(release)
            }
            Err(source @ action::Error::Adopt { .. }) => {
                let err = ReconcileError::Adopt {
                    cr: self.cr_id.clone(),
                    source: Box::new(source),
                };
                let msg = chain(&err);
                Err(self.fail(Step::Install, msg, err).await)
            }
            Err(source) => {
                let msg = format!("failed to install release: {}", Chain(&source));
                let retry_in = timing::action_retry(attempt.number, !changed_nothing(&source));
                Err(self
                    .marked_failed()
                    .action_failed(Step::Install, source, retry_in, msg)
                    .await)
            }
        }
    }

    async fn upgrade(
        &mut self,
        attempt: Attempt<'_>,
        deployed: &Deployed,
    ) -> Result<Release, ReconcileError> {
        let (digest, number) = (attempt.digest, attempt.number);
        self.attempt = number;
        let mut opts = self.action_options(digest, number);
        let a = self.annotations();
        opts.force = a.bool_or(ann::UPGRADE_FORCE, false);
        opts.disable_hooks = a.bool_or(ann::UPGRADE_DISABLE_HOOKS, false);
        opts.description = a.text(ann::UPGRADE_DESCRIPTION);
        let rollback_force = a.bool_or(ann::ROLLBACK_FORCE, true);
        let transform = opts.transform.clone();
        let force = opts.force;
        self.warn_overrides().await;
        let waits = progress::report_waits(&mut opts);
        let ctx = Arc::clone(&self.ctx);
        let upgrade = ctx.actions.upgrade(&ctx.chart, attempt.values, opts);
        let upgraded = self.while_waiting(waits, upgrade).await;
        let source = match upgraded {
            Ok(rel) => {
                self.log().upgraded(force);
                let note = format!("Upgraded release {} to revision {}", rel.name, rel.version);
                self.succeeded(&rel, Step::Upgrade, note).await;
                return Ok(rel);
            }
            Err(e) if candidate_error(&e) => return Err(self.candidate_failed(e).await),
            Err(e) => e,
        };
        let mut msg = format!("failed to upgrade release: {}", Chain(&source));
        // Roll back only when the failed upgrade wrote a revision (it may have changed
        // objects); a render error or a refusal changed nothing.
        let wrote = match self.ctx.actions.history(&self.namespace, &self.name).await {
            Ok(m) => m.last().is_some_and(|m| {
                m.version > deployed.newest && m.status == release::record::Status::Failed
            }),
            Err(_) => false,
        };
        if wrote && !changed_nothing(&source) {
            let mut ropts = ActionOptions::new(&self.name, &self.namespace);
            ropts.force = rollback_force;
            ropts.transform = transform;
            ropts.record_owner = Some(self.owner_reference());
            ropts.lookups_label = Some(LOOKUPS_LABEL.to_string());
            ropts.revision_label = Some(REVISION_LABEL.to_string());
            ropts.max_history = self.ctx.max_history;
            ropts.write_report = self.write_report();
            ropts.labels = BTreeMap::from([
                (ROLLBACK_OF_LABEL.to_string(), digest.to_string()),
                (ATTEMPT_LABEL.to_string(), number.to_string()),
            ]);
            if let Some(d) = &deployed.digest {
                ropts.labels.insert(digest::LABEL.to_string(), d.clone());
            }
            ropts.labels.extend(self.chart_labels());
            if let Err(rollback) = self.rollback(deployed.version, ropts).await {
                msg = format!(
                    "failed upgrade ({}) and failed rollback: {}",
                    Chain(&source),
                    Chain(&rollback)
                );
                self.events
                    .warning(events::ROLLBACK_ERROR, msg.clone())
                    .await;
            }
        }
        let retry_in = timing::action_retry(number, wrote);
        Err(self
            .marked_failed()
            .action_failed(Step::Upgrade, source, retry_in, msg)
            .await)
    }

    /// Rolls back to `to` after a failed upgrade and says so in an Event.
    async fn rollback(&mut self, to: i64, opts: ActionOptions) -> Result<(), action::Error> {
        match self.ctx.actions.rollback(to, opts).await {
            Ok(rel) => {
                self.events
                    .normal(events::ROLLED_BACK, format!(
                            "Rolled release {} back to revision {to} (as revision {}) after the failed upgrade",
                            self.name, rel.version
                        ),
                    )
                    .await;
                Ok(())
            }
            Err(e) => {
                self.log().rollback_failed(&e);
                Err(e)
            }
        }
    }

    async fn repair(
        &mut self,
        digest: &str,
        stamp: BTreeMap<String, String>,
    ) -> Result<Release, ReconcileError> {
        // The inputs match the deployed release again: an earlier failed change is no
        // longer being attempted (as in Go); a readiness timeout stays until ready.
        if !self.awaiting_readiness() {
            self.status.remove(st::RELEASE_FAILED);
        }
        let opts = self.action_options(digest, 1);
        match Arc::clone(&self.ctx.actions).repair(opts, stamp).await {
            Ok((rel, report)) => {
                self.repaired(&rel, &report).await;
                Ok(rel)
            }
            Err(source) => {
                let msg = format!("failed to reconcile release: {}", Chain(&source));
                Err(self.action_failed(Step::Reconcile, source, None, msg).await)
            }
        }
    }
}

/// `group/version Kind` of a watch, as messages name it.
fn watch_name(w: &Watch) -> String {
    if w.group.is_empty() {
        format!("{} {}", w.version, w.kind)
    } else {
        format!("{}/{} {}", w.group, w.version, w.kind)
    }
}

/// An error's message as the status shows it: an invalid spec without the CR's name.
fn err_message(err: &ReconcileError) -> String {
    match err {
        ReconcileError::InvalidSpec { message, .. } => message.clone(),
        ReconcileError::InvalidName { problem, .. } => chain(&**problem),
        ReconcileError::DuplicateName { release, chart, .. } => {
            error::duplicate_message(release, chart)
        }
        ReconcileError::NoChartMetadata { release, .. } => error::no_chart_message(release),
        other => chain(other),
    }
}

/// Errors of building an upgrade's candidate release (rendering it, resolving and
/// checking its objects): Go's `Sync` fails with them before any upgrade.
fn candidate_error(e: &action::Error) -> bool {
    matches!(
        e,
        action::Error::Render { .. }
            | action::Error::RenderAborted { .. }
            | action::Error::InvalidDocument { .. }
            | action::Error::UnknownKind { .. }
            | action::Error::Discovery { .. }
            | action::Error::Transform { .. }
            | action::Error::Conflict { .. }
    )
}

/// Errors raised before an action touched any object.
fn changed_nothing(e: &action::Error) -> bool {
    matches!(
        e,
        action::Error::Render { .. }
            | action::Error::RenderAborted { .. }
            | action::Error::InvalidDocument { .. }
            | action::Error::Conflict { .. }
            | action::Error::Transform { .. }
            | action::Error::Locked { .. }
            | action::Error::PendingElsewhere { .. }
            | action::Error::InUse { .. }
    )
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests;
