//! The demo kind the reconcile tests use: a test namespace on the test cluster (testkit)
//! with the kind's CRD served, the chart, and helpers to create and read its custom
//! resources in that namespace.

#![allow(dead_code)]

pub mod cluster;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::{Client, ResourceExt};
use operator::{reconcile, Context, Outcome, ReconcileError, Watch};
use serde_json::{json, Value};
use testkit::{Cluster, TestNamespace};

pub mod watch_run;

pub const GROUP: &str = "test.rudder.dev";
pub const VERSION: &str = "v1";
pub const KIND: &str = "Demo";
pub const FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";

pub fn chart_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reconcile/demo")
}

/// A namespace of the test's own (simulated readiness) with the Demo CRD served, and a
/// client defaulting to it. The CRD is shared by every test and stays.
pub fn start() -> (TestNamespace, Client) {
    let cluster = Cluster::start();
    cluster.install_crd(&testkit::crd::open_crd(GROUP, VERSION, KIND));
    let ns = cluster.namespace("reconcile");
    let client = ns.client();
    (ns, client)
}

/// Installs the demo CRD unless the cluster has it already (a real cluster shared by
/// several tests), and waits until it is served.
pub async fn install_crd_if_missing(client: &Client) {
    testkit::crd::install_crd(client, &testkit::crd::open_crd(GROUP, VERSION, KIND)).await;
}

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "demos")
}

pub fn context(client: &Client, watch: Watch) -> Arc<Context> {
    let chart = chart::loader::load(chart_dir()).expect("load chart");
    let ctx = Context::new(client.clone(), Arc::new(watch), Arc::new(chart), resource())
        .expect("context")
        .with_reconcile_period(Some(Duration::from_secs(600)));
    Arc::new(ctx)
}

pub fn watch() -> Watch {
    Watch {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
        chart: chart_dir(),
        ..Watch::default()
    }
}

pub fn crs(client: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), client.default_namespace(), &resource())
}

pub async fn create_cr(client: &Client, name: &str, spec: Value) {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": name, "namespace": client.default_namespace()},
        "spec": spec,
    }))
    .expect("cr");
    crs(client)
        .create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
}

pub async fn get_cr(client: &Client, name: &str) -> DynamicObject {
    crs(client).get(name).await.expect("get CR")
}

/// The condition of `type_` in a CR's `status` as (status, reason, message).
pub fn condition_in(status: &Value, type_: &str) -> Option<(String, String, String)> {
    let c = status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((text("status"), text("reason"), text("message")))
}

/// The Events about CR `name` in the client's namespace: (type, reason, note).
pub async fn event_reasons(client: &Client, name: &str) -> Vec<(String, String, String)> {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(client.clone());
    let list = events
        .list(&kube::api::ListParams::default())
        .await
        .expect("list events");
    list.items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.type_.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.note.unwrap_or_default(),
            )
        })
        .collect()
}

/// One reconcile of CR `name` as it is now in the cluster.
pub async fn run(ctx: &Arc<Context>, name: &str) -> Result<Outcome, ReconcileError> {
    let cr = get_cr(ctx.client(), name).await;
    reconcile(Arc::new(cr.into()), ctx.clone()).await
}

/// The release's records as (revision, status), oldest first, read from their labels.
pub async fn revisions(client: &Client, release: &str) -> Vec<(i64, String)> {
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let list = secrets
        .list(&ListParams::default().labels(&format!("owner=helm,name={release}")))
        .await
        .expect("list records");
    let mut out: Vec<(i64, String)> = list
        .items
        .iter()
        .map(|s| {
            let l = s.labels();
            (
                l.get("version").and_then(|v| v.parse().ok()).unwrap_or(0),
                l.get("status").cloned().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The requests a counting client saw: (method, path with its query).
pub type Seen = Arc<std::sync::Mutex<Vec<(String, String)>>>;

/// `inner`, with every request's method and path (query included) noted in `seen`.
pub fn counting_client(inner: Client, seen: Seen) -> Client {
    let namespace = inner.default_namespace().to_string();
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let seen = seen.clone();
        async move {
            let uri = req.uri();
            let path = match uri.query() {
                Some(q) => format!("{}?{q}", uri.path()),
                None => uri.path().to_string(),
            };
            seen.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((req.method().to_string(), path));
            inner.send(req).await
        }
    });
    Client::new(svc, namespace)
}
