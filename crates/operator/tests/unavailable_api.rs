//! An aggregated API whose service is down must not hold up the operator: its CRs
//! deploy as usual, the unavailable group version is asked once per discovery refresh
//! however many reconciles render, and only a CR whose release needs one of its kinds
//! fails, with a condition naming the API and its APIService. The cluster is testkit's,
//! behind its unavailable-API proxy.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use operator::Watch;
use operator::{reconcile, Context, Outcome, ReconcileError};
use serde_json::json;

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

async fn run(ctx: &Arc<Context>, name: &str) -> Result<Outcome, ReconcileError> {
    let cr = get_cr(ctx.client(), name).await;
    reconcile(Arc::new(cr.into()), ctx.clone()).await
}

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
    assert!(err.to_string().contains(GV), "{err}");
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
