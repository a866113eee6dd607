//! The real `kubectl` against the embedded server through the kubeconfig
//! it writes. Skipped (with a message) when `kubectl` is not on PATH.

use apiserver::{Config, Server};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
}

impl Kubectl {
    fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let mut cmd = Command::new("kubectl");
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", &self.cache)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        } else {
            drop(child.stdin.take());
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs and requires success; returns stdout.
    fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (ok, out, err) = self.run(args, stdin);
        assert!(ok, "kubectl {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const APP: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, labels: {tier: backend}}
data: {mode: fast}
"#;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_end_to_end() {
    if !kubectl_available() {
        eprintln!("SKIPPED kubectl_end_to_end: `kubectl` is not on PATH");
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
    let handle = tokio::task::spawn_blocking(move || {
        let app = write(&dir, "app.yaml", APP);
        let out = k.ok(&["create", "-f", &app], None);
        assert!(out.contains("deployment.apps/web created"), "{out}");
        assert!(out.contains("configmap/settings created"), "{out}");
        let (ok, _, err) = k.run(&["create", "-f", &app], None);
        assert!(!ok && err.contains("AlreadyExists"), "{err}");

        // Client-side apply (three-way strategic merge) twice.
        let out = k.ok(&["apply", "-f", &app], None);
        assert!(out.contains("configured"), "{out}");
        let changed = APP.replace("nginx:1.25", "nginx:1.26");
        let app2 = write(&dir, "app2.yaml", &changed);
        k.ok(&["apply", "-f", &app2], None);
        let out = k.ok(&["apply", "-f", &app2], None);
        assert!(out.contains("deployment.apps/web unchanged"), "{out}");
        let img = k.ok(
            &[
                "get",
                "deploy",
                "web",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}",
            ],
            None,
        );
        assert_eq!(img, "nginx:1.26 2");

        k.ok(
            &[
                "wait",
                "--for=condition=Available",
                "deployment/web",
                "--timeout=20s",
            ],
            None,
        );
        let out = k.ok(
            &["rollout", "status", "deployment/web", "--timeout=20s"],
            None,
        );
        assert!(out.contains("successfully rolled out"), "{out}");

        let out = k.ok(&["apply", "--server-side", "-f", &app2], None);
        assert!(out.contains("serverside-applied"), "{out}");

        let json = k.ok(&["get", "cm", "settings", "-o", "json"], None);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["data"]["mode"], "fast");
        let out = k.ok(&["get", "cm", "-l", "tier=backend", "-o", "name"], None);
        assert_eq!(out.trim(), "configmap/settings");
        let out = k.ok(
            &["get", "cm", "-l", "tier in (frontend)", "-o", "name"],
            None,
        );
        assert_eq!(out.trim(), "");

        k.ok(
            &[
                "patch",
                "cm",
                "settings",
                "--type",
                "merge",
                "-p",
                r#"{"data":{"b":"2"}}"#,
            ],
            None,
        );
        k.ok(
            &[
                "patch",
                "cm",
                "settings",
                "--type",
                "json",
                "-p",
                r#"[{"op":"add","path":"/data/c","value":"3"}]"#,
            ],
            None,
        );
        k.ok(&["patch", "deploy", "web", "--type", "strategic", "-p",
            r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}"#], None);
        let names = k.ok(
            &[
                "get",
                "deploy",
                "web",
                "-o",
                "jsonpath={.spec.template.spec.containers[*].name}",
            ],
            None,
        );
        assert_eq!(names, "nginx sidecar");
        let data = k.ok(&["get", "cm", "settings", "-o", "jsonpath={.data}"], None);
        assert_eq!(data, r#"{"b":"2","c":"3","mode":"fast"}"#);

        // Finalizers hold deletion until removed.
        k.ok(
            &[
                "patch",
                "cm",
                "settings",
                "--type",
                "merge",
                "-p",
                r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
            ],
            None,
        );
        k.ok(&["delete", "cm", "settings", "--wait=false"], None);
        let ts = k.ok(
            &[
                "get",
                "cm",
                "settings",
                "-o",
                "jsonpath={.metadata.deletionTimestamp}",
            ],
            None,
        );
        assert!(!ts.is_empty());
        k.ok(
            &[
                "patch",
                "cm",
                "settings",
                "--type",
                "json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ],
            None,
        );
        let (ok, _, err) = k.run(&["get", "cm", "settings"], None);
        assert!(!ok && err.contains("NotFound"), "{err}");

        // CRD, then a custom resource of it.
        let crd = write(&dir, "crd.yaml", CRD);
        k.ok(&["apply", "-f", &crd], None);
        k.ok(
            &[
                "wait",
                "--for=condition=Established",
                "crd/widgets.example.com",
                "--timeout=10s",
            ],
            None,
        );
        let cr =
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
        k.ok(&["apply", "-f", "-"], Some(cr));
        k.ok(
            &["apply", "-f", "-"],
            Some(&cr.replace("size: 3", "size: 4")),
        );
        let size = k.ok(&["get", "wd", "w1", "-o", "jsonpath={.spec.size}"], None);
        assert_eq!(size, "4");
        let res = k.ok(&["api-resources"], None);
        assert!(
            res.lines()
                .any(|l| l.starts_with("widgets") && l.contains("example.com/v1")),
            "{res}"
        );
        assert!(
            res.lines()
                .any(|l| l.starts_with("deployments") && l.contains("deploy")),
            "{res}"
        );

        let out = k.ok(&["auth", "can-i", "delete", "pods"], None);
        assert_eq!(out.trim(), "yes");

        // explain either answers or fails with a message (no crash).
        let (_, out, err) = k.run(&["explain", "deployment"], None);
        assert!(!out.is_empty() || !err.is_empty());

        // Namespaces: create, fill, delete.
        k.ok(&["create", "namespace", "scratch"], None);
        k.ok(
            &[
                "create",
                "configmap",
                "imperative",
                "-n",
                "scratch",
                "--from-literal=a=b",
            ],
            None,
        );
        k.ok(
            &[
                "create",
                "secret",
                "generic",
                "pw",
                "-n",
                "scratch",
                "--from-literal=p=s3cret",
            ],
            None,
        );
        let pw = k.ok(
            &[
                "get",
                "secret",
                "pw",
                "-n",
                "scratch",
                "-o",
                "jsonpath={.data.p}",
            ],
            None,
        );
        assert_eq!(pw, "czNjcmV0");
        k.ok(&["create", "serviceaccount", "bot", "-n", "scratch"], None);
        k.ok(&["apply", "-n", "scratch", "-f", &app], None);
        k.ok(&["delete", "namespace", "scratch", "--timeout=20s"], None);
        let (ok, _, _) = k.run(&["get", "namespace", "scratch"], None);
        assert!(!ok);
    });
    let res = handle.await;
    server.stop().await;
    if let Err(e) = res {
        std::panic::resume_unwind(e.into_panic());
    }
}
