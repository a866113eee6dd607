//! The operator's metrics: the runtime's controller metrics (controller-runtime's
//! and client-go's names) plus what the Go helm-operator adds,
//! `helm_operator_build_info{commit,version}`, and rudder's
//! `rudder_releases{gvk,status}`: how many CRs' releases are in each status, per
//! watched kind (fed by the reconciler's report).

use runtime::metrics::Metrics;

/// The version this binary reports as `helm_operator_build_info`.
const BUILD_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit of the build, when the build environment named one.
fn build_commit() -> &'static str {
    option_env!("RUDDER_GIT_COMMIT").unwrap_or("unknown")
}

/// A metrics registry with the operator's metrics, for [`Operator::with_metrics`]
/// and the client's [`RestClientMetricsLayer`](runtime::metrics::RestClientMetricsLayer).
///
/// [`Operator::with_metrics`]: crate::Operator::with_metrics
pub fn new_metrics() -> Metrics {
    Metrics::builder()
        .build_info(
            "helm_operator_build_info",
            "Build information for the helm-operator binary",
            vec![
                ("commit", build_commit().to_string()),
                ("version", BUILD_VERSION.to_string()),
            ],
        )
        .status_counts(
            "rudder_releases",
            "Number of custom resources whose Helm release is in each status, per watched kind",
        )
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_go_operators_build_info_and_the_release_counts() {
        let m = new_metrics();
        m.set_status(
            "demo.rudder.dev/v1alpha1, Kind=Hello",
            "ns",
            "a",
            Some("deployed"),
        );
        let text = m.encode();
        for line in [
            "# HELP helm_operator_build_info Build information for the helm-operator binary.",
            "# TYPE helm_operator_build_info gauge",
            &format!(
                "helm_operator_build_info{{commit=\"{}\",version=\"{BUILD_VERSION}\"}} 1",
                build_commit()
            ),
            "# HELP rudder_releases Number of custom resources whose Helm release is in each status, per watched kind.",
            "rudder_releases{gvk=\"demo.rudder.dev/v1alpha1, Kind=Hello\",status=\"deployed\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        // In the order `/metrics` has always listed them.
        let at = |name: &str| {
            text.find(name)
                .unwrap_or_else(|| panic!("{name} in:\n{text}"))
        };
        assert!(
            at("# TYPE certwatcher_read_certificate_errors")
                < at("# TYPE helm_operator_build_info")
        );
        assert!(at("# TYPE helm_operator_build_info") < at("# TYPE rudder_releases"));
    }
}
