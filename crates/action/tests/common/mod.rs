//! Shared setup of the action tests: an embedded API server, a small chart, record
//! readers, and a client that injects API failures.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apiserver::{Config, Server};
use action::ActionOptions;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::Client;
use serde_json::{json, Map, Value};

pub const NS: &str = "default";

pub const TEMPLATES: &str = r#"apiVersion: v1
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
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
{{- if .Values.service }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
{{- end }}
{{- if .Values.pvc }}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ .Release.Name }}-data
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
{{- end }}
{{- if .Values.job }}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-once
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: once
        image: busybox
{{- end }}
"#;

/// The migrate hook; `write_chart_in` fills in `{delete_policy}`.
pub const HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-weight: "-1"
    helm.sh/hook-delete-policy: {delete_policy}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: busybox
        command: ["true"]
"#;

pub const TEST_HOOK: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-smoke
  annotations:
    helm.sh/hook: test
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: smoke
        image: busybox
"#;

pub async fn start() -> (Server, Client) {
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let client = server.client().expect("client");
    (server, client)
}

/// The migrate hook's delete policy that leaves its Job in place after it succeeds, so
/// tests can look at it.
pub const KEEP_HOOK_JOB: &str = "before-hook-creation";

/// The server's temporary directory: tests write their charts there so they are removed
/// with the server.
pub fn server_dir(server: &Server) -> PathBuf {
    server
        .kubeconfig_path()
        .parent()
        .expect("dir")
        .to_path_buf()
}

/// Writes the `demo` chart next to the server's kubeconfig and returns its path.
pub fn write_chart(server: &Server) -> PathBuf {
    write_chart_in(&server_dir(server), KEEP_HOOK_JOB)
}

/// Writes the `demo` chart into `dir`, its migrate hook deleted per `hook_delete_policy`.
pub fn write_chart_in(dir: &Path, hook_delete_policy: &str) -> PathBuf {
    let hook = HOOK.replace("{delete_policy}", hook_delete_policy);
    write_chart_files(
        dir,
        "demo",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: \"1.0\"\n",
            ),
            (
                "values.yaml",
                "greeting: hello\nreplicas: 1\nservice: true\npvc: false\njob: false\n",
            ),
            ("templates/app.yaml", TEMPLATES),
            ("templates/hook.yaml", &hook),
            ("templates/tests.yaml", TEST_HOOK),
        ],
    )
}

/// Writes chart `name` into `dir` from `(path in the chart, content)` pairs and returns
/// its path.
pub fn write_chart_files(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    let chart = dir.join(name);
    for (path, content) in files {
        let file = chart.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).expect("chart dir");
        }
        std::fs::write(&file, content).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    chart
}

pub fn values(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

pub fn opts(name: &str) -> ActionOptions {
    let mut o = ActionOptions::new(name, NS);
    o.timeout = Duration::from_secs(20);
    o
}

/// The record Secret of `name` v`version`, if it exists.
pub async fn record_secret(client: &Client, name: &str, version: i64) -> Option<Secret> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    secrets
        .get_opt(&format!("sh.helm.release.v1.{name}.v{version}"))
        .await
        .expect("read secret")
}

/// The `status` label of record `name` v`version`, checking the record is Helm's kind of
/// Secret so Helm can read it.
pub async fn record_status(client: &Client, name: &str, version: i64) -> Option<String> {
    let s = record_secret(client, name, version).await?;
    assert_eq!(s.type_.as_deref(), Some("helm.sh/release.v1"));
    s.metadata.labels.and_then(|l| l.get("status").cloned())
}

pub fn storage(client: &Client) -> release::Storage {
    release::Storage::new(Arc::new(release::SecretDriver::for_namespace(
        client.clone(),
        NS,
    )))
}

pub async fn description(client: &Client, name: &str, version: i64) -> String {
    storage(client)
        .get(name, version)
        .await
        .expect("record")
        .info
        .map(|i| i.description)
        .unwrap_or_default()
}

/// Asserts `meta` carries Helm's ownership metadata for `release` in [`NS`].
pub fn assert_owned(meta: &ObjectMeta, release: &str) {
    let ann = meta.annotations.clone().unwrap_or_default();
    assert_eq!(
        ann.get("meta.helm.sh/release-name").map(String::as_str),
        Some(release)
    );
    assert_eq!(
        ann.get("meta.helm.sh/release-namespace")
            .map(String::as_str),
        Some(NS)
    );
    let labels = meta.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("Helm")
    );
}

/// Decides whether to fail a request: `Some((code, message))` answers with that error.
pub type Fault = dyn Fn(&http::Method, &str) -> Option<(u16, String)> + Send + Sync;

/// A client that answers requests `fault` picks with an API error and forwards the rest.
pub fn faulty_client(inner: Client, fault: Arc<Fault>) -> Client {
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let fault = fault.clone();
        async move {
            let path = req.uri().path().to_string();
            if let Some((code, message)) = fault(req.method(), &path) {
                let reason = if code == 422 {
                    "Invalid"
                } else {
                    "InternalError"
                };
                let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "message": message, "reason": reason, "code": code});
                let resp = http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(
                        serde_json::to_vec(&body).unwrap_or_default(),
                    ))
                    .map_err(|e| kube::Error::Service(e.into()))?;
                return Ok::<_, kube::Error>(resp);
            }
            inner.send(req).await
        }
    });
    Client::new(svc, NS)
}
