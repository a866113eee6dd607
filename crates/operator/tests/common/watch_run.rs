//! The operator run in-process from a `watches.yaml` naming one chart for the demo
//! kind, for tests that drive it through CRs in a namespace of their own.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, PostParams};
use kube::Client;
use operator::Options;
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running operator; [`WatchRun::stop`] shuts it down and checks it stopped cleanly.
pub struct WatchRun {
    stop: oneshot::Sender<()>,
    task: JoinHandle<operator::Result<()>>,
}

impl WatchRun {
    /// Writes `dir/watches.yaml` for `chart` and starts the operator on it, with
    /// `reconcile_period` and no metrics or probe servers.
    pub fn start(
        client: &Client,
        dir: &Path,
        chart: &Path,
        reconcile_period: Duration,
    ) -> WatchRun {
        let watches = dir.join("watches.yaml");
        std::fs::write(
            &watches,
            format!(
                "- group: {}\n  version: {}\n  kind: {}\n  chart: {}\n",
                super::GROUP,
                super::VERSION,
                super::KIND,
                chart.display()
            ),
        )
        .expect("watches.yaml");
        let options = Options {
            watches_file: watches,
            reconcile_period,
            metrics_bind_address: "0".into(),
            health_probe_bind_address: "0".into(),
            ..Options::default()
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(operator::run_with_shutdown(
            client.clone(),
            options,
            async {
                let _ = stopped.await;
            },
        ));
        WatchRun { stop, task }
    }

    pub async fn stop(self, within: Duration) {
        let _ = self.stop.send(());
        let ended = tokio::time::timeout(within, self.task)
            .await
            .expect("stops in time");
        ended.expect("no panic").expect("clean shutdown");
    }
}

pub async fn create_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace"),
        )
        .await
        .expect("create namespace");
}

/// Creates a demo CR `namespace/name` with `spec`.
pub async fn create_demo(client: &Client, namespace: &str, name: &str, spec: Value) {
    let crs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), namespace, &super::resource());
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{}/{}", super::GROUP, super::VERSION),
        "kind": super::KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }))
    .expect("CR");
    crs.create(&PostParams::default(), &cr)
        .await
        .expect("create CR");
}
