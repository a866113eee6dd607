//! The real Helm engine (v4, from the `helm_python` wheel) on our cluster: it sees a
//! release we installed (lists it as deployed, reads its status, uninstalls it), and it
//! installs, upgrades and uninstalls its own over HTTPS, client-go verifying the
//! embedded server through the kubeconfig's CA.
//!
//! Needs `python3` with `helm_python` (`/work/shared/tools/install-oracle.sh`); skipped
//! with a message otherwise. Set `RUDDER_PYTHON` to pick the interpreter.

mod common;

use std::path::Path;
use std::sync::Arc;

use action::ActionOptions;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use serde_json::{Map, Value};
use testkit::{Cluster, Tool};

const SCRIPT: &str = r#"
import json, sys, helm_python
kubeconfig, namespace, step, release = sys.argv[1:5]
chart = sys.argv[5] if len(sys.argv) > 5 else None
cfg = helm_python.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="secret")
out = {}
if step == "read":
    out["list"] = [[r["name"], r["status"]] for r in cfg.list()]
    out["status"] = cfg.status(release)["status"]
    out["history"] = len(cfg.history(release))
elif step == "install":
    cfg.install(chart, release, {"replicas": 2}, wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list()]
    out["status"] = cfg.status(release)["status"]
elif step == "upgrade":
    cfg.upgrade(chart, release, {"replicas": 3}, wait="watcher", timeout=60)
    out["history"] = len(cfg.history(release))
elif step == "uninstall":
    cfg.uninstall(release, wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list()]
print(json.dumps(out))
"#;

/// Runs `step` of [`SCRIPT`] on `release` (with `chart` for install and upgrade) and
/// returns its JSON summary.
fn helm(
    py: &Tool,
    kubeconfig: &Path,
    namespace: &str,
    step: &str,
    release: &str,
    chart: Option<&Path>,
) -> Value {
    let out = py
        .command()
        .args(["-c", SCRIPT])
        .arg(kubeconfig)
        .arg(namespace)
        .args([step, release])
        .args(chart)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "helm {step} failed:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("JSON summary")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_reads_and_uninstalls_our_release() {
    let Some(py) = testkit::tools::oracle_python() else {
        return;
    };
    let ns = Cluster::start().namespace("helm-interop");
    let client = ns.client();
    let chart_dir = testkit::write_chart(
        ns.dir(),
        "interop-chart",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: interop\nversion: 0.2.0\n"),
            ("values.yaml", "greeting: hi\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
            ),
        ],
    );
    let chart = Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    action::Install::new(
        &action::ActionConfig::new(client.clone()),
        ActionOptions::new("interop", ns.name()),
    )
    .run(&chart, Map::new())
    .await
    .expect("install");

    let kc = ns.kubeconfig().to_path_buf();
    let namespace = ns.name().to_string();
    let (py2, kc2, ns2) = (py.clone(), kc.clone(), namespace.clone());
    let read = tokio::task::spawn_blocking(move || helm(&py2, &kc2, &ns2, "read", "interop", None))
        .await
        .expect("helm read");
    assert_eq!(
        read["list"],
        serde_json::json!([["interop", "deployed"]]),
        "{read}"
    );
    assert_eq!(read["status"], "deployed", "{read}");
    assert_eq!(read["history"], 1, "{read}");

    let gone = tokio::task::spawn_blocking(move || {
        helm(&py, &kc, &namespace, "uninstall", "interop", None)
    })
    .await
    .expect("helm uninstall");
    assert_eq!(gone["list"], serde_json::json!([]), "{gone}");
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    assert!(cms.get_opt("interop-cfg").await.expect("read").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_installs_upgrades_and_uninstalls_over_https() {
    let Some(py) = testkit::tools::oracle_python() else {
        return;
    };
    let cluster = Cluster::builder().tls(true).start();
    let ns = cluster.namespace("helm-https");
    let client = ns.client();
    let chart = testkit::write_chart(
        ns.dir(),
        "demo",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n"),
            ("values.yaml", "greeting: hi\nreplicas: 1\nservice: true\n"),
            ("templates/all.yaml", common::TEMPLATES),
        ],
    );
    let kc = ns.kubeconfig().to_path_buf();
    let namespace = ns.name().to_string();
    let step = |step: &'static str| {
        let (py, kc, namespace, chart) = (py.clone(), kc.clone(), namespace.clone(), chart.clone());
        tokio::task::spawn_blocking(move || helm(&py, &kc, &namespace, step, "demo", Some(&chart)))
    };

    let out = step("install").await.expect("helm install");
    assert_eq!(out["list"], serde_json::json!(["demo"]), "{out}");
    assert_eq!(out["status"], "deployed", "{out}");
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let records = secrets
        .list(&ListParams::default().labels("owner=helm,name=demo"))
        .await
        .expect("list records");
    assert_eq!(records.items.len(), 1);
    assert_eq!(
        records.items[0].type_.as_deref(),
        Some("helm.sh/release.v1")
    );
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replicas = |d: Deployment| d.spec.replicas;
    assert_eq!(
        replicas(deployments.get("demo-web").await.expect("web")),
        Some(2)
    );

    let out = step("upgrade").await.expect("helm upgrade");
    assert_eq!(out["history"], 2, "{out}");
    assert_eq!(
        replicas(deployments.get("demo-web").await.expect("web")),
        Some(3)
    );

    let out = step("uninstall").await.expect("helm uninstall");
    assert_eq!(out["list"], serde_json::json!([]), "{out}");
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    assert!(cms.get_opt("demo-cfg").await.expect("read").is_none());
    assert!(deployments
        .get_opt("demo-web")
        .await
        .expect("read")
        .is_none());
}
