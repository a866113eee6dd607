//! A cluster for one test: the embedded API server, or the cluster the kubeconfig in
//! `RUDDER_TEST_KUBECONFIG` names, with a namespace of the test's own that is deleted
//! when the test ends (so a real cluster is left as it was found, CRD aside).

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::json;
use testkit::apiserver::{Authorization, Config, Server};

pub struct TestCluster {
    server: Option<Server>,
    /// How `client` reaches a real cluster, for clients with other credentials.
    config: Option<kube::Config>,
    pub client: Client,
    /// For `kubectl` and the `helm` CLI.
    pub kubeconfig: PathBuf,
    /// The test's namespace.
    pub namespace: String,
}

impl TestCluster {
    /// A cluster with the demo CRD and a fresh namespace named after `test`. The
    /// embedded server marks workloads ready itself when `simulate_readiness`.
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
        let (server, config, client, kubeconfig) = match std::env::var_os("RUDDER_TEST_KUBECONFIG")
        {
            Some(path) => {
                let path = PathBuf::from(path);
                let kc = Kubeconfig::read_from(&path).expect("read RUDDER_TEST_KUBECONFIG");
                let config =
                    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                        .await
                        .expect("kubeconfig");
                let client = Client::try_from(config.clone()).expect("client");
                (None, Some(config), client, path)
            }
            None => {
                let server = Server::start(Config {
                    simulate_readiness,
                    authorization,
                    ..Config::default()
                })
                .await
                .expect("server starts");
                let client = server.client().expect("client");
                let path = server.kubeconfig_path().to_path_buf();
                (Some(server), None, client, path)
            }
        };
        super::install_crd_if_missing(&client).await;
        let suffix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let namespace = format!("{}-{:08x}", test.replace('_', "-"), suffix)
            .chars()
            .take(63)
            .collect::<String>();
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .expect("create the test's namespace");
        TestCluster {
            server,
            config,
            client,
            kubeconfig,
            namespace,
        }
    }

    /// A client of the same cluster authenticating with `token` only (a
    /// ServiceAccount's).
    pub fn client_with_token(&self, token: &str) -> Client {
        if let Some(server) = &self.server {
            return server.client_with_token(token).expect("client");
        }
        let mut config = self.config.clone().expect("a real cluster's config");
        config.auth_info = Default::default();
        config.auth_info.token = Some(token.to_string().into());
        Client::try_from(config).expect("client")
    }

    /// Deletes the namespace (waiting for it on a real cluster) and stops the server.
    pub async fn stop(self) {
        let namespaces = Api::<Namespace>::all(self.client.clone());
        let _ = namespaces
            .delete(&self.namespace, &DeleteParams::default())
            .await;
        match self.server {
            Some(server) => server.stop().await,
            None => {
                for _ in 0..120 {
                    match namespaces.get_opt(&self.namespace).await {
                        Ok(None) | Err(_) => break,
                        Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
            }
        }
    }
}

/// Polls `check` until it returns `Some`, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
