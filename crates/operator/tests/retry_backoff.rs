//! Retries of a failing CR follow controller-runtime's default rate limiter, render
//! failures included: the per-CR delay starts at 5 ms and doubles with each
//! consecutive failure, and a successful reconcile resets it. Read from the
//! controller's own `retrying` lines (the delay it schedules, not a measured time).

mod common;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::watch_run::{self, WatchRun};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::Client;
use serde_json::{json, Value};

const NS: &str = "retry-backoff";
const CR: &str = "flaky";
const WAIT: Duration = Duration::from_secs(60);

/// Every log line the test binary writes, for reading back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// `(failures, retry_in_ms)` of each retry the controller scheduled for the CR,
    /// in log order.
    fn retries(&self) -> Vec<(u64, u64)> {
        let bytes = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|l| l["fields"]["message"] == "retrying" && l["fields"]["cr"] == CR)
            .filter_map(|l| {
                let f = &l["fields"];
                Some((f["failures"].as_u64()?, f["retry_in_ms"].as_u64()?))
            })
            .collect()
    }
}

fn write_chart(dir: &Path) {
    std::fs::create_dir_all(dir.join("templates")).expect("chart dir");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: flaky\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  message: {{ required \"spec.message is required\" .Values.message | quote }}\n",
    )
    .expect("template");
}

async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut probe: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn configmap(client: &Client) -> Option<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    api.get_opt(&format!("{CR}-cfg")).await.ok().flatten()
}

#[tokio::test]
async fn a_failing_render_backs_off_exponentially_and_success_resets_it() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "operator::controller=debug",
        ))
        .with_writer(move || writer.clone())
        .init();

    let (_server, client) = common::start().await;
    watch_run::create_namespace(&client, NS).await;
    let dir = std::env::temp_dir().join(format!("rudder-retry-backoff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let chart = dir.join("chart");
    write_chart(&chart);
    let op = WatchRun::start(&client, &dir, &chart, Duration::from_secs(3600));

    // Without spec.message the chart does not render: each retry waits twice as long.
    watch_run::create_demo(&client, NS, CR, json!({})).await;
    let first = until("six retries", || {
        let got = logs.retries();
        async move { (got.len() >= 6).then_some(got) }
    })
    .await;
    assert_eq!(
        first[..6],
        [(1, 5), (2, 10), (3, 20), (4, 40), (5, 80), (6, 160)],
        "controller-runtime's per-item delays: 5 ms doubling"
    );

    // Fixed: it installs, and the failure count is forgotten.
    let crs: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &common::resource());
    let patch = |spec: Value| {
        let crs = crs.clone();
        async move {
            crs.patch(
                CR,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            )
            .await
            .expect("patch CR");
        }
    };
    patch(json!({"message": "hi"})).await;
    until("the release's ConfigMap", || configmap(&client)).await;
    let before = logs.retries().len();

    // Broken again: the delays start over from 5 ms.
    patch(json!({"message": null})).await;
    let again = until("a retry after the success", || {
        let got = logs.retries();
        async move { (got.len() > before).then_some(got) }
    })
    .await;
    assert_eq!(
        again[before],
        (1, 5),
        "the first retry after a success: {again:?}"
    );

    op.stop(WAIT).await;
    let _ = std::fs::remove_dir_all(&dir);
}
