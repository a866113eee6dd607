//! Real Helm (v4, through the helm-python-sdk wheel, which embeds Helm's
//! Go code and client-go) installing, upgrading, listing and uninstalling a
//! small chart against the embedded server over HTTPS. Skipped with a message when
//! Python or the wheel is missing (install it with
//! `/work/shared/tools/install-oracle.sh`).

use apiserver::{Config, Server};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use std::path::Path;
use std::process::Command;

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

fn helm_available() -> bool {
    Command::new(python())
        .args(["-c", "import helm_python"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

const SCRIPT: &str = r#"
import json, sys, helm_python
kubeconfig, chart, step = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = helm_python.Config(kubeconfig_path=kubeconfig, namespace="apps", storage_driver="secret")
out = {}
if step == "install":
    cfg.install(chart, "demo", {"replicas": 2}, create_namespace=True, wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list()]
    out["status"] = cfg.status("demo")["status"]
elif step == "upgrade":
    cfg.upgrade(chart, "demo", {"replicas": 3}, wait="watcher", timeout=60)
    out["history"] = len(cfg.history("demo"))
elif step == "uninstall":
    cfg.uninstall("demo", wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list()]
print(json.dumps(out))
"#;

const TEMPLATES: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  replicas: "{{ .Values.replicas }}"
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-svc
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
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
"#;

fn run_step(kubeconfig: &Path, chart: &Path, step: &str) -> serde_json::Value {
    let out = Command::new(python())
        .args(["-c", SCRIPT])
        .arg(kubeconfig)
        .arg(chart)
        .arg(step)
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
async fn helm_install_upgrade_uninstall() {
    if !helm_available() {
        eprintln!("SKIPPED helm_install_upgrade_uninstall: python module helm_python not found (run /work/shared/tools/install-oracle.sh)");
        return;
    }
    // Over HTTPS: Helm (client-go) must verify the server through the CA
    // in the kubeconfig.
    let server = Server::start(Config {
        simulate_readiness: true,
        tls: true,
        ..Config::default()
    })
    .await
    .unwrap();
    let dir = server.kubeconfig_path().parent().unwrap().to_path_buf();
    let chart = dir.join("demo");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "replicas: 1\n").unwrap();
    std::fs::write(chart.join("templates/all.yaml"), TEMPLATES).unwrap();
    let kc = server.kubeconfig_path().to_path_buf();

    let (kc2, chart2) = (kc.clone(), chart.clone());
    let out = tokio::task::spawn_blocking(move || run_step(&kc2, &chart2, "install"))
        .await
        .unwrap();
    assert_eq!(out["list"], serde_json::json!(["demo"]));
    assert_eq!(out["status"], "deployed");

    let client = server.client().unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "apps");
    let rel = secrets
        .list(&ListParams::default().labels("owner=helm,name=demo"))
        .await
        .unwrap();
    assert_eq!(rel.items.len(), 1);
    assert_eq!(rel.items[0].type_.as_deref(), Some("helm.sh/release.v1"));
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    assert_eq!(deps.get("demo-web").await.unwrap().spec.replicas, Some(2));

    let (kc2, chart2) = (kc.clone(), chart.clone());
    let out = tokio::task::spawn_blocking(move || run_step(&kc2, &chart2, "upgrade"))
        .await
        .unwrap();
    assert_eq!(out["history"], 2);
    assert_eq!(deps.get("demo-web").await.unwrap().spec.replicas, Some(3));

    let (kc2, chart2) = (kc.clone(), chart.clone());
    let out = tokio::task::spawn_blocking(move || run_step(&kc2, &chart2, "uninstall"))
        .await
        .unwrap();
    assert_eq!(out["list"], serde_json::json!([]));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "apps");
    assert!(cms.get_opt("demo-cfg").await.unwrap().is_none());
    assert!(deps.get_opt("demo-web").await.unwrap().is_none());
    server.stop().await;
}
