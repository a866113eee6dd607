//! Reconciles one custom resource into its Helm release, like the Go helm-operator
//! (finalizer, status conditions, annotations, install/upgrade/uninstall) but safer:
//! a failed install is never uninstalled, a failed upgrade is rolled back, an
//! unchanged release is repaired in place instead of upgraded (the inputs digest on
//! each record says whether anything changed), and failures back off exponentially
//! instead of writing a revision on every reconcile.

pub mod digest;
pub mod transform;
pub mod values;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use action::{
    ActionConfig, ActionOptions, Install, Recover, Repair, Rollback, Uninstall, UninstallOptions,
    Upgrade,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::events::Reporter;
use kube::{Client, Resource, ResourceExt};
use release::record::{Release, Status};
use release::{RecordMeta, Storage};
use serde_json::json;

use crate::annotations::{self as ann, AnnotationError, Annotations, FINALIZER, LEGACY_FINALIZER};
use crate::events::{self, EventSink};
use crate::metrics::Metrics;
use crate::status::{self as st, DeployedRelease, HelmAppStatus};
use crate::watches::Watch;

/// Labels rudder writes on release records besides the inputs digest.
pub const ATTEMPT_LABEL: &str = "rudder.dev/attempt";
/// On a rollback record: the inputs digest whose upgrade failed and was rolled back.
pub const ROLLBACK_OF_LABEL: &str = "rudder.dev/rollback-of";

/// First retry delay after a failed action with unchanged inputs; doubles per failure.
pub const BACKOFF_BASE: Duration = Duration::from_secs(10);
/// The longest delay between retries of a failing action with unchanged inputs.
pub const BACKOFF_MAX: Duration = Duration::from_secs(600);
/// How soon to look again while another operation holds the release.
const IN_PROGRESS_RETRY: Duration = Duration::from_secs(10);

/// What a reconcile needs besides the CR.
pub struct Context {
    pub client: Client,
    pub watch: Arc<Watch>,
    pub chart: Arc<chart::loader::Chart>,
    /// The API resource of the CR kind.
    pub resource: ApiResource,
    pub metrics: Metrics,
    pub reporter: Reporter,
    /// The watch's `reconcilePeriod` or `--reconcile-period`.
    pub reconcile_period: Option<Duration>,
    /// Cluster discovery shared by this watch's installs and upgrades.
    pub discovery: Arc<action::DiscoveryCache>,
}

/// How long a watch reuses what discovery found. Upgrades are decided by
/// the inputs digest, not by the cluster's APIs, so this only bounds how
/// stale `.Capabilities` may be when an upgrade does happen.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(60);

/// What the controller should do after a successful reconcile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub requeue_after: Option<Duration>,
    /// Kinds of the deployed release's objects, for dependent watches (empty unless the
    /// watch has `watchDependentResources`).
    pub dependents: Vec<GroupVersionKind>,
}

/// Why a reconcile failed; the message names the CR and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{cr}: custom resources without a namespace are not supported; make the CRD's scope Namespaced")]
    NoNamespace { cr: String },
    #[error("{cr}: {message}")]
    InvalidSpec { cr: String, message: String },
    #[error("{cr}: {message}; fix watches.yaml")]
    OverrideValues { cr: String, message: String },
    #[error("{cr}: {source}; fix or remove the annotation")]
    Annotation {
        cr: String,
        #[source]
        source: AnnotationError,
    },
    #[error("{cr}: cannot migrate the release's old records: {message}")]
    Migrate { cr: String, message: String },
    #[error("{cr}: cannot adopt the release's existing objects: {source}")]
    Adopt {
        cr: String,
        #[source]
        source: Box<action::Error>,
    },
    #[error("{cr}: cannot read the records of release {release:?}: {source}")]
    Storage {
        cr: String,
        release: String,
        #[source]
        source: release::Error,
    },
    #[error("{cr}: {action} failed: {source}")]
    Action {
        cr: String,
        action: &'static str,
        #[source]
        source: Box<action::Error>,
        /// When to try again (the backoff of this failure).
        retry_in: Option<Duration>,
    },
    #[error("{cr}: revision {version} of release {release:?} is {status}: another operation is in progress; will retry")]
    InProgress {
        cr: String,
        release: String,
        version: i64,
        status: String,
    },
    #[error("{cr}: {attempts} attempt(s) with the current spec and chart failed; retrying in {}s (change the spec to retry now): {last}", retry_in.as_secs())]
    BackingOff {
        cr: String,
        attempts: u32,
        retry_in: Duration,
        /// The last failure, as in the status.
        last: String,
    },
    #[error("{cr}: cannot {action} the custom resource: {source}")]
    Kube {
        cr: String,
        action: &'static str,
        #[source]
        source: kube::Error,
    },
}

impl ReconcileError {
    /// When the controller should try again, if this error knows better than the
    /// controller's default error backoff.
    pub fn requeue_after(&self) -> Option<Duration> {
        match self {
            ReconcileError::BackingOff { retry_in, .. } => Some(*retry_in),
            ReconcileError::Action { retry_in, .. } => *retry_in,
            ReconcileError::InProgress { .. } => Some(IN_PROGRESS_RETRY),
            _ => None,
        }
    }
}

/// Reconciles one CR: uninstalls on deletion, otherwise installs, upgrades or repairs
/// its release and reports the result in the CR status and Events.
pub async fn reconcile(
    cr: Arc<DynamicObject>,
    ctx: Arc<Context>,
) -> Result<Outcome, ReconcileError> {
    let name = cr.name_any();
    let cr_id = match cr.namespace() {
        Some(ns) => format!("{} {}/{}", ctx.resource.kind, ns, name),
        None => format!("{} {}", ctx.resource.kind, name),
    };
    let Some(namespace) = cr.namespace() else {
        return Err(ReconcileError::NoNamespace { cr: cr_id });
    };
    let api: Api<DynamicObject> =
        Api::namespaced_with(ctx.client.clone(), &namespace, &ctx.resource);
    let events = EventSink::new(
        ctx.client.clone(),
        ctx.reporter.clone(),
        cr.object_ref(&ctx.resource),
    );
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
    };
    if run.cr.meta().deletion_timestamp.is_some() {
        return run.finalize().await;
    }
    run.reconcile().await
}

/// `group/version, Kind=Kind`, as the metrics label CR kinds.
fn gvk_label(r: &ApiResource) -> String {
    format!("{}, Kind={}", r.api_version, r.kind)
}

/// The state of one reconcile.
struct Run {
    cr: Arc<DynamicObject>,
    ctx: Arc<Context>,
    cr_id: String,
    name: String,
    namespace: String,
    api: Api<DynamicObject>,
    events: EventSink,
    original: HelmAppStatus,
    status: HelmAppStatus,
    gvk: String,
}

/// Where the newest records leave the release.
enum Plan {
    Install,
    Upgrade,
    /// Inputs unchanged: re-apply the deployed manifest.
    Repair,
}

/// Consecutive failures with the current inputs, read from the newest records.
#[derive(Debug, Clone, PartialEq)]
struct Failures {
    attempts: u32,
    /// When the newest of them ended (Unix seconds).
    at: Option<i64>,
}

impl Run {
    fn annotations(&self) -> Annotations<'_> {
        Annotations::new(self.cr.meta().annotations.as_ref())
    }

    /// The actions' configuration: this watch's discovery cache over the client.
    fn actions(&self) -> ActionConfig {
        ActionConfig::new(self.ctx.client.clone()).with_discovery(Arc::clone(&self.ctx.discovery))
    }

    fn storage(&self) -> Storage {
        self.actions().storage(&self.namespace)
    }

    /// A failed release action on this CR, retried after `retry_in` (the controller's
    /// backoff when `None`).
    fn action_error(
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

    fn storage_err(&self, source: release::Error) -> ReconcileError {
        ReconcileError::Storage {
            cr: self.cr_id.clone(),
            release: self.name.clone(),
            source,
        }
    }

    /// Writes the status if it changed since the start of this reconcile.
    async fn write_status(&mut self) -> Result<(), ReconcileError> {
        match st::write_if_changed(&self.api, &self.name, &self.original, &self.status).await {
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

    /// Sets a failure condition, records a Warning event, writes the status and
    /// returns `err`.
    async fn fail(
        &mut self,
        condition: &str,
        reason: &str,
        message: String,
        action: &str,
        err: ReconcileError,
    ) -> ReconcileError {
        tracing::error!(cr = %self.cr_id, reason, error = %message, "reconcile failed");
        self.status
            .set(condition, st::TRUE, reason, message.clone());
        self.events.warning(reason, action, message).await;
        if let Err(e) = self.write_status().await {
            tracing::warn!(cr = %self.cr_id, error = %e, "cannot record the failure in the status");
        }
        err
    }

    fn set_release_metric(&self, status: Option<&str>) {
        self.ctx
            .metrics
            .set_release_status(&self.gvk, &self.namespace, &self.name, status);
    }

    fn requeue_after(&self) -> Result<Option<Duration>, AnnotationError> {
        Ok(self
            .annotations()
            .reconcile_period()?
            .or(self.ctx.reconcile_period))
    }

    /// Changes the CR's finalizers with an optimistic-concurrency patch, re-reading the
    /// CR on conflict.
    async fn edit_finalizers(
        &self,
        edit: impl Fn(&mut Vec<String>) -> bool,
    ) -> Result<(), ReconcileError> {
        let kube_err = |source| ReconcileError::Kube {
            cr: self.cr_id.clone(),
            action: "update the finalizers of",
            source,
        };
        let mut current = (*self.cr).clone();
        for attempt in 0..5 {
            let mut fins = current.meta().finalizers.clone().unwrap_or_default();
            if !edit(&mut fins) {
                return Ok(());
            }
            let patch = json!({"metadata": {
                "finalizers": fins,
                "resourceVersion": current.meta().resource_version,
            }});
            match self
                .api
                .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 && attempt < 4 => {
                    current = match self.api.get_opt(&self.name).await.map_err(kube_err)? {
                        Some(cr) => cr,
                        None => return Ok(()),
                    };
                }
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                Err(e) => return Err(kube_err(e)),
            }
        }
        Ok(())
    }

    /// Deletion: uninstall the release, then let the CR go.
    async fn finalize(&mut self) -> Result<Outcome, ReconcileError> {
        let fins = self.cr.meta().finalizers.clone().unwrap_or_default();
        if !fins.iter().any(|f| f == FINALIZER || f == LEGACY_FINALIZER) {
            tracing::info!(cr = %self.cr_id, "resource is terminated, skipping reconciliation");
            return Ok(Outcome::default());
        }
        if let Err(e) = self.migrate().await {
            let msg = e.to_string();
            return Err(self
                .fail(st::RELEASE_FAILED, st::UNINSTALL_ERROR, msg, "Uninstall", e)
                .await);
        }
        let a = self.annotations();
        let mut opts = UninstallOptions::new(&self.name, &self.namespace);
        opts.disable_hooks = a.bool_or(ann::UNINSTALL_DISABLE_HOOKS, false);
        opts.wait = a.bool_or(ann::UNINSTALL_WAIT, false);
        opts.description = a.text(ann::UNINSTALL_DESCRIPTION);
        match Uninstall::new(&self.actions(), opts).run().await {
            Ok(rel) => {
                tracing::info!(cr = %self.cr_id, release = %self.name, "uninstalled release");
                self.status.remove(st::RELEASE_FAILED);
                self.status
                    .set(st::DEPLOYED, st::FALSE, st::UNINSTALL_SUCCESSFUL, "");
                self.status.deployed_release = None;
                self.events
                    .normal(
                        st::UNINSTALL_SUCCESSFUL,
                        "Uninstall",
                        format!(
                            "Uninstalled release {} (revision {})",
                            self.name, rel.version
                        ),
                    )
                    .await;
            }
            Err(action::Error::NotDeployed { .. }) => {
                tracing::info!(cr = %self.cr_id, release = %self.name, "release not found");
                self.status.remove(st::RELEASE_FAILED);
            }
            Err(source) => {
                let msg = format!("failed to uninstall release: {source}");
                let err = self.action_error("uninstall", source, None);
                return Err(self
                    .fail(
                        st::RELEASE_FAILED,
                        st::UNINSTALL_ERROR,
                        msg,
                        "Uninstall",
                        err,
                    )
                    .await);
            }
        }
        self.write_status().await?;
        self.edit_finalizers(|fins| {
            let before = fins.len();
            fins.retain(|f| f != FINALIZER && f != LEGACY_FINALIZER);
            fins.len() != before
        })
        .await?;
        self.set_release_metric(None);
        Ok(Outcome::default())
    }

    async fn migrate(&self) -> Result<(), ReconcileError> {
        let report = crate::migrate::migrate(
            &self.ctx.client,
            &self.cr,
            &self.ctx.resource,
            &self.name,
            &self.namespace,
        )
        .await
        .map_err(|e| ReconcileError::Migrate {
            cr: self.cr_id.clone(),
            message: e.to_string(),
        })?;
        if !report.is_empty() {
            tracing::info!(cr = %self.cr_id, report = ?report, "migrated release records");
            self.events
                .normal(
                    events::MIGRATED,
                    "Migrate",
                    format!(
                        "Moved the records of release {} to Secrets: {report:?}",
                        self.name
                    ),
                )
                .await;
        }
        Ok(())
    }

    /// The merged values, or the error to report.
    fn values(&self) -> Result<chart::loader::Values, ReconcileError> {
        let mut values =
            values::spec_values(&self.cr).map_err(|message| ReconcileError::InvalidSpec {
                cr: self.cr_id.clone(),
                message,
            })?;
        let overrides =
            self.ctx
                .watch
                .override_values()
                .map_err(|e| ReconcileError::OverrideValues {
                    cr: self.cr_id.clone(),
                    message: e.to_string(),
                })?;
        values::merge_overrides(&mut values, &overrides);
        Ok(values)
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
        opts.transform = Some(transform::transform(Arc::new(self.policy())));
        opts
    }

    fn policy(&self) -> transform::Policy {
        let r = &self.ctx.resource;
        let primary_type = if r.group.is_empty() {
            r.kind.clone()
        } else {
            format!("{}.{}", r.kind, r.group)
        };
        transform::Policy {
            owner: OwnerReference {
                api_version: r.api_version.clone(),
                kind: r.kind.clone(),
                name: self.name.clone(),
                uid: self.cr.meta().uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            },
            namespace: self.namespace.clone(),
            primary_type,
            allow_cluster_scoped: self.ctx.watch.allow_cluster_scoped,
            allowed_namespaces: self.ctx.watch.allowed_namespaces.clone(),
            watch: watch_name(&self.ctx.watch),
        }
    }

    async fn reconcile(&mut self) -> Result<Outcome, ReconcileError> {
        let requeue_after = match self.requeue_after() {
            Ok(p) => p,
            Err(source) => {
                let msg = source.to_string();
                let err = ReconcileError::Annotation {
                    cr: self.cr_id.clone(),
                    source,
                };
                return Err(self
                    .fail(
                        st::IRRECONCILABLE,
                        st::RECONCILE_ERROR,
                        msg,
                        "Reconcile",
                        err,
                    )
                    .await);
            }
        };

        self.edit_finalizers(|fins| {
            if fins.iter().any(|f| f == FINALIZER || f == LEGACY_FINALIZER) {
                return false;
            }
            fins.push(FINALIZER.to_string());
            true
        })
        .await?;
        self.status.set(st::INITIALIZED, st::TRUE, "", "");

        let values = match self.values() {
            Ok(v) => v,
            Err(err) => {
                let msg = match &err {
                    ReconcileError::InvalidSpec { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                return Err(self
                    .fail(
                        st::IRRECONCILABLE,
                        st::RECONCILE_ERROR,
                        msg,
                        "Reconcile",
                        err,
                    )
                    .await);
            }
        };
        if let Err(err) = self.migrate().await {
            let msg = err.to_string();
            return Err(self
                .fail(
                    st::IRRECONCILABLE,
                    st::RECONCILE_ERROR,
                    msg,
                    "Reconcile",
                    err,
                )
                .await);
        }

        // Values and records are usable (Go's Sync succeeded).
        self.status.remove(st::IRRECONCILABLE);

        let digest = digest::inputs_digest(&self.ctx.chart, &values);
        let store = self.storage();
        let mut metas = match store.history_meta(&self.name).await {
            Ok(m) => m,
            Err(e) => return Err(self.storage_err(e)),
        };

        if let Some(newest) = metas.last().filter(|m| m.status.is_pending()) {
            let opts = self.action_options(&digest, 1);
            let recovered = Recover::new(&self.actions(), opts).run().await;
            match recovered {
                Ok(Some(rel)) => {
                    tracing::warn!(cr = %self.cr_id, release = %self.name, version = rel.version,
                        "marked an interrupted operation failed");
                    metas = store
                        .history_meta(&self.name)
                        .await
                        .map_err(|e| self.storage_err(e))?;
                }
                Ok(None) | Err(action::Error::Locked { .. }) => {
                    return Err(ReconcileError::InProgress {
                        cr: self.cr_id.clone(),
                        release: self.name.clone(),
                        version: newest.version,
                        status: newest.status.to_string(),
                    });
                }
                Err(source) => {
                    return Err(self.action_error(
                        "recovering the interrupted operation",
                        source,
                        None,
                    ))
                }
            }
        }

        let deployed = metas
            .iter()
            .filter(|m| m.status == Status::Deployed)
            .max_by_key(|m| m.version)
            .cloned();
        let plan = match &deployed {
            None => Plan::Install,
            Some(d) => match d.labels.get(digest::LABEL) {
                Some(x) if *x == digest => Plan::Repair,
                Some(_) => Plan::Upgrade,
                None => Plan::Upgrade, // decided by diff_upgrade below, after the backoff
            },
        };

        let failures = match plan {
            Plan::Repair => None,
            _ => failures_with(&metas, &digest),
        };
        let attempt = failures.as_ref().map_or(1, |f| f.attempts + 1);
        if let Some(f) = &failures {
            let wait = backoff(f.attempts);
            let elapsed = f.at.map(|at| (unix_now() - at).max(0) as u64);
            let remaining = match elapsed {
                Some(e) if e < wait.as_secs() => Some(Duration::from_secs(wait.as_secs() - e)),
                Some(_) => None,
                // No time on the records: wait a full period rather than loop.
                None => Some(wait),
            };
            if let Some(retry_in) = remaining {
                let last = self
                    .status
                    .condition(st::RELEASE_FAILED)
                    .map(|c| c.message.clone())
                    .unwrap_or_default();
                self.write_status().await?;
                return Err(ReconcileError::BackingOff {
                    cr: self.cr_id.clone(),
                    attempts: f.attempts,
                    retry_in,
                    last,
                });
            }
        }

        let opts = self.action_options(&digest, attempt);
        // A record without our digest whose render matches gets the digest once, so it is
        // not re-rendered on every reconcile.
        let mut stamp_digest = false;
        let plan = match (&plan, &deployed) {
            (Plan::Upgrade, Some(d)) if !d.labels.contains_key(digest::LABEL) => {
                // A record written by helm (or before digests): compare renders.
                let diff = Upgrade::new(&self.actions(), opts.clone())
                    .diff(&self.ctx.chart, values.clone())
                    .await;
                match diff {
                    Ok(diff) if diff.changed => Plan::Upgrade,
                    Ok(_) => {
                        stamp_digest = true;
                        Plan::Repair
                    }
                    Err(source) => {
                        let msg = format!("failed to upgrade release: {source}");
                        let err = self.action_error("upgrade", source, None);
                        return Err(self
                            .fail(st::RELEASE_FAILED, st::UPGRADE_ERROR, msg, "Upgrade", err)
                            .await);
                    }
                }
            }
            _ => plan,
        };

        let rel = match plan {
            Plan::Install => self.install(values, opts, attempt).await?,
            Plan::Upgrade => {
                let Some(d) = deployed else {
                    return Err(self.storage_err(release::Error::NotFound(self.name.clone())));
                };
                let newest = metas.last().map_or(d.version, |m| m.version);
                self.upgrade(values, opts, attempt, &d, newest, &digest)
                    .await?
            }
            Plan::Repair => {
                let stamp = if stamp_digest {
                    BTreeMap::from([(digest::LABEL.to_string(), digest.clone())])
                } else {
                    BTreeMap::new()
                };
                self.repair(opts, stamp).await?
            }
        };

        self.status.remove(st::IRRECONCILABLE);
        self.status.remove(st::RELEASE_FAILED);
        self.status.deployed_release = Some(DeployedRelease {
            name: rel.name.clone(),
            manifest: rel.manifest.clone(),
        });
        self.write_status().await?;
        self.set_release_metric(Some(rel.status().as_str()));
        let dependents = if self.ctx.watch.watch_dependent_resources {
            action::manifest_kinds(&rel.name, &rel.manifest)
        } else {
            Vec::new()
        };
        Ok(Outcome {
            requeue_after,
            dependents,
        })
    }

    fn override_events_note(&self) -> Vec<String> {
        self.ctx
            .watch
            .override_values
            .keys()
            .map(|k| {
                // Values never appear in events or logs; Go masks them the same way
                // with --suppress-override-values.
                format!("Chart value {k:?} overridden to \"****\" by operator's watches.yaml")
            })
            .collect()
    }

    async fn warn_overrides(&self) {
        for note in self.override_events_note() {
            self.events
                .warning(events::OVERRIDE_VALUES_IN_USE, "Reconcile", note)
                .await;
        }
    }

    async fn install(
        &mut self,
        values: chart::loader::Values,
        mut opts: ActionOptions,
        attempt: u32,
    ) -> Result<Release, ReconcileError> {
        let a = self.annotations();
        opts.disable_hooks = a.bool_or(ann::INSTALL_DISABLE_HOOKS, false);
        opts.description = a.text(ann::INSTALL_DESCRIPTION);
        let installed = Install::new(&self.actions(), opts)
            .run_or_adopt(&self.ctx.chart, values)
            .await;
        match installed {
            Ok(action::Installed {
                release: rel,
                adopted: Some(found),
            }) => {
                tracing::info!(cr = %self.cr_id, release = %rel.name, version = rel.version, found, "adopted the release's existing objects");
                self.events
                    .normal(
                        events::ADOPTED,
                        "Adopt",
                        format!(
                            "Recorded release {} revision {} over its existing objects",
                            self.name, rel.version
                        ),
                    )
                    .await;
                let reason = if rel.version == 1 {
                    st::INSTALL_SUCCESSFUL
                } else {
                    st::UPGRADE_SUCCESSFUL
                };
                self.status.set(st::DEPLOYED, st::TRUE, reason, notes(&rel));
                Ok(rel)
            }
            Ok(action::Installed { release: rel, .. }) => {
                self.warn_overrides().await;
                tracing::info!(cr = %self.cr_id, release = %rel.name, version = rel.version, "installed release");
                let notes = notes(&rel);
                self.status
                    .set(st::DEPLOYED, st::TRUE, st::INSTALL_SUCCESSFUL, notes);
                self.events
                    .normal(
                        st::INSTALL_SUCCESSFUL,
                        "Install",
                        format!("Installed release {} (revision {})", rel.name, rel.version),
                    )
                    .await;
                Ok(rel)
            }
            Err(source @ action::Error::Adopt { .. }) => {
                let err = ReconcileError::Adopt {
                    cr: self.cr_id.clone(),
                    source: Box::new(source),
                };
                let msg = err.to_string();
                Err(self
                    .fail(st::RELEASE_FAILED, st::INSTALL_ERROR, msg, "Install", err)
                    .await)
            }
            Err(source) => {
                self.warn_overrides().await;
                self.set_release_metric(Some(Status::Failed.as_str()));
                let msg = format!("failed to install release: {source}");
                let err = self.action_error("install", source, Some(backoff(attempt)));
                Err(self
                    .fail(st::RELEASE_FAILED, st::INSTALL_ERROR, msg, "Install", err)
                    .await)
            }
        }
    }

    async fn upgrade(
        &mut self,
        values: chart::loader::Values,
        mut opts: ActionOptions,
        attempt: u32,
        deployed: &RecordMeta,
        newest_before: i64,
        digest: &str,
    ) -> Result<Release, ReconcileError> {
        let a = self.annotations();
        opts.force = a.bool_or(ann::UPGRADE_FORCE, false);
        opts.disable_hooks = a.bool_or(ann::UPGRADE_DISABLE_HOOKS, false);
        opts.description = a.text(ann::UPGRADE_DESCRIPTION);
        let rollback_force = a.bool_or(ann::ROLLBACK_FORCE, true);
        self.warn_overrides().await;
        let upgraded = Upgrade::new(&self.actions(), opts.clone())
            .run(&self.ctx.chart, values)
            .await;
        let source = match upgraded {
            Ok(rel) => {
                tracing::info!(cr = %self.cr_id, release = %rel.name, version = rel.version, force = opts.force, "upgraded release");
                let notes = notes(&rel);
                self.status
                    .set(st::DEPLOYED, st::TRUE, st::UPGRADE_SUCCESSFUL, notes);
                self.events
                    .normal(
                        st::UPGRADE_SUCCESSFUL,
                        "Upgrade",
                        format!("Upgraded release {} to revision {}", rel.name, rel.version),
                    )
                    .await;
                return Ok(rel);
            }
            Err(e) => e,
        };
        let mut msg = format!("failed to upgrade release: {source}");
        // Roll back only when the failed upgrade wrote a revision (it may have changed
        // objects); a render error or a refusal changed nothing.
        let store = self.storage();
        let wrote = match store.history_meta(&self.name).await {
            Ok(m) => m
                .last()
                .is_some_and(|m| m.version > newest_before && m.status == Status::Failed),
            Err(_) => false,
        };
        if wrote && !changed_nothing(&source) {
            let mut ropts = ActionOptions::new(&self.name, &self.namespace);
            ropts.force = rollback_force;
            ropts.transform = opts.transform.clone();
            ropts.labels = BTreeMap::from([
                (ROLLBACK_OF_LABEL.to_string(), digest.to_string()),
                (ATTEMPT_LABEL.to_string(), attempt.to_string()),
            ]);
            if let Some(d) = deployed.labels.get(digest::LABEL) {
                ropts.labels.insert(digest::LABEL.to_string(), d.clone());
            }
            match Rollback::new(&self.actions(), ropts)
                .run(deployed.version)
                .await
            {
                Ok(rel) => {
                    self.events
                        .normal(
                            events::ROLLED_BACK,
                            "Rollback",
                            format!(
                                "Rolled release {} back to revision {} (as revision {}) after the failed upgrade",
                                self.name, deployed.version, rel.version
                            ),
                        )
                        .await;
                }
                Err(re) => {
                    tracing::error!(cr = %self.cr_id, error = %re, "error rolling back release");
                    msg = format!("failed upgrade ({source}) and failed rollback: {re}");
                    self.events
                        .warning(events::ROLLBACK_ERROR, "Rollback", msg.clone())
                        .await;
                }
            }
        }
        self.set_release_metric(Some(Status::Failed.as_str()));
        let err = self.action_error("upgrade", source, Some(backoff(attempt)));
        Err(self
            .fail(st::RELEASE_FAILED, st::UPGRADE_ERROR, msg, "Upgrade", err)
            .await)
    }

    async fn repair(
        &mut self,
        opts: ActionOptions,
        stamp: BTreeMap<String, String>,
    ) -> Result<Release, ReconcileError> {
        // The inputs match the deployed release again: an earlier failed change is no
        // longer being attempted (as in Go).
        self.status.remove(st::RELEASE_FAILED);
        let repaired = Repair::new(&self.actions(), opts)
            .ensure_labels(stamp)
            .run()
            .await;
        let (rel, report) = match repaired {
            Ok(r) => r,
            Err(source) => {
                let msg = format!("failed to reconcile release: {source}");
                let err = self.action_error("repair", source, None);
                return Err(self
                    .fail(
                        st::IRRECONCILABLE,
                        st::RECONCILE_ERROR,
                        msg,
                        "Reconcile",
                        err,
                    )
                    .await);
            }
        };
        if !report.repaired.is_empty() {
            let objects: Vec<String> = report.repaired.iter().map(|o| o.to_string()).collect();
            tracing::info!(cr = %self.cr_id, release = %self.name, objects = ?objects, "repaired release objects");
            self.events
                .normal(
                    events::REPAIRED,
                    "Reconcile",
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
        let reason = if rel.version == 1 {
            st::INSTALL_SUCCESSFUL
        } else {
            st::UPGRADE_SUCCESSFUL
        };
        self.status.set(st::DEPLOYED, st::TRUE, reason, notes(&rel));
        Ok(rel)
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

fn notes(rel: &Release) -> String {
    rel.info
        .as_ref()
        .map(|i| i.notes.clone())
        .unwrap_or_default()
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
            | action::Error::InUse { .. }
    )
}

/// The delay before retry after `attempts` consecutive failures.
pub fn backoff(attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(1u32 << exp).min(BACKOFF_MAX)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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
        let failed_here = m.status == Status::Failed
            && m.labels.get(digest::LABEL).map(String::as_str) == Some(digest);
        let rollback_of_it = m.labels.get(ROLLBACK_OF_LABEL).map(String::as_str) == Some(digest);
        // A rollback record without our labels right after a failure of these inputs
        // (an action layer that drops labels on rollback, or `helm rollback`).
        let bare_rollback = !m.labels.contains_key(digest::LABEL)
            && !m.labels.contains_key(ROLLBACK_OF_LABEL)
            && iter.peek().is_some_and(|p| {
                p.status == Status::Failed
                    && p.labels.get(digest::LABEL).map(String::as_str) == Some(digest)
            });
        if failed_here {
            count += 1;
        } else if !(rollback_of_it || bare_rollback) {
            break;
        }
        if attempts.is_none() {
            attempts = m.labels.get(ATTEMPT_LABEL).and_then(|v| v.parse().ok());
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
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff(1), Duration::from_secs(10));
        assert_eq!(backoff(2), Duration::from_secs(20));
        assert_eq!(backoff(4), Duration::from_secs(80));
        assert_eq!(backoff(7), BACKOFF_MAX);
        assert_eq!(backoff(100), BACKOFF_MAX);
    }

    #[test]
    fn counts_failures_of_the_same_inputs() {
        let d = "abc";
        let metas = vec![
            meta(1, Status::Superseded, &[(digest::LABEL, "old")]),
            meta(
                2,
                Status::Failed,
                &[
                    (digest::LABEL, d),
                    (ATTEMPT_LABEL, "1"),
                    ("modifiedAt", "100"),
                ],
            ),
            meta(
                3,
                Status::Deployed,
                &[
                    (digest::LABEL, "old"),
                    (ROLLBACK_OF_LABEL, d),
                    ("modifiedAt", "110"),
                ],
            ),
            meta(
                4,
                Status::Failed,
                &[
                    (digest::LABEL, d),
                    (ATTEMPT_LABEL, "2"),
                    ("modifiedAt", "200"),
                ],
            ),
            meta(5, Status::Deployed, &[("modifiedAt", "210")]),
        ];
        let f = failures_with(&metas, d).unwrap();
        assert_eq!(f.attempts, 2);
        assert_eq!(f.at, Some(210));
        assert_eq!(failures_with(&metas, "other"), None);
        let fine = vec![meta(1, Status::Deployed, &[(digest::LABEL, d)])];
        assert_eq!(failures_with(&fine, d), None);
        let install_failed = vec![meta(
            1,
            Status::Failed,
            &[(digest::LABEL, d), ("createdAt", "5")],
        )];
        assert_eq!(
            failures_with(&install_failed, d),
            Some(Failures {
                attempts: 1,
                at: Some(5)
            })
        );
    }
}
