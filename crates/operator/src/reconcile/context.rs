//! [`Context`]: what every reconcile of one watch shares, fixed when the watch starts
//! (the chart and its digest, the parsed overrides, the actions, the Event recorder).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use chart::loader::Chart;
use chart::values::Values;
use kube::api::ApiResource;
use kube::runtime::events::Reporter;
use kube::Client;
use release::cache::RecordCaches;

use super::digest::ChartDigest;
use crate::action_client::{ActionClient, Actions};
use crate::drift::DriftTracker;
use crate::status::StatusManifest;
use crate::watches::{Watch, WatchesError};
use runtime::events::EventRecorder;
use runtime::metrics::Metrics;

/// How long a watch reuses what discovery found: its refresh period. Upgrades are
/// decided by the inputs digest, not by the cluster's APIs, so this only bounds how
/// stale `.Capabilities` may be when an upgrade does happen. A kind not found
/// refreshes its group version sooner (`action::MISS_REFRESH`), and an unavailable
/// API (an aggregated one whose service is down) is asked again once per period.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(60);

/// What a reconcile needs besides the CR: everything fixed per watch.
pub struct Context {
    pub(super) client: Client,
    pub(super) actions: Arc<dyn ActionClient>,
    pub(super) watch: Arc<Watch>,
    pub(super) chart: Arc<Chart>,
    /// The chart's half of the inputs digest, hashed once.
    pub(super) chart_digest: ChartDigest,
    /// The chart label's value: the chart's name, when Kubernetes accepts it as one.
    pub(super) chart_label: Option<String>,
    /// The watch's `overrideValues`, parsed once.
    pub(super) overrides: Values,
    /// The API resource of the CR kind.
    pub(super) resource: ApiResource,
    metrics: Metrics,
    /// Events of this watch's CRs, correlated across reconciles.
    pub(super) recorder: Arc<EventRecorder>,
    /// The watch's `reconcilePeriod` or `--reconcile-period`.
    pub(super) reconcile_period: Option<Duration>,
    /// `--suppress-override-values`: mask override values in Events.
    pub(super) suppress_override_values: bool,
    /// What the dependent watches saw of the releases' objects since they were applied.
    pub(super) drift: Arc<DriftTracker>,
    /// `--reapply-period`: the longest an unchanged release goes without a full apply.
    pub(super) reapply_period: Duration,
    /// The watch's `maxHistory` or `--max-history`: records kept per release (0: all).
    pub(super) max_history: usize,
    /// The watch's `statusManifest` or `--status-manifest`.
    pub(super) status_manifest: StatusManifest,
    /// The kind's CRD has no status subresource: the status is written on the main
    /// resource, without `observedGeneration` (learnt from the first write).
    pub(super) status_on_main: AtomicBool,
    /// What discovery found, shared by the watch's renders, lookups and dependent
    /// watches.
    discovery: Arc<action::DiscoveryCache>,
    /// Where the records' labels are read from (the operator's record watches);
    /// empty: from the API server.
    pub(super) records: RecordCaches,
}

/// The chart's name as a label value; `None` (no label) for a name Kubernetes would
/// refuse there, so a long chart name never fails every write.
fn chart_label(chart: &Chart) -> Option<String> {
    let name = &chart.metadata.name;
    match release::driver::validate_label_value(crate::annotations::CHART_LABEL, name) {
        Ok(()) if !name.is_empty() => Some(name.clone()),
        _ => {
            tracing::warn!(chart = %name, "the chart's name is not a valid label value; objects get no chart label");
            None
        }
    }
}

impl Context {
    /// The context of one watch: the real actions through `client` (with a discovery
    /// cache of their own), fresh metrics, reporter `rudder`, no reconcile period, the
    /// watch's `maxHistory` (else Helm's 10) and `statusManifest` (else redacted).
    /// Fails when the watch's `overrideValues` cannot be parsed.
    pub fn new(
        client: Client,
        watch: Arc<Watch>,
        chart: Arc<Chart>,
        resource: ApiResource,
    ) -> Result<Context, WatchesError> {
        let overrides = watch.override_values()?;
        let watch_max_history = watch
            .max_history
            .unwrap_or(release::storage::DEFAULT_MAX_HISTORY);
        let status_manifest = watch.status_manifest.unwrap_or_default();
        let discovery = Arc::new(action::DiscoveryCache::new(DISCOVERY_TTL));
        Ok(Context {
            actions: Arc::new(Actions::new(client.clone(), discovery.clone())),
            discovery,
            chart_digest: ChartDigest::new(&chart),
            chart_label: chart_label(&chart),
            watch,
            chart,
            overrides,
            resource,
            metrics: crate::metrics::new_metrics(),
            recorder: Arc::new(EventRecorder::new(
                client.clone(),
                Reporter {
                    controller: "rudder".into(),
                    instance: None,
                },
            )),
            client,
            reconcile_period: None,
            suppress_override_values: false,
            drift: Arc::new(DriftTracker::new()),
            reapply_period: crate::options::DEFAULT_REAPPLY_PERIOD,
            max_history: watch_max_history,
            records: RecordCaches::default(),
            status_manifest,
            status_on_main: AtomicBool::new(false),
        })
    }

    /// Reads the release records' labels from `caches` (kept up to date by the
    /// operator's watches of them) instead of listing them on every reconcile; the
    /// real actions are rebuilt to use them (call before [`Context::with_actions`]).
    pub fn with_record_caches(mut self, caches: RecordCaches) -> Context {
        let cfg = action::ActionConfig::new(self.client.clone())
            .with_discovery(self.discovery.clone())
            .with_record_caches(caches.clone());
        self.actions = Arc::new(Actions::with_config(cfg));
        self.records = caches;
        self
    }

    /// Takes the release actions from `actions` (a fake in tests).
    pub fn with_actions(mut self, actions: Arc<dyn ActionClient>) -> Context {
        self.actions = actions;
        self
    }

    pub fn with_metrics(mut self, metrics: Metrics) -> Context {
        self.metrics = metrics;
        self
    }

    /// Records Events as `reporter` (the Go operator's `<kind>-controller`).
    pub fn with_reporter(mut self, reporter: Reporter) -> Context {
        self.recorder = Arc::new(EventRecorder::new(self.client.clone(), reporter));
        self
    }

    /// How often an unchanged CR is reconciled again (`None`: only on changes).
    pub fn with_reconcile_period(mut self, period: Option<Duration>) -> Context {
        self.reconcile_period = period;
        self
    }

    /// Masks override values in the `OverrideValuesInUse` Events.
    pub fn with_suppress_override_values(mut self, suppress: bool) -> Context {
        self.suppress_override_values = suppress;
        self
    }

    /// Shares `drift` with the watch's dependent watches: without it (or with
    /// dependent watches off) nothing is known of the objects, and every reconcile of
    /// an unchanged release applies it in full.
    pub(crate) fn with_drift(mut self, drift: Arc<DriftTracker>) -> Context {
        self.drift = drift;
        self
    }

    /// How long an unchanged release nobody touched may go without a full apply
    /// (zero: every reconcile applies it, as the Go operator does).
    pub fn with_reapply_period(mut self, period: Duration) -> Context {
        self.reapply_period = period;
        self
    }

    /// How many records each release keeps (0: all); see `--max-history`.
    pub fn with_max_history(mut self, max_history: usize) -> Context {
        self.max_history = max_history;
        self
    }

    /// What `status.deployedRelease.manifest` shows; see `--status-manifest`.
    pub fn with_status_manifest(mut self, mode: StatusManifest) -> Context {
        self.status_manifest = mode;
        self
    }

    /// What this watch's dependent watches saw of its releases' objects.
    pub(crate) fn drift(&self) -> &DriftTracker {
        &self.drift
    }

    /// What discovery found for this watch (shared with its dependent watches).
    pub fn discovery(&self) -> &Arc<action::DiscoveryCache> {
        &self.discovery
    }

    /// The client CRs, their status and Events are written with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The API resource of the CR kind.
    pub fn resource(&self) -> &ApiResource {
        &self.resource
    }

    pub fn watch(&self) -> &Watch {
        &self.watch
    }

    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}
