//! Shared setup of the action tests: a test namespace on the test cluster (testkit), a
//! small chart, record readers, and a client that injects API failures.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use action::{
    ActionConfig, ActionOptions, Install, Recover, Repair, RepairReport, Rollback, Uninstall,
    UninstallOptions, Upgrade, UpgradeDiff,
};
use chart::loader::Chart;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::Client;
use release::Release;
use serde_json::{json, Map, Value};
use testkit::{Cluster, TestNamespace};

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
  # No cluster has this class, so the claim never binds: the object that stays unready.
  storageClassName: rudder-test-never-binds
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

/// The actions' configuration over `client`: Helm's defaults (Secret records, Lease
/// locks, discovery per action).
pub fn cfg(client: &Client) -> ActionConfig {
    ActionConfig::new(client.clone())
}

pub async fn install(
    client: &Client,
    chart: &Arc<Chart>,
    values: Map<String, Value>,
    opts: &ActionOptions,
) -> action::Result<Release> {
    Install::new(&cfg(client), opts.clone())
        .run(chart, values)
        .await
}

pub async fn upgrade(
    client: &Client,
    chart: &Arc<Chart>,
    values: Map<String, Value>,
    opts: &ActionOptions,
) -> action::Result<Release> {
    Upgrade::new(&cfg(client), opts.clone())
        .run(chart, values)
        .await
}

pub async fn diff_upgrade(
    client: &Client,
    chart: &Arc<Chart>,
    values: Map<String, Value>,
    opts: &ActionOptions,
) -> action::Result<UpgradeDiff> {
    Upgrade::new(&cfg(client), opts.clone())
        .diff(chart, values)
        .await
}

pub async fn rollback(client: &Client, to: i64, opts: &ActionOptions) -> action::Result<Release> {
    Rollback::new(&cfg(client), opts.clone()).run(to).await
}

pub async fn uninstall(client: &Client, opts: &UninstallOptions) -> action::Result<Release> {
    Uninstall::new(&cfg(client), opts.clone()).run().await
}

pub async fn repair(client: &Client, opts: &ActionOptions) -> action::Result<RepairReport> {
    let (_, report) = Repair::new(&cfg(client), opts.clone()).run().await?;
    Ok(report)
}

pub async fn recover_pending(
    client: &Client,
    opts: &ActionOptions,
) -> action::Result<Option<Release>> {
    Recover::new(&cfg(client), opts.clone()).run().await
}

pub async fn test(client: &Client, opts: &ActionOptions) -> action::Result<Release> {
    action::ReleaseTest::new(&cfg(client), opts.clone())
        .run()
        .await
}

/// A namespace of the test's own on the test cluster (simulated readiness), and a client
/// that defaults to it. Dropping the namespace deletes it.
pub fn start() -> (TestNamespace, Client) {
    let ns = Cluster::start().namespace("action");
    let client = ns.client();
    (ns, client)
}

/// The migrate hook's delete policy that leaves its Job in place after it succeeds, so
/// tests can look at it.
pub const KEEP_HOOK_JOB: &str = "before-hook-creation";

/// Writes the `demo` chart into `dir` (its migrate hook Job kept) and returns its path.
pub fn write_chart(dir: &Path) -> PathBuf {
    write_chart_in(dir, KEEP_HOOK_JOB)
}

/// Writes the `demo` chart into `dir`, its migrate hook deleted per `hook_delete_policy`.
pub fn write_chart_in(dir: &Path, hook_delete_policy: &str) -> PathBuf {
    let hook = HOOK.replace("{delete_policy}", hook_delete_policy);
    testkit::write_chart(
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

pub fn values(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Options for release `name` in the test's namespace.
pub fn opts(ns: &TestNamespace, name: &str) -> ActionOptions {
    let mut o = ActionOptions::new(name, ns.name());
    o.timeout = Duration::from_secs(20);
    o
}

/// The record Secret of `name` v`version`, if it exists.
pub async fn record_secret(client: &Client, name: &str, version: i64) -> Option<Secret> {
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
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
        client.default_namespace(),
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

/// Asserts `meta` carries Helm's ownership metadata for `release` in its namespace.
pub fn assert_owned(meta: &ObjectMeta, release: &str) {
    let ann = meta.annotations.clone().unwrap_or_default();
    assert_eq!(
        ann.get("meta.helm.sh/release-name").map(String::as_str),
        Some(release)
    );
    assert_eq!(
        ann.get("meta.helm.sh/release-namespace")
            .map(String::as_str),
        meta.namespace.as_deref()
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
    let namespace = inner.default_namespace().to_string();
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
    Client::new(svc, namespace)
}
