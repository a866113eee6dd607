//! One controller per watched kind (controller-runtime's `pkg/internal/controller`):
//! watches the kind's CRs (and, through [`dependents`], the kinds of their releases'
//! objects), queues them, and calls the reconciler with bounded concurrency; a failed
//! reconcile is retried after the larger of the delay it names and the per-CR
//! backoff of [`RetryLimiter`] (controller-runtime's default rate limiter). It reports
//! controller-runtime's controller and workqueue metrics, and reloads the chart when
//! its files change ([`crate::watches::reload`]).
//!
//! The process around the controllers (servers, leadership, shutdown) is the
//! runtime's [`Manager`](runtime::Manager), which [`crate::manager`] sets up.

mod dependents;
mod queue;
mod records;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};
use kube::api::{Api, ApiResource};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, PredicateConfig, WatchStreamExt};
use kube::{Client, ResourceExt};
use release::api_error::Chain;
use runtime::metrics::{Metrics, Outcome, ResourceId};
use runtime::shard::{follow, Shards};
use runtime::{RetryLimiter, Stop};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cr::CustomResource;
use crate::drift::DriftTracker;
use crate::reconcile::digest::ChartDigest;
use crate::reconcile::{self, ReconcileError};
use crate::watches::reload::{ChangeDetector, POLL_INTERVAL};
use crate::watches::{format_go_duration, Watch};
use crate::Options;
use dependents::{DependentScope, DependentWatches, Router};
pub(crate) use records::RecordWatches;

/// How often to look for a CRD that is not installed yet.
const CRD_RETRY: Duration = Duration::from_secs(10);

/// The Go operator's controller name for a kind: `<kind in lowercase>-controller`,
/// the `controller` label of its metrics and the component of its Events. Accepts a
/// GVK string (`group/version, Kind=Kind`) or a bare kind.
pub(crate) fn controller_name(gvk: &str) -> String {
    let kind = gvk.rsplit_once("Kind=").map_or(gvk, |(_, k)| k).trim();
    format!("{}-controller", kind.to_lowercase())
}

/// A channel of reconcile triggers into one scope's controller.
type Trigger = mpsc::UnboundedSender<ObjectRef<CustomResource>>;

fn pod_name() -> Option<String> {
    hostname::get().ok().and_then(|h| h.into_string().ok())
}

/// One watch's controllers and what their reconciles share.
struct WatchState {
    /// Swapped when the chart is reloaded; a reconcile keeps the one it started with.
    ctx: RwLock<Arc<reconcile::Context>>,
    metrics: Metrics,
    gvk: String,
    /// The controller-runtime controller name (`<kind>-controller`).
    controller: String,
    /// Guards the concurrency kube-runtime's runner also bounds (so a reconcile
    /// never starts past it, whatever the runner does).
    permits: Semaphore,
    /// What is due and not started, for the workqueue metrics.
    queue: queue::Queue,
    retries: RetryLimiter,
    dependents: Option<Arc<DependentWatches>>,
    /// With sharding: which CRs are this replica's, and when to look again at the rest.
    shards: Option<(Arc<Shards>, Duration)>,
    stop: Stop,
    /// The CR caches (one per scope): a reconcile that waited for a worker reads
    /// the CR again here, as it is now.
    stores: Vec<Store<CustomResource>>,
}

impl WatchState {
    /// The cached CR as it is now: kube-rs hands a reconcile the CR as it was when
    /// the reconcile was scheduled, and the wait for a worker can be long (at 10,000
    /// CRs, minutes), during which the reconciler's own writes to it arrive. `None`:
    /// the CR is gone from the cache.
    fn latest(&self, cr: &CustomResource, resource: &ApiResource) -> Option<Arc<CustomResource>> {
        let oref = ObjectRef::from_obj_with(cr, resource.clone());
        self.stores.iter().find_map(|s| s.get(&oref))
    }

    fn ctx(&self) -> Arc<reconcile::Context> {
        Arc::clone(&self.ctx.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn set_ctx(&self, ctx: reconcile::Context) {
        *self.ctx.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(ctx);
    }
}

/// Why one reconcile failed, as the controller sees it.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    #[error(
        "{cr}: the reconciler panicked ({message}); this is a bug in rudder, please report it"
    )]
    Panic { cr: String, message: String },
}

impl RunError {
    /// The delay the failure itself names, if any.
    fn requeue_after(&self) -> Option<Duration> {
        match self {
            RunError::Reconcile(e) => e.requeue_after(),
            RunError::Panic { .. } => None,
        }
    }
}

/// What a watch's reconciles are built from, so a reloaded chart gets the same
/// settings.
struct ContextSettings {
    client: Client,
    watch: Arc<Watch>,
    resource: ApiResource,
    metrics: Metrics,
    controller: String,
    period: Option<Duration>,
    suppress_override_values: bool,
    drift: Arc<DriftTracker>,
    reapply_period: Duration,
    max_history: usize,
    records: Arc<RecordWatches>,
    status_manifest: crate::status::StatusManifest,
}

impl ContextSettings {
    fn build(
        &self,
        chart: Arc<chart::loader::Chart>,
    ) -> Result<reconcile::Context, crate::watches::WatchesError> {
        Ok(reconcile::Context::new(
            self.client.clone(),
            Arc::clone(&self.watch),
            chart,
            self.resource.clone(),
        )?
        .with_record_caches(self.records.record_caches())
        .with_metrics(self.metrics.clone())
        .with_reporter(Reporter {
            controller: self.controller.clone(),
            instance: pod_name(),
        })
        .with_reconcile_period(self.period)
        .with_suppress_override_values(self.suppress_override_values)
        .with_drift(Arc::clone(&self.drift))
        .with_reapply_period(self.reapply_period)
        .with_max_history(self.max_history)
        .with_status_manifest(self.status_manifest))
    }
}

/// One watch for [`run_watch`]: the kind and its chart, the settings, and what the
/// manager hands the controller.
pub(crate) struct WatchRun {
    pub(crate) client: Client,
    pub(crate) watch: Arc<Watch>,
    pub(crate) chart: Arc<chart::loader::Chart>,
    /// Load the chart again from `watch.chart` when its files change.
    pub(crate) reload: bool,
    pub(crate) options: Arc<Options>,
    pub(crate) metrics: Metrics,
    /// The process's watches of release records, shared by its watches.
    pub(crate) records: Arc<RecordWatches>,
    /// When to stop, the shard share, and whom to tell the controller runs.
    pub(crate) manager: runtime::Controller,
}

/// Resolves the CR kind (waiting for its CRD), then runs its controllers until the
/// manager says stop.
pub(crate) async fn run_watch(run: WatchRun) {
    let WatchRun {
        client,
        watch,
        chart,
        reload,
        options,
        metrics,
        records,
        manager:
            runtime::Controller {
                stop,
                shards,
                started,
            },
    } = run;
    let gvk = watch.gvk();
    let gvk_label = watch.gvk_string();
    let controller_name = controller_name(&gvk_label);
    let resource = loop {
        match kube::discovery::pinned_kind(&client, &gvk).await {
            Ok((resource, _)) => break resource,
            Err(e) => {
                tracing::warn!(
                    kind = %gvk_label,
                    "cannot find the custom resource kind ({}); is its CRD installed? \
                     Retrying every {}s",
                    release::api_error::describe(&e),
                    CRD_RETRY.as_secs()
                );
                tokio::select! {
                    _ = stop.clone() => return,
                    _ = tokio::time::sleep(CRD_RETRY) => {}
                }
            }
        }
    };

    let concurrency = watch
        .max_concurrent_reconciles
        .unwrap_or(options.max_concurrent_reconciles)
        .max(1);
    metrics.controller_started(&controller_name, concurrency as i64);
    let period = watch.reconcile_period.unwrap_or(options.reconcile_period);
    let settings = ContextSettings {
        client: client.clone(),
        watch: Arc::clone(&watch),
        resource: resource.clone(),
        metrics: metrics.clone(),
        controller: controller_name.clone(),
        period: (!period.is_zero()).then_some(period),
        suppress_override_values: options.suppress_override_values,
        drift: Arc::new(DriftTracker::new()),
        reapply_period: options.reapply_period,
        max_history: watch.max_history.unwrap_or(options.max_history),
        records: Arc::clone(&records),
        status_manifest: watch.status_manifest.unwrap_or(options.status_manifest),
    };
    let ctx = match settings.build(Arc::clone(&chart)) {
        Ok(ctx) => ctx,
        // Checked before the controllers start; a watch that gets here is not run.
        Err(e) => {
            tracing::error!(kind = %gvk_label, "cannot run the controller: {}", Chain(&e));
            return;
        }
    };

    let mut config = watcher::Config::default();
    if let Some(selector) = watch.label_selector_string() {
        config = config.labels(&selector);
    }
    // One controller for all namespaces, or one per watched namespace (a controller
    // watches through one Api; their reconciles share one concurrency limit).
    let scopes: Vec<Option<String>> = if options.watch_namespaces.is_empty() {
        vec![None]
    } else {
        options.watch_namespaces.iter().cloned().map(Some).collect()
    };
    let mut receivers = Vec::new();
    let mut triggers: Vec<Trigger> = Vec::new();
    let mut senders = HashMap::new();
    let mut all = None;
    for scope in &scopes {
        let (tx, rx) = mpsc::unbounded::<ObjectRef<CustomResource>>();
        receivers.push(rx);
        triggers.push(tx.clone());
        match scope {
            Some(ns) => {
                senders.insert(ns.clone(), tx);
            }
            None => all = Some(tx),
        }
    }
    let router = match all {
        Some(tx) => Router::all(tx),
        None => Router::per_namespace(senders),
    };
    // Records changed by others bring their CRs back at once; the watches start with
    // the first controller (after leader election, when there is one).
    records.route(&resource, router.clone());
    records.start(&client, &options.watch_namespaces, stop.clone());
    let dependents = watch.watch_dependent_resources.then(|| {
        Arc::new(DependentWatches::new(
            client.clone(),
            resource.clone(),
            DependentScope::new(&options.watch_namespaces, &watch.allowed_namespaces),
            router,
            Arc::clone(&settings.drift),
            stop.clone(),
        ))
    });
    // Dependent watches resolve kinds through the watch's discovery cache.
    if let Some(d) = &dependents {
        d.share_discovery(Arc::clone(ctx.discovery()));
    }
    let writers: Vec<reflector::store::Writer<CustomResource>> = scopes
        .iter()
        .map(|_| reflector::store::Writer::new(resource.clone()))
        .collect();
    let stores: Vec<Store<CustomResource>> = writers.iter().map(|w| w.as_reader()).collect();
    let run = Arc::new(WatchState {
        ctx: RwLock::new(Arc::new(ctx)),
        metrics: metrics.clone(),
        gvk: gvk_label.clone(),
        controller: controller_name.clone(),
        permits: Semaphore::new(concurrency),
        queue: queue::Queue::new(metrics.clone(), controller_name.clone()),
        retries: RetryLimiter::reconcile(),
        dependents,
        // A CR skipped as someone else's is looked at again after this long, in case
        // it became ours in between (the follower queues the CRs we gain, too).
        shards: shards
            .clone()
            .map(|s| (s, settings.period.unwrap_or(Duration::from_secs(60)))),
        stop: stop.clone(),
        stores: stores.clone(),
    });

    let mut set = JoinSet::new();
    for ((scope, triggers), writer) in scopes.iter().zip(receivers).zip(writers) {
        let api: Api<CustomResource> = match scope {
            None => Api::all_with(client.clone(), &resource),
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        };
        let run = Arc::clone(&run);
        let reader = writer.as_reader();
        let seen = ResourceMetrics::new(&metrics, &resource);
        let delivered = Arc::clone(&settings.drift);
        // Status-only writes (the reconciler's own) do not trigger a reconcile.
        // The cache keeps what reconciling reads (`CustomResource`, `status::slim`).
        let crs = watcher::watcher(api, config.clone()).modify(CustomResource::slim_for_cache);
        let queued = Arc::clone(&run);
        let changes = reflector::reflector(writer, crs)
            .inspect(move |event| {
                seen.observe(event);
                status_delivered(&delivered, event);
            })
            .applied_objects()
            .predicate_filter(cr_change, PredicateConfig::default())
            .inspect(move |cr| {
                if let Ok(cr) = cr {
                    queued
                        .queue
                        .added((cr.namespace().unwrap_or_default(), cr.name_any()));
                }
            });
        let queued = Arc::clone(&run);
        let triggers = triggers.inspect(move |cr| {
            queued
                .queue
                .added((cr.namespace.clone().unwrap_or_default(), cr.name.clone()))
        });
        let controller = Controller::for_stream_with(changes, reader, resource.clone())
            // At most `concurrency` reconciles run; what else is due waits in the
            // scheduler (see `queue`), not as futures the runner polls on every wake.
            .with_config(
                controller::Config::default()
                    .concurrency(u16::try_from(concurrency).unwrap_or(u16::MAX)),
            )
            .reconcile_on(triggers)
            .graceful_shutdown_on(stop.clone())
            .run(reconcile_one, error_policy, Arc::clone(&run));
        set.spawn(controller.for_each(move |result| {
            report(&run, result);
            std::future::ready(())
        }));
    }
    let namespace = options.watch_namespaces.join(",");
    tracing::info!(
        target: "helm.controller",
        {
            "apiVersion" = %watch.api_version(),
            kind = %watch.kind,
            namespace = %namespace,
            "reconcilePeriod" = %format_go_duration(period),
        },
        "Watching resource"
    );
    tracing::info!(target: "", controller = %controller_name, "Starting Controller");
    tracing::info!(
        target: "",
        { controller = %controller_name, "worker count" = concurrency },
        "Starting workers"
    );
    if let Some(shards) = shards {
        let follower = follow::<CustomResource>(
            shards,
            gvk_label.clone(),
            resource.clone(),
            stores.clone(),
            triggers.clone(),
            metrics.clone(),
        );
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop => {}
                _ = follower => {}
            }
        });
    }
    if reload {
        let chart_path = watch.chart.clone();
        let run = Arc::clone(&run);
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = stop => {}
                _ = reload_chart(chart_path, chart, settings, run, stores, triggers) => {}
            }
        });
    }
    started.done();
    while set.join_next().await.is_some() {}
    tracing::info!(target: "", controller = %controller_name, "All workers finished");
}

/// How long a reconcile waits for the CR watch to deliver the status this process
/// wrote last, before it reads the CR as the cache has it.
const STATUS_WAIT: Duration = Duration::from_secs(2);

/// When a CR whose objects drifted during its reconcile is looked at again.
const DRIFT_REQUEUE: Duration = Duration::from_millis(500);

/// Tells the drift tracker which versions of the CRs the watch delivered.
fn status_delivered(
    drift: &DriftTracker,
    event: &Result<watcher::Event<CustomResource>, watcher::Error>,
) {
    match event {
        Ok(watcher::Event::Apply(cr) | watcher::Event::InitApply(cr)) => {
            let key = (cr.namespace().unwrap_or_default(), cr.name_any());
            drift.cr_seen(&key, cr.metadata.resource_version.as_deref());
        }
        Ok(watcher::Event::InitDone) => drift.crs_relisted(),
        _ => {}
    }
}

/// operator-lib's `resource_created_at_seconds` for one kind, fed by the watch.
struct ResourceMetrics {
    metrics: Metrics,
    group: String,
    version: String,
    kind: String,
}

impl ResourceMetrics {
    fn new(metrics: &Metrics, resource: &ApiResource) -> ResourceMetrics {
        ResourceMetrics {
            metrics: metrics.clone(),
            group: resource.group.clone(),
            version: resource.version.clone(),
            kind: resource.kind.clone(),
        }
    }

    fn observe(&self, event: &Result<watcher::Event<CustomResource>, watcher::Error>) {
        let (obj, gone) = match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => (o, false),
            Ok(watcher::Event::Delete(o)) => (o, true),
            _ => return,
        };
        let namespace = obj.namespace().unwrap_or_default();
        let name = obj.name_any();
        let id = ResourceId {
            group: &self.group,
            version: &self.version,
            kind: &self.kind,
            namespace: &namespace,
            name: &name,
        };
        if gone {
            self.metrics.resource_gone(&id);
        } else {
            let created = obj
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(0, |t| t.0.as_second());
            self.metrics.resource_seen(&id, created);
        }
    }
}

/// Polls the chart's files; when they changed and the chart loads with a different
/// digest, the watch's reconciles use it from now on and every CR of the watch is
/// reconciled. A chart that does not load is reported and the previous one kept.
async fn reload_chart(
    path: std::path::PathBuf,
    chart: Arc<chart::loader::Chart>,
    settings: ContextSettings,
    run: Arc<WatchState>,
    stores: Vec<Store<CustomResource>>,
    triggers: Vec<Trigger>,
) {
    let empty = chart::values::Values::new();
    let mut digest = ChartDigest::new(&chart).with_values(&empty);
    let mut detector = {
        let path = path.clone();
        match tokio::task::spawn_blocking(move || ChangeDetector::new(&path)).await {
            Ok(d) => d,
            Err(_) => return,
        }
    };
    loop {
        tokio::time::sleep(POLL_INTERVAL).await;
        let (back, changed) = match tokio::task::spawn_blocking(move || {
            let changed = detector.poll();
            (detector, changed)
        })
        .await
        {
            Ok(polled) => polled,
            Err(_) => return,
        };
        detector = back;
        if !changed {
            continue;
        }
        let load_path = path.clone();
        let loaded =
            match tokio::task::spawn_blocking(move || chart::loader::load(&load_path)).await {
                Ok(loaded) => loaded,
                Err(_) => return,
            };
        let chart = match loaded {
            Ok(chart) => Arc::new(chart),
            Err(e) => {
                tracing::error!(target: "helm.controller", chart = %path.display(), error = %Chain(&e),
                    "Failed to reload chart; reconciling with the chart loaded before");
                continue;
            }
        };
        let new_digest = ChartDigest::new(&chart).with_values(&empty);
        if new_digest == digest {
            continue;
        }
        let name = chart.metadata.name.clone();
        let version = chart.metadata.version.clone();
        match settings.build(chart) {
            Ok(ctx) => run.set_ctx(ctx),
            Err(e) => {
                tracing::error!(target: "helm.controller", chart = %path.display(), error = %Chain(&e),
                    "Failed to reload chart; reconciling with the chart loaded before");
                continue;
            }
        }
        digest = new_digest;
        let mut queued = 0usize;
        for (store, trigger) in stores.iter().zip(&triggers) {
            for cr in store.state() {
                let target = ObjectRef::from_obj_with(&*cr, settings.resource.clone());
                if trigger.unbounded_send(target).is_ok() {
                    queued += 1;
                }
            }
        }
        tracing::info!(target: "helm.controller", chart = %path.display(), name = %name,
            version = %version, reconciling = queued, "Reloaded chart");
    }
}

/// A hash of what a reconcile acts on besides the spec's generation: labels,
/// annotations (the `helm.sdk.operatorframework.io/*` settings), finalizers and
/// deletion. The status is left out, so the reconciler's own status writes do not
/// come back as reconciles.
fn cr_change(cr: &CustomResource) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = &cr.metadata;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut h);
    meta.labels.hash(&mut h);
    meta.annotations.hash(&mut h);
    meta.finalizers.hash(&mut h);
    meta.deletion_timestamp.is_some().hash(&mut h);
    // Without a generation (a CRD without the status subresource bumps it on every
    // write, some API servers never set it) every change counts.
    if meta.generation.is_none() {
        meta.resource_version.hash(&mut h);
    }
    Some(h.finish())
}

type ControllerResult = std::result::Result<
    (ObjectRef<CustomResource>, Action),
    controller::Error<RunError, watcher::Error>,
>;

/// Logs what the controller stream reports besides successful reconciles.
fn report(run: &WatchState, result: ControllerResult) {
    match result {
        Ok(_) => {}
        // Logged by the error policy.
        Err(controller::Error::ReconcilerFailed(..)) => {}
        Err(controller::Error::ObjectNotFound(obj)) => {
            // The CR is gone (or no longer selected): forget its backoff.
            let key = (obj.namespace.clone().unwrap_or_default(), obj.name.clone());
            run.queue.dropped(&key);
            run.retries.forget(&key);
            run.ctx().drift().forget(&key);
            tracing::debug!(kind = %run.gvk, cr = %obj, "trigger for a custom resource that is gone or not selected");
        }
        Err(controller::Error::QueueError(e)) => {
            tracing::warn!(kind = %run.gvk, "watching custom resources failed (retrying): {e}");
        }
        Err(controller::Error::RunnerError(e)) => {
            tracing::error!(kind = %run.gvk, "controller runner failed: {e}");
        }
    }
}

/// One reconcile: waits for a worker (the queue), runs the reconciler, counts it,
/// and starts the dependent watches its release needs.
async fn reconcile_one(cr: Arc<CustomResource>, run: Arc<WatchState>) -> Result<Action, RunError> {
    let metrics = &run.metrics;
    let (namespace, name) = (cr.namespace().unwrap_or_default(), cr.name_any());
    let key = (namespace.clone(), name.clone());
    if let Some((shards, again)) = &run.shards {
        if !shards.owns(&run.gvk, &namespace, &name) {
            run.queue.dropped(&key);
            return Ok(Action::requeue(*again));
        }
    }
    let permit = run.permits.acquire().await;
    // Shutting down: don't start work that was only waiting for a worker.
    if permit.is_err() || run.stop.peek().is_some() {
        run.queue.dropped(&key);
        return Ok(Action::await_change());
    }
    // Ours still (the share may have changed while waiting), and held as in flight
    // until the reconcile ends, so a hand-off waits for it.
    let claim = match &run.shards {
        None => None,
        Some((shards, again)) => match shards.claim(&run.gvk, &namespace, &name) {
            Some(claim) => Some(claim),
            None => {
                run.queue.dropped(&key);
                return Ok(Action::requeue(*again));
            }
        },
    };
    run.queue.started(&key);
    // The CR as this process last wrote its status, not older (see `drift`): the
    // watch delivers it within milliseconds of the write.
    run.ctx().drift().status_delivered(&key, STATUS_WAIT).await;
    let ctx = run.ctx();
    let Some(cr) = run.latest(&cr, ctx.resource()) else {
        return Ok(Action::await_change());
    };
    let cr_id = cr.display_id(&ctx.resource().kind);
    let work = metrics.work_started(&run.controller);
    let started = Instant::now();
    // Boxed, so a reconcile waiting for a worker (at 10,000 CRs, thousands of them)
    // holds only this function's small state, not the whole reconcile's.
    let result = AssertUnwindSafe(Box::pin(reconcile::reconcile(Arc::clone(&cr), ctx)))
        .catch_unwind()
        .await;
    let elapsed = started.elapsed();
    metrics.work_done(work);
    drop(claim);
    drop(permit);
    let result = match result {
        Ok(result) => result.map_err(RunError::from),
        Err(panic) => {
            metrics.reconcile_panicked(&run.controller);
            Err(RunError::Panic {
                cr: cr_id.clone(),
                message: panic_message(panic.as_ref()),
            })
        }
    };
    let counted = match &result {
        Err(_) => Outcome::Error,
        Ok(o) if o.requeue_after.is_some() => Outcome::RequeueAfter,
        Ok(_) => Outcome::Success,
    };
    metrics.reconcile_done(&run.controller, counted, elapsed);
    let outcome = result?;
    run.retries
        .forget(&(cr.namespace().unwrap_or_default(), cr.name_any()));
    if let Some(dependents) = &run.dependents {
        dependents.ensure(&outcome.dependents);
    }
    tracing::debug!(cr = %cr_id, elapsed_ms = elapsed.as_millis() as u64, "reconciled");
    // Someone changed an object in the very moment this reconcile applied it (the
    // dependent watch could not tell it from the apply until the apply answered):
    // repair now, not at the next period.
    let uid = cr.metadata.uid.as_deref().unwrap_or_default();
    if run.ctx().drift().seen(&key, uid).drifted {
        return Ok(Action::requeue(DRIFT_REQUEUE));
    }
    Ok(match outcome.requeue_after {
        Some(after) => Action::requeue(after),
        None => Action::await_change(),
    })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "no message".into()
    }
}

/// After a failed reconcile: controller-runtime's `AddRateLimited` (the per-CR
/// backoff and the shared bucket), or later when the failure names a longer delay.
fn error_policy(cr: Arc<CustomResource>, error: &RunError, run: Arc<WatchState>) -> Action {
    let namespace = cr.namespace().unwrap_or_default();
    let name = cr.name_any();
    let key = (namespace.clone(), name.clone());
    let (limited, failures) = run.retries.failed(&key, Instant::now());
    let delay = error
        .requeue_after()
        .map_or(limited, |own| own.max(limited));
    run.metrics.queue_retry(&run.controller);
    let object = serde_json::json!({"name": name, "namespace": namespace}).to_string();
    tracing::error!(
        target: "",
        {
            controller = %run.controller,
            object = %object,
            namespace = %namespace,
            name = %name,
            "reconcileID" = %gostd::uuid::new_v4(),
            error = %Chain(error),
        },
        "Reconciler error"
    );
    tracing::debug!(kind = %run.gvk, cr = %key.1, failures, retry_in_ms = delay.as_millis() as u64, "retrying");
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_names_are_the_go_operators() {
        let gvk = "cache.example.com/v1alpha1, Kind=Memcached";
        assert_eq!(controller_name(gvk), "memcached-controller");
        assert_eq!(controller_name("Hello"), "hello-controller");
    }

    #[test]
    fn status_writes_are_not_changes() {
        let mut cr: CustomResource = serde_json::from_value(serde_json::json!({
            "apiVersion": "test.rudder.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "generation": 1, "resourceVersion": "1"},
            "spec": {"a": 1},
        }))
        .unwrap();
        let before = cr_change(&cr);
        cr.set_status(serde_json::value::to_raw_value(&serde_json::json!({"conditions": []})).ok());
        cr.metadata.resource_version = Some("2".into());
        assert_eq!(cr_change(&cr), before, "status and resourceVersion only");
        cr.metadata.annotations = Some(
            [(
                "helm.sdk.operatorframework.io/upgrade-force".to_string(),
                "true".to_string(),
            )]
            .into(),
        );
        assert_ne!(cr_change(&cr), before, "annotations count");
        let annotated = cr_change(&cr);
        cr.metadata.generation = Some(2);
        assert_ne!(cr_change(&cr), annotated, "spec changes count");
    }
}
