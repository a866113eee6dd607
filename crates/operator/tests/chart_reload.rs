//! The `make run` loop: the operator runs from a `watches.yaml`, the chart's files are
//! edited, and every CR of the watch is reconciled with the new chart within seconds;
//! a chart edited into something that does not load is reported and the previous
//! chart kept until the next good edit.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::watch_run::{self, WatchRun};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::Client;
use serde_json::json;

const NS: &str = "chart-reload";
const WAIT: Duration = Duration::from_secs(60);

fn write_chart(dir: &Path, greeting: &str) {
    std::fs::create_dir_all(dir.join("templates")).expect("chart dir");
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: reload\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(
        dir.join("templates/cm.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-cfg\ndata:\n  greeting: {greeting:?}\n"
        ),
    )
    .expect("template");
}

async fn greeting(client: &Client, release: &str) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let cm = api
        .get_opt(&format!("{release}-cfg"))
        .await
        .ok()
        .flatten()?;
    cm.data?.get("greeting").cloned()
}

async fn until_greeting(client: &Client, releases: &[&str], want: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let mut all = true;
        for r in releases {
            if greeting(client, r).await.as_deref() != Some(want) {
                all = false;
            }
        }
        if all {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for every release to say {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_edited_chart_reaches_every_cr_of_the_watch() {
    let (_server, client) = common::start().await;
    watch_run::create_namespace(&client, NS).await;
    let dir = std::env::temp_dir().join(format!("rudder-chart-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let chart = dir.join("chart");
    write_chart(&chart, "one");
    // Only the reload may bring the new chart in.
    let op = WatchRun::start(&client, &dir, &chart, Duration::from_secs(3600));
    for name in ["a", "b"] {
        watch_run::create_demo(&client, NS, name, json!({})).await;
    }
    until_greeting(&client, &["a", "b"], "one").await;

    // Edit the chart: both releases follow.
    write_chart(&chart, "two");
    until_greeting(&client, &["a", "b"], "two").await;

    // A broken edit is not loaded; the releases keep the last good chart...
    std::fs::write(chart.join("templates/cm.yaml"), "{{ .Values.broken ").expect("break");
    tokio::time::sleep(Duration::from_secs(6)).await;
    for r in ["a", "b"] {
        assert_eq!(greeting(&client, r).await.as_deref(), Some("two"), "{r}");
    }
    // ...and the next good edit is.
    write_chart(&chart, "three");
    until_greeting(&client, &["a", "b"], "three").await;

    op.stop(WAIT).await;
    let _ = std::fs::remove_dir_all(&dir);
}
