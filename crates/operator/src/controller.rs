//! Runs one controller per watched kind: watches CRs (and the kinds of their releases'
//! objects), queues them, and calls the reconciler with bounded concurrency.
//!
//! The process-level behaviour follows controller-runtime as the Go helm-operator uses
//! it: metrics and health servers, optional leader election (exit when leadership is
//! lost), graceful shutdown on SIGTERM/ctrl-c with a bounded wait for in-flight
//! reconciles. One deliberate difference in readiness: `/readyz` succeeds once the
//! controllers run, and on a replica standing by for leadership too. A standby that
//! reported "not ready" would stall every rolling update of a one-replica operator
//! Deployment (the new pod can never lead while the old one runs).

mod dependents;

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::{mpsc, oneshot};
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, PredicateConfig, WatchStreamExt};
use kube::{Client, ResourceExt};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::leader::{default_identity, in_cluster_namespace, LeaderElection, LeaderGuard};
use crate::metrics::{self, Health, Metrics};
use crate::options::OPERATOR_NAME_ENV;
use crate::reconcile::{self, ReconcileError};
use crate::watches::{self, Watch};
use crate::{Error, Options, Result};
use dependents::{DependentScope, DependentWatches, Router};

/// How often to look for a CRD that is not installed yet.
const CRD_RETRY: Duration = Duration::from_secs(10);
/// First retry after a failed reconcile (unless the reconciler knows better); doubles
/// per consecutive failure of the same CR.
const ERROR_BACKOFF_BASE: Duration = Duration::from_secs(5);
const ERROR_BACKOFF_MAX: Duration = Duration::from_secs(300);

/// Resolves once, when every holder should stop; cheap to clone.
type Stop = Shared<BoxFuture<'static, ()>>;

/// Runs the operator until SIGTERM or ctrl-c (then `Ok`), or until it fails or loses
/// leadership (then `Err`).
pub async fn run(client: Client, options: Options) -> Result<()> {
    run_with_shutdown(client, options, shutdown_signal()).await
}

/// Resolves on the first SIGTERM or ctrl-c.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    // Without a signal handler, wait for ctrl-c alone (or forever if that fails too).
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Runs the operator until `shutdown` resolves (then stops taking work, lets in-flight
/// reconciles finish within `options.shutdown_timeout`, releases the leader lease and
/// returns `Ok`). For `rudder up` and tests, which run the operator in-process.
/// Dropping the returned future stops everything it started, without waiting.
pub async fn run_with_shutdown(
    client: Client,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let options = Arc::new(options);
    let prepared = prepare(&options)?;
    let metrics_addr =
        metrics::parse_bind_address(&options.metrics_bind_address).map_err(|source| {
            Error::BindAddress {
                flag: "--metrics-bind-address",
                source,
            }
        })?;
    let health_addr =
        metrics::parse_bind_address(&options.health_probe_bind_address).map_err(|source| {
            Error::BindAddress {
                flag: "--health-probe-bind-address",
                source,
            }
        })?;
    let lease = if options.leader_elect {
        Some(lease_location(&options)?)
    } else {
        None
    };

    let metrics = Metrics::new();
    let health = Health::new();
    let mut servers = JoinSet::new();
    if let Some(addr) = metrics_addr {
        let listener = bind(addr, "metrics").await?;
        tracing::info!(%addr, "serving metrics");
        servers.spawn(metrics::serve_on(
            listener,
            metrics::metrics_router(metrics.clone()),
        ));
    }
    if let Some(addr) = health_addr {
        let listener = bind(addr, "health probes").await?;
        tracing::info!(%addr, "serving health probes");
        servers.spawn(metrics::serve_on(
            listener,
            metrics::health_router(health.clone()),
        ));
    }

    let mut shutdown = std::pin::pin!(shutdown);
    let leadership = match lease {
        None => None,
        Some(lease) => {
            // A standby replica is ready: see the module documentation.
            health.set_ready(true);
            tracing::info!(
                namespace = %lease.namespace,
                name = %lease.name,
                "waiting to become the leader"
            );
            let acquired = tokio::select! {
                _ = &mut shutdown => {
                    tracing::info!("shutting down before becoming the leader");
                    return Ok(());
                }
                acquired = acquire_leadership(client.clone(), &lease) => acquired?,
            };
            tracing::info!(namespace = %lease.namespace, name = %lease.name, "became the leader");
            metrics.set_leader(&lease.name, true);
            health.set_ready(false);
            Some((acquired, lease))
        }
    };

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let stop: Stop = async move {
        // A dropped sender (the caller dropped this future) stops everything too.
        let _ = stop_rx.await;
    }
    .boxed()
    .shared();

    let total = prepared.len();
    let started = Arc::new(AtomicUsize::new(0));
    let mut controllers = JoinSet::new();
    for (watch, chart) in prepared {
        let started = Arc::clone(&started);
        let health = health.clone();
        let on_started = move || {
            if started.fetch_add(1, Ordering::SeqCst) + 1 == total {
                tracing::info!("all controllers started");
                health.set_ready(true);
            }
        };
        controllers.spawn(run_watch(
            client.clone(),
            watch,
            chart,
            Arc::clone(&options),
            metrics.clone(),
            stop.clone(),
            on_started,
        ));
    }

    let lost_lease = leadership.as_ref().map(|(_, lease)| lease.clone());
    let result = tokio::select! {
        _ = &mut shutdown => {
            tracing::info!("shutdown requested; finishing in-flight reconciles");
            Ok(())
        }
        _ = async {
            match &leadership {
                Some((guard, _)) => guard.lost().await,
                None => std::future::pending().await,
            }
        } => {
            let lease = lost_lease.unwrap_or_default();
            tracing::error!(namespace = %lease.namespace, name = %lease.name, "leader election lost");
            Err(Error::LeadershipLost {
                namespace: lease.namespace,
                name: lease.name,
            })
        }
        Some(ended) = servers.join_next() => Err(Error::Other(match ended {
            Ok(Err(e)) => format!("the metrics or health server stopped: {e}"),
            Ok(Ok(())) => "the metrics or health server stopped".into(),
            Err(e) => format!("the metrics or health server crashed: {e}"),
        })),
        Some(ended) = controllers.join_next() => Err(Error::Other(match ended {
            Ok(()) => "a controller stopped unexpectedly".into(),
            Err(e) => format!("a controller crashed: {e}"),
        })),
    };

    health.set_ready(false);
    let _ = stop_tx.send(());
    let drained = tokio::time::timeout(options.shutdown_timeout, async {
        while controllers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            "in-flight reconciles did not finish within {}s; stopping them",
            options.shutdown_timeout.as_secs()
        );
        controllers.abort_all();
    }
    servers.abort_all();
    if let Some((guard, lease)) = leadership {
        metrics.set_leader(&lease.name, false);
        if result.is_ok() {
            match guard.release().await {
                Ok(()) => tracing::info!(
                    namespace = %lease.namespace,
                    name = %lease.name,
                    "released the leader lease"
                ),
                // The lease then expires on its own after its duration.
                Err(e) => tracing::warn!("cannot release the leader lease: {e}"),
            }
        }
    }
    result
}

async fn bind(addr: std::net::SocketAddr, what: &'static str) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Serve { what, addr, source })
}

/// Loads the watches and each watch's chart, once, failing fast on either.
fn prepare(options: &Options) -> Result<Vec<(Arc<Watch>, Arc<chart::loader::Chart>)>> {
    let path = &options.watches_file;
    let loaded = watches::load(path).map_err(|e| Error::Watches {
        path: path.clone(),
        source: Box::new(e),
    })?;
    if loaded.is_empty() {
        return Err(Error::NoWatches { path: path.clone() });
    }
    let mut out = Vec::with_capacity(loaded.len());
    for watch in loaded {
        // Bad overrides would fail every reconcile: refuse them at startup.
        watch.override_values().map_err(|e| Error::Watches {
            path: path.clone(),
            source: Box::new(e),
        })?;
        let chart = chart::loader::load(&watch.chart).map_err(|source| Error::Chart {
            gvk: watch.gvk_string(),
            path: watch.chart.clone(),
            source,
        })?;
        out.push((Arc::new(watch), Arc::new(chart)));
    }
    Ok(out)
}

/// Where the leader Lease lives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseLocation {
    pub namespace: String,
    pub name: String,
}

/// The lease of `--leader-elect`: `--leader-election-id` (or `$OPERATOR_NAME`, as the Go
/// operator falls back to) in `--leader-election-namespace` (or the pod's namespace).
fn lease_location(options: &Options) -> Result<LeaseLocation> {
    let name = options
        .leader_election_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::env::var(OPERATOR_NAME_ENV)
                .ok()
                .filter(|s| !s.is_empty())
        })
        .ok_or(Error::LeaderElectionIdMissing)?;
    let namespace = options
        .leader_election_namespace
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(in_cluster_namespace)
        .ok_or(Error::LeaderElectionNamespaceMissing)?;
    Ok(LeaseLocation { namespace, name })
}

fn pod_name() -> Option<String> {
    hostname::get().ok().and_then(|h| h.into_string().ok())
}

async fn acquire_leadership(client: Client, lease: &LeaseLocation) -> Result<LeaderGuard> {
    LeaderElection::new(client, &lease.namespace, &lease.name, default_identity())
        .acquire()
        .await
        .map_err(|e| Error::LeaderElection(e.to_string()))
}

/// One watch's controllers and what their reconciles share.
struct WatchRun {
    ctx: Arc<reconcile::Context>,
    gvk: String,
    permits: Semaphore,
    /// Reconciles due but waiting for a permit: the queue depth.
    waiting: AtomicI64,
    active: AtomicI64,
    /// Consecutive failures per CR, for the error backoff.
    failures: Mutex<HashMap<(String, String), u32>>,
    dependents: Option<Arc<DependentWatches>>,
    stop: Stop,
}

impl WatchRun {
    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), u32>> {
        // The map stays consistent even if a holder panicked.
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
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

/// Resolves the CR kind (waiting for its CRD), then runs its controllers until `stop`.
async fn run_watch(
    client: Client,
    watch: Arc<Watch>,
    chart: Arc<chart::loader::Chart>,
    options: Arc<Options>,
    metrics: Metrics,
    stop: Stop,
    on_started: impl FnOnce(),
) {
    let gvk = watch.gvk();
    let gvk_label = watch.gvk_string();
    let resource = loop {
        match kube::discovery::pinned_kind(&client, &gvk).await {
            Ok((resource, _)) => break resource,
            Err(e) => {
                tracing::warn!(
                    kind = %gvk_label,
                    "cannot find the custom resource kind ({e}); is its CRD installed? \
                     Retrying every {}s",
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
    metrics.set_max_concurrent_reconciles(&gvk_label, concurrency as i64);
    let period = watch.reconcile_period.unwrap_or(options.reconcile_period);
    let ctx = Arc::new(reconcile::Context {
        client: client.clone(),
        watch: Arc::clone(&watch),
        chart,
        resource: resource.clone(),
        metrics: metrics.clone(),
        reporter: Reporter {
            controller: metrics::controller_name(&gvk_label),
            instance: pod_name(),
        },
        reconcile_period: (!period.is_zero()).then_some(period),
        discovery: Arc::new(action::DiscoveryCache::new(reconcile::DISCOVERY_TTL)),
    });

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
    let mut senders = HashMap::new();
    let mut all = None;
    for scope in &scopes {
        let (tx, rx) = mpsc::unbounded::<ObjectRef<DynamicObject>>();
        receivers.push(rx);
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
    let dependents = watch.watch_dependent_resources.then(|| {
        Arc::new(DependentWatches::new(
            client.clone(),
            resource.clone(),
            DependentScope::new(&options.watch_namespaces, &watch.allowed_namespaces),
            router,
            stop.clone(),
        ))
    });
    let run = Arc::new(WatchRun {
        ctx,
        gvk: gvk_label.clone(),
        permits: Semaphore::new(concurrency),
        waiting: AtomicI64::new(0),
        active: AtomicI64::new(0),
        failures: Mutex::new(HashMap::new()),
        dependents,
        stop: stop.clone(),
    });

    let mut set = JoinSet::new();
    for (scope, triggers) in scopes.into_iter().zip(receivers) {
        let api: Api<DynamicObject> = match &scope {
            None => Api::all_with(client.clone(), &resource),
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        };
        let run = Arc::clone(&run);
        // Status-only writes (the reconciler's own) do not trigger a reconcile.
        let writer = reflector::store::Writer::<DynamicObject>::new(resource.clone());
        let reader = writer.as_reader();
        let changes = reflector::reflector(writer, watcher::watcher(api, config.clone()))
            .applied_objects()
            .predicate_filter(cr_change, PredicateConfig::default());
        let controller = Controller::for_stream_with(changes, reader, resource.clone())
            // The semaphore in `reconcile_one` bounds concurrency, so waiting work is
            // visible as the queue depth.
            .with_config(controller::Config::default().concurrency(0))
            .reconcile_on(triggers)
            .graceful_shutdown_on(stop.clone())
            .run(reconcile_one, error_policy, Arc::clone(&run));
        set.spawn(controller.for_each(move |result| {
            report(&run, result);
            std::future::ready(())
        }));
    }
    tracing::info!(
        kind = %gvk_label,
        namespaces = %if options.watch_namespaces.is_empty() { "all".to_string() } else { options.watch_namespaces.join(",") },
        concurrency,
        "controller started"
    );
    on_started();
    while set.join_next().await.is_some() {}
    tracing::info!(kind = %gvk_label, "controller stopped");
}

/// A hash of what a reconcile acts on besides the spec's generation: labels,
/// annotations (the `helm.sdk.operatorframework.io/*` settings), finalizers and
/// deletion. The status is left out, so the reconciler's own status writes do not
/// come back as reconciles.
fn cr_change(cr: &DynamicObject) -> Option<u64> {
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
    (ObjectRef<DynamicObject>, Action),
    controller::Error<RunError, watcher::Error>,
>;

/// Logs what the controller stream reports besides successful reconciles.
fn report(run: &WatchRun, result: ControllerResult) {
    match result {
        Ok(_) => {}
        // Logged with its retry delay by the error policy.
        Err(controller::Error::ReconcilerFailed(..)) => {}
        Err(controller::Error::ObjectNotFound(obj)) => {
            // The CR is gone (or no longer selected): forget its backoff.
            let key = (obj.namespace.clone().unwrap_or_default(), obj.name.clone());
            run.failures().remove(&key);
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

/// One reconcile: waits for a permit, runs the reconciler, counts it, and starts the
/// dependent watches its release needs.
async fn reconcile_one(cr: Arc<DynamicObject>, run: Arc<WatchRun>) -> Result<Action, RunError> {
    run.ctx
        .metrics
        .set_queue_depth(&run.gvk, run.waiting.fetch_add(1, Ordering::SeqCst) + 1);
    let permit = run.permits.acquire().await;
    run.ctx
        .metrics
        .set_queue_depth(&run.gvk, run.waiting.fetch_sub(1, Ordering::SeqCst) - 1);
    // Shutting down: don't start work that was only waiting for a permit.
    if permit.is_err() || run.stop.peek().is_some() {
        return Ok(Action::await_change());
    }
    let cr_id = format!(
        "{} {}/{}",
        run.ctx.resource.kind,
        cr.namespace().unwrap_or_default(),
        cr.name_any()
    );
    run.ctx
        .metrics
        .set_active_workers(&run.gvk, run.active.fetch_add(1, Ordering::SeqCst) + 1);
    let started = Instant::now();
    let result = AssertUnwindSafe(reconcile::reconcile(Arc::clone(&cr), Arc::clone(&run.ctx)))
        .catch_unwind()
        .await;
    let elapsed = started.elapsed();
    run.ctx
        .metrics
        .set_active_workers(&run.gvk, run.active.fetch_sub(1, Ordering::SeqCst) - 1);
    drop(permit);
    let result = match result {
        Ok(result) => result.map_err(RunError::from),
        Err(panic) => Err(RunError::Panic {
            cr: cr_id.clone(),
            message: panic_message(panic.as_ref()),
        }),
    };
    let outcome = if result.is_ok() {
        metrics::Outcome::Success
    } else {
        metrics::Outcome::Error
    };
    run.ctx.metrics.reconcile_done(&run.gvk, outcome, elapsed);
    let outcome = result?;
    run.failures()
        .remove(&(cr.namespace().unwrap_or_default(), cr.name_any()));
    if let Some(dependents) = &run.dependents {
        dependents.ensure(&outcome.dependents);
    }
    tracing::debug!(cr = %cr_id, elapsed_ms = elapsed.as_millis() as u64, "reconciled");
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

/// After a failed reconcile: retry when the reconciler says, else after an exponential
/// backoff per CR (5s doubling to 5min, reset by a success).
fn error_policy(cr: Arc<DynamicObject>, error: &RunError, run: Arc<WatchRun>) -> Action {
    let key = (cr.namespace().unwrap_or_default(), cr.name_any());
    let failures = {
        let mut map = run.failures();
        let n = map.entry(key).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = match error {
        RunError::Reconcile(e) => e.requeue_after(),
        RunError::Panic { .. } => None,
    }
    .unwrap_or_else(|| error_backoff(failures));
    tracing::warn!(
        kind = %run.gvk,
        retry_in_s = delay.as_secs(),
        failures,
        "reconcile failed: {error}"
    );
    Action::requeue(delay)
}

/// The delay after `failures` consecutive failures.
fn error_backoff(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    ERROR_BACKOFF_BASE
        .saturating_mul(1u32 << exp)
        .min(ERROR_BACKOFF_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_backoff_doubles_to_five_minutes() {
        assert_eq!(error_backoff(1), Duration::from_secs(5));
        assert_eq!(error_backoff(2), Duration::from_secs(10));
        assert_eq!(error_backoff(4), Duration::from_secs(40));
        assert_eq!(error_backoff(7), Duration::from_secs(300));
        assert_eq!(error_backoff(u32::MAX), Duration::from_secs(300));
    }

    #[test]
    fn status_writes_are_not_changes() {
        let mut cr: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "test.rudder.dev/v1", "kind": "Widget",
            "metadata": {"name": "w", "generation": 1, "resourceVersion": "1"},
            "spec": {"a": 1},
        }))
        .unwrap();
        let before = cr_change(&cr);
        cr.data["status"] = serde_json::json!({"conditions": []});
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

    #[test]
    fn lease_needs_a_name_and_a_namespace() {
        let mut o = Options {
            leader_elect: true,
            leader_election_id: Some("my-operator".into()),
            leader_election_namespace: Some("ops".into()),
            ..Options::default()
        };
        assert_eq!(
            lease_location(&o).unwrap(),
            LeaseLocation {
                namespace: "ops".into(),
                name: "my-operator".into()
            }
        );
        if std::env::var(OPERATOR_NAME_ENV).is_err() {
            o.leader_election_id = None;
            assert!(matches!(
                lease_location(&o),
                Err(Error::LeaderElectionIdMissing)
            ));
        }
        if in_cluster_namespace().is_none() {
            o.leader_election_id = Some("x".into());
            o.leader_election_namespace = None;
            assert!(matches!(
                lease_location(&o),
                Err(Error::LeaderElectionNamespaceMissing)
            ));
        }
    }
}
