//! An aggregated API whose service is down must not hold up the operator: its CRs
//! deploy as usual, the unavailable group version is asked once per discovery refresh
//! however many reconciles render, and only a CR whose release needs one of its kinds
//! fails, with a condition naming the API and its APIService. The cluster is testkit's,
//! behind its unavailable-API proxy (which counts the requests), or with a real
//! APIService whose Service is missing, watched by the whole operator.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use operator::Watch;
use operator::{Context, Options};
use serde_json::{json, Value};
use testkit::Cluster;

mod common;

use common::*;

const GV: &str = "custom.metrics.k8s.io/v1beta1";

const TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  metrics: {{ .Capabilities.APIVersions.Has "custom.metrics.k8s.io/v1beta1/MetricValueList" | quote }}
{{- if .Values.metrics }}
---
apiVersion: custom.metrics.k8s.io/v1beta1
kind: MetricValueList
metadata:
  name: {{ .Release.Name }}-metrics
{{- end }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_api_fails_only_the_crs_that_need_it() {
    let (ns, admin) = start();
    let proxy = ns.unavailable_api(GV);
    let client = action::retry::client(proxy.config(ns.name())).expect("client");
    let chart_dir = testkit::write_chart(
        ns.dir(),
        "metrics",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: metrics\nversion: 0.1.0\n",
            ),
            ("templates/all.yaml", TEMPLATE),
        ],
    );
    let chart = chart::loader::load(&chart_dir).expect("chart");
    let watch = Watch {
        chart: chart_dir,
        ..watch()
    };
    let ctx = Arc::new(
        Context::new(client.clone(), Arc::new(watch), Arc::new(chart), resource())
            .expect("context")
            .with_reconcile_period(Some(Duration::from_secs(600))),
    );

    create_cr(&admin, "plain", json!({})).await;
    run(&ctx, "plain").await.expect("deploys");
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::default_namespaced(admin.clone());
    let cm = cms.get("plain-cfg").await.expect("deployed");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("metrics")
            .map(String::as_str),
        Some("false")
    );
    let cr = get_cr(&admin, "plain").await;
    assert_eq!(
        condition_in(&cr.data["status"], "Deployed").map(|c| c.0),
        Some("True".into())
    );

    create_cr(&admin, "needs-metrics", json!({"metrics": true})).await;
    let err = run(&ctx, "needs-metrics")
        .await
        .expect_err("needs the unavailable API");
    assert!(release::api_error::chain(&err).contains(GV), "{err}");
    let cr: DynamicObject = get_cr(&admin, "needs-metrics").await;
    let (status, reason, message) =
        condition_in(&cr.data["status"], "ReleaseFailed").expect("ReleaseFailed");
    assert_eq!((status.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(message.contains("is unavailable"), "{message}");
    assert!(
        message.contains("APIService v1beta1.custom.metrics.k8s.io"),
        "{message}"
    );

    // Reconciles go on without asking the unavailable API again before the refresh.
    for _ in 0..3 {
        run(&ctx, "plain").await.expect("still deploys");
        run(&ctx, "needs-metrics").await.expect_err("still fails");
    }
    assert_eq!(proxy.requests(), 1, "one request per discovery refresh");
}

/// Generous: the embedded server and a debug build on a shared machine.
const WAIT: Duration = Duration::from_secs(60);

/// Polls `check` until it gives `Some`, failing the test after [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The whole operator (watches, dependent watches, reconciles) on a cluster where a real
/// APIService of the test's own group is unavailable: a CR deploys as usual, and a CR
/// whose release needs one of its kinds fails with a condition naming the API and its
/// APIService. How long the first CR took to deploy is printed, not judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_deploys_beside_a_real_unavailable_apiservice() {
    let ns = Cluster::start().namespace("unavailable-apiservice-op");
    let gv = format!("{}.metrics.rudder.dev/v1beta1", ns.name());
    let apiservice = ns.unavailable_apiservice(&gv);
    let admin = ns.client();

    // A kind of the test's own, whose chart needs the unavailable API when asked to.
    let group = format!("{}.test.rudder.dev", ns.name());
    let crd = testkit::crd::open_crd(&group, "v1", "Metered");
    ns.delete_on_teardown(testkit::crd::crd_resource(), &format!("metereds.{group}"));
    let resource = testkit::crd::install_crd(&admin, &crd).await;
    let chart_dir = testkit::write_chart(
        ns.dir(),
        "metrics",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: metrics\nversion: 0.1.0\n",
            ),
            ("templates/all.yaml", &TEMPLATE.replace(GV, &gv)),
        ],
    );
    let watches = ns.dir().join("watches.yaml");
    std::fs::write(
        &watches,
        format!(
            "- group: {group}\n  version: v1\n  kind: Metered\n  chart: {}\n  reconcilePeriod: 1h\n",
            chart_dir.display()
        ),
    )
    .expect("write watches.yaml");
    let mut config = ns.cluster().config().clone();
    config.default_namespace = ns.name().to_string();
    let client = action::retry::client(config).expect("client");
    let options = Options {
        watches_file: watches,
        watch_namespaces: vec![ns.name().into()],
        reconcile_period: Duration::from_secs(3600),
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        shutdown_timeout: Duration::from_secs(30),
        ..Options::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let operator = tokio::spawn(operator::run_with_shutdown(client, options, async move {
        let _ = stopped.await;
    }));

    let crs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), ns.name(), &resource);
    let create = |name: &str, spec: Value| {
        serde_json::from_value::<DynamicObject>(json!({
            "apiVersion": format!("{group}/v1"), "kind": "Metered",
            "metadata": {"name": name}, "spec": spec,
        }))
        .expect("CR")
    };
    let started = Instant::now();
    crs.create(&PostParams::default(), &create("plain", json!({})))
        .await
        .expect("create CR");
    let condition = |cr: &DynamicObject, t: &str| condition_in(&cr.data["status"], t);
    wait_for("plain to be deployed", || {
        let crs = crs.clone();
        async move {
            let cr = crs.get("plain").await.ok()?;
            (condition(&cr, "Deployed")?.0 == "True").then_some(())
        }
    })
    .await;
    let took = started.elapsed();
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(admin.clone(), ns.name());
    let cm = cms.get("plain-cfg").await.expect("deployed");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("metrics")
            .map(String::as_str),
        Some("false")
    );

    crs.create(
        &PostParams::default(),
        &create("needs-metrics", json!({"metrics": true})),
    )
    .await
    .expect("create CR");
    let (status, reason, message) = wait_for("needs-metrics to fail", || {
        let crs = crs.clone();
        async move {
            let cr = crs.get("needs-metrics").await.ok()?;
            condition(&cr, "ReleaseFailed").filter(|c| c.0 == "True")
        }
    })
    .await;
    assert_eq!((status.as_str(), reason.as_str()), ("True", "InstallError"));
    assert!(message.contains(&gv), "{message}");
    assert!(message.contains("is unavailable"), "{message}");
    assert!(
        message.contains(&format!("APIService {apiservice}")),
        "{message}"
    );
    // The first CR is untouched by the second's failure.
    let plain = crs.get("plain").await.expect("plain");
    assert_eq!(
        condition(&plain, "Deployed").map(|c| c.0),
        Some("True".into())
    );

    let _ = stop.send(());
    tokio::time::timeout(WAIT, operator)
        .await
        .expect("the operator stops")
        .expect("the operator task does not panic")
        .expect("the operator ends cleanly");
    eprintln!("a CR deployed {took:?} after its creation with {apiservice} unavailable");
}
