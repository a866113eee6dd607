//! Prometheus metrics of a controller, named, labelled, typed and bucketed as
//! controller-runtime and client-go export them, so dashboards and alerts built for
//! Go controllers keep working:
//!
//! - controller-runtime's controller metrics (`controller_runtime_reconcile_total{controller,result}`
//!   and friends), present from the start at zero as `initMetrics` leaves them;
//! - client-go's workqueue metrics (`workqueue_*{controller,name}`), where the queue is
//!   the objects due for a reconcile and waiting for one of the controller's workers;
//! - `rest_client_requests_total{code,host,method}` for every request of the
//!   client ([`RestClientMetricsLayer`]);
//! - `leader_election_master_status{name}`, the process collector's `process_*`,
//!   operator-lib's `resource_created_at_seconds{group,kind,name,namespace,version}`,
//!   and `certwatcher_*` of the metrics server's certificate.
//!
//! The `controller` label is the name the caller gives each controller. What a
//! program adds is configured through [`MetricsBuilder`]: a build-info gauge under
//! the program's own name, and a count of objects per kind and status. With
//! sharding, `rudder_shard_owned_resources{gvk}` and `rudder_shard_members{gvk}` give
//! this replica's share of each kind and how many replicas split it. Serving
//! (`/metrics` over HTTP or HTTPS, with controller-runtime's authentication filter,
//! and the health probes) is in [`serve`].

mod auth;
mod process;
mod rest;
pub mod serve;
mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

pub use auth::{Authenticator, MetricsAuth};
pub use rest::{RestClientMetrics, RestClientMetricsLayer};
pub use serve::{
    health_router, metrics_router, parse_bind_address, serve_on, BindAddressError, Health,
    MetricsServer, MetricsServing,
};
pub use tls::{MetricsCerts, TlsError};

/// Outcome of one reconcile, as counted in the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    /// Succeeded and asked to run again at once (controller-runtime's `requeue`).
    Requeue,
    /// Succeeded and asked to run again after a delay (`requeue_after`), as every
    /// reconcile that schedules its reconcile period does.
    RequeueAfter,
}

impl Outcome {
    /// controller-runtime's `result` label value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }

    const ALL: [Outcome; 4] = [
        Outcome::Error,
        Outcome::RequeueAfter,
        Outcome::Requeue,
        Outcome::Success,
    ];
}

/// Label pairs, in the (alphabetical) order client_golang writes them.
type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// controller-runtime's reconcile time buckets (seconds).
const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS.iter().copied())
}

/// The workqueue's buckets: `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to
/// 1000 s.
fn queue_histogram() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        10e-9, 10.0, 12,
    ))
}

struct Inner {
    registry: Registry,
    reconcile_total: Family<Labels, Counter>,
    reconcile_errors: Family<Labels, Counter>,
    terminal_errors: Family<Labels, Counter>,
    reconcile_panics: Family<Labels, Counter>,
    reconcile_time: HistogramFamily,
    max_concurrent: Family<Labels, Gauge>,
    active_workers: Family<Labels, Gauge>,
    queue_depth: Family<Labels, Gauge>,
    queue_adds: Family<Labels, Counter>,
    queue_latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<Labels, FloatGauge>,
    longest_running: Family<Labels, FloatGauge>,
    queue_retries: Family<Labels, Counter>,
    rest_requests: Family<Labels, Counter>,
    leader: Family<Labels, Gauge>,
    resource_created: Family<Labels, Gauge>,
    cert_reads: Counter,
    cert_read_errors: Counter,
    /// The builder's status counts, when asked for.
    statuses: Option<Family<Labels, Gauge>>,
    shard_owned: Family<Labels, Gauge>,
    shard_members: Family<Labels, Gauge>,
    /// Each object's last known status, so the per-status gauges can move an
    /// object from one status to another.
    status_of: Mutex<HashMap<(String, String, String), String>>,
    /// When each reconcile in progress started, per controller, for the
    /// unfinished-work and longest-running gauges (computed at scrape time).
    in_flight: Mutex<HashMap<String, HashMap<u64, Instant>>>,
    next_work: std::sync::atomic::AtomicU64,
}

/// The metrics registry; cheap to clone, shared by all controllers.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn labels_of(controller: &str) -> Labels {
    vec![("controller", controller.to_string())]
}

/// The workqueue labels: client-go names the queue after the controller.
fn queue(name: &str) -> Labels {
    vec![("controller", name.to_string()), ("name", name.to_string())]
}

/// A reconcile in progress, as the workqueue's work metrics see it.
#[derive(Debug)]
#[must_use = "finish the work with Metrics::work_done"]
pub struct Work {
    controller: String,
    id: u64,
    started: Instant,
}

/// A gauge at 1 whose labels describe the build (client_golang's `*_build_info`
/// convention), under the program's own name.
#[derive(Debug, Clone)]
struct BuildInfo {
    name: String,
    help: String,
    labels: Labels,
}

/// A gauge family counting objects per kind and status (`<name>{gvk,status}`).
#[derive(Debug, Clone)]
struct StatusCounts {
    name: String,
    help: String,
}

/// What a program adds to the controller metrics: see [`Metrics::builder`].
#[derive(Debug, Clone, Default)]
#[must_use = "build the registry with MetricsBuilder::build"]
pub struct MetricsBuilder {
    build_info: Option<BuildInfo>,
    status_counts: Option<StatusCounts>,
}

impl MetricsBuilder {
    /// Reports the build as `name{labels…} 1` (for example `commit` and `version`).
    pub fn build_info(
        mut self,
        name: impl Into<String>,
        help: impl Into<String>,
        labels: Vec<(&'static str, String)>,
    ) -> MetricsBuilder {
        self.build_info = Some(BuildInfo {
            name: name.into(),
            help: help.into(),
            labels,
        });
        self
    }

    /// Counts objects per kind and status as `name{gvk,status}`, fed by
    /// [`Metrics::set_status`].
    pub fn status_counts(
        mut self,
        name: impl Into<String>,
        help: impl Into<String>,
    ) -> MetricsBuilder {
        self.status_counts = Some(StatusCounts {
            name: name.into(),
            help: help.into(),
        });
        self
    }

    /// The registry: the controller metrics and what was asked for here.
    pub fn build(self) -> Metrics {
        Metrics::with(self)
    }
}

impl Metrics {
    /// The controller metrics alone.
    pub fn new() -> Metrics {
        Metrics::builder().build()
    }

    /// Starts a registry with more than the controller metrics.
    pub fn builder() -> MetricsBuilder {
        MetricsBuilder::default()
    }

    fn with(extra: MetricsBuilder) -> Metrics {
        let mut registry = Registry::default();
        // The registry ends every help text with a period: give it Go's without one.
        macro_rules! family {
            ($name:expr, $help:expr) => {{
                let f = Family::default();
                registry.register($name, $help.trim_end_matches('.'), f.clone());
                f
            }};
            ($name:expr, $help:expr, $ctor:expr) => {{
                let f: HistogramFamily = Family::new_with_constructor($ctor);
                registry.register($name, $help.trim_end_matches('.'), f.clone());
                f
            }};
        }
        // prometheus-client appends `_total` to counters' names.
        let reconcile_total = family!(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller"
        );
        let reconcile_errors = family!(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller"
        );
        let terminal_errors = family!(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller"
        );
        let reconcile_panics = family!(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller"
        );
        let reconcile_time = family!(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_histogram
        );
        let max_concurrent = family!(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller"
        );
        let active_workers = family!(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller"
        );
        let queue_depth = family!(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority"
        );
        let queue_adds = family!(
            "workqueue_adds",
            "Total number of adds handled by workqueue"
        );
        let queue_latency = family!(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_histogram
        );
        let work_duration = family!(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            queue_histogram
        );
        let unfinished_work = family!(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."
        );
        let longest_running = family!(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running."
        );
        let queue_retries = family!(
            "workqueue_retries",
            "Total number of retries handled by workqueue"
        );
        let rest_requests = family!(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host."
        );
        let leader = family!(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name."
        );
        let resource_created = family!(
            "resource_created_at_seconds",
            "Timestamp at which a resource was created"
        );
        let cert_reads = Counter::default();
        registry.register(
            "certwatcher_read_certificate",
            "Total number of certificate reads",
            cert_reads.clone(),
        );
        let cert_read_errors = Counter::default();
        registry.register(
            "certwatcher_read_certificate_errors",
            "Total number of certificate read errors",
            cert_read_errors.clone(),
        );
        if let Some(build) = extra.build_info {
            let build_info = Family::<Labels, Gauge>::default();
            build_info.get_or_create(&build.labels).set(1);
            registry.register(build.name, build.help, build_info);
        }
        registry.register_collector(Box::new(process::ProcessCollector::new()));
        let statuses = extra
            .status_counts
            .map(|counts| family!(counts.name, counts.help));
        let shard_owned = family!(
            "rudder_shard_owned_resources",
            "Number of custom resources of each watched kind this replica owns under sharding"
        );
        let shard_members = family!(
            "rudder_shard_members",
            "Number of live replicas sharing the custom resources of each watched kind"
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                reconcile_total,
                reconcile_errors,
                terminal_errors,
                reconcile_panics,
                reconcile_time,
                max_concurrent,
                active_workers,
                queue_depth,
                queue_adds,
                queue_latency,
                work_duration,
                unfinished_work,
                longest_running,
                queue_retries,
                rest_requests,
                leader,
                resource_created,
                cert_reads,
                cert_read_errors,
                statuses,
                shard_owned,
                shard_members,
                status_of: Mutex::new(HashMap::new()),
                in_flight: Mutex::new(HashMap::new()),
                next_work: std::sync::atomic::AtomicU64::new(0),
            }),
        }
    }

    /// The controller `controller` starts with `workers` workers: every series it
    /// will report exists from now on, at zero (controller-runtime's `initMetrics` and
    /// the workqueue's constructors).
    pub fn controller_started(&self, controller: &str, workers: i64) {
        let i = &self.inner;
        for outcome in Outcome::ALL {
            i.reconcile_total
                .get_or_create(&vec![
                    ("controller", controller.to_string()),
                    ("result", outcome.label().to_string()),
                ])
                .inc_by(0);
        }
        let c = labels_of(controller);
        i.reconcile_errors.get_or_create(&c).inc_by(0);
        i.terminal_errors.get_or_create(&c).inc_by(0);
        i.reconcile_panics.get_or_create(&c).inc_by(0);
        i.max_concurrent.get_or_create(&c).set(workers);
        i.active_workers.get_or_create(&c).set(0);
        let q = queue(controller);
        let mut depth = q.clone();
        depth.push(("priority", String::new()));
        i.queue_depth.get_or_create(&depth).set(0);
        i.queue_adds.get_or_create(&q).inc_by(0);
        drop(i.queue_latency.get_or_create(&q));
        drop(i.work_duration.get_or_create(&q));
        i.unfinished_work.get_or_create(&q).set(0.0);
        i.longest_running.get_or_create(&q).set(0.0);
        i.queue_retries.get_or_create(&q).inc_by(0);
    }

    /// Counts one reconcile of `controller`.
    pub fn reconcile_done(&self, controller: &str, outcome: Outcome, duration: Duration) {
        let i = &self.inner;
        i.reconcile_total
            .get_or_create(&vec![
                ("controller", controller.to_string()),
                ("result", outcome.label().to_string()),
            ])
            .inc();
        let c = labels_of(controller);
        if outcome == Outcome::Error {
            i.reconcile_errors.get_or_create(&c).inc();
        }
        i.reconcile_time
            .get_or_create(&c)
            .observe(duration.as_secs_f64());
    }

    /// The reconciler panicked (the reconcile is also counted as an error).
    pub fn reconcile_panicked(&self, controller: &str) {
        let c = labels_of(controller);
        self.inner.reconcile_panics.get_or_create(&c).inc();
    }

    fn depth(&self, controller: &str) -> Gauge {
        let mut labels = queue(controller);
        labels.push(("priority", String::new()));
        self.inner.queue_depth.get_or_create_owned(&labels)
    }

    /// An object became due for a reconcile and waits for a worker.
    pub fn queue_add(&self, controller: &str) {
        let q = queue(controller);
        self.inner.queue_adds.get_or_create(&q).inc();
        self.depth(controller).inc();
    }

    /// A worker took an object that had waited `waited` since it became due.
    pub fn queue_get(&self, controller: &str, waited: Duration) {
        self.depth(controller).dec();
        let q = queue(controller);
        self.inner
            .queue_latency
            .get_or_create(&q)
            .observe(waited.as_secs_f64());
    }

    /// An object that was due left the queue without being worked on (shutdown).
    pub fn queue_dropped(&self, controller: &str) {
        self.depth(controller).dec();
    }

    /// A failed reconcile was queued again with a backoff.
    pub fn queue_retry(&self, controller: &str) {
        let q = queue(controller);
        self.inner.queue_retries.get_or_create(&q).inc();
    }

    /// A worker of `controller` starts reconciling an object.
    pub fn work_started(&self, controller: &str) -> Work {
        let controller = controller.to_string();
        let id = self
            .inner
            .next_work
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let started = Instant::now();
        self.in_flight()
            .entry(controller.clone())
            .or_default()
            .insert(id, started);
        self.inner
            .active_workers
            .get_or_create(&vec![("controller", controller.clone())])
            .inc();
        Work {
            controller,
            id,
            started,
        }
    }

    /// The reconcile of `work` ended.
    pub fn work_done(&self, work: Work) {
        if let Some(map) = self.in_flight().get_mut(&work.controller) {
            map.remove(&work.id);
        }
        let i = &self.inner;
        i.active_workers
            .get_or_create(&vec![("controller", work.controller.clone())])
            .dec();
        i.work_duration
            .get_or_create(&queue(&work.controller))
            .observe(work.started.elapsed().as_secs_f64());
    }

    fn in_flight(&self) -> MutexGuard<'_, HashMap<String, HashMap<u64, Instant>>> {
        // A panic elsewhere while holding the lock leaves the map consistent.
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The unfinished-work gauges as of `now`, as client-go's queue updates them.
    fn refresh_unfinished(&self, now: Instant) {
        let in_flight = self.in_flight();
        for (controller, works) in in_flight.iter() {
            let ages = works
                .values()
                .map(|s| now.saturating_duration_since(*s).as_secs_f64());
            let (total, longest) = ages.fold((0.0, 0.0), |(t, l): (f64, f64), a| (t + a, l.max(a)));
            let q = queue(controller);
            self.inner.unfinished_work.get_or_create(&q).set(total);
            self.inner.longest_running.get_or_create(&q).set(longest);
        }
    }

    /// Records the status of one object of kind `gvk` (`None` once the object is
    /// gone), for the builder's [status counts](MetricsBuilder::status_counts); a
    /// registry without them ignores it.
    pub fn set_status(&self, gvk: &str, namespace: &str, name: &str, status: Option<&str>) {
        let Some(statuses) = &self.inner.statuses else {
            return;
        };
        let key = (gvk.to_string(), namespace.to_string(), name.to_string());
        let gauge = |status: &str| {
            statuses.get_or_create_owned(&vec![
                ("gvk", gvk.to_string()),
                ("status", status.to_string()),
            ])
        };
        let mut states = self.states();
        let old = match status {
            Some(s) => states.insert(key, s.to_string()),
            None => states.remove(&key),
        };
        if old.as_deref() == status {
            return;
        }
        if let Some(old) = old {
            gauge(&old).dec();
        }
        if let Some(new) = status {
            gauge(new).inc();
        }
    }

    fn states(&self) -> MutexGuard<'_, HashMap<(String, String, String), String>> {
        // A panic elsewhere while holding the lock leaves the map consistent.
        self.inner
            .status_of
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// An object of a watched kind exists (operator-lib's
    /// `InstrumentedEnqueueRequestForObject` on create and update): its creation time.
    pub fn resource_seen(&self, object: &ResourceId<'_>, created_unix: i64) {
        self.inner
            .resource_created
            .get_or_create(&object.labels())
            .set(created_unix);
    }

    /// An object of a watched kind is gone (the handler's delete).
    pub fn resource_gone(&self, object: &ResourceId<'_>) {
        self.inner.resource_created.remove(&object.labels());
    }

    /// One request of the Kubernetes client ended with `code` (the HTTP
    /// status, or `<error>` when there was no response).
    pub fn rest_request(&self, code: &str, method: &str, host: &str) {
        self.inner
            .rest_requests
            .get_or_create(&vec![
                ("code", code.to_string()),
                ("host", host.to_string()),
                ("method", method.to_string()),
            ])
            .inc();
    }

    /// The metrics server read its certificate files.
    pub fn certificate_read(&self, ok: bool) {
        self.inner.cert_reads.inc();
        if !ok {
            self.inner.cert_read_errors.inc();
        }
    }

    /// Whether this process holds the leader election Lease `lease_name`.
    pub fn set_leader(&self, lease_name: &str, leader: bool) {
        self.inner
            .leader
            .get_or_create(&vec![("name", lease_name.to_string())])
            .set(i64::from(leader));
    }

    /// This replica's share of `gvk` under sharding: objects it owns, and live members.
    pub fn set_shard_share(&self, gvk: &str, owned: usize, members: usize) {
        let labels = vec![("gvk", gvk.to_string())];
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.inner
            .shard_owned
            .get_or_create(&labels)
            .set(gauge(owned));
        self.inner
            .shard_members
            .get_or_create(&labels)
            .set(gauge(members));
    }

    /// The registry in the Prometheus text exposition format (0.0.4).
    pub fn encode(&self) -> String {
        self.refresh_unfinished(Instant::now());
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.inner.registry);
        out
    }
}

/// An object as `resource_created_at_seconds` labels it.
#[derive(Debug, Clone, Copy)]
pub struct ResourceId<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

impl ResourceId<'_> {
    fn labels(&self) -> Labels {
        vec![
            ("group", self.group.to_string()),
            ("kind", self.kind.to_string()),
            ("name", self.name.to_string()),
            ("namespace", self.namespace.to_string()),
            ("version", self.version.to_string()),
        ]
    }
}

#[cfg(test)]
mod tests;
