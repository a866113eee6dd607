//! One test's cluster and namespace for the Go-parity, RBAC and uninstall-wait suites:
//! testkit's cluster (the embedded API server, or the one `RUDDER_TEST_KUBECONFIG`
//! names) with the demo CRD and a namespace of the test's own, deleted when the test
//! ends (so a real cluster is left as it was found, CRD aside).

use std::path::PathBuf;

use kube::Client;
use testkit::apiserver::Authorization;
use testkit::{Cluster, TestNamespace};

pub struct TestCluster {
    ns: TestNamespace,
    pub client: Client,
    /// For `kubectl` and the `helm` CLI.
    pub kubeconfig: PathBuf,
    /// The test's namespace.
    pub namespace: String,
}

impl TestCluster {
    /// A cluster with the demo CRD and a fresh namespace named after `test`. Workloads
    /// report ready although nothing runs them when `simulate_readiness`.
    pub async fn start(test: &str, simulate_readiness: bool) -> TestCluster {
        Self::start_with(test, simulate_readiness, Authorization::AlwaysAllow).await
    }

    /// As [`TestCluster::start`], the embedded server authorizing as `authorization`
    /// says (a real cluster enforces its own RBAC); `client` is the admin.
    pub async fn start_with(
        test: &str,
        simulate_readiness: bool,
        authorization: Authorization,
    ) -> TestCluster {
        let cluster = Cluster::builder()
            .simulate_readiness(simulate_readiness)
            .authorization(authorization)
            .start();
        let client = cluster.client();
        super::install_crd_if_missing(&client).await;
        let ns = cluster.namespace(&test.replace('_', "-"));
        TestCluster {
            client,
            kubeconfig: cluster.kubeconfig().to_path_buf(),
            namespace: ns.name().to_string(),
            ns,
        }
    }

    /// A client of the same cluster authenticating with `token` only (a
    /// ServiceAccount's).
    pub fn client_with_token(&self, token: &str) -> Client {
        self.ns.cluster().client_with_token(token)
    }

    /// Deletes the namespace (waiting for it) and, when it was the last user of an
    /// embedded server, stops the server.
    pub async fn stop(self) {
        let TestCluster { ns, .. } = self;
        tokio::task::spawn_blocking(move || drop(ns))
            .await
            .expect("namespace teardown");
    }
}
