//! What the CLI prints when the cluster refuses a release: the server's own message,
//! the object and the release, on one line as Helm prints it — never kube-client's
//! `Debug` dump of the `Status`, nor its `Failed to parse error data`. Runs on the test
//! cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s), each test in a namespace of its own.

mod cli;

use std::path::Path;

use cli::rudder;
use testkit::{ChartDir, Cluster, TestNamespace};

fn start() -> TestNamespace {
    Cluster::start().namespace("error-text")
}

/// Runs and requires exit code 1; returns stderr.
async fn fails(kc: &Path, args: &[&str]) -> String {
    let o = rudder(kc, args).await;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(1),
        "rudder {args:?} should fail\nstdout:\n{}\nstderr:\n{err}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// A chart of one template.
fn chart(name: &str, template: &str) -> ChartDir {
    ChartDir::new(
        name,
        &[
            (
                "Chart.yaml",
                &format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n"),
            ),
            ("templates/object.yaml", template),
        ],
    )
}

fn assert_no_client_noise(err: &str) {
    for noise in [
        "Status {",
        "ApiError",
        "Failed to parse error data",
        "ErrorResponse",
    ] {
        assert!(!err.contains(noise), "{noise:?} in the CLI's error:\n{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_object_reads_as_the_servers_message() {
    let ns = start();
    let chart = chart(
        "badport",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 70000\n    targetPort: 8080\n",
    );
    let err = fails(
        ns.kubeconfig(),
        &["install", "bad", chart.path().to_str().expect("utf-8")],
    )
    .await;
    assert_no_client_noise(&err);
    assert_eq!(
        err.trim_end(),
        format!(
            "Error: INSTALLATION FAILED: release \"bad\": cannot apply Service {}/web: Service \"web\" is invalid: \
             spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ns.name()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_api_group_says_which_kind_and_what_to_install() {
    let ns = start();
    let chart = chart(
        "nogroup",
        "apiVersion: nothere.rudder.dev/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    let err = fails(
        ns.kubeconfig(),
        &["install", "nogroup", chart.path().to_str().expect("utf-8")],
    )
    .await;
    assert_no_client_noise(&err);
    assert_eq!(
        err.trim_end(),
        "Error: INSTALLATION FAILED: release \"nogroup\": Widget w: the cluster does not \
             serve nothere.rudder.dev/v1 Widget: no such resource type (is its \
             CustomResourceDefinition installed?)"
    );
}
