//! Adoption against the embedded API server: a release whose records were deleted while
//! its objects run gets a fresh record over the same objects (same UIDs, no hooks);
//! with no live objects nothing happens; another release's object stops adoption with
//! nothing deleted.

use std::path::PathBuf;
use std::time::Duration;

use apiserver::{Config, Server};
use action::ActionOptions;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::Client;
use operator::adopt::{self, AdoptError};
use release::record::Status;
use serde_json::{json, Map, Value};

const NS: &str = "default";

const TEMPLATES: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  greeting: {{ .Values.greeting | quote }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-web
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
"#;

/// A hook without a delete policy: the Job stays after it ran, so a second run shows.
const HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-init
  annotations:
    helm.sh/hook: pre-install,post-install
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: init
        image: busybox
        command: ["true"]
"#;

async fn start() -> (Server, Client) {
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let client = server.client().expect("client");
    (server, client)
}

fn load_chart(test: &str) -> chart::loader::Chart {
    let dir = std::env::temp_dir().join(format!("rudder-adopt-{}-{test}", std::process::id()));
    let chart_dir: PathBuf = dir.join("demo");
    std::fs::create_dir_all(chart_dir.join("templates")).expect("chart dir");
    std::fs::write(
        chart_dir.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart_dir.join("values.yaml"), "greeting: hello\n").expect("values");
    std::fs::write(chart_dir.join("templates/app.yaml"), TEMPLATES).expect("templates");
    std::fs::write(chart_dir.join("templates/hook.yaml"), HOOK).expect("hook");
    let chart = chart::loader::load(&chart_dir).expect("chart loads");
    let _ = std::fs::remove_dir_all(&dir);
    chart
}

fn values(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn opts(name: &str) -> ActionOptions {
    let mut o = ActionOptions::new(name, NS);
    o.timeout = Duration::from_secs(20);
    o
}

async fn release_secrets(client: &Client, name: &str) -> Vec<Secret> {
    Api::<Secret>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("owner=helm,name={name}")))
        .await
        .expect("list Secrets")
        .items
}

async fn delete_release_secrets(client: &Client, name: &str) {
    let api = Api::<Secret>::namespaced(client.clone(), NS);
    for s in release_secrets(client, name).await {
        let n = s.metadata.name.unwrap_or_default();
        api.delete(&n, &DeleteParams::default())
            .await
            .expect("delete Secret");
    }
    assert!(release_secrets(client, name).await.is_empty());
}

async fn uid<K>(api: &Api<K>, name: &str) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get(name)
        .await
        .expect("object exists")
        .meta()
        .uid
        .clone()
        .unwrap_or_default()
}

#[tokio::test]
async fn lost_records_are_rewritten_over_live_objects() {
    let (_server, client) = start().await;
    let chart = load_chart("lost");
    let vals = values(json!({"greeting": "hi"}));
    action::install(client.clone(), chart.clone(), vals.clone(), &opts("web"))
        .await
        .expect("install");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let deploy_uid = uid(&deployments, "web-web").await;
    let cm_uid = uid(&configmaps, "web-cfg").await;
    // The install ran the hook; remove its Job so a second run would show.
    jobs.delete("web-init", &DeleteParams::background())
        .await
        .expect("delete hook Job");

    delete_release_secrets(&client, "web").await;

    let rel = adopt::adopt(client.clone(), chart.clone(), vals.clone(), &opts("web"))
        .await
        .expect("adopt")
        .expect("a record was written");
    assert_eq!(rel.version, 1);
    assert_eq!(rel.status(), Status::Deployed);
    assert_eq!(
        rel.info.as_ref().map(|i| i.description.as_str()),
        Some("Adopted 2 existing objects after the release records were lost")
    );
    assert!(
        rel.hooks.iter().all(|h| h.last_run.phase.is_empty()),
        "no hook ran: {:?}",
        rel.hooks
    );
    assert!(
        jobs.get_opt("web-init").await.expect("read Job").is_none(),
        "hook Job not re-run"
    );
    assert_eq!(
        uid(&deployments, "web-web").await,
        deploy_uid,
        "same Deployment"
    );
    assert_eq!(uid(&configmaps, "web-cfg").await, cm_uid, "same ConfigMap");

    let secrets = release_secrets(&client, "web").await;
    assert_eq!(secrets.len(), 1);
    let labels = secrets[0].metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("status").map(String::as_str), Some("deployed"));

    // With records present again, a normal upgrade works on top of the adopted one.
    let up = action::upgrade(client.clone(), chart, vals, &opts("web"))
        .await
        .expect("upgrade after adoption");
    assert_eq!(up.version, 2);
    assert_eq!(uid(&deployments, "web-web").await, deploy_uid);
}

#[tokio::test]
async fn nothing_live_means_a_normal_install() {
    let (_server, client) = start().await;
    let chart = load_chart("none");
    let out = adopt::adopt(client.clone(), chart, values(json!({})), &opts("fresh"))
        .await
        .expect("adopt");
    assert!(out.is_none());
    assert!(
        release_secrets(&client, "fresh").await.is_empty(),
        "no record written"
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    assert!(deployments
        .get_opt("fresh-web")
        .await
        .expect("read")
        .is_none());
}

#[tokio::test]
async fn objects_of_another_release_stop_adoption_without_deleting() {
    let (_server, client) = start().await;
    let chart = load_chart("foreign");
    let vals = values(json!({}));
    action::install(client.clone(), chart.clone(), vals.clone(), &opts("web"))
        .await
        .expect("install");
    delete_release_secrets(&client, "web").await;
    // The ConfigMap now claims to belong to another release.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let patch = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "other"}}});
    configmaps
        .patch("web-cfg", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("re-annotate");
    let live = adopt::find_live_objects(client.clone(), chart.clone(), vals.clone(), &opts("web"))
        .await
        .expect("look up");
    assert_eq!((live.owned.len(), live.foreign.len()), (1, 1));

    let err = adopt::adopt(client.clone(), chart, vals, &opts("web"))
        .await
        .expect_err("conflict surfaces");
    assert!(
        matches!(err, AdoptError::Install { found: 1, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("ConfigMap default/web-cfg"), "{msg}");
    assert!(msg.contains("nothing was deleted"), "{msg}");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    assert!(deployments
        .get_opt("web-web")
        .await
        .expect("read")
        .is_some());
    assert!(configmaps.get_opt("web-cfg").await.expect("read").is_some());
}
