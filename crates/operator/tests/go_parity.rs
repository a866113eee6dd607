//! What Go helm-operator users rely on, end to end through `reconcile()` (issue 12):
//! another chart's release is never taken over, records are owned by the CR (and
//! collected with it) and objects carry the chart label, a changed looked-up object
//! reaches the release without an upgrade loop, Events are core/v1 and counted, a
//! paused CR is left alone, the readiness mode holds `Deployed` back, and an upgrade
//! whose candidate cannot be built is `Irreconcilable` with `Deployed` kept.
//!
//! Each test works in a namespace of its own on the embedded API server, or on the
//! cluster `RUDDER_TEST_KUBECONFIG` names.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::cluster::TestCluster;
use common::{resource, GROUP, KIND, VERSION};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::events::Reporter;
use kube::{Client, ResourceExt};
use operator::Watch;
use operator::{reconcile, Context, Outcome, ReconcileError};
use serde_json::{json, Value};
use testkit::eventually;

const CHART_LABEL: &str = "helm.sdk.operatorframework.io/chart";

fn chart_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/go_parity")
        .join(name)
}

fn watch(chart: &str) -> Watch {
    Watch {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: KIND.into(),
        chart: chart_dir(chart),
        ..Watch::default()
    }
}

fn context(tc: &TestCluster, w: Watch) -> Arc<Context> {
    let chart = chart::loader::load(&w.chart).expect("load chart");
    let ctx = Context::new(tc.client.clone(), Arc::new(w), Arc::new(chart), resource())
        .expect("context")
        .with_reporter(Reporter {
            controller: "demo-controller".into(),
            instance: None,
        });
    Arc::new(ctx)
}

fn crs(tc: &TestCluster) -> Api<DynamicObject> {
    Api::namespaced_with(tc.client.clone(), &tc.namespace, &resource())
}

async fn create_cr(tc: &TestCluster, name: &str, spec: Value, annotations: Value) {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }))
    .expect("cr");
    crs(tc)
        .create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
}

async fn run(ctx: &Arc<Context>, tc: &TestCluster, name: &str) -> Result<Outcome, ReconcileError> {
    let cr = crs(tc).get(name).await.expect("get CR");
    reconcile(Arc::new(cr.into()), ctx.clone()).await
}

async fn patch_cr(tc: &TestCluster, name: &str, patch: Value) {
    crs(tc)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch CR");
}

/// `(status, reason, message)` of a condition of the CR.
async fn condition(tc: &TestCluster, name: &str, type_: &str) -> Option<(String, String, String)> {
    let cr = crs(tc).get(name).await.expect("get CR");
    common::condition_in(&cr.data["status"], type_)
}

fn secrets(tc: &TestCluster) -> Api<Secret> {
    Api::namespaced(tc.client.clone(), &tc.namespace)
}

fn configmaps(tc: &TestCluster) -> Api<ConfigMap> {
    Api::namespaced(tc.client.clone(), &tc.namespace)
}

/// The release's record Secrets, oldest first.
async fn records(tc: &TestCluster, release: &str) -> Vec<Secret> {
    let mut list = secrets(tc)
        .list(&ListParams::default().labels(&format!("owner=helm,name={release}")))
        .await
        .expect("list records")
        .items;
    list.sort_by_key(|s| {
        s.labels()
            .get("version")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
    });
    list
}

fn action_config(tc: &TestCluster) -> action::ActionConfig {
    action::ActionConfig::new(tc.client.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_charts_release_is_never_taken_over() {
    let tc = TestCluster::start("duplicate-name", true).await;
    // `helm install app other/` got there first.
    let other = std::sync::Arc::new(chart::loader::load(chart_dir("other")).expect("chart"));
    action::Install::new(
        &action_config(&tc),
        action::ActionOptions::new("app", &tc.namespace),
    )
    .run(&other, Default::default())
    .await
    .expect("their install");
    let theirs_cm = configmaps(&tc)
        .get("app-theirs")
        .await
        .expect("their object");
    let theirs_record = records(&tc, "app").await;
    assert_eq!(theirs_record.len(), 1);

    let ctx = context(&tc, watch("keeper"));
    create_cr(&tc, "app", json!({}), json!({})).await;
    let err = run(&ctx, &tc, "app").await.expect_err("refused");
    assert!(matches!(err, ReconcileError::DuplicateName { .. }), "{err}");
    let (status, reason, message) = condition(&tc, "app", "Irreconcilable")
        .await
        .expect("Irreconcilable");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcileError")
    );
    assert_eq!(
        message,
        "failed to get helm release name: duplicate release name: found existing release with name \"app\" for chart \"other\""
    );
    // Nothing of theirs changed, nothing of ours was made, the CR has no finalizer.
    let cm = configmaps(&tc)
        .get("app-theirs")
        .await
        .expect("still there");
    assert_eq!(cm.resource_version(), theirs_cm.resource_version());
    let now = records(&tc, "app").await;
    assert_eq!(now.len(), 1);
    assert_eq!(
        now[0].resource_version(),
        theirs_record[0].resource_version()
    );
    assert!(configmaps(&tc)
        .get_opt("app-cfg")
        .await
        .expect("read")
        .is_none());
    let cr = crs(&tc).get("app").await.expect("CR");
    assert!(cr.finalizers().is_empty(), "{:?}", cr.finalizers());
    // Deleting the CR leaves their release alone.
    crs(&tc)
        .delete("app", &DeleteParams::default())
        .await
        .expect("delete CR");
    assert_eq!(records(&tc, "app").await.len(), 1);
    tc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_owned_by_the_cr_and_collected_with_it() {
    let tc = TestCluster::start("owned-records", true).await;
    let ctx = context(&tc, watch("keeper"));
    create_cr(&tc, "own", json!({"greeting": "hi"}), json!({})).await;
    run(&ctx, &tc, "own").await.expect("install");
    let cr = crs(&tc).get("own").await.expect("CR");
    let record = records(&tc, "own").await.pop().expect("record");
    let refs = record.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].uid, cr.uid().unwrap_or_default());
    assert_eq!(refs[0].kind, KIND);
    assert_eq!(
        (refs[0].controller, refs[0].block_owner_deletion),
        (Some(true), Some(true))
    );
    assert_eq!(
        record.labels().get(CHART_LABEL).map(String::as_str),
        Some("keeper")
    );
    let cm = configmaps(&tc).get("own-cfg").await.expect("object");
    assert_eq!(
        cm.labels().get(CHART_LABEL).map(String::as_str),
        Some("keeper")
    );
    assert!(
        !record.annotations().contains_key("rudder.dev/lock"),
        "the lock was given back"
    );

    // A release `helm install` made for the same chart: its record gets the owner
    // reference and the label on the operator's first write, without a new revision.
    let keeper = std::sync::Arc::new(chart::loader::load(chart_dir("keeper")).expect("chart"));
    action::Install::new(
        &action_config(&tc),
        action::ActionOptions::new("adopt", &tc.namespace),
    )
    .run(&keeper, Default::default())
    .await
    .expect("helm's install");
    assert!(records(&tc, "adopt").await[0]
        .metadata
        .owner_references
        .is_none());
    create_cr(&tc, "adopt", json!({}), json!({})).await;
    run(&ctx, &tc, "adopt").await.expect("taken on");
    let adopted = records(&tc, "adopt").await;
    assert_eq!(adopted.len(), 1, "no new revision");
    assert!(adopted[0].metadata.owner_references.is_some());
    assert_eq!(
        adopted[0].labels().get(CHART_LABEL).map(String::as_str),
        Some("keeper")
    );

    // The finalizer bypassed: garbage collection still takes the records with the CR.
    patch_cr(&tc, "own", json!({"metadata": {"finalizers": null}})).await;
    crs(&tc)
        .delete("own", &DeleteParams::default())
        .await
        .expect("delete CR");
    // Wait for: records collected.
    eventually(Duration::from_secs(60), || async {
        records(&tc, "own").await.is_empty().then_some(())
    })
    .await;
    tc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_lookup_reaches_the_release_without_an_upgrade_loop() {
    let tc = TestCluster::start("lookups", true).await;
    let ctx = context(&tc, watch("looker"));
    create_cr(&tc, "lk", json!({}), json!({})).await;
    let seen = || async {
        configmaps(&tc)
            .get("lk-seen")
            .await
            .expect("rendered")
            .data
            .unwrap_or_default()
            .get("v")
            .cloned()
            .unwrap_or_default()
    };
    let src: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "src"}, "data": {"v": "1"}}))
    .expect("configmap");
    configmaps(&tc)
        .create(&PostParams::default(), &src)
        .await
        .expect("create src");
    run(&ctx, &tc, "lk").await.expect("install");
    assert_eq!(seen().await, "1");
    // Random output and unchanged lookups: no new revision.
    run(&ctx, &tc, "lk").await.expect("reconcile");
    run(&ctx, &tc, "lk").await.expect("reconcile");
    assert_eq!(records(&tc, "lk").await.len(), 1, "no loop");

    configmaps(&tc)
        .patch(
            "src",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await
        .expect("change src");
    run(&ctx, &tc, "lk").await.expect("upgrade");
    assert_eq!(seen().await, "2");
    assert_eq!(records(&tc, "lk").await.len(), 2);
    run(&ctx, &tc, "lk").await.expect("reconcile");
    assert_eq!(records(&tc, "lk").await.len(), 2, "no loop");
    tc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_core_v1_and_repeats_are_counted() {
    let tc = TestCluster::start("events", true).await;
    let mut w = watch("keeper");
    w.override_values
        .insert("greeting".into(), "from-watches".into());
    let ctx = context(&tc, w);
    create_cr(&tc, "ev", json!({}), json!({})).await;
    run(&ctx, &tc, "ev").await.expect("install");
    patch_cr(&tc, "ev", json!({"spec": {"x": 1}})).await;
    run(&ctx, &tc, "ev").await.expect("upgrade");

    let events: Api<Event> = Api::namespaced(tc.client.clone(), &tc.namespace);
    let list = events.list(&ListParams::default()).await.expect("events");
    let overrides: Vec<&Event> = list
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("OverrideValuesInUse"))
        .collect();
    assert_eq!(overrides.len(), 1, "one Event, counted: {overrides:?}");
    let e = overrides[0];
    assert_eq!(e.count, Some(2));
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(
        e.message.as_deref(),
        Some("Chart value \"greeting\" overridden to \"from-watches\" by operator's watches.yaml")
    );
    assert_eq!(
        e.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("demo-controller")
    );
    assert_eq!(e.reporting_component.as_deref(), Some("demo-controller"));
    assert_eq!(e.involved_object.name.as_deref(), Some("ev"));
    assert_eq!(e.involved_object.kind.as_deref(), Some(KIND));
    assert!(e.last_timestamp.is_some() && e.first_timestamp.is_some());
    assert!(list
        .items
        .iter()
        .any(|e| e.reason.as_deref() == Some("UpgradeSuccessful")));

    // `kubectl get events --sort-by=.lastTimestamp` lists them.
    let out = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&tc.kubeconfig)
        .args([
            "get",
            "events",
            "-n",
            &tc.namespace,
            "--sort-by=.lastTimestamp",
        ])
        .output();
    match out {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(text.contains("OverrideValuesInUse"), "{text}");
            assert!(text.contains("InstallSuccessful"), "{text}");
        }
        Err(e) => eprintln!("SKIPPED the kubectl check: kubectl not runnable ({e})"),
    }
    tc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_cr_is_left_alone_until_resumed() {
    let tc = TestCluster::start("paused", true).await;
    let ctx = context(&tc, watch("keeper"));
    let paused = json!({"helm.sdk.operatorframework.io/reconcile-paused": "true"});
    create_cr(&tc, "p", json!({}), paused).await;
    run(&ctx, &tc, "p").await.expect("paused");
    let (status, reason, _) = condition(&tc, "p", "Paused").await.expect("Paused");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcilePaused")
    );
    assert!(records(&tc, "p").await.is_empty());
    assert!(crs(&tc).get("p").await.expect("CR").finalizers().is_empty());

    patch_cr(
        &tc,
        "p",
        json!({"metadata": {"annotations": {"helm.sdk.operatorframework.io/reconcile-paused": null}}}),
    )
    .await;
    run(&ctx, &tc, "p").await.expect("resumed");
    assert!(condition(&tc, "p", "Paused").await.is_none());
    let (status, _, _) = condition(&tc, "p", "Deployed").await.expect("Deployed");
    assert_eq!(status, "True");

    // Pausing a deployed CR applies nothing: a deleted object stays deleted.
    patch_cr(
        &tc,
        "p",
        json!({"metadata": {"annotations": paused_again()}}),
    )
    .await;
    configmaps(&tc)
        .delete("p-cfg", &DeleteParams::default())
        .await
        .expect("delete object");
    run(&ctx, &tc, "p").await.expect("paused");
    assert!(configmaps(&tc)
        .get_opt("p-cfg")
        .await
        .expect("read")
        .is_none());
    tc.stop().await;
}

fn paused_again() -> Value {
    json!({"helm.sdk.operatorframework.io/reconcile-paused": "true"})
}

/// Makes Deployment `name` ready as the kit's readiness helper would: through its
/// status, or, where a kube-controller-manager computes that status (and would write
/// a patched one back), through its Pods.
async fn make_ready(client: &Client, namespace: &str, name: &str) {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    testkit::settle(&api, "Deployment", name)
        .await
        .expect("mark ready");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readiness_mode_holds_deployed_until_ready_without_holding_a_worker() {
    let tc = TestCluster::start("readiness", false).await;
    let mut w = watch("waiter");
    w.install_wait = true;
    let ctx = context(&tc, w);
    create_cr(&tc, "w", json!({}), json!({})).await;
    let outcome = run(&ctx, &tc, "w").await.expect("install returns at once");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(5)));
    let (status, reason, message) = condition(&tc, "w", "Deployed").await.expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "AwaitingReadiness")
    );
    assert!(message.contains("waiting up to 5m0s"), "{message}");
    let records_now = records(&tc, "w").await;
    assert_eq!(
        records_now[0].labels().get("status").map(String::as_str),
        Some("deployed")
    );

    run(&ctx, &tc, "w").await.expect("still waiting");
    let (_, reason, message) = condition(&tc, "w", "Deployed").await.expect("Deployed");
    assert_eq!(reason, "AwaitingReadiness");
    assert!(
        message.contains(&format!("Deployment {}/w-web", tc.namespace)),
        "{message}"
    );

    make_ready(&tc.client, &tc.namespace, "w-web").await;
    let outcome = run(&ctx, &tc, "w").await.expect("ready");
    assert_eq!(outcome.requeue_after, None);
    let (status, reason, _) = condition(&tc, "w", "Deployed").await.expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InstallSuccessful")
    );

    // Not ready within `wait-timeout`: ReleaseFailed.
    create_cr(
        &tc,
        "late",
        json!({}),
        json!({"helm.sdk.operatorframework.io/wait-timeout": "1s"}),
    )
    .await;
    run(&ctx, &tc, "late").await.expect("install");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    run(&ctx, &tc, "late").await.expect("reported");
    let (status, reason, message) = condition(&tc, "late", "ReleaseFailed")
        .await
        .expect("ReleaseFailed");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(
        message.contains("is not ready 1s after it was deployed"),
        "{message}"
    );
    tc.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_whose_candidate_cannot_be_built_keeps_deployed() {
    let tc = TestCluster::start("candidate", true).await;
    let mut w = watch("keeper");
    w.chart = common::chart_dir();
    let ctx = context(&tc, w);
    create_cr(&tc, "c", json!({"greeting": "hi"}), json!({})).await;
    run(&ctx, &tc, "c").await.expect("install");
    patch_cr(&tc, "c", json!({"spec": {"fail": true}})).await;
    run(&ctx, &tc, "c").await.expect_err("candidate fails");
    let (status, reason, message) = condition(&tc, "c", "Irreconcilable")
        .await
        .expect("Irreconcilable");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ReconcileError")
    );
    assert!(
        message.starts_with("failed to get candidate release: "),
        "{message}"
    );
    assert!(
        message.contains("the spec asked this chart to fail"),
        "{message}"
    );
    let (status, reason, _) = condition(&tc, "c", "Deployed").await.expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "InstallSuccessful")
    );
    assert!(condition(&tc, "c", "ReleaseFailed").await.is_none());
    assert_eq!(records(&tc, "c").await.len(), 1, "nothing recorded");
    tc.stop().await;
}
