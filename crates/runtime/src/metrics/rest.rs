//! `rest_client_requests_total{code,host,method}`: client-go counts every request its
//! REST client makes; here a tower layer on the operator's kube `Client` does, so the
//! reconciler's, the release actions' and the watches' requests are all counted.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower::{Layer, Service};

use super::Metrics;

/// Adds [`RestClientMetrics`] to a client's service stack:
/// `kube::client::ClientBuilder::try_from(config)?.with_layer(&layer).build()`.
#[derive(Clone, Debug)]
pub struct RestClientMetricsLayer {
    metrics: Metrics,
    host: String,
}

impl RestClientMetricsLayer {
    /// Counts into `metrics`, labelling requests with `host` (the API server's
    /// `host:port`, as client-go takes it from the request URL).
    pub fn new(metrics: Metrics, host: impl Into<String>) -> RestClientMetricsLayer {
        RestClientMetricsLayer {
            metrics,
            host: host.into(),
        }
    }

    /// The `host` label for a cluster URL: its `host:port` as the kubeconfig (or the
    /// in-cluster config) gives it, which is what client-go labels.
    pub fn host_of(url: &http::Uri) -> String {
        url.authority().map(|a| a.to_string()).unwrap_or_default()
    }
}

impl<S> Layer<S> for RestClientMetricsLayer {
    type Service = RestClientMetrics<S>;

    fn layer(&self, inner: S) -> RestClientMetrics<S> {
        RestClientMetrics {
            inner,
            metrics: self.metrics.clone(),
            host: self.host.clone(),
        }
    }
}

/// The service [`RestClientMetricsLayer`] wraps a client's stack in.
#[derive(Clone, Debug)]
pub struct RestClientMetrics<S> {
    inner: S,
    metrics: Metrics,
    host: String,
}

impl<S, B, R> Service<Request<B>> for RestClientMetrics<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let method = req.method().as_str().to_string();
        let metrics = self.metrics.clone();
        let host = self.host.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let result = response.await;
            let code = match &result {
                Ok(resp) => resp.status().as_u16().to_string(),
                // client-go's label when no response came back.
                Err(_) => "<error>".to_string(),
            };
            metrics.rest_request(&code, &method, &host);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test]
    async fn every_request_is_counted_by_code_method_and_host() {
        let metrics = Metrics::new();
        let layer = RestClientMetricsLayer::new(metrics.clone(), "10.96.0.1:443");
        let ok = layer.layer(tower::service_fn(|_req: Request<()>| async {
            Ok::<_, std::io::Error>(Response::builder().status(404).body(()).expect("response"))
        }));
        let req = || {
            Request::builder()
                .method("GET")
                .uri("/api")
                .body(())
                .expect("request")
        };
        ok.clone().oneshot(req()).await.expect("answered");
        ok.oneshot(req()).await.expect("answered");
        let failing = layer.layer(tower::service_fn(|_req: Request<()>| async {
            Err::<Response<()>, _>(std::io::Error::other("connection refused"))
        }));
        let post = Request::builder()
            .method("POST")
            .uri("/api")
            .body(())
            .expect("request");
        assert!(failing.oneshot(post).await.is_err());
        let text = metrics.encode();
        for line in [
            "# TYPE rest_client_requests_total counter",
            "rest_client_requests_total{code=\"404\",host=\"10.96.0.1:443\",method=\"GET\"} 2",
            "rest_client_requests_total{code=\"<error>\",host=\"10.96.0.1:443\",method=\"POST\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
        assert_eq!(
            RestClientMetricsLayer::host_of(&"https://10.0.0.1:6443".parse().expect("uri")),
            "10.0.0.1:6443"
        );
    }
}
