//! Prometheus metrics of the operator and the `/metrics`, `/healthz`, `/readyz` endpoints.
//!
//! Names and labels follow controller-runtime, which the Go helm-operator exposes
//! (`controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_errors_total`, `controller_runtime_reconcile_time_seconds`,
//! `workqueue_depth{name}`), so existing dashboards and alerts keep working; the
//! `controller` label is the Go operator's controller name, `<kind in lowercase>-controller`.
//! Rudder adds `rudder_releases{gvk,status}`: how many CRs' releases are in each status.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// Outcome of one reconcile, as counted in the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
    /// Succeeded and asked to run again at once (controller-runtime's `requeue`).
    Requeue,
    /// Succeeded and asked to run again after a delay (`requeue_after`).
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
}

type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// controller-runtime's reconcile time buckets (seconds).
const RECONCILE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS.iter().copied())
}

struct Inner {
    registry: Registry,
    reconcile_total: Family<Labels, Counter>,
    reconcile_errors: Family<Labels, Counter>,
    reconcile_time: HistogramFamily,
    workqueue_depth: Family<Labels, Gauge>,
    max_concurrent: Family<Labels, Gauge>,
    active_workers: Family<Labels, Gauge>,
    leader: Family<Labels, Gauge>,
    releases: Family<Labels, Gauge>,
    /// Each CR's last known release status, so the per-status gauges can move
    /// a CR from one status to another.
    release_status: Mutex<HashMap<(String, String, String), String>>,
}

/// The operator's metrics registry; cheap to clone, shared by all controllers.
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

/// The Go operator's controller name for a kind: `<kind in lowercase>-controller`.
/// Accepts a GVK string (`group/version, Kind=Kind`) or a bare kind.
pub fn controller_name(gvk: &str) -> String {
    let kind = gvk.rsplit_once("Kind=").map_or(gvk, |(_, k)| k).trim();
    format!("{}-controller", kind.to_lowercase())
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let reconcile_total = Family::<Labels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconcile_total.clone(),
        );
        let reconcile_errors = Family::<Labels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            reconcile_errors.clone(),
        );
        let reconcile_time: HistogramFamily = Family::new_with_constructor(reconcile_histogram);
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            reconcile_time.clone(),
        );
        let workqueue_depth = Family::<Labels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            workqueue_depth.clone(),
        );
        let max_concurrent = Family::<Labels, Gauge>::default();
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        let active_workers = Family::<Labels, Gauge>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active_workers.clone(),
        );
        let leader = Family::<Labels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease",
            leader.clone(),
        );
        let releases = Family::<Labels, Gauge>::default();
        registry.register(
            "rudder_releases",
            "Number of custom resources whose Helm release is in each status, per watched kind",
            releases.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                reconcile_total,
                reconcile_errors,
                reconcile_time,
                workqueue_depth,
                max_concurrent,
                active_workers,
                leader,
                releases,
                release_status: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Counts one reconcile of a CR of `gvk` (e.g. `"cache.example.com/v1alpha1, Kind=Memcached"`).
    pub fn reconcile_done(&self, gvk: &str, outcome: Outcome, duration: Duration) {
        let controller = controller_name(gvk);
        let i = &self.inner;
        i.reconcile_total
            .get_or_create(&vec![
                ("controller", controller.clone()),
                ("result", outcome.label().to_string()),
            ])
            .inc();
        if outcome == Outcome::Error {
            i.reconcile_errors
                .get_or_create(&vec![("controller", controller.clone())])
                .inc();
        }
        i.reconcile_time
            .get_or_create(&vec![("controller", controller)])
            .observe(duration.as_secs_f64());
    }

    /// Records the release status of one CR (`None` once the CR is gone).
    pub fn set_release_status(&self, gvk: &str, namespace: &str, name: &str, status: Option<&str>) {
        let key = (gvk.to_string(), namespace.to_string(), name.to_string());
        let gauge = |status: &str| {
            self.inner.releases.get_or_create_owned(&vec![
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
            .release_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The number of CRs of `gvk` waiting to be reconciled.
    pub fn set_queue_depth(&self, gvk: &str, depth: i64) {
        self.inner
            .workqueue_depth
            .get_or_create(&vec![("name", controller_name(gvk))])
            .set(depth);
    }

    /// The configured worker count of the controller for `gvk`.
    pub fn set_max_concurrent_reconciles(&self, gvk: &str, n: i64) {
        self.inner
            .max_concurrent
            .get_or_create(&vec![("controller", controller_name(gvk))])
            .set(n);
    }

    /// How many of the controller's workers are reconciling right now.
    pub fn set_active_workers(&self, gvk: &str, n: i64) {
        self.inner
            .active_workers
            .get_or_create(&vec![("controller", controller_name(gvk))])
            .set(n);
    }

    /// Whether this process holds the leader election Lease `lease_name`.
    pub fn set_leader(&self, lease_name: &str, leader: bool) {
        self.inner
            .leader
            .get_or_create(&vec![("name", lease_name.to_string())])
            .set(i64::from(leader));
    }

    /// The registry in the Prometheus text exposition format (0.0.4).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.inner.registry);
        out
    }
}

/// Liveness and readiness as `/healthz` and `/readyz` report them.
#[derive(Clone, Debug, Default)]
pub struct Health {
    ready: Arc<AtomicBool>,
}

impl Health {
    pub fn new() -> Health {
        Health::default()
    }

    /// Ready once the controllers are running (and this replica leads, if it must).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

/// `/metrics`.
pub fn metrics_router(metrics: Metrics) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let metrics = metrics.clone();
            async move {
                (
                    [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
                    metrics.encode(),
                )
            }
        }),
    )
}

/// `/healthz` (200 while the process serves) and `/readyz` (200 once ready, else 503).
pub fn health_router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = health.is_ready();
                async move {
                    if ready {
                        (StatusCode::OK, "ok").into_response()
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "not ready").into_response()
                    }
                }
            }),
        )
}

/// Serves `/metrics` on `addr` until the task is dropped.
pub async fn serve_metrics(addr: SocketAddr, metrics: Metrics) -> std::io::Result<()> {
    serve_on(TcpListener::bind(addr).await?, metrics_router(metrics)).await
}

/// Serves `/healthz` and `/readyz` on `addr` until the task is dropped.
pub async fn serve_health(addr: SocketAddr, health: Health) -> std::io::Result<()> {
    serve_on(TcpListener::bind(addr).await?, health_router(health)).await
}

/// Serves all three endpoints on one address.
pub async fn serve(addr: SocketAddr, metrics: Metrics, health: Health) -> std::io::Result<()> {
    let app = metrics_router(metrics).merge(health_router(health));
    serve_on(TcpListener::bind(addr).await?, app).await
}

/// Serves `router` on an already bound listener (tests bind port 0 and read it back).
pub async fn serve_on(listener: TcpListener, router: Router) -> std::io::Result<()> {
    axum::serve(listener, router).await
}

/// A `--metrics-bind-address`/`--health-probe-bind-address` that is not an address.
#[derive(Debug, thiserror::Error)]
#[error("invalid bind address {address:?}: {reason} (use \":8080\", \"127.0.0.1:8080\", or \"0\" to disable)")]
pub struct BindAddressError {
    pub address: String,
    pub reason: String,
}

/// Reads a bind address the way controller-runtime's flags take it: `"0"` (or empty)
/// disables the server, `":8080"` listens on every interface, `"host:port"` on one.
pub fn parse_bind_address(s: &str) -> Result<Option<SocketAddr>, BindAddressError> {
    let s = s.trim();
    if s.is_empty() || s == "0" {
        return Ok(None);
    }
    let err = |reason: &str| BindAddressError {
        address: s.to_string(),
        reason: reason.to_string(),
    };
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(err("missing port"));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| err("the port must be a number from 0 to 65535"))?;
    let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(h) => h,
        None if host.contains(':') => {
            return Err(err("IPv6 addresses go in brackets, like [::1]:8080"))
        }
        None => host,
    };
    if host.is_empty() {
        return Ok(Some(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            port,
        )));
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(Some(SocketAddr::new(ip, port)));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| err(&format!("cannot resolve {host}: {e}")))?
        .next()
        .map(Some)
        .ok_or_else(|| err(&format!("{host} has no address")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconcile_metrics_use_controller_runtime_names() {
        let m = Metrics::new();
        let gvk = "cache.example.com/v1alpha1, Kind=Memcached";
        m.reconcile_done(gvk, Outcome::Success, Duration::from_millis(30));
        m.reconcile_done(gvk, Outcome::Error, Duration::from_secs(2));
        m.reconcile_done(gvk, Outcome::RequeueAfter, Duration::from_millis(3));
        m.reconcile_done(gvk, Outcome::RequeueAfter, Duration::from_millis(3));
        let text = m.encode();
        for line in [
            "# TYPE controller_runtime_reconcile_total counter",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"error\"} 1",
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue_after\"} 2",
            "controller_runtime_reconcile_errors_total{controller=\"memcached-controller\"} 1",
            "# TYPE controller_runtime_reconcile_time_seconds histogram",
            "controller_runtime_reconcile_time_seconds_count{controller=\"memcached-controller\"} 4",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"0.005\"} 2",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"0.05\"} 3",
            "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached-controller\",le=\"+Inf\"} 4",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        let sum = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(
                    "controller_runtime_reconcile_time_seconds_sum{controller=\"memcached-controller\"} ",
                )
            })
            .expect("sum line");
        let sum: f64 = sum.parse().expect("number");
        assert!((sum - 2.036).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn release_status_gauges_follow_each_cr() {
        let m = Metrics::new();
        let gvk = "demo.rudder.dev/v1alpha1, Kind=Hello";
        let value = |status: &str| -> Option<String> {
            let prefix = format!("rudder_releases{{gvk=\"{gvk}\",status=\"{status}\"}} ");
            m.encode()
                .lines()
                .find_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        };
        m.set_release_status(gvk, "ns", "a", Some("deployed"));
        m.set_release_status(gvk, "ns", "b", Some("deployed"));
        m.set_release_status(gvk, "other", "a", Some("failed"));
        assert_eq!(value("deployed").as_deref(), Some("2"));
        assert_eq!(value("failed").as_deref(), Some("1"));
        // The same status again changes nothing.
        m.set_release_status(gvk, "ns", "a", Some("deployed"));
        assert_eq!(value("deployed").as_deref(), Some("2"));
        // A CR moves from one status to another.
        m.set_release_status(gvk, "ns", "b", Some("failed"));
        assert_eq!(value("deployed").as_deref(), Some("1"));
        assert_eq!(value("failed").as_deref(), Some("2"));
        // Gone CRs leave the counts.
        m.set_release_status(gvk, "ns", "a", None);
        m.set_release_status(gvk, "ns", "never-seen", None);
        assert_eq!(value("deployed").as_deref(), Some("0"));
        assert_eq!(value("failed").as_deref(), Some("2"));
    }

    #[test]
    fn gauges_for_queue_workers_and_leader() {
        let m = Metrics::new();
        let gvk = "demo.rudder.dev/v1alpha1, Kind=Hello";
        m.set_queue_depth(gvk, 7);
        m.set_max_concurrent_reconciles(gvk, 4);
        m.set_active_workers(gvk, 1);
        m.set_leader("rudder-lock", true);
        let text = m.encode();
        for line in [
            "# TYPE workqueue_depth gauge",
            "workqueue_depth{name=\"hello-controller\"} 7",
            "controller_runtime_max_concurrent_reconciles{controller=\"hello-controller\"} 4",
            "controller_runtime_active_workers{controller=\"hello-controller\"} 1",
            "leader_election_master_status{name=\"rudder-lock\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
        assert!(
            !text.contains("# EOF"),
            "0.0.4 text has no EOF marker:\n{text}"
        );
    }

    #[test]
    fn controller_names_are_the_go_operators() {
        assert_eq!(
            controller_name("cache.example.com/v1alpha1, Kind=Memcached"),
            "memcached-controller"
        );
        assert_eq!(controller_name("Hello"), "hello-controller");
    }

    #[test]
    fn bind_addresses_like_go_flags() {
        let p = |s: &str| parse_bind_address(s).expect(s);
        assert_eq!(p("0"), None);
        assert_eq!(p(""), None);
        assert_eq!(p(":8080"), Some("0.0.0.0:8080".parse().expect("addr")));
        assert_eq!(
            p("127.0.0.1:9090"),
            Some("127.0.0.1:9090".parse().expect("addr"))
        );
        assert_eq!(p("[::1]:8081"), Some("[::1]:8081".parse().expect("addr")));
        assert_eq!(p(":0"), Some("0.0.0.0:0".parse().expect("addr")));
        let localhost = p("localhost:8080").expect("resolves");
        assert!(localhost.ip().is_loopback() && localhost.port() == 8080);
        for bad in ["8080", ":http", ":70000", "::1:8080"] {
            let e = parse_bind_address(bad).expect_err(bad).to_string();
            assert!(e.contains(bad) && e.contains("\"0\" to disable"), "{e}");
        }
    }

    /// A plain HTTP/1.1 GET; returns the status code and the body.
    async fn http_get(addr: SocketAddr, path: &str) -> (u16, String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut conn = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        conn.write_all(req.as_bytes()).await.expect("send");
        let mut resp = String::new();
        conn.read_to_string(&mut resp).await.expect("read");
        let (head, body) = resp.split_once("\r\n\r\n").expect("http response");
        let code = head
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status code");
        (code, head.to_ascii_lowercase(), body.to_string())
    }

    async fn spawn(router: Router) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(serve_on(listener, router));
        addr
    }

    #[tokio::test]
    async fn http_endpoints_serve_metrics_and_probes() {
        let metrics = Metrics::new();
        let health = Health::new();
        metrics.reconcile_done("g/v1, Kind=Web", Outcome::Success, Duration::from_millis(5));
        let m = spawn(metrics_router(metrics.clone())).await;
        let h = spawn(health_router(health.clone())).await;

        let (code, head, body) = http_get(m, "/metrics").await;
        assert_eq!(code, 200);
        assert!(
            head.contains("content-type: text/plain; version=0.0.4"),
            "{head}"
        );
        assert!(
            body.contains("controller_runtime_reconcile_total{controller=\"web-controller\",result=\"success\"} 1"),
            "{body}"
        );
        assert_eq!(http_get(m, "/healthz").await.0, 404);

        assert_eq!(http_get(h, "/healthz").await.0, 200);
        assert_eq!(http_get(h, "/readyz").await.0, 503);
        health.set_ready(true);
        assert_eq!(http_get(h, "/readyz").await.0, 200);
        health.set_ready(false);
        assert_eq!(http_get(h, "/readyz").await.0, 503);

        let both = spawn(metrics_router(metrics).merge(health_router(health))).await;
        assert_eq!(http_get(both, "/metrics").await.0, 200);
        assert_eq!(http_get(both, "/healthz").await.0, 200);
    }

    #[test]
    fn readiness_flag() {
        let h = Health::new();
        assert!(!h.is_ready());
        h.clone().set_ready(true);
        assert!(h.is_ready());
    }
}
