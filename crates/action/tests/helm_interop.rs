//! The real Helm engine (v4, from the `helm_python` wheel) sees a release we installed:
//! it lists it as deployed, reads its status, and can uninstall it.
//!
//! Needs `python3` with `helm_python` (`/work/shared/tools/install-oracle.sh`); skipped
//! with a message otherwise. Set `RUDDER_PYTHON` to pick the interpreter.

use std::path::Path;
use std::process::Command;

use apiserver::{Config, Server};
use action::ActionOptions;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::{Map, Value};

const SCRIPT: &str = r#"
import json, sys, helm_python
kubeconfig, step = sys.argv[1], sys.argv[2]
cfg = helm_python.Config(kubeconfig_path=kubeconfig, namespace="default", storage_driver="secret")
out = {}
if step == "read":
    out["list"] = [[r["name"], r["status"]] for r in cfg.list()]
    out["status"] = cfg.status("interop")["status"]
    out["history"] = len(cfg.history("interop"))
elif step == "uninstall":
    cfg.uninstall("interop", wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list()]
print(json.dumps(out))
"#;

fn python() -> Option<String> {
    let py = std::env::var("RUDDER_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&py)
        .args(["-c", "import helm_python"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some(py)
}

fn helm(py: &str, kubeconfig: &Path, step: &str) -> Value {
    let out = Command::new(py)
        .args(["-c", SCRIPT])
        .arg(kubeconfig)
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
async fn helm_reads_and_uninstalls_our_release() {
    let Some(py) = python() else {
        eprintln!("SKIPPED helm_reads_and_uninstalls_our_release: python3 with helm_python not found (run /work/shared/tools/install-oracle.sh)");
        return;
    };
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let client = server.client().expect("client");
    let dir = server
        .kubeconfig_path()
        .parent()
        .expect("dir")
        .to_path_buf();
    let chart_dir = dir.join("interop-chart");
    std::fs::create_dir_all(chart_dir.join("templates")).expect("chart dir");
    std::fs::write(
        chart_dir.join("Chart.yaml"),
        "apiVersion: v2\nname: interop\nversion: 0.2.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart_dir.join("values.yaml"), "greeting: hi\n").expect("values");
    std::fs::write(
        chart_dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    )
    .expect("template");
    let chart = chart::loader::load(&chart_dir).expect("chart loads");

    action::install(
        client.clone(),
        chart,
        Map::new(),
        &ActionOptions::new("interop", "default"),
    )
    .await
    .expect("install");

    let kc = server.kubeconfig_path().to_path_buf();
    let (py2, kc2) = (py.clone(), kc.clone());
    let read = tokio::task::spawn_blocking(move || helm(&py2, &kc2, "read"))
        .await
        .expect("helm read");
    assert_eq!(
        read["list"],
        serde_json::json!([["interop", "deployed"]]),
        "{read}"
    );
    assert_eq!(read["status"], "deployed", "{read}");
    assert_eq!(read["history"], 1, "{read}");

    let gone = tokio::task::spawn_blocking(move || helm(&py, &kc, "uninstall"))
        .await
        .expect("helm uninstall");
    assert_eq!(gone["list"], serde_json::json!([]), "{gone}");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(cms.get_opt("interop-cfg").await.expect("read").is_none());
    server.stop().await;
}
