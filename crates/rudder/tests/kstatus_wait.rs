//! The real `helm` CLI waits on a rudder CR the way GitOps tools do: Helm 4's
//! `--wait` (`watcher`, kstatus) on a chart that contains a CR of a watched kind.
//!
//! - `helm install --wait`, once the operator has seen the CR, returns only after the
//!   operator deployed it. kstatus cannot tell a CR no controller has written yet from a
//!   finished one, so the chart also holds a `Gate` (a kind of the test's, reported in
//!   progress until the test opens it): the test opens it only once the operator has
//!   written the CR's status, and the CR is paused until then, so helm could return
//!   early only by reading the CR wrong.
//! - `helm upgrade --wait` changing the CR's spec while the operator is down returns
//!   only after the operator, started seconds later, deployed the new generation.
//! - `helm upgrade --wait` whose CR's release fails (the chart calls `fail`) fails with
//!   kstatus' `Failed` instead of waiting for its timeout; so does `helm install --wait`.
//!
//! Runs against `rudder apiserver`, or the cluster `RUDDER_TEST_KUBECONFIG` names;
//! skips (with a message) without helm or kubectl. Timings are printed, not asserted.

mod interop;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use interop::{path_str, wait_for, Cluster, Namespace, Tool, SETTLE};
use serde_json::Value;
use testkit::Process;

const PAUSED: &str = "helm.sdk.operatorframework.io/reconcile-paused";

/// The CRDs of the test: `Waited` (watched by the operator) and `Gate` (no status
/// subresource, so the chart can create it already in progress).
struct Crds<'c> {
    ns: &'c Namespace<'c>,
    group: String,
}

impl Drop for Crds<'_> {
    fn drop(&mut self) {
        for plural in ["waiteds", "gates"] {
            let name = format!("{plural}.{}", self.group);
            let _ = self.ns.kubectl(&["delete", "crd", &name, "--wait=false"]);
        }
    }
}

fn crd(group: &str, kind: &str, status_subresource: bool) -> String {
    let lower = kind.to_lowercase();
    let subresources = if status_subresource {
        "    subresources: {status: {}}\n"
    } else {
        ""
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {lower}s.{group}\nspec:\n  group: {group}\n  scope: Namespaced\n  names: {{kind: {kind}, plural: {lower}s, singular: {lower}, listKind: {kind}List}}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n{subresources}    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
    )
}

fn install_crds<'c>(ns: &'c Namespace<'c>) -> Crds<'c> {
    let group = format!("{}.kstatus.rudder.dev", ns.name);
    let path = ns.cluster.dir.join("crds.yaml");
    let text = format!(
        "{}---\n{}",
        crd(&group, "Waited", true),
        crd(&group, "Gate", false)
    );
    std::fs::write(&path, text).expect("write CRDs");
    ns.kubectl_ok(&["apply", "-f", &path_str(&path)]);
    for plural in ["waiteds", "gates"] {
        wait_for(&format!("{plural} to be served"), SETTLE, || {
            ns.kubectl(&["get", plural, "-n", &ns.name])
                .status
                .success()
                .then_some(())
        });
    }
    Crds { ns, group }
}

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("chart dir");
        std::fs::write(path, text).expect("chart file");
    }
}

/// The chart helm installs (a `Waited` CR, and a closed `Gate` when asked) and the
/// chart the operator makes of each `Waited` (a ConfigMap; `fail` fails the render).
fn charts(dir: &Path) -> (String, String) {
    let app = dir.join("app");
    write(
        &app,
        &[
            ("Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n"),
            (
                "templates/cr.yaml",
                "apiVersion: {{ .Values.group }}/v1\nkind: Waited\nmetadata:\n  name: {{ .Release.Name }}-cr\n  {{- with .Values.annotations }}\n  annotations: {{- toYaml . | nindent 4 }}\n  {{- end }}\nspec: {{- toYaml .Values.spec | nindent 2 }}\n",
            ),
            (
                "templates/gate.yaml",
                "{{- if .Values.gate }}\napiVersion: {{ .Values.group }}/v1\nkind: Gate\nmetadata:\n  name: {{ .Release.Name }}-gate\nstatus:\n  conditions:\n  - {type: Reconciling, status: \"True\", reason: Closed, message: the test opens it}\n{{- end }}\n",
            ),
        ],
    );
    let operated = dir.join("operated");
    write(
        &operated,
        &[
            ("Chart.yaml", "apiVersion: v2\nname: operated\nversion: 0.1.0\n"),
            (
                "templates/cm.yaml",
                "{{- if .Values.fail }}{{ fail \"asked to fail\" }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  message: {{ .Values.message | quote }}\n",
            ),
        ],
    );
    (path_str(&app), path_str(&operated))
}

fn operator(ns: &Namespace<'_>, watches: &Path, name: &str) -> Process {
    Process::spawn(
        name,
        &ns.cluster.dir,
        Command::new(env!("CARGO_BIN_EXE_rudder"))
            .env("KUBECONFIG", &ns.cluster.kubeconfig)
            .env("WATCH_NAMESPACE", &ns.name)
            .env("RUST_LOG", "info")
            .args([
                "run",
                "--watches-file",
                &path_str(watches),
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ]),
    )
}

/// A helm command started in the background, and when.
struct Helm {
    child: Child,
    started: Instant,
}

impl Helm {
    fn start(ns: &Namespace<'_>, args: &[&str]) -> Helm {
        let mut cmd = ns.command(Tool::Helm, None, args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        Helm {
            child: cmd.spawn().expect("helm runs"),
            started: Instant::now(),
        }
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().expect("helm's status").is_none()
    }

    /// Waits for helm to exit; its output and how long it ran.
    fn finish(self) -> (Output, Duration) {
        let out = self.child.wait_with_output().expect("helm's output");
        (out, self.started.elapsed())
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn cr(ns: &Namespace<'_>, name: &str) -> Option<Value> {
    let out = ns.kubectl(&["get", "waited", name, "-n", &ns.name, "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

fn condition(obj: &Value, type_: &str) -> Option<(String, String)> {
    let c = obj
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?;
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason")))
}

/// The CR shows the end of a reconcile of its current generation, deployed.
fn deployed_now(obj: &Value) -> bool {
    obj.pointer("/status/observedGeneration") == obj.pointer("/metadata/generation")
        && condition(obj, "Ready").is_some_and(|(s, _)| s == "True")
}

/// The operator's release of CR `name`: its deployed revision.
fn deployed_revision(ns: &Namespace<'_>, name: &str) -> Option<i64> {
    let selector = format!("owner=helm,name={name},status=deployed");
    ns.items("secrets", Some(&selector)).first().and_then(|s| {
        s.pointer("/metadata/labels/version")?
            .as_str()?
            .parse()
            .ok()
    })
}

fn configmap_message(ns: &Namespace<'_>, name: &str) -> Option<String> {
    let out = ns.kubectl(&["get", "configmap", name, "-n", &ns.name, "-o", "json"]);
    let cm: Value = serde_json::from_slice(&out.stdout).ok()?;
    cm.pointer("/data/message")?.as_str().map(str::to_string)
}

fn open_gate(ns: &Namespace<'_>, release: &str) {
    ns.kubectl_ok(&[
        "patch",
        "gate",
        &format!("{release}-gate"),
        "-n",
        &ns.name,
        "--type",
        "merge",
        "-p",
        r#"{"status":{"conditions":[]}}"#,
    ]);
}

#[test]
fn helm_wait_returns_once_rudder_deployed_the_cr_and_fails_when_it_fails() {
    let Some(cluster) = Cluster::start("kstatus") else {
        return;
    };
    let ns = cluster.namespace("kstatus");
    let crds = install_crds(&ns);
    let group = crds.group.clone();
    let (app, operated) = charts(&cluster.dir);
    let watches = cluster.dir.join("watches.yaml");
    std::fs::write(
        &watches,
        format!("- group: {group}\n  version: v1\n  kind: Waited\n  chart: {operated}\n"),
    )
    .expect("write watches");
    let values = |name: &str, text: &str| {
        let path = cluster.dir.join(format!("{name}.yaml"));
        std::fs::write(&path, format!("group: {group}\n{text}")).expect("values");
        path_str(&path)
    };
    let mut op = operator(&ns, &watches, "operator");

    // 1. helm install --wait: the operator sees the new CR (paused, so it stays in
    //    progress), the gate opens, and helm still waits until the pause is lifted
    //    and the release is deployed.
    let v1 = values(
        "v1",
        &format!("gate: true\nannotations:\n  {PAUSED}: \"true\"\nspec:\n  message: one\n"),
    );
    let mut install = Helm::start(
        &ns,
        &[
            "install",
            "app",
            &app,
            "-f",
            &v1,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    wait_for("the operator to see the new CR", SETTLE, || {
        let obj = cr(&ns, "app-cr")?;
        (condition(&obj, "Reconciling") == Some(("True".into(), "ReconcilePaused".into())))
            .then_some(())
    });
    open_gate(&ns, "app");
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        install.running(),
        "helm install --wait returned while the CR was paused and not installed:\n{}",
        op.logs()
    );
    assert_eq!(deployed_revision(&ns, "app-cr"), None);
    let resumed = Instant::now();
    ns.kubectl_ok(&[
        "annotate",
        "waited",
        "app-cr",
        "-n",
        &ns.name,
        &format!("{PAUSED}-"),
    ]);
    let waited = install.started.elapsed();
    let (out, took) = install.finish();
    assert!(out.status.success(), "{}", text(&out));
    let obj = cr(&ns, "app-cr").expect("the CR");
    assert!(
        deployed_now(&obj),
        "helm returned before the CR was deployed: {obj:#}"
    );
    assert_eq!(deployed_revision(&ns, "app-cr"), Some(1));
    assert_eq!(configmap_message(&ns, "app-cr-cfg").as_deref(), Some("one"));
    eprintln!(
        "helm install --wait: {took:?} in all, {:?} after the pause was lifted (paused for {waited:?})",
        resumed.elapsed()
    );

    // 2. helm upgrade --wait while the operator is down: helm waits for the new
    //    generation, which the operator deploys once it is back.
    op.terminate(Duration::from_secs(30));
    let v2 = values("v2", "spec:\n  message: two\n");
    let mut upgrade = Helm::start(
        &ns,
        &[
            "upgrade",
            "app",
            &app,
            "-f",
            &v2,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        upgrade.running(),
        "helm upgrade --wait returned while no operator was running"
    );
    let obj = cr(&ns, "app-cr").expect("the CR");
    assert_eq!(obj.pointer("/metadata/generation"), Some(&Value::from(2)));
    let restarted = Instant::now();
    let op = operator(&ns, &watches, "operator-2");
    let (out, took) = upgrade.finish();
    assert!(out.status.success(), "{}\n{}", text(&out), op.logs());
    let obj = cr(&ns, "app-cr").expect("the CR");
    assert!(
        deployed_now(&obj),
        "helm returned before generation 2 was deployed: {obj:#}"
    );
    assert_eq!(deployed_revision(&ns, "app-cr"), Some(2));
    assert_eq!(configmap_message(&ns, "app-cr-cfg").as_deref(), Some("two"));
    eprintln!(
        "helm upgrade --wait: {took:?} in all, {:?} after the operator started",
        restarted.elapsed()
    );

    // 3. An upgrade whose CR's release fails: helm fails on kstatus' Failed.
    let v3 = values("v3", "spec:\n  message: three\n  fail: true\n");
    let failing = Helm::start(
        &ns,
        &[
            "upgrade",
            "app",
            &app,
            "-f",
            &v3,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    let (out, took) = failing.finish();
    let said = text(&out);
    assert!(
        !out.status.success(),
        "helm upgrade --wait succeeded: {said}"
    );
    assert!(said.contains("status: Failed"), "{said}");
    assert!(
        said.contains("asked to fail"),
        "kstatus' message is the failure: {said}"
    );
    assert!(
        !said.contains("context deadline exceeded"),
        "helm waited out its timeout: {said}"
    );
    eprintln!("helm upgrade --wait of a failing release: failed after {took:?}");
    let obj = cr(&ns, "app-cr").expect("the CR");
    assert_eq!(
        condition(&obj, "Stalled").map(|c| c.0).as_deref(),
        Some("True")
    );
    assert_eq!(
        deployed_revision(&ns, "app-cr"),
        Some(2),
        "the deployed release stays"
    );

    // ... and a fixed spec deploys again.
    let v4 = values("v4", "spec:\n  message: four\n");
    let fixed = Helm::start(
        &ns,
        &[
            "upgrade",
            "app",
            &app,
            "-f",
            &v4,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    let (out, _) = fixed.finish();
    assert!(out.status.success(), "{}\n{}", text(&out), op.logs());
    assert!(deployed_now(&cr(&ns, "app-cr").expect("the CR")));
    assert_eq!(
        configmap_message(&ns, "app-cr-cfg").as_deref(),
        Some("four")
    );

    // 4. helm install --wait of a CR whose release fails, once the operator saw it.
    let bad = values("bad", "gate: true\nspec:\n  fail: true\n");
    let install = Helm::start(
        &ns,
        &[
            "install",
            "bad",
            &app,
            "-f",
            &bad,
            "--wait",
            "--timeout",
            "3m",
        ],
    );
    wait_for("the operator to fail the new CR", SETTLE, || {
        let obj = cr(&ns, "bad-cr")?;
        condition(&obj, "Stalled").is_some().then_some(())
    });
    open_gate(&ns, "bad");
    let (out, took) = install.finish();
    let said = text(&out);
    assert!(
        !out.status.success(),
        "helm install --wait succeeded: {said}"
    );
    assert!(
        said.contains("status: Failed") && said.contains("asked to fail"),
        "{said}"
    );
    eprintln!("helm install --wait of a failing release: failed after {took:?}");

    // The operator uninstalls both CRs' releases as helm deletes them.
    for release in ["bad", "app"] {
        ns.ok(
            Tool::Helm,
            None,
            &["uninstall", release, "--wait", "--timeout", "2m"],
        );
    }
    wait_for("the CRs to go", SETTLE, || {
        (cr(&ns, "app-cr").is_none() && cr(&ns, "bad-cr").is_none()).then_some(())
    });
    drop(op);
}
