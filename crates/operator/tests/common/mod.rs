//! The demo kind the reconcile tests use: an embedded API server with its CRD, the
//! chart, and helpers to create and read its custom resources.

#![allow(dead_code)]

pub mod cluster;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::{Config, Server};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::Client;
use operator::reconcile::Context;
use operator::watches::Watch;
use serde_json::{json, Value};

pub mod watch_run;

pub const NS: &str = "default";
pub const GROUP: &str = "test.rudder.dev";
pub const VERSION: &str = "v1";
pub const KIND: &str = "Demo";
pub const FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";

pub fn chart_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/reconcile/demo")
}

pub async fn start() -> (Server, Client) {
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let client = server.client().expect("client");
    install_crd(&client).await;
    (server, client)
}

/// Installs the demo CRD unless the cluster has it already (a real cluster shared by
/// several tests).
pub async fn install_crd_if_missing(client: &Client) {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    if api
        .get_opt(&format!("demos.{GROUP}"))
        .await
        .expect("read CRD")
        .is_none()
    {
        install_crd(client).await;
    }
}

pub async fn install_crd(client: &Client) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("demos.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "demos", "singular": "demo", "kind": KIND, "listKind": "DemoList"},
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    );
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let obj: DynamicObject = serde_json::from_value(crd).expect("crd object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create CRD");
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
    Api::namespaced_with(client.clone(), NS, &resource())
}

pub async fn create_cr(client: &Client, name: &str, spec: Value) {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": name, "namespace": NS},
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
