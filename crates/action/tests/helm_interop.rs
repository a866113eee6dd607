//! The real Helm engine (v4, from the `helm_python` wheel) sees a release we installed:
//! it lists it as deployed, reads its status, and can uninstall it.
//!
//! Needs `python3` with `helm_python` (`/work/shared/tools/install-oracle.sh`); skipped
//! with a message otherwise. Set `RUDDER_PYTHON` to pick the interpreter.

use std::path::Path;

use action::ActionOptions;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::{Map, Value};
use testkit::{Cluster, Tool};

const SCRIPT: &str = r#"
import json, sys, helm_python
kubeconfig, namespace, step = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = helm_python.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="secret")
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

fn helm(py: &Tool, kubeconfig: &Path, namespace: &str, step: &str) -> Value {
    let out = py
        .command()
        .args(["-c", SCRIPT])
        .arg(kubeconfig)
        .arg(namespace)
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
    let chart = chart::loader::load(&chart_dir).expect("chart loads");

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
    let read = tokio::task::spawn_blocking(move || helm(&py2, &kc2, &ns2, "read"))
        .await
        .expect("helm read");
    assert_eq!(
        read["list"],
        serde_json::json!([["interop", "deployed"]]),
        "{read}"
    );
    assert_eq!(read["status"], "deployed", "{read}");
    assert_eq!(read["history"], 1, "{read}");

    let gone = tokio::task::spawn_blocking(move || helm(&py, &kc, &namespace, "uninstall"))
        .await
        .expect("helm uninstall");
    assert_eq!(gone["list"], serde_json::json!([]), "{gone}");
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    assert!(cms.get_opt("interop-cfg").await.expect("read").is_none());
}
