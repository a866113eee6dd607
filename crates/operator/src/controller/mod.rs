//! One controller per watched kind (controller-runtime's `pkg/internal/controller`):
//! watches the kind's CRs (and, through [`dependents`], the kinds of their releases'
//! objects), queues them, and calls the reconciler with bounded concurrency; a failed
//! reconcile is retried after the delay it names or [`Backoff::RECONCILE`].
//!
//! The process around the controllers (servers, leadership, shutdown) is
//! [`crate::manager`].

mod dependents;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, StreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::Reporter;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, PredicateConfig, WatchStreamExt};
use kube::{Client, ResourceExt};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::metrics::{self, Metrics};
use crate::reconcile::plan::Backoff;
use crate::reconcile::{self, ReconcileError};
use crate::watches::Watch;
use crate::Options;
use dependents::{DependentScope, DependentWatches, Router};

/// How often to look for a CRD that is not installed yet.
const CRD_RETRY: Duration = Duration::from_secs(10);

/// Resolves once, when every holder should stop; cheap to clone.
pub(crate) type Stop = Shared<BoxFuture<'static, ()>>;

fn pod_name() -> Option<String> {
    hostname::get().ok().and_then(|h| h.into_string().ok())
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
pub(crate) async fn run_watch(
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
    metrics.set_max_concurrent_reconciles(&gvk_label, concurrency as i64);
    let period = watch.reconcile_period.unwrap_or(options.reconcile_period);
    let ctx = match reconcile::Context::new(
        client.clone(),
        Arc::clone(&watch),
        chart,
        resource.clone(),
    ) {
        Ok(ctx) => ctx,
        // Checked before the controllers start; a watch that gets here is not run.
        Err(e) => {
            tracing::error!(kind = %gvk_label, "cannot run the controller: {e}");
            return;
        }
    };
    let ctx = Arc::new(
        ctx.with_metrics(metrics.clone())
            .with_reporter(Reporter {
                controller: metrics::controller_name(&gvk_label),
                instance: pod_name(),
            })
            .with_reconcile_period((!period.is_zero()).then_some(period))
            .with_suppress_override_values(options.suppress_override_values),
    );

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
    let metrics = run.ctx.metrics();
    metrics.set_queue_depth(&run.gvk, run.waiting.fetch_add(1, Ordering::SeqCst) + 1);
    let permit = run.permits.acquire().await;
    metrics.set_queue_depth(&run.gvk, run.waiting.fetch_sub(1, Ordering::SeqCst) - 1);
    // Shutting down: don't start work that was only waiting for a permit.
    if permit.is_err() || run.stop.peek().is_some() {
        return Ok(Action::await_change());
    }
    let cr_id = format!(
        "{} {}/{}",
        run.ctx.resource().kind,
        cr.namespace().unwrap_or_default(),
        cr.name_any()
    );
    metrics.set_active_workers(&run.gvk, run.active.fetch_add(1, Ordering::SeqCst) + 1);
    let started = Instant::now();
    let result = AssertUnwindSafe(reconcile::reconcile(Arc::clone(&cr), Arc::clone(&run.ctx)))
        .catch_unwind()
        .await;
    let elapsed = started.elapsed();
    metrics.set_active_workers(&run.gvk, run.active.fetch_sub(1, Ordering::SeqCst) - 1);
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
    metrics.reconcile_done(&run.gvk, outcome, elapsed);
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

/// After a failed reconcile: retry when the reconciler says, else after
/// [`Backoff::RECONCILE`] per CR (reset by a success).
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
    .unwrap_or_else(|| Backoff::RECONCILE.delay(failures));
    tracing::warn!(
        kind = %run.gvk,
        retry_in_s = delay.as_secs(),
        failures,
        "reconcile failed: {error}"
    );
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
