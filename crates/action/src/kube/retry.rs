//! rudder's own retry policy for Kubernetes API requests, in place of kube's default
//! one (which retries every 429, 503 and 504 up to 15 times with a backoff from 5 ms
//! doubling to 1000 s plus up to twice that at random, so a single request to an
//! unavailable aggregated API took 16 requests and 300 s, measured, silently, and
//! discovery asked it on every render).
//!
//! What is retried, how often and for how long:
//! - `429 Too Many Requests` (API priority and fairness, a PodDisruptionBudget): any
//!   method, since the server did not act on the request.
//! - `503 Service Unavailable` and `504 Gateway Timeout`: reads only (`GET`, `HEAD`);
//!   a write may have taken effect before the answer was lost.
//! - Never: the discovery document of one group or group version (`/api/v1`,
//!   `/apis/{group}`, `/apis/{group}/{version}`). An aggregated API whose service is
//!   down answers those with 503; discovery skips that group version at once.
//! - At most [`MAX_RETRIES`] retries, waiting 250 ms, 500 ms, 1 s (plus up to a quarter
//!   more, at random), or the server's `Retry-After` up to 5 s; and no retry once the
//!   request has waited [`RETRY_BUDGET`] in all. The last answer is then returned.
//!
//! Waits that add up to more than [`REPORT_AFTER`] say so on [`WAIT_LOG_TARGET`]
//! (the CLI prints those lines on stderr), so a request never waits silently.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request, Response, StatusCode};
use kube::client::{Body, ClientBuilder};
use kube::Client;

use super::wait::WAIT_LOG_TARGET;

/// Retries of one request, at most.
pub const MAX_RETRIES: u32 = 3;
/// The longest one request waits between its attempts, in all.
pub const RETRY_BUDGET: Duration = Duration::from_secs(10);
/// Waits longer than this in all are reported on [`WAIT_LOG_TARGET`].
pub const REPORT_AFTER: Duration = Duration::from_secs(2);
/// The first backoff; it doubles with each retry.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The most of a server's `Retry-After` that is honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The service stack kube builds from a `Config` (its `GenericService`).
pub type BaseService =
    tower::util::BoxService<Request<Body>, Response<Box<kube::client::DynBody>>, tower::BoxError>;

/// A client builder for `config` with kube's default retries switched off, for callers
/// that add layers of their own before [`with_retries`].
pub fn client_builder(mut config: kube::Config) -> Result<ClientBuilder<BaseService>, kube::Error> {
    config.default_retry = false;
    ClientBuilder::try_from(config)
}

/// A client for `config` whose requests follow rudder's retry policy (see the module
/// docs) instead of kube's default one.
pub fn client(config: kube::Config) -> Result<Client, kube::Error> {
    Ok(with_retries(client_builder(config)?.build()))
}

/// `client` (built without kube's default retries: [`client_builder`]) with rudder's
/// retry policy around it.
pub fn with_retries(client: Client) -> Client {
    let namespace = client.default_namespace().to_string();
    let valid_until = *client.valid_until();
    Client::new(Retrying { inner: client }, namespace).with_valid_until(valid_until)
}

/// The service [`with_retries`] puts around a client.
#[derive(Clone)]
struct Retrying {
    inner: Client,
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

impl tower::Service<Request<Body>> for Retrying {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        // The inner client buffers its requests: always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> ResponseFuture {
        let inner = self.inner.clone();
        Box::pin(send(inner, req))
    }
}

async fn send(inner: Client, req: Request<Body>) -> Result<Response<Body>, kube::Error> {
    let mut retry = Retry::new(req.method().clone(), req.uri().path().to_string());
    let mut next = copy(&req);
    let mut current = req;
    loop {
        let res = inner.send(current).await?;
        let Some(again) = next.take() else {
            return Ok(res);
        };
        let retry_after = res
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let Some(delay) = retry.decide(res.status(), retry_after) else {
            return Ok(res);
        };
        // The answer is dropped unread: the next attempt replaces it.
        drop(res);
        tokio::time::sleep(delay).await;
        next = copy(&again);
        current = again;
    }
}

/// Another request like `req`, when its body can be sent again.
fn copy(req: &Request<Body>) -> Option<Request<Body>> {
    let body = req.body().try_clone()?;
    let mut out = Request::new(body);
    *out.method_mut() = req.method().clone();
    *out.uri_mut() = req.uri().clone();
    *out.version_mut() = req.version();
    *out.headers_mut() = req.headers().clone();
    *out.extensions_mut() = req.extensions().clone();
    Some(out)
}

/// The retry state of one request.
#[derive(Debug)]
pub(crate) struct Retry {
    method: Method,
    path: String,
    retries: u32,
    waited: Duration,
    started: Instant,
}

impl Retry {
    pub(crate) fn new(method: Method, path: String) -> Retry {
        Retry {
            method,
            path,
            retries: 0,
            waited: Duration::ZERO,
            started: Instant::now(),
        }
    }

    /// How long to wait before sending the request again after `status`, or `None`
    /// to return this answer.
    pub(crate) fn decide(
        &mut self,
        status: StatusCode,
        retry_after: Option<Duration>,
    ) -> Option<Duration> {
        if !retryable(&self.method, &self.path, status) || self.retries >= MAX_RETRIES {
            return None;
        }
        let backoff = FIRST_BACKOFF * 2u32.pow(self.retries);
        let delay = match retry_after {
            Some(after) => after.min(MAX_RETRY_AFTER),
            None => backoff + jitter(backoff / 4),
        };
        if self.waited + delay > RETRY_BUDGET {
            return None;
        }
        self.retries += 1;
        self.waited += delay;
        let line = format!(
            "waiting for the API server: {} {} answered {}; retry {} of {MAX_RETRIES} in {:.1}s ({:.0}s since the first attempt)",
            self.method,
            self.path,
            status,
            self.retries,
            delay.as_secs_f64(),
            self.started.elapsed().as_secs_f64(),
        );
        if self.waited > REPORT_AFTER {
            tracing::info!(target: WAIT_LOG_TARGET, "{line}");
        } else {
            tracing::debug!("{line}");
        }
        Some(delay)
    }
}

/// Whether an answer of `status` to `method path` may be retried (see the module docs).
pub(crate) fn retryable(method: &Method, path: &str, status: StatusCode) -> bool {
    if is_group_discovery(path) {
        return false;
    }
    match status {
        StatusCode::TOO_MANY_REQUESTS => true,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::GATEWAY_TIMEOUT => {
            *method == Method::GET || *method == Method::HEAD
        }
        _ => false,
    }
}

/// `/api/{version}`, `/apis/{group}` or `/apis/{group}/{version}`: the discovery of
/// one group (version), which an aggregated API server answers.
pub(crate) fn is_group_discovery(path: &str) -> bool {
    let mut segments = path.trim_matches('/').split('/');
    match (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) {
        (Some("api"), Some(v), None, None) => !v.is_empty(),
        (Some("apis"), Some(g), None, None) => !g.is_empty(),
        (Some("apis"), Some(g), Some(v), None) => !g.is_empty() && !v.is_empty(),
        _ => false,
    }
}

/// A random duration up to `max`: spreads the retries of many clients.
fn jitter(max: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    let fraction = (h.finish() % 1_000) as u32;
    max * fraction / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_discovery_paths_are_recognised() {
        for p in [
            "/api/v1",
            "/apis/apps",
            "/apis/custom.metrics.k8s.io/v1beta1",
        ] {
            assert!(is_group_discovery(p), "{p}");
        }
        for p in [
            "/api",
            "/apis",
            "/version",
            "/api/v1/namespaces",
            "/apis/apps/v1/deployments",
            "/apis/apps/v1/namespaces/a/deployments/b",
        ] {
            assert!(!is_group_discovery(p), "{p}");
        }
    }

    #[test]
    fn which_answers_are_retried() {
        let get = Method::GET;
        let post = Method::POST;
        let list = "/api/v1/namespaces/a/configmaps";
        assert!(retryable(&get, list, StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(&post, list, StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(&get, list, StatusCode::SERVICE_UNAVAILABLE));
        assert!(retryable(&get, list, StatusCode::GATEWAY_TIMEOUT));
        assert!(!retryable(&post, list, StatusCode::SERVICE_UNAVAILABLE));
        assert!(!retryable(
            &Method::PATCH,
            list,
            StatusCode::GATEWAY_TIMEOUT
        ));
        assert!(!retryable(&get, list, StatusCode::INTERNAL_SERVER_ERROR));
        assert!(!retryable(&get, list, StatusCode::NOT_FOUND));
        // An aggregated API that is down answers its discovery with 503: not retried.
        let aggregated = "/apis/custom.metrics.k8s.io/v1beta1";
        assert!(!retryable(
            &get,
            aggregated,
            StatusCode::SERVICE_UNAVAILABLE
        ));
        assert!(!retryable(&get, aggregated, StatusCode::TOO_MANY_REQUESTS));
        assert!(retryable(&get, "/apis", StatusCode::SERVICE_UNAVAILABLE));
    }

    #[test]
    fn retries_are_bounded_in_number_and_in_time() {
        let mut r = Retry::new(Method::GET, "/api/v1/pods".into());
        let mut total = Duration::ZERO;
        let mut waits = Vec::new();
        while let Some(d) = r.decide(StatusCode::SERVICE_UNAVAILABLE, None) {
            waits.push(d);
            total += d;
        }
        assert_eq!(waits.len() as u32, MAX_RETRIES, "{waits:?}");
        assert!(waits[0] >= FIRST_BACKOFF && waits[0] <= FIRST_BACKOFF * 5 / 4);
        assert!(waits[2] >= FIRST_BACKOFF * 4, "{waits:?}");
        assert!(total <= RETRY_BUDGET, "{total:?}");

        // The server's Retry-After is honoured up to 5 s, within the budget.
        let mut r = Retry::new(Method::POST, "/api/v1/namespaces/a/pods".into());
        let after = Some(Duration::from_secs(60));
        assert_eq!(
            r.decide(StatusCode::TOO_MANY_REQUESTS, after),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            r.decide(StatusCode::TOO_MANY_REQUESTS, after),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(r.decide(StatusCode::TOO_MANY_REQUESTS, after), None);
    }
}
