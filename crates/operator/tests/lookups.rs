//! Charts that `lookup` what they create themselves install as exactly one revision
//! and stay there while idle: after the install the lookup finds the chart's own
//! Secret, so what the lookups return changed, but the release renders as deployed
//! (the generated password is reused), and the operator only records the new lookups
//! digest on the deployed record. Checked with a chart that keeps a generated password
//! the Bitnami way (`lookup` of its own Secret, `randAlphaNum` otherwise) and with the
//! shared corpus' `nginx` chart (Bitnami's, which keeps its generated TLS certificate
//! so), with the whole operator running at a 1 s reconcile period; the idle periods'
//! requests are counted on the wire: one render and no record write per period.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::watch_run::WatchRun;
use common::{counting_client, create_cr, get_cr, revisions, start, Seen};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use kube::Client;
use serde_json::json;
use testkit::eventually;

/// How often the running operator reconciles each CR.
const PERIOD: Duration = Duration::from_secs(1);
const WAIT: Duration = Duration::from_secs(120);

async fn secret_data(client: &Client, name: &str) -> Option<Vec<(String, Vec<u8>)>> {
    let secret = Api::<Secret>::default_namespaced(client.clone())
        .get_opt(name)
        .await
        .ok()??;
    Some(secret.data?.into_iter().map(|(k, v)| (k, v.0)).collect())
}

/// `action::renders()` counts for the whole process: one test at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Installs `chart` for CR `app` with the operator running, and checks: one revision,
/// deployed, staying so over several periods; the Secret `secret` keeps its data; an
/// idle stretch renders at most once a period and writes no record.
async fn one_revision_and_steady(chart: &Path, spec: serde_json::Value, secret: &str) {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (ns, plain) = start();
    let seen: Seen = Arc::default();
    let client = counting_client(plain.clone(), seen.clone());
    let op = WatchRun::start(&client, ns.dir(), chart, PERIOD);
    create_cr(&plain, "app", spec).await;
    eventually(WAIT, || {
        let plain = plain.clone();
        async move {
            let cr = get_cr(&plain, "app").await;
            let status = cr.data.get("status")?.clone();
            let ready = common::condition_in(&status, "Ready")?;
            (ready.0 == "True").then_some(())
        }
    })
    .await;
    let generated = secret_data(&plain, secret)
        .await
        .expect("the chart's Secret");
    assert_eq!(
        revisions(&plain, "app").await,
        [(1, "deployed".to_string())]
    );

    // Several periods: every one renders to compare what the lookups return.
    tokio::time::sleep(PERIOD * 6).await;
    assert_eq!(
        revisions(&plain, "app").await,
        [(1, "deployed".to_string())],
        "the install stays the only revision"
    );
    assert_eq!(
        secret_data(&plain, secret).await.as_ref(),
        Some(&generated),
        "the generated values are kept"
    );

    // Idle: the new lookups digest is on the record by now; nothing more is written.
    seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let renders = action::renders();
    let idle = Instant::now();
    tokio::time::sleep(PERIOD * 5).await;
    let rendered = action::renders() - renders;
    let periods = idle.elapsed().as_secs_f64() / PERIOD.as_secs_f64();
    let requests = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    eprintln!(
        "idle for {periods:.1} periods: {rendered} render(s), {} request(s)",
        requests.len()
    );
    let record_writes: Vec<_> = requests
        .iter()
        .filter(|(m, p)| {
            let record = p.contains("/secrets/sh.helm.release.v1.") || p.ends_with("/secrets");
            // Taking and giving back the release lock patches the newest record's
            // annotations; anything else is a record written.
            record && m != "GET" && m != "PATCH"
        })
        .collect();
    assert!(
        record_writes.is_empty(),
        "idle periods write no record: {record_writes:?}"
    );
    let status_writes: Vec<_> = requests
        .iter()
        .filter(|(m, p)| m != "GET" && p.ends_with("/status"))
        .collect();
    assert!(
        status_writes.is_empty(),
        "nor the status: {status_writes:?}"
    );
    assert!(
        (rendered as f64) <= periods.ceil() + 1.0,
        "at most one render per period: {rendered} in {periods:.1}"
    );
    assert_eq!(
        revisions(&plain, "app").await,
        [(1, "deployed".to_string())]
    );
    op.stop(Duration::from_secs(30)).await;
}

/// A generated password kept the Bitnami way.
const BITNAMI_STYLE: &str = r#"{{- $name := printf "%s-auth" .Release.Name }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ $name }}
type: Opaque
data:
  {{- if $existing }}
  password: {{ index $existing.data "password" }}
  {{- else }}
  password: {{ randAlphaNum 16 | b64enc }}
  {{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  greeting: {{ .Values.greeting | default "hello" | quote }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_keeping_a_generated_password_installs_as_one_revision() {
    let chart = testkit::ChartDir::new(
        "keeps-password",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: keeps-password\nversion: 0.1.0\n",
            ),
            ("templates/secret.yaml", BITNAMI_STYLE),
        ],
    );
    one_revision_and_steady(chart.path(), json!({"greeting": "hi"}), "app-auth").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_nginx_chart_installs_as_one_revision() {
    let Some(shared) = testkit::tools::shared_dir() else {
        return;
    };
    let chart = shared.join("corpus/charts/nginx");
    assert!(chart.is_dir(), "{} is missing", chart.display());
    // Its TLS Secret (`<release>-nginx-tls`, generated certificate) is what it looks up.
    one_revision_and_steady(&chart, json!({}), "app-nginx-tls").await;
}
