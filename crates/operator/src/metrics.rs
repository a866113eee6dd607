//! Prometheus metrics of the operator and the `/metrics`, `/healthz`, `/readyz` endpoints.

use std::time::Duration;

/// Outcome of one reconcile, as counted in the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Error,
}

/// The operator's metrics registry; cheap to clone, shared by all controllers.
#[derive(Clone, Default)]
pub struct Metrics {}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// Counts one reconcile of a CR of `gvk` (e.g. `"cache.example.com/v1alpha1, Kind=Memcached"`).
    pub fn reconcile_done(&self, _gvk: &str, _outcome: Outcome, _duration: Duration) {}

    /// Records the release status of one CR (`None` once the CR is gone).
    pub fn set_release_status(
        &self,
        _gvk: &str,
        _namespace: &str,
        _name: &str,
        _status: Option<&str>,
    ) {
    }

    /// The number of CRs of `gvk` waiting to be reconciled.
    pub fn set_queue_depth(&self, _gvk: &str, _depth: i64) {}
}
