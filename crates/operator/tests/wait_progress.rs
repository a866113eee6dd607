//! An install held by a pre-install hook Job that does not complete says what it waits
//! for in the CR's status while it waits (`Deployed=False/AwaitingReadiness`, the line
//! the wait logs, naming the Job and the timeout), and once the Job completes the
//! install ends as any other: `Deployed=True/InstallSuccessful`. Nothing completes Jobs
//! here (readiness simulation off); the test completes the hook itself through the
//! status subresource. Skips where a kubelet runs the Job.

mod common;

use std::time::Duration;

use common::watch_run::{self, WatchRun};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::json;
use testkit::{eventually, ChartDir, Cluster};

const WAIT: Duration = Duration::from_secs(90);
const CR: &str = "slow";

const HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-hook
  annotations:
    "helm.sh/hook": pre-install
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: wait
        image: registry.k8s.io/pause:3.10
"#;

const CONFIG: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  installed: "yes"
"#;

/// `(status, reason, message)` of the CR's `Deployed` condition, or what is missing.
async fn deployed(crs: &Api<DynamicObject>) -> Result<(String, String, String), String> {
    let cr = crs.get(CR).await.map_err(|e| e.to_string())?;
    let c = cr.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Deployed"))
        .ok_or_else(|| format!("no Deployed condition yet: {}", cr.data["status"]))?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Ok((s("status"), s("reason"), s("message")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_keeps_an_install_waiting_shows_in_the_status() {
    let cluster = Cluster::builder().simulate_readiness(false).start();
    if cluster.has_kubelet() {
        testkit::skip_message("a kubelet runs the hook Job; this test needs it to stay incomplete");
        return;
    }
    common::install_crd_if_missing(&cluster.client()).await;
    let ns = cluster.namespace("wait-progress");
    let client = ns.client();
    let chart = ChartDir::new(
        "hooked",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: hooked\nversion: 0.1.0\n",
            ),
            ("templates/hook.yaml", HOOK),
            ("templates/cm.yaml", CONFIG),
        ],
    );
    let run = WatchRun::start(&client, ns.dir(), chart.path(), Duration::from_secs(60));
    watch_run::create_demo(&client, ns.name(), CR, json!({})).await;
    let crs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns.name(), &common::resource());

    let message = eventually(WAIT, || async {
        let (status, reason, message) = deployed(&crs).await?;
        if (status.as_str(), reason.as_str()) == ("False", "AwaitingReadiness") {
            Ok(message)
        } else {
            Err(format!("{status}/{reason}: {message}"))
        }
    })
    .await;
    assert!(
        message.contains("waiting for") && message.contains("slow-hook"),
        "names the hook Job: {message}"
    );
    assert!(
        message.contains("timeout 300s"),
        "says the timeout: {message}"
    );

    let jobs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns.name(), &ApiResource::erase::<Job>(&()));
    assert!(
        testkit::settle(&jobs, "Job", "slow-hook")
            .await
            .expect("complete the hook Job"),
        "the hook Job was incomplete"
    );

    let (_, reason, message) = eventually(WAIT, || async {
        let d = deployed(&crs).await?;
        if d.0 == "True" {
            Ok(d)
        } else {
            Err(format!("{}/{}: {}", d.0, d.1, d.2))
        }
    })
    .await;
    assert_eq!(reason, "InstallSuccessful", "{message}");
    assert!(
        !message.contains("waiting for"),
        "the install's own message: {message}"
    );
    run.stop(Duration::from_secs(30)).await;
}
