//! Server-side printing (`as=Table`) and the Event resource seen through
//! both Event APIs, checked with the real `kubectl`. Skipped (with a
//! message) when `kubectl` is not on PATH.

use apiserver::{Config, Server};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("kubectl")
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", &self.cache)
            .output()
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "kubectl {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Splits a kubectl table into header cells and rows of cells.
fn table(out: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let split = |l: &str| {
        l.split("   ")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let header = lines.next().map(split).unwrap_or_default();
    (header, lines.map(split).collect())
}

const OBJECTS: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.25"}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: "1", b: "2"}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: hellos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: hellos, singular: hello, kind: Hello}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: First, type: string, jsonPath: '.spec.items[0].name', priority: 1}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: plains.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: plains, singular: plain, kind: Plain}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

const CRS: &str = r#"
apiVersion: example.com/v1
kind: Hello
metadata: {name: h1}
spec: {size: 3, items: [{name: first}]}
---
apiVersion: example.com/v1
kind: Plain
metadata: {name: p1}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_tables_and_events() {
    if !kubectl_available() {
        eprintln!("SKIPPED kubectl_tables_and_events: `kubectl` is not on PATH");
        return;
    }
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = server.client().unwrap();
    let dir = server.kubeconfig_path().parent().unwrap().to_path_buf();
    let k = Kubectl {
        kubeconfig: server.kubeconfig_path().to_path_buf(),
        cache: dir.join("cache"),
    };
    let dir2 = dir.clone();
    let k = tokio::task::spawn_blocking(move || {
        let objs = write(&dir2, "objs.yaml", OBJECTS);
        k.ok(&["apply", "-f", &objs]);
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/hellos.example.com",
            "crd/plains.example.com",
            "--timeout=20s",
        ]);
        let crs = write(&dir2, "crs.yaml", CRS);
        k.ok(&["apply", "-f", &crs]);
        k.ok(&[
            "patch",
            "hello",
            "h1",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}"#,
        ]);
        k.ok(&[
            "wait",
            "--for=condition=Available",
            "deployment/web",
            "--timeout=20s",
        ]);
        k
    })
    .await
    .unwrap();

    // An Event recorded through events.k8s.io/v1 about the Hello.
    let hello_uid = {
        let out = k.ok(&["get", "hello", "h1", "-o", "jsonpath={.metadata.uid}"]);
        out.trim().to_string()
    };
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        client,
        "default",
        &kube::discovery::ApiResource {
            group: "events.k8s.io".into(),
            version: "v1".into(),
            api_version: "events.k8s.io/v1".into(),
            kind: "Event".into(),
            plural: "events".into(),
        },
    );
    let ev: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "h1.reconciled", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"apiVersion": "example.com/v1", "kind": "Hello", "name": "h1",
            "namespace": "default", "uid": hello_uid},
        "reason": "InstallSuccessful", "note": "release h1 installed at revision 1",
        "type": "Normal", "action": "Reconcile",
        "reportingController": "rudder", "reportingInstance": "rudder-0"
    }))
    .unwrap();
    let created = api.create(&Default::default(), &ev).await.unwrap();
    assert_eq!(created.data["note"], "release h1 installed at revision 1");
    assert_eq!(created.data["regarding"]["name"], "h1");
    // A merge patch through the new API changes the one stored object.
    api.patch(
        "h1.reconciled",
        &Default::default(),
        &kube::api::Patch::Merge(
            json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}}),
        ),
    )
    .await
    .unwrap();
    let got = api.get("h1.reconciled").await.unwrap();
    assert_eq!(got.data["series"]["count"], 2);
    assert_eq!(got.data["reportingController"], "rudder");
    let listed = api
        .list(&kube::api::ListParams::default().fields("regarding.name=h1"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);

    tokio::task::spawn_blocking(move || {
        // Built-in printers.
        let (h, rows) = table(&k.ok(&["get", "deployments"]));
        assert_eq!(h, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
        assert_eq!(rows[0][..4], ["web", "2/2", "2", "2"]);
        let (h, _) = table(&k.ok(&["get", "deployments", "-o", "wide"]));
        assert_eq!(
            h,
            [
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR"
            ]
        );
        let (h, rows) = table(&k.ok(&["get", "services", "web"]));
        assert_eq!(
            h,
            [
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE"
            ]
        );
        assert_eq!(rows[0][1], "ClusterIP");
        assert_eq!(rows[0][3], "<none>");
        assert_eq!(rows[0][4], "80/TCP");
        let (h, rows) = table(&k.ok(&["get", "configmaps", "settings"]));
        assert_eq!(h, ["NAME", "DATA", "AGE"]);
        assert_eq!(rows[0][..2], ["settings", "2"]);
        let (h, rows) = table(&k.ok(&["get", "namespaces", "default"]));
        assert_eq!(h, ["NAME", "STATUS", "AGE"]);
        assert_eq!(rows[0][1], "Active");
        // Several kinds at once, as a newcomer types it.
        let out = k.ok(&["get", "deployments,services,configmaps,hellos"]);
        assert!(
            out.contains("UP-TO-DATE") && out.contains("CLUSTER-IP"),
            "{out}"
        );
        assert!(out.contains("SIZE"), "{out}");
        let out = k.ok(&["get", "deployments", "-A"]);
        assert!(out.starts_with("NAMESPACE"), "{out}");
        assert!(out.contains("default"), "{out}");

        // CRD printer columns, the filter expression and `-o wide` priority.
        let (h, rows) = table(&k.ok(&["get", "hellos"]));
        assert_eq!(h, ["NAME", "SIZE", "READY", "AGE"]);
        assert_eq!(rows[0][..3], ["h1", "3", "True"]);
        let (h, rows) = table(&k.ok(&["get", "hellos", "-o", "wide"]));
        assert_eq!(h, ["NAME", "SIZE", "READY", "FIRST", "AGE"]);
        assert_eq!(rows[0][3], "first");
        let (h, rows) = table(&k.ok(&["get", "plains"]));
        assert_eq!(h, ["NAME", "AGE"]);
        assert_eq!(rows[0][0], "p1");

        // The Event through the core API: get and describe.
        let (h, rows) = table(&k.ok(&["get", "events"]));
        assert_eq!(h, ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
        let row = rows
            .iter()
            .find(|r| r.get(3).map(String::as_str) == Some("hello/h1"))
            .unwrap_or_else(|| panic!("no event about hello/h1 in {rows:?}"));
        assert_eq!(
            row[1..],
            [
                "Normal",
                "InstallSuccessful",
                "hello/h1",
                "release h1 installed at revision 1"
            ]
        );
        let out = k.ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.kind=Hello,involvedObject.name=h1",
            "-o",
            "name",
        ]);
        assert_eq!(out.trim(), "event/h1.reconciled");
        let out = k.ok(&[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=other",
            "-o",
            "name",
        ]);
        assert_eq!(out.trim(), "");
        let core = k.ok(&["get", "events.v1.", "h1.reconciled", "-o", "json"]);
        let v: serde_json::Value = serde_json::from_str(&core).unwrap();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["message"], "release h1 installed at revision 1");
        assert_eq!(v["source"]["component"], "rudder");
        assert_eq!(v["involvedObject"]["kind"], "Hello");
        let out = k.ok(&["describe", "hello", "h1"]);
        assert!(out.contains("Events:"), "{out}");
        assert!(
            out.contains("InstallSuccessful") && out.contains("release h1 installed at revision 1"),
            "describe shows the event:\n{out}"
        );
        assert!(
            out.contains("rudder"),
            "describe shows who reported it:\n{out}"
        );
    })
    .await
    .unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_prints_rows() {
    if !kubectl_available() {
        eprintln!("SKIPPED kubectl_get_watch_prints_rows: `kubectl` is not on PATH");
        return;
    }
    let server = Server::start(Config::default()).await.unwrap();
    let dir = server.kubeconfig_path().parent().unwrap().to_path_buf();
    let k = Kubectl {
        kubeconfig: server.kubeconfig_path().to_path_buf(),
        cache: dir.join("cache"),
    };
    tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        k.ok(&["create", "configmap", "first", "--from-literal=a=1"]);
        let mut child = Command::new("kubectl")
            .args(["get", "configmaps", "-w"])
            .env("KUBECONFIG", &k.kubeconfig)
            .env("KUBECACHEDIR", &k.cache)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kubectl runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut seen = Vec::new();
        let mut created = false;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(200)) else {
                continue;
            };
            seen.push(line.clone());
            if !created && line.starts_with("first") {
                k.ok(&[
                    "create",
                    "configmap",
                    "second",
                    "--from-literal=a=1",
                    "--from-literal=b=2",
                ]);
                created = true;
            }
            if line.starts_with("second") {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let (h, _) = table(&seen.join("\n"));
        assert_eq!(h, ["NAME", "DATA", "AGE"], "{seen:?}");
        let second = seen
            .iter()
            .find(|l| l.starts_with("second"))
            .unwrap_or_else(|| panic!("the watch printed no row for the new ConfigMap: {seen:?}"));
        let cells: Vec<&str> = second.split_whitespace().collect();
        assert_eq!(cells[..2], ["second", "2"], "{seen:?}");
    })
    .await
    .unwrap();
    server.stop().await;
}

/// Polls `kubectl get pods -l app=web -o name` until it lists `n` Pods.
fn wait_pods(k: &Kubectl, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = k.ok(&["get", "pods", "-l", "app=web", "-o", "name"]);
        let pods: Vec<String> = out.lines().map(str::to_string).collect();
        if pods.len() == n || std::time::Instant::now() > deadline {
            return pods;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_deployments_get_replicasets_and_pods() {
    if !kubectl_available() {
        eprintln!(
            "SKIPPED simulated_deployments_get_replicasets_and_pods: `kubectl` is not on PATH"
        );
        return;
    }
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .unwrap();
    let dir = server.kubeconfig_path().parent().unwrap().to_path_buf();
    let k = Kubectl {
        kubeconfig: server.kubeconfig_path().to_path_buf(),
        cache: dir.join("cache"),
    };
    tokio::task::spawn_blocking(move || {
        let deploy = OBJECTS.split("---").next().unwrap();
        let f = write(&dir, "deploy.yaml", deploy);
        k.ok(&["apply", "-f", &f]);
        assert_eq!(wait_pods(&k, 2).len(), 2);
        k.ok(&[
            "wait",
            "--for=condition=Ready",
            "pods",
            "-l",
            "app=web",
            "--timeout=20s",
        ]);
        let (h, rows) = table(&k.ok(&["get", "pods"]));
        assert_eq!(h, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
        assert_eq!(rows.len(), 2, "{rows:?}");
        for r in &rows {
            assert!(r[0].starts_with("web-"), "{r:?}");
            assert_eq!(r[1..4], ["1/1", "Running", "0"]);
        }
        let (_, rs) = table(&k.ok(&["get", "replicasets"]));
        assert_eq!(rs.len(), 1, "{rs:?}");
        assert_eq!(rs[0][1..4], ["2", "2", "2"]);
        let owner = k.ok(&[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[0].metadata.ownerReferences[0].kind}",
        ]);
        assert_eq!(owner, "ReplicaSet");

        k.ok(&["scale", "deployment/web", "--replicas=3"]);
        assert_eq!(wait_pods(&k, 3).len(), 3);
        k.ok(&["scale", "deployment/web", "--replicas=1"]);
        assert_eq!(wait_pods(&k, 1).len(), 1);

        k.ok(&["delete", "deployment", "web"]);
        assert!(
            wait_pods(&k, 0).is_empty(),
            "pods are garbage-collected with the Deployment"
        );
        let out = k.ok(&["get", "replicasets", "-o", "name"]);
        assert_eq!(out.trim(), "");
    })
    .await
    .unwrap();
    server.stop().await;
}
