//! Serving: `/metrics` over HTTP, or over HTTPS with controller-runtime's
//! authentication and authorization filter ([`MetricsServer`]), the `/healthz` and
//! `/readyz` probes, and the bind addresses of their flags.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use prometheus_client::encoding::prometheus_text;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use super::auth::{Decision, MetricsAuth};
use super::tls::{server_tls, MetricsCerts, TlsError};
use super::Metrics;

/// How the metrics endpoint is served.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsServing {
    /// `--metrics-secure`: HTTPS.
    pub secure: bool,
    /// `--metrics-require-rbac`: TokenReview and SubjectAccessReview per request.
    pub require_rbac: bool,
    /// Where a certificate may be found (self-signed otherwise).
    pub certs: MetricsCerts,
}

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

type Handshake = Pin<Box<dyn Future<Output = Option<(TlsStream<TcpStream>, SocketAddr)>> + Send>>;

/// A listener yielding connections whose TLS handshake completed. Handshakes run
/// side by side while `accept` waits, so a slow client holds up no other.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: FuturesUnordered<Handshake>,
}

impl TlsListener {
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> TlsListener {
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(config),
            handshakes: FuturesUnordered::new(),
        }
    }

    fn start_handshake(&mut self, stream: TcpStream, peer: SocketAddr) {
        let accept = self.acceptor.accept(stream);
        self.handshakes.push(Box::pin(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
                Ok(Ok(tls)) => Some((tls, peer)),
                Ok(Err(e)) => {
                    tracing::debug!(%peer, "metrics TLS handshake failed: {e}");
                    None
                }
                Err(_) => {
                    tracing::debug!(%peer, "metrics TLS handshake timed out");
                    None
                }
            }
        }));
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, peer)) => {
                        let _ = stream.set_nodelay(true);
                        self.start_handshake(stream, peer);
                    }
                    // Usually out of file descriptors: back off instead of spinning.
                    Err(e) => {
                        tracing::warn!("metrics server: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = self.handshakes.next(), if !self.handshakes.is_empty() => {
                    if let Some(conn) = done {
                        return conn;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// What `--metrics-require-rbac` answers, in Go's `http.Error` shape.
fn refusal(code: u16, message: String) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, format!("{message}\n")).into_response();
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn authorize(State(auth): State<Arc<MetricsAuth>>, req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match auth
        .check(header, req.method().as_str(), req.uri().path())
        .await
    {
        Decision::Allow => next.run(req).await,
        Decision::Refuse(code, message) => refusal(code, message),
    }
}

/// `/metrics`, behind `auth` when given.
pub fn secured_metrics_router(metrics: Metrics, auth: Option<Arc<MetricsAuth>>) -> Router {
    let router = metrics_router(metrics);
    match auth {
        Some(auth) => router.route_layer(axum::middleware::from_fn_with_state(auth, authorize)),
        None => router,
    }
}

/// The metrics server of one `--metrics-bind-address`.
pub struct MetricsServer {
    listener: TcpListener,
    router: Router,
    tls: Option<super::tls::ServerTls>,
}

impl MetricsServer {
    /// Prepares serving on an already bound `listener` (tests bind port 0): HTTPS
    /// when `serving.secure`, with the RBAC filter asking through `client` when
    /// `serving.require_rbac`.
    pub fn new(
        listener: TcpListener,
        metrics: Metrics,
        serving: &MetricsServing,
        client: Option<kube::Client>,
    ) -> Result<MetricsServer, TlsError> {
        let auth = match (serving.require_rbac, client) {
            (true, Some(client)) => Some(Arc::new(MetricsAuth::kube(client))),
            _ => None,
        };
        let tls = if serving.secure {
            Some(server_tls(&serving.certs, &metrics)?)
        } else {
            None
        };
        Ok(MetricsServer {
            listener,
            router: secured_metrics_router(metrics, auth),
            tls,
        })
    }

    /// Where the certificate came from (`None` for plain HTTP).
    pub fn certificate(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.source.as_str())
    }

    /// Serves until the future is dropped.
    pub async fn serve(self) -> std::io::Result<()> {
        match self.tls {
            None => axum::serve(self.listener, self.router).await,
            Some(tls) => {
                let listener = TlsListener::new(self.listener, Arc::clone(&tls.config));
                let served = axum::serve(listener, self.router).await;
                drop(tls);
                served
            }
        }
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
    use super::super::auth::fake::Fake;
    use super::super::Outcome;
    use super::*;
    use tower::ServiceExt;

    async fn call(router: &Router, token: Option<&str>, path: &str) -> (u16, String, String) {
        let mut req = Request::builder().uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let resp = router
            .clone()
            .oneshot(req.body(axum::body::Body::empty()).expect("request"))
            .await
            .expect("answered");
        let status = resp.status().as_u16();
        let ctype = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, ctype, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn rbac_filter_answers_as_controller_runtime() {
        let auth = Arc::new(MetricsAuth::new(Arc::new(Fake::default())));
        let router = secured_metrics_router(Metrics::new(), Some(auth));
        assert_eq!(
            call(&router, None, "/metrics").await,
            (
                401,
                "text/plain; charset=utf-8".into(),
                "Unauthorized\n".into()
            )
        );
        let (code, _, body) = call(&router, Some("other"), "/metrics").await;
        assert_eq!(
            (code, body.as_str()),
            (
                403,
                "Authorization denied for user system:serviceaccount:ns:nobody\n"
            )
        );
        let (code, ctype, body) = call(&router, Some("good"), "/metrics").await;
        assert_eq!(code, 200);
        assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
        assert!(
            body.contains("# TYPE certwatcher_read_certificate_total"),
            "{body}"
        );
        assert_eq!(call(&router, Some("good"), "/other").await.0, 404);
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
        metrics.reconcile_done("web-controller", Outcome::Success, Duration::from_millis(5));
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
