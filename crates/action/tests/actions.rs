//! Install, upgrade, rollback and uninstall against the embedded API server: objects
//! carry Helm's ownership metadata, release Secrets have Helm's names and statuses,
//! dropped objects are deleted, and another release's objects are refused.

mod common;

use action::{Error, UninstallOptions};
use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, PostParams};
use serde_json::{json, Map};
use std::sync::Arc;

/// Deletes the migrate hook's Job once it succeeds, so tests can see that policy applied.
const DELETE_SUCCEEDED_HOOK: &str = "before-hook-creation,hook-succeeded";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_upgrade_rollback_uninstall() {
    let (ns, client) = start();
    let chart_dir = write_chart_in(ns.dir(), DELETE_SUCCEEDED_HOOK);
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    // Install.
    let rel = install(&client, &load(), Map::new(), &opts(&ns, "demo"))
        .await
        .expect("install");
    assert_eq!(rel.version, 1);
    assert_eq!(rel.apply_method, "ssa");
    assert_eq!(
        rel.info.as_ref().map(|i| i.description.as_str()),
        Some("Install complete")
    );
    let hook = rel
        .hooks
        .iter()
        .find(|h| h.name == "demo-migrate")
        .expect("hook recorded");
    assert_eq!(hook.last_run.phase, "Succeeded");
    assert_eq!(
        record_status(&client, "demo", 1).await.as_deref(),
        Some("deployed")
    );

    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let cm = cms.get("demo-cfg").await.expect("configmap");
    assert_owned(&cm.metadata, "demo");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );
    let mf = cm.metadata.managed_fields.unwrap_or_default();
    assert!(
        mf.iter()
            .any(|m| m.manager.as_deref() == Some(action::FIELD_MANAGER)
                && m.operation.as_deref() == Some("Apply")),
        "{mf:?}"
    );
    assert_owned(
        &deps.get("demo-web").await.expect("deployment").metadata,
        "demo",
    );
    assert_owned(
        &svcs.get("demo-svc").await.expect("service").metadata,
        "demo",
    );
    // hook-succeeded deleted the hook Job.
    assert!(jobs
        .get_opt("demo-migrate")
        .await
        .expect("read job")
        .is_none());

    // A second install of the same name is refused.
    let err = install(&client, &load(), Map::new(), &opts(&ns, "demo"))
        .await
        .expect_err("name in use");
    assert!(matches!(err, Error::InUse { .. }), "{err}");

    // Upgrade: changed values, Service dropped.
    let v2 = values(json!({"greeting": "bonjour", "replicas": 2, "service": false}));
    let rel = upgrade(&client, &load(), v2, &opts(&ns, "demo"))
        .await
        .expect("upgrade");
    assert_eq!(rel.version, 2);
    assert_eq!(
        rel.info.as_ref().map(|i| i.description.as_str()),
        Some("Upgrade complete")
    );
    assert_eq!(
        record_status(&client, "demo", 1).await.as_deref(),
        Some("superseded")
    );
    // Like Helm, superseding changes only the status, not the description.
    assert_eq!(description(&client, "demo", 1).await, "Install complete");
    assert_eq!(
        record_status(&client, "demo", 2).await.as_deref(),
        Some("deployed")
    );
    let cm = cms.get("demo-cfg").await.expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("bonjour")
    );
    let replicas = deps
        .get("demo-web")
        .await
        .expect("deployment")
        .spec
        .replicas;
    assert_eq!(replicas, Some(2));
    assert!(
        svcs.get_opt("demo-svc").await.expect("read svc").is_none(),
        "dropped Service is deleted"
    );

    // Rollback to revision 1 brings back the Service and the old value.
    let rel = rollback(&client, 1, &opts(&ns, "demo"))
        .await
        .expect("rollback");
    assert_eq!(rel.version, 3);
    assert_eq!(
        record_status(&client, "demo", 2).await.as_deref(),
        Some("superseded")
    );
    assert_eq!(description(&client, "demo", 2).await, "Upgrade complete");
    assert_eq!(
        record_status(&client, "demo", 3).await.as_deref(),
        Some("deployed")
    );
    let cm = cms.get("demo-cfg").await.expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );
    assert!(svcs.get_opt("demo-svc").await.expect("read svc").is_some());

    // Uninstall removes the objects and every record.
    let rel = uninstall(&client, &UninstallOptions::new("demo", ns.name()))
        .await
        .expect("uninstall");
    assert_eq!(rel.status(), release::Status::Uninstalled);
    assert!(cms.get_opt("demo-cfg").await.expect("read").is_none());
    assert!(deps.get_opt("demo-web").await.expect("read").is_none());
    assert!(svcs.get_opt("demo-svc").await.expect("read").is_none());
    for v in 1..=3 {
        assert_eq!(
            record_status(&client, "demo", v).await,
            None,
            "record v{v} deleted"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_objects_of_another_release() {
    let (ns, client) = start();
    let chart_dir = write_chart_in(ns.dir(), DELETE_SUCCEEDED_HOOK);
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    // A ConfigMap named as our release's, owned by release "other".
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let foreign: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "name": "demo-cfg",
            "annotations": {
                "meta.helm.sh/release-name": "other",
                "meta.helm.sh/release-namespace": ns.name(),
            },
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
        },
        "data": {"greeting": "theirs"},
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &foreign)
        .await
        .expect("create");

    let err = install(&client, &load(), Map::new(), &opts(&ns, "demo"))
        .await
        .expect_err("conflict");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::Conflict { .. }), "{msg}");
    assert!(
        msg.contains(&format!("ConfigMap {}/demo-cfg", ns.name())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("release {}/other", ns.name())),
        "{msg}"
    );
    // Nothing was written and the record says why.
    let cm = cms.get("demo-cfg").await.expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("theirs")
    );
    assert_eq!(
        record_status(&client, "demo", 1).await.as_deref(),
        Some("failed")
    );

    // With take_ownership the failed release can be installed again, adopting it.
    let mut o = opts(&ns, "demo");
    o.take_ownership = true;
    let rel = install(&client, &load(), Map::new(), &o)
        .await
        .expect("install with take_ownership");
    assert_eq!(rel.version, 2);
    let cm = cms.get("demo-cfg").await.expect("configmap");
    assert_owned(&cm.metadata, "demo");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );
}

/// The chart's CRD; `GROUP` is the test's own group, so the CRD is new to the cluster.
const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.GROUP
spec:
  group: GROUP
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const CR_AND_KEPT: &str = r#"apiVersion: {{ .Values.group }}/v1
kind: Widget
metadata:
  name: {{ .Release.Name }}-widget
spec:
  size: {{ .Values.size }}
{{- if .Values.kept }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-kept
  annotations:
    helm.sh/resource-policy: keep
data: {a: b}
{{- end }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crds_keep_policy_and_keep_history() {
    let (ns, client) = start();
    // Helm never deletes a chart's CRDs; the test does, as it made this one.
    let group = format!("{}.actions.rudder.dev", ns.name());
    ns.delete_on_teardown(testkit::crd::crd_resource(), &format!("widgets.{group}"));
    let chart_dir = testkit::write_chart(
        ns.dir(),
        "widgets",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: widgets\nversion: 1.0.0\n",
            ),
            (
                "values.yaml",
                &format!("size: 1\nkept: true\ngroup: {group}\n"),
            ),
            ("crds/widget.yaml", &CRD.replace("GROUP", &group)),
            ("templates/all.yaml", CR_AND_KEPT),
        ],
    );
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    install(&client, &load(), Map::new(), &opts(&ns, "w"))
        .await
        .expect("install with CRD");
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), ns.name(), &ar);
    let w = widgets.get("w-widget").await.expect("custom resource");
    assert_eq!(w.data.pointer("/spec/size"), Some(&json!(1)));
    assert_owned(&w.metadata, "w");

    // The kept ConfigMap survives being dropped by an upgrade.
    let v2 = values(json!({"size": 2, "kept": false}));
    upgrade(&client, &load(), v2, &opts(&ns, "w"))
        .await
        .expect("upgrade");
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    assert!(cms.get_opt("w-kept").await.expect("read").is_some());
    let w = widgets.get("w-widget").await.expect("custom resource");
    assert_eq!(w.data.pointer("/spec/size"), Some(&json!(2)));

    // keep_history leaves the records, the newest marked uninstalled.
    let mut u = UninstallOptions::new("w", ns.name());
    u.keep_history = true;
    uninstall(&client, &u).await.expect("uninstall");
    assert!(widgets.get_opt("w-widget").await.expect("read").is_none());
    assert_eq!(
        record_status(&client, "w", 1).await.as_deref(),
        Some("superseded")
    );
    assert_eq!(
        record_status(&client, "w", 2).await.as_deref(),
        Some("uninstalled")
    );
    // Again with keep_history: refused; without: the kept history is purged.
    let err = uninstall(&client, &u)
        .await
        .expect_err("already uninstalled");
    assert!(matches!(err, Error::AlreadyUninstalled { .. }), "{err}");
    uninstall(&client, &UninstallOptions::new("w", ns.name()))
        .await
        .expect("purge");
    assert_eq!(record_status(&client, "w", 2).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kind_fails_the_release() {
    let (ns, client) = start();
    let chart_dir = testkit::write_chart(
        ns.dir(),
        "bad",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: bad\nversion: 1.0.0\n"),
            (
                "templates/x.yaml",
                "apiVersion: nowhere.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n",
            ),
        ],
    );
    let chart = Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let err = install(&client, &chart, Map::new(), &opts(&ns, "bad"))
        .await
        .expect_err("unknown kind");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::UnknownKind { .. }), "{msg}");
    assert!(
        msg.contains("Gadget g:") && msg.contains("\"bad\""),
        "{msg}"
    );
    // Like Helm, a manifest that cannot be built is refused before any record exists.
    assert_eq!(record_status(&client, "bad", 1).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_prune_history_to_max_history() {
    let (ns, client) = start();
    let chart_dir = write_chart_in(ns.dir(), DELETE_SUCCEEDED_HOOK);
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let mut o = opts(&ns, "p");
    o.max_history = 2;
    install(&client, &load(), Map::new(), &o)
        .await
        .expect("install");
    for i in 0..3 {
        let v = values(json!({"greeting": format!("v{i}")}));
        upgrade(&client, &load(), v, &o).await.expect("upgrade");
    }
    for v in 1..=2 {
        assert_eq!(record_status(&client, "p", v).await, None, "v{v} pruned");
    }
    assert_eq!(
        record_status(&client, "p", 3).await.as_deref(),
        Some("superseded")
    );
    assert_eq!(
        record_status(&client, "p", 4).await.as_deref(),
        Some("deployed")
    );
}
