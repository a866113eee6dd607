//! The Helm-compatible release commands, run as the built `rudder` binary against the
//! test cluster (embedded, or `RUDDER_TEST_KUBECONFIG`'s), each test in a namespace of
//! its own that its kubeconfig defaults to: install, list, status, history, get, upgrade, rollback and
//! uninstall print what Helm prints, fail with Helm's messages, and interoperate with
//! the real Helm (through `helm_python`) in both directions.

mod cli;

use std::path::{Path, PathBuf};
use std::process::Output;

use cli::rudder;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};
use serde_json::Value;
use testkit::{Cluster, TestNamespace, Tool};

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/charts/hello")
}

/// A namespace of the test's own (simulated readiness); its kubeconfig defaults to it.
fn start() -> TestNamespace {
    Cluster::start().namespace("release-cli")
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs and requires success; returns stdout.
async fn ok(kc: &Path, args: &[&str]) -> String {
    let o = rudder(kc, args).await;
    let (out, err) = text(&o);
    assert!(
        o.status.success(),
        "rudder {args:?} failed ({})\nstdout:\n{out}\nstderr:\n{err}",
        o.status
    );
    out
}

/// Runs and requires exit code 1; returns stderr.
async fn fails(kc: &Path, args: &[&str]) -> String {
    let o = rudder(kc, args).await;
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "rudder {args:?} should fail\nstdout:\n{out}\nstderr:\n{err}"
    );
    err
}

/// Table rows split on the tab separator, cells trimmed.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split('\t').map(|c| c.trim().to_string()).collect())
        .collect()
}

async fn replicas(client: &kube::Client, name: &str) -> Option<i32> {
    let api: Api<Deployment> = Api::default_namespaced(client.clone());
    api.get_opt(name)
        .await
        .expect("read Deployment")
        .and_then(|d| d.spec.replicas)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_read_upgrade_rollback_uninstall() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");

    let out = ok(&kc, &["install", "web", chart]).await;
    for line in [
        "NAME: web\n",
        &format!("NAMESPACE: {}\n", ns.name()),
        "STATUS: deployed\n",
        "REVISION: 1\n",
        "DESCRIPTION: Install complete\n",
        "TEST SUITE: None\n",
        "NOTES:\nweb-hello serves \"Hello from rudder\" on port 80.\n",
    ] {
        assert!(out.contains(line), "install output lacks {line:?}:\n{out}");
    }
    assert!(out.contains("LAST DEPLOYED: "), "{out}");
    assert_eq!(replicas(&client, "web-hello").await, Some(1));

    // list: Helm's columns, one row.
    let table = rows(&ok(&kc, &["list"]).await);
    assert_eq!(
        table[0],
        [
            "NAME",
            "NAMESPACE",
            "REVISION",
            "UPDATED",
            "STATUS",
            "CHART",
            "APP VERSION"
        ]
    );
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(
        [
            &table[1][0],
            &table[1][1],
            &table[1][2],
            &table[1][4],
            &table[1][5],
            &table[1][6]
        ],
        ["web", ns.name(), "1", "deployed", "hello-0.1.0", "1.27.0"]
    );
    assert!(table[1][3].ends_with(" +0000 UTC"), "{table:?}");
    let listed: Value =
        serde_json::from_str(&ok(&kc, &["list", "-o", "json"]).await).expect("JSON");
    assert_eq!(listed[0]["name"], "web");
    assert_eq!(listed[0]["revision"], "1");
    assert_eq!(listed[0]["app_version"], "1.27.0");
    let listed = ok(&kc, &["ls", "-o", "yaml"]).await;
    assert!(
        listed.starts_with("- app_version: 1.27.0\n  chart: hello-0.1.0\n"),
        "{listed}"
    );

    // status as JSON is the record without its chart.
    let st: Value =
        serde_json::from_str(&ok(&kc, &["status", "web", "-o", "json"]).await).expect("JSON");
    assert_eq!(st["info"]["status"], "deployed");
    assert_eq!(st["version"], 1);
    assert!(st.get("chart").is_none(), "{st}");

    let hist = rows(&ok(&kc, &["history", "web"]).await);
    assert_eq!(
        hist[0],
        [
            "REVISION",
            "UPDATED",
            "STATUS",
            "CHART",
            "APP VERSION",
            "DESCRIPTION"
        ]
    );
    assert_eq!(
        [&hist[1][0], &hist[1][2], &hist[1][3], &hist[1][5]],
        ["1", "deployed", "hello-0.1.0", "Install complete"]
    );

    assert_eq!(
        ok(&kc, &["get", "values", "web"]).await,
        "USER-SUPPLIED VALUES:\nnull\n"
    );
    let all = ok(&kc, &["get", "values", "web", "--all"]).await;
    assert!(all.starts_with("COMPUTED VALUES:\n"), "{all}");
    assert!(all.contains("message: Hello from rudder\n"), "{all}");
    let manifest = ok(&kc, &["get", "manifest", "web"]).await;
    assert!(
        manifest.contains("# Source: hello/templates/deployment.yaml\n"),
        "{manifest}"
    );
    assert!(manifest.contains("kind: Deployment"), "{manifest}");

    // upgrade with --set: revision 2, the value reaches the cluster.
    let out = ok(&kc, &["upgrade", "web", chart, "--set", "replicaCount=3"]).await;
    assert!(
        out.starts_with("Release \"web\" has been upgraded. Happy Helming!\nNAME: web\n"),
        "{out}"
    );
    assert!(out.contains("REVISION: 2\n"), "{out}");
    assert_eq!(replicas(&client, "web-hello").await, Some(3));
    assert_eq!(
        ok(&kc, &["get", "values", "web"]).await,
        "USER-SUPPLIED VALUES:\nreplicaCount: 3\n"
    );
    let v1: Value = serde_json::from_str(
        &ok(
            &kc,
            &["get", "values", "web", "--revision", "1", "-o", "json"],
        )
        .await,
    )
    .expect("JSON");
    assert_eq!(v1, Value::Null);

    // An upgrade without values keeps the last ones, like Helm.
    ok(&kc, &["upgrade", "web", chart, "--set", "message=hi"]).await;
    ok(&kc, &["upgrade", "web", chart]).await;
    assert_eq!(
        ok(&kc, &["get", "values", "web", "-o", "json"]).await,
        "{\"message\":\"hi\"}\n"
    );

    // rollback to 2: revision 5, replicas back to 3 and message back to the default.
    let out = ok(&kc, &["rollback", "web", "2"]).await;
    assert_eq!(out, "Rollback was a success! Happy Helming!\n");
    assert_eq!(replicas(&client, "web-hello").await, Some(3));
    let hist: Value =
        serde_json::from_str(&ok(&kc, &["history", "web", "-o", "json"]).await).expect("JSON");
    let statuses: Vec<_> = hist
        .as_array()
        .expect("array")
        .iter()
        .map(|h| {
            (
                h["revision"].as_i64().unwrap_or(0),
                h["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (1, "superseded".to_string()),
            (2, "superseded".to_string()),
            (3, "superseded".to_string()),
            (4, "superseded".to_string()),
            (5, "deployed".to_string())
        ]
    );
    assert_eq!(hist[4]["description"], "Rollback to 2");
    // Superseding changes only the status; Helm keeps each revision's description.
    assert_eq!(hist[0]["description"], "Install complete");
    assert_eq!(hist[1]["description"], "Upgrade complete");
    let newest_two = rows(&ok(&kc, &["history", "web", "--max", "2"]).await);
    assert_eq!(newest_two.len(), 3, "{newest_two:?}");
    assert_eq!(newest_two[1][0], "4");
    let st = ok(&kc, &["status", "web", "--revision", "2"]).await;
    assert!(st.contains("STATUS: superseded\nREVISION: 2\n"), "{st}");

    // uninstall: objects and records gone.
    assert_eq!(
        ok(&kc, &["uninstall", "web"]).await,
        "release \"web\" uninstalled\n"
    );
    assert_eq!(replicas(&client, "web-hello").await, None);
    assert_eq!(rows(&ok(&kc, &["list", "--all"]).await).len(), 1);
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let left = secrets
        .list(&ListParams::default().labels("owner=helm"))
        .await
        .expect("list");
    assert!(left.items.is_empty());
}

/// A chart whose `claim: true` adds a PVC of a storage class no cluster has, so it
/// never binds.
fn write_claim_chart(dir: &Path) -> PathBuf {
    let chart = dir.join("claims");
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: claims\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart.join("values.yaml"), "claim: false\nmessage: one\n").expect("values");
    std::fs::write(
        chart.join("templates/all.yaml"),
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  message: {{ .Values.message | quote }}
{{- if .Values.claim }}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: {{ .Release.Name }}-data
spec:
  storageClassName: rudder-test-never-binds
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
{{- end }}
"#,
    )
    .expect("template");
    chart
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_upgrade_that_never_becomes_ready_rolls_back() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = write_claim_chart(ns.dir());
    let chart = chart.to_str().expect("utf-8 path");
    ok(&kc, &["install", "vol", chart]).await;

    let err = fails(
        &kc,
        &[
            "upgrade",
            "vol",
            chart,
            "--atomic",
            "--timeout",
            "2s",
            "--set",
            "claim=true",
            "--set",
            "message=two",
        ],
    )
    .await;
    assert!(err.contains("UPGRADE FAILED"), "{err}");
    assert!(err.contains("rolled back to revision 1"), "{err}");
    assert!(err.contains("PersistentVolumeClaim"), "{err}");

    // Revision 2 failed, revision 3 is the rollback to 1, deployed.
    let hist: Value =
        serde_json::from_str(&ok(&kc, &["history", "vol", "-o", "json"]).await).expect("JSON");
    let summary: Vec<_> = hist
        .as_array()
        .expect("array")
        .iter()
        .map(|h| {
            (
                h["revision"].as_i64().unwrap_or(0),
                h["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (1, "superseded".to_string()),
            (2, "failed".to_string()),
            (3, "deployed".to_string())
        ]
    );
    assert_eq!(hist[2]["description"], "Rollback to 1");
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = cms.get("vol-cfg").await.expect("ConfigMap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("message")
            .map(String::as_str),
        Some("one")
    );
    let pvcs: Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        Api::default_namespaced(client.clone());
    assert!(pvcs.get_opt("vol-data").await.expect("read").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_worded_like_helm() {
    let ns = start();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");

    let err = fails(&kc, &["install", "x", "/nonexistent/chart"]).await;
    assert_eq!(
        err,
        "Error: INSTALLATION FAILED: path \"/nonexistent/chart\" not found\n"
    );
    let err = fails(&kc, &["install", chart]).await;
    assert_eq!(
        err,
        "Error: INSTALLATION FAILED: must either provide a name or specify --generate-name\n"
    );
    assert_eq!(
        fails(&kc, &["status", "nope"]).await,
        "Error: release: not found\n"
    );
    assert_eq!(
        fails(&kc, &["history", "nope"]).await,
        "Error: release: not found\n"
    );
    assert_eq!(
        fails(&kc, &["get", "values", "nope"]).await,
        "Error: release: not found\n"
    );
    assert_eq!(
        fails(&kc, &["rollback", "nope"]).await,
        "Error: release: not found\n"
    );
    assert_eq!(
        fails(&kc, &["upgrade", "nope", chart]).await,
        "Error: UPGRADE FAILED: \"nope\" has no deployed releases\n"
    );
    assert_eq!(
        fails(&kc, &["uninstall", "nope"]).await,
        "Error: uninstall: Release not loaded: nope: release: not found\n"
    );
    ok(&kc, &["uninstall", "nope", "--ignore-not-found"]).await;

    ok(&kc, &["install", "twice", chart]).await;
    assert_eq!(
        fails(&kc, &["install", "twice", chart]).await,
        "Error: INSTALLATION FAILED: cannot re-use a name that is still in use\n"
    );
    assert_eq!(
        fails(&kc, &["rollback", "twice", "7"]).await,
        "Error: release has no 7 version\n"
    );
    let err = fails(
        &kc,
        &["upgrade", "twice", chart, "--set", "replicaCount=many"],
    )
    .await;
    assert!(err.starts_with("Error: UPGRADE FAILED: "), "{err}");
    // A flag error is a usage error (clap's exit code 2), naming the value.
    let o = rudder(&kc, &["install", "t2", chart, "--timeout", "5 minutes"]).await;
    assert!(!o.status.success());
    assert!(
        text(&o).1.contains("invalid duration \"5 minutes\""),
        "{:?}",
        text(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_generate_name_namespaces_and_upgrade_install() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let records = || async {
        secrets
            .list(&ListParams::default().labels("owner=helm"))
            .await
            .expect("list")
            .items
            .len()
    };

    // --dry-run renders and writes nothing.
    let out = ok(
        &kc,
        &["install", "dry", chart, "--dry-run", "--set", "message=dry"],
    )
    .await;
    assert!(out.contains("STATUS: pending-install\n"), "{out}");
    assert!(out.contains("DESCRIPTION: Dry run complete\n"), "{out}");
    assert!(
        out.contains("MANIFEST:\n---\n# Source: hello/templates/"),
        "{out}"
    );
    assert!(out.contains("<h1>dry</h1>"), "{out}");
    assert_eq!(records().await, 0);

    // upgrade --install of a missing release installs it.
    let out = ok(
        &kc,
        &[
            "upgrade",
            "--install",
            "ui",
            chart,
            "--wait",
            "--timeout",
            "60s",
        ],
    )
    .await;
    assert!(
        out.starts_with("Release \"ui\" does not exist. Installing it now.\nNAME: ui\n"),
        "{out}"
    );
    assert!(out.contains("REVISION: 1\n"), "{out}");

    // upgrade --dry-run says whether anything would change and writes nothing.
    let before = records().await;
    let out = ok(
        &kc,
        &["upgrade", "ui", chart, "--dry-run", "--set", "message=new"],
    )
    .await;
    assert!(
        out.starts_with("Release \"ui\" would change (dry run"),
        "{out}"
    );
    assert!(out.contains("<h1>new</h1>"), "{out}");
    assert_eq!(records().await, before);
    let out = ok(&kc, &["upgrade", "ui", chart, "--dry-run"]).await;
    assert!(
        out.starts_with("Release \"ui\" is up to date: the upgrade would change nothing"),
        "{out}"
    );

    // Another namespace, created on demand (and deleted with the test's); list -A sees
    // both.
    let team = format!("{}-team", ns.name());
    ns.delete_on_teardown(
        kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()),
        &team,
    );
    ok(
        &kc,
        &[
            "install",
            "other",
            chart,
            "-n",
            &team,
            "--create-namespace",
            "--labels",
            "team=a",
        ],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &team);
    assert!(cms.get_opt("other-hello").await.expect("read").is_some());
    let table = rows(&ok(&kc, &["list", "-A"]).await);
    // (Only this test's namespaces: a shared cluster has other releases.)
    let names: Vec<(&str, &str)> = table[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .filter(|(_, n)| *n == team || *n == ns.name())
        .collect();
    assert_eq!(names, [("other", team.as_str()), ("ui", ns.name())]);
    let only_default = rows(&ok(&kc, &["list"]).await);
    assert_eq!(only_default.len(), 2, "{only_default:?}");
    let rec = Api::<Secret>::namespaced(client.clone(), &team)
        .get("sh.helm.release.v1.other.v1")
        .await
        .expect("record");
    assert_eq!(
        rec.metadata
            .labels
            .and_then(|l| l.get("team").cloned())
            .as_deref(),
        Some("a")
    );

    // --generate-name: <chart>-<seconds>.
    let out = ok(&kc, &["install", "--generate-name", chart]).await;
    let name = out
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("NAME: "))
        .expect("NAME line")
        .to_string();
    assert!(name.starts_with("hello-"), "{name}");
    assert!(
        name["hello-".len()..].chars().all(|c| c.is_ascii_digit()),
        "{name}"
    );

    // --keep-history leaves an uninstalled record that list --uninstalled shows.
    ok(&kc, &["uninstall", "ui", "--keep-history"]).await;
    let table = rows(&ok(&kc, &["list", "--uninstalled"]).await);
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!(table[1][4], "uninstalled");
}

// ---------------------------------------------------------------------------
// Interop with the real Helm (helm_python, Helm v4's own Go code).

const HELM_SCRIPT: &str = r#"
import json, sys, helm_python
kubeconfig, namespace, step, name = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cfg = helm_python.Config(kubeconfig_path=kubeconfig, namespace=namespace, storage_driver="secret")
out = {}
rev = lambda r: int(r.get("revision", r.get("version", 0)))
st = lambda r: r.get("status") or r.get("info", {}).get("status")
if step == "install":
    r = cfg.install(sys.argv[5], name, {"message": "from helm"}, timeout=60)
    out["status"] = st(r)
elif step == "read":
    out["list"] = [[r["name"], rev(r), st(r)] for r in cfg.list(all_states=True)]
    try:
        out["history"] = [[rev(r), st(r)] for r in cfg.history(name)]
    except Exception:
        out["history"] = None
elif step == "uninstall":
    cfg.uninstall(name, wait="watcher", timeout=60)
    out["list"] = [r["name"] for r in cfg.list(all_states=True)]
print(json.dumps(out))
"#;

async fn helm(py: &Tool, ns: &TestNamespace, step: &str, name: &str, extra: &[&str]) -> Value {
    let out = tokio::process::Command::from(py.command())
        .args(["-c", HELM_SCRIPT])
        .arg(ns.kubeconfig())
        .args([ns.name(), step, name])
        .args(extra)
        .output()
        .await
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "helm {step} {name} failed:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).expect("JSON summary")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_and_rudder_act_on_each_others_releases() {
    let Some(py) = testkit::tools::oracle_python() else {
        return;
    };
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");

    // rudder installs, Helm lists, reads history and uninstalls.
    ok(&kc, &["install", "ours", chart]).await;
    ok(&kc, &["upgrade", "ours", chart, "--set", "replicaCount=2"]).await;
    let read = helm(&py, &ns, "read", "ours", &[]).await;
    assert_eq!(
        read["list"],
        serde_json::json!([["ours", 2, "deployed"]]),
        "{read}"
    );
    assert_eq!(
        read["history"],
        serde_json::json!([[1, "superseded"], [2, "deployed"]]),
        "{read}"
    );
    let gone = helm(&py, &ns, "uninstall", "ours", &[]).await;
    assert_eq!(gone["list"], serde_json::json!([]), "{gone}");
    assert_eq!(replicas(&client, "ours-hello").await, None);

    // Helm installs, rudder reads, upgrades and uninstalls.
    let inst = helm(&py, &ns, "install", "theirs", &[chart]).await;
    assert_eq!(inst["status"], "deployed", "{inst}");
    let table = rows(&ok(&kc, &["list"]).await);
    assert_eq!(table[1][0], "theirs");
    assert_eq!(table[1][4], "deployed");
    assert_eq!(
        ok(&kc, &["get", "values", "theirs"]).await,
        "USER-SUPPLIED VALUES:\nmessage: from helm\n"
    );
    let out = ok(
        &kc,
        &[
            "upgrade",
            "theirs",
            chart,
            "--reuse-values",
            "--set",
            "replicaCount=2",
        ],
    )
    .await;
    assert!(out.contains("REVISION: 2\n"), "{out}");
    assert_eq!(replicas(&client, "theirs-hello").await, Some(2));
    let read = helm(&py, &ns, "read", "theirs", &[]).await;
    assert_eq!(
        read["history"],
        serde_json::json!([[1, "superseded"], [2, "deployed"]]),
        "{read}"
    );
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = cms.get("theirs-hello").await.expect("ConfigMap");
    assert!(
        cm.data
            .and_then(|d| d.get("index.html").cloned())
            .is_some_and(|h| h.contains("from helm")),
        "--reuse-values kept Helm's values"
    );
    assert_eq!(
        ok(&kc, &["uninstall", "theirs"]).await,
        "release \"theirs\" uninstalled\n"
    );
    assert_eq!(replicas(&client, "theirs-hello").await, None);
    let read = helm(&py, &ns, "read", "x", &[]).await;
    assert_eq!(read["list"], serde_json::json!([]), "{read}");
}

/// A chart of one ConfigMap, `<release>-data`, whose `data` is the given
/// template lines.
fn write_data_chart(dir: &Path, name: &str, values: &str, data: &str) -> PathBuf {
    let chart = dir.join(name);
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: data\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(chart.join("values.yaml"), values).expect("values");
    std::fs::write(
        chart.join("templates/cm.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}-data\ndata:\n{data}"
        ),
    )
    .expect("template");
    chart
}

async fn config_data(client: &kube::Client, name: &str) -> Value {
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm = api.get(name).await.expect("ConfigMap exists");
    serde_json::to_value(cm.data.unwrap_or_default()).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_server_lets_lookup_see_the_cluster() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = write_data_chart(
        ns.dir(),
        "peek",
        "{}\n",
        "  seen: {{ dig \"data\" \"k\" \"none\" (lookup \"v1\" \"ConfigMap\" .Release.Namespace \"existing\") | quote }}\n",
    );
    let chart = chart.to_str().expect("utf-8 path");
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let existing: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "existing"},
        "data": {"k": "live"}
    }))
    .expect("ConfigMap");
    api.create(&Default::default(), &existing)
        .await
        .expect("create ConfigMap");

    // Helm: client mode makes no cluster connections, server mode may.
    let out = ok(&kc, &["install", "peek", chart, "--dry-run"]).await;
    assert!(out.contains("seen: \"none\""), "{out}");
    let out = ok(&kc, &["install", "peek", chart, "--dry-run=server"]).await;
    assert!(out.contains("seen: \"live\""), "{out}");
    ok(&kc, &["install", "peek", chart]).await;
    let out = ok(&kc, &["upgrade", "peek", chart, "--dry-run=server"]).await;
    assert!(out.contains("seen: \"live\""), "{out}");
    assert!(api.get_opt("peek-data").await.expect("get").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reuse_values_keeps_the_last_charts_defaults_like_helm() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let dir = ns.dir();
    let data = "  message: {{ .Values.message | quote }}\n  extra: {{ .Values.extra | quote }}\n  added: {{ .Values.added | default \"missing\" | quote }}\n";
    let v1 = write_data_chart(dir, "v1", "message: one\nextra: a\n", data);
    let v2 = write_data_chart(dir, "v2", "message: one\nextra: b\nadded: new\n", data);
    let (v1, v2) = (v1.to_str().expect("utf-8"), v2.to_str().expect("utf-8"));

    ok(&kc, &["install", "web", v1, "--set", "message=two"]).await;
    // --reuse-values: the new chart is rendered with the old coalesced
    // values as its defaults, so v2's new defaults are not seen.
    ok(&kc, &["upgrade", "web", v2, "--reuse-values"]).await;
    assert_eq!(
        config_data(&client, "web-data").await,
        serde_json::json!({"message": "two", "extra": "a", "added": "missing"})
    );
    // --reset-then-reuse-values: v2's defaults, the last user values over them.
    ok(&kc, &["upgrade", "web", v2, "--reset-then-reuse-values"]).await;
    assert_eq!(
        config_data(&client, "web-data").await,
        serde_json::json!({"message": "two", "extra": "b", "added": "new"})
    );
}

/// `(manager, operation, subresource)` of each entry of an object's managed fields.
fn managers(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Vec<String> {
    let mut out: Vec<String> = meta
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "{}/{}{}",
                e.manager.as_deref().unwrap_or("<none>"),
                e.operation.as_deref().unwrap_or("<none>"),
                e.subresource
                    .as_deref()
                    .map(|s| format!("/{s}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_names_its_record_writes_and_applies_as_helm() {
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let chart = chart_dir();
    let chart = chart.to_str().expect("utf-8 path");
    ok(&kc, &["install", "named", chart]).await;
    ok(
        &kc,
        &[
            "upgrade",
            "named",
            chart,
            "--set",
            "replicaCount=2",
            "--field-manager=ops-cli",
        ],
    )
    .await;
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let record = |v: i64| {
        let secrets = secrets.clone();
        async move {
            let name = format!("sh.helm.release.v1.named.v{v}");
            secrets.get(&name).await.expect("record").metadata
        }
    };
    // Revision 1 was written by the install and marked superseded by the upgrade.
    assert_eq!(
        managers(&record(1).await),
        ["ops-cli/Update", "rudder/Update"]
    );
    assert_eq!(managers(&record(2).await), ["ops-cli/Update"]);
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let dep = deployments
        .get("named-hello")
        .await
        .expect("the Deployment");
    // A cluster's controllers write the status (`…/Update/status`); the object is Helm's.
    let main: Vec<String> = managers(&dep.metadata)
        .into_iter()
        .filter(|m| !m.ends_with("/status"))
        .collect();
    assert_eq!(
        main,
        ["helm/Apply"],
        "objects are applied as Helm, whatever the writes are named"
    );
}
