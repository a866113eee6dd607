//! End-to-end tests of the operator as a user runs it: the `rudder` binary runs the
//! operator as a child process against the test cluster (the embedded API server, or
//! `RUDDER_TEST_KUBECONFIG`'s), and every change is made and checked with kubectl, the
//! way a person at a terminal would.
//!
//! Each test works in namespaces of its own, and its operators watch only those
//! (`WATCH_NAMESPACE`), so tests are independent on a shared cluster. They skip (with a
//! printed message) when kubectl is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkit::{wait_for, Process};

/// Generous upper bounds for things to happen; they only stop a hung test, they never
/// measure anything.
const SETTLE: Duration = Duration::from_secs(120);
/// The release lock and leader Lease of a killed process must expire first.
const AFTER_CRASH: Duration = Duration::from_secs(240);

const HELLO_CRD: &str = "hellos.demo.rudder.dev";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> PathBuf {
    repo_root().join("examples/operator")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/e2e")
}

fn rudder() -> &'static str {
    env!("CARGO_BIN_EXE_rudder")
}

/// A scratch directory per test, under cargo's target tmp dir.
fn scratch(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "e2e-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A namespace of the test's own on the test cluster, and kubectl defaulting to it.
struct Cluster {
    kubectl: testkit::Kubectl,
    ns: testkit::TestNamespace,
}

impl Cluster {
    fn start(name: &str) -> Option<Cluster> {
        let ns = testkit::Cluster::start().namespace(&format!("e2e-{name}"));
        let kubectl = ns.kubectl()?;
        Some(Cluster { kubectl, ns })
    }

    /// The test's namespace.
    fn ns(&self) -> &str {
        self.ns.name()
    }

    /// A scratch directory removed with the namespace.
    fn dir(&self) -> &Path {
        self.ns.dir()
    }

    /// Another namespace of the test's own.
    fn namespace(&self, prefix: &str) -> testkit::TestNamespace {
        self.ns.cluster().namespace(prefix)
    }

    /// Runs kubectl and panics with its stderr when it fails.
    fn ok(&self, args: &[&str]) -> String {
        self.kubectl.ok(args)
    }

    fn apply_yaml(&self, yaml: &str) {
        self.kubectl.apply_yaml(yaml);
    }

    fn apply_file(&self, path: &Path) {
        self.kubectl.apply_file(path);
    }

    /// `kubectl get … -o json`, `None` when the object does not exist.
    fn get(&self, args: &[&str]) -> Option<Value> {
        self.kubectl.get(args)
    }

    fn items(&self, args: &[&str]) -> Vec<Value> {
        self.kubectl.items(args)
    }

    fn wait_crd(&self, name: &str) {
        wait_for(&format!("CRD {name} to be established"), SETTLE, || {
            let crd = self.get(&["crd", name])?;
            has_condition(&crd, "Established", "True").then_some(())
        });
    }

    /// The release's records as (revision, status), oldest first.
    fn records(&self, release: &str) -> Vec<(i64, String)> {
        records_of(&self.items(&[
            "secrets",
            "-n",
            self.ns(),
            "-l",
            &format!("owner=helm,name={release}"),
        ]))
    }

    /// Starts `rudder run` on `watches` with extra flags, watching the test's namespace
    /// (and `more` namespaces, comma-separated).
    fn operator(&self, name: &str, watches: &Path, extra: &[&str]) -> Process {
        let mut cmd = Command::new(rudder());
        cmd.current_dir(self.dir())
            .env("KUBECONFIG", self.ns.kubeconfig())
            .env("WATCH_NAMESPACE", self.ns())
            .env("RUST_LOG", "info")
            .args([
                "run",
                "--watches-file",
                watches.to_str().expect("utf-8"),
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ])
            .args(extra);
        Process::spawn(name, self.dir(), &mut cmd)
    }

    /// Waits until the CR's condition `ty` has `status`, returning the CR.
    fn wait_condition(
        &self,
        kind: &str,
        name: &str,
        ty: &str,
        status: &str,
        op: &Process,
    ) -> Value {
        let what = format!("{kind}/{name} to have {ty}={status}");
        let deadline = Instant::now() + SETTLE;
        loop {
            let cr = self.get(&[kind, name, "-n", self.ns()]);
            if let Some(cr) = &cr {
                if has_condition(cr, ty, status) {
                    return cr.clone();
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out waiting for {what}; the CR is:\n{}\n{}",
                    serde_json::to_string_pretty(&cr).unwrap_or_default(),
                    op.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn deployment(&self, name: &str) -> Option<Value> {
        self.get(&["deployment", name, "-n", self.ns()])
    }
}

fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

fn has_condition(obj: &Value, ty: &str, status: &str) -> bool {
    condition(obj, ty)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some(status)
}

fn cond_field(obj: &Value, ty: &str, field: &str) -> String {
    condition(obj, ty)
        .and_then(|c| c.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn records_of(items: &[Value]) -> Vec<(i64, String)> {
    let mut out: Vec<(i64, String)> = items
        .iter()
        .filter_map(|s| {
            let labels = s.pointer("/metadata/labels")?;
            let version = labels.get("version")?.as_str()?.parse().ok()?;
            let status = labels.get("status")?.as_str()?.to_string();
            Some((version, status))
        })
        .collect();
    out.sort();
    out
}

fn uid(obj: &Value) -> String {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// History must never have holes or pending records once things settle, and exactly
/// the newest record is deployed.
fn assert_history_sane(records: &[(i64, String)]) {
    assert!(!records.is_empty(), "no release records at all");
    for (i, (rev, _)) in records.iter().enumerate() {
        assert_eq!(
            *rev,
            records[0].0 + i as i64,
            "revisions are not contiguous: {records:?}"
        );
    }
    assert!(
        records.iter().all(|(_, s)| !s.starts_with("pending")),
        "a pending record is left: {records:?}"
    );
    let deployed: Vec<_> = records.iter().filter(|(_, s)| s == "deployed").collect();
    assert_eq!(
        deployed.len(),
        1,
        "exactly one deployed record: {records:?}"
    );
    assert_eq!(
        records.last().map(|(_, s)| s.as_str()),
        Some("deployed"),
        "the newest record is the deployed one: {records:?}"
    );
}

/// A namespaced CRD with open spec and status, in the e2e test group.
fn test_crd(kind: &str, plural: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.e2e.rudder.dev
spec:
  group: e2e.rudder.dev
  scope: Namespaced
  names: {{kind: {kind}, plural: {plural}, singular: {singular}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"#,
        singular = kind.to_lowercase()
    )
}

/// A watches.yaml for one test kind with the chart given by absolute path.
fn test_watches(dir: &Path, kind: &str, chart: &Path) -> PathBuf {
    let path = dir.join(format!("watches-{}.yaml", kind.to_lowercase()));
    std::fs::write(
        &path,
        format!(
            "- group: e2e.rudder.dev\n  version: v1\n  kind: {kind}\n  chart: {}\n",
            chart.display()
        ),
    )
    .expect("write watches");
    path
}

/// Installs the example CRD, starts an operator on the example watches.yaml, applies
/// the example CR and waits until it is deployed.
fn hello_deployed(c: &Cluster, extra: &[&str]) -> (Process, Value) {
    c.apply_file(&examples().join("crd.yaml"));
    c.wait_crd(HELLO_CRD);
    let op = c.operator("operator", &examples().join("watches.yaml"), extra);
    c.apply_file(&examples().join("cr.yaml"));
    let cr = c.wait_condition("hello", "hello-sample", "Deployed", "True", &op);
    (op, cr)
}

#[test]
fn create_update_delete_a_cr_with_kubectl() {
    let Some(c) = Cluster::start("lifecycle") else {
        return;
    };
    let (op, cr) = hello_deployed(&c, &[]);
    assert_eq!(cond_field(&cr, "Deployed", "reason"), "InstallSuccessful");
    assert!(has_condition(&cr, "Initialized", "True"), "{cr:#}");
    assert_eq!(
        cr.pointer("/status/deployedRelease/name")
            .and_then(Value::as_str),
        Some("hello-sample")
    );
    let manifest = cr
        .pointer("/status/deployedRelease/manifest")
        .and_then(Value::as_str)
        .unwrap_or("");
    assert!(
        manifest.contains("kind: Deployment"),
        "manifest: {manifest}"
    );
    let finalizers = cr
        .pointer("/metadata/finalizers")
        .cloned()
        .unwrap_or(json!([]));
    assert!(
        finalizers
            .as_array()
            .is_some_and(|f| f.contains(&json!("helm.sdk.operatorframework.io/uninstall-release"))),
        "the uninstall finalizer is set: {finalizers}"
    );
    assert_eq!(c.records("hello-sample"), vec![(1, "deployed".to_string())]);
    let dep = c.deployment("hello-sample").expect("the Deployment exists");
    assert_eq!(dep.pointer("/spec/replicas"), Some(&json!(2)));
    let cm = c
        .get(&["configmap", "hello-sample", "-n", c.ns()])
        .expect("the ConfigMap exists");
    assert!(cm
        .pointer("/data/index.html")
        .and_then(Value::as_str)
        .is_some_and(|h| h.contains("Hello from a custom resource")));

    // An edit of the spec is an upgrade.
    c.ok(&[
        "patch",
        "hello",
        "hello-sample",
        "-n",
        c.ns(),
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"replicaCount":3,"message":"edited"}}"#,
    ]);
    wait_for("revision 2 to be deployed", SETTLE, || {
        let r = c.records("hello-sample");
        r.contains(&(2, "deployed".to_string())).then_some(())
    });
    assert_eq!(
        c.records("hello-sample"),
        vec![(1, "superseded".to_string()), (2, "deployed".to_string())]
    );
    let dep = c.deployment("hello-sample").expect("the Deployment exists");
    assert_eq!(dep.pointer("/spec/replicas"), Some(&json!(3)));
    let cr = c.wait_condition("hello", "hello-sample", "Deployed", "True", &op);
    wait_for(
        "the Deployed reason to become UpgradeSuccessful",
        SETTLE,
        || {
            let cr = c.get(&["hello", "hello-sample", "-n", c.ns()])?;
            (cond_field(&cr, "Deployed", "reason") == "UpgradeSuccessful").then_some(())
        },
    );
    assert!(cr.pointer("/status/deployedRelease/manifest").is_some());

    // Deleting the CR uninstalls the release, then the finalizer lets the CR go.
    c.ok(&[
        "delete",
        "hello",
        "hello-sample",
        "-n",
        c.ns(),
        "--wait=false",
    ]);
    wait_for("the CR to be gone", SETTLE, || {
        c.get(&["hello", "hello-sample", "-n", c.ns()])
            .is_none()
            .then_some(())
    });
    assert!(c.deployment("hello-sample").is_none(), "Deployment left");
    assert!(c.get(&["service", "hello-sample", "-n", c.ns()]).is_none());
    assert!(c
        .get(&["configmap", "hello-sample", "-n", c.ns()])
        .is_none());
    assert_eq!(c.records("hello-sample"), vec![], "release records left");
}

#[test]
fn operator_killed_during_an_upgrade_recovers_with_history_intact() {
    let Some(c) = Cluster::start("crash") else {
        return;
    };
    c.apply_yaml(&test_crd("Slow", "slows"));
    c.wait_crd("slows.e2e.rudder.dev");
    let watches = test_watches(c.dir(), "Slow", &fixtures().join("charts/slow"));
    let mut op = c.operator("operator-1", &watches, &[]);
    c.apply_yaml(
        "apiVersion: e2e.rudder.dev/v1\nkind: Slow\nmetadata: {name: slow}\nspec: {generation: one}\n",
    );
    c.wait_condition("slows", "slow", "Deployed", "True", &op);
    assert_eq!(c.records("slow"), vec![(1, "deployed".to_string())]);

    c.ok(&[
        "patch",
        "slows",
        "slow",
        "-n",
        c.ns(),
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"generation":"two"}}"#,
    ]);
    // Kill as soon as the upgrade is seen in flight; the chart's pre-upgrade hooks
    // keep it in flight for a while. Whatever moment the kill lands at, the checks
    // below must hold.
    let deadline = Instant::now() + SETTLE;
    let mut caught_pending = false;
    while Instant::now() < deadline {
        let r = c.records("slow");
        if r.iter().any(|(_, s)| s == "pending-upgrade") {
            caught_pending = true;
            break;
        }
        if r.contains(&(2, "deployed".to_string())) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    op.kill();
    eprintln!(
        "operator killed {} the upgrade; records then: {:?}",
        if caught_pending { "during" } else { "after" },
        c.records("slow")
    );

    let op = c.operator("operator-2", &watches, &[]);
    let deadline = Instant::now() + AFTER_CRASH;
    loop {
        let cm = c.get(&["configmap", "slow-data", "-n", c.ns()]);
        let value = cm
            .as_ref()
            .and_then(|cm| cm.pointer("/data/generation"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let r = c.records("slow");
        let settled = value.as_deref() == Some("two")
            && r.last().is_some_and(|(_, s)| s == "deployed")
            && c.get(&["slows", "slow", "-n", c.ns()])
                .is_some_and(|cr| has_condition(&cr, "Deployed", "True"));
        if settled {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted operator did not finish the upgrade; records {r:?}, value {value:?}\n{}",
            op.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let records = c.records("slow");
    assert_history_sane(&records);
    assert_eq!(records[0].0, 1, "revision 1 kept: {records:?}");
    assert!(records.len() >= 2, "an upgrade record exists: {records:?}");
    if caught_pending {
        // The interrupted upgrade is kept, marked failed, and a later revision finished it.
        assert_eq!(records[1], (2, "failed".to_string()), "{records:?}");
        assert!(records.len() >= 3, "{records:?}");
    }
}

#[test]
fn deleted_release_secrets_are_adopted_without_recreating_objects() {
    let Some(c) = Cluster::start("adopt") else {
        return;
    };
    let (op, _) = hello_deployed(&c, &["--reconcile-period", "1h"]);
    let before = c.deployment("hello-sample").expect("Deployment exists");
    let cm_before = c
        .get(&["configmap", "hello-sample", "-n", c.ns()])
        .expect("ConfigMap exists");

    let deleted = c.ok(&[
        "delete",
        "secrets",
        "-n",
        c.ns(),
        "-l",
        "owner=helm,name=hello-sample",
    ]);
    // The operator may write a record again at once (a status change of the Deployment
    // wakes it), so what is checked is that the deletion happened, not that it lasts.
    assert!(
        deleted.contains("secret \"sh.helm.release.v1.hello-sample.v1\" deleted"),
        "the release record was deleted: {deleted}"
    );
    // A metadata change wakes the controller without waiting for the period.
    c.ok(&[
        "annotate",
        "hello",
        "hello-sample",
        "-n",
        c.ns(),
        "e2e.rudder.dev/poke=1",
    ]);
    let records = wait_for("a release record to be written again", SETTLE, || {
        let r = c.records("hello-sample");
        r.iter().any(|(_, s)| s == "deployed").then_some(r)
    });
    assert_history_sane(&records);
    let after = c
        .deployment("hello-sample")
        .expect("Deployment still exists");
    assert_eq!(uid(&before), uid(&after), "the Deployment was recreated");
    let cm_after = c
        .get(&["configmap", "hello-sample", "-n", c.ns()])
        .expect("ConfigMap still exists");
    assert_eq!(
        uid(&cm_before),
        uid(&cm_after),
        "the ConfigMap was recreated"
    );
    c.wait_condition("hello", "hello-sample", "Deployed", "True", &op);
}

/// A release of the hello chart in Helm v3's JSON shape.
fn legacy_release(ns: &str, release: &str, revision: i64, status: &str, message: &str) -> Value {
    json!({
        "name": release,
        "namespace": ns,
        "version": revision,
        "info": {
            "first_deployed": "2024-01-01T00:00:00Z",
            "last_deployed": "2024-01-01T00:00:00Z",
            "deleted": "",
            "status": status,
            "description": "Install complete",
        },
        "chart": {
            "metadata": {"apiVersion": "v2", "name": "hello", "version": "0.1.0", "appVersion": "1.27.0"},
            "templates": [],
            "values": {},
        },
        "config": {"message": message},
        "manifest": "",
    })
}

/// A Helm ConfigMap-driver record for the hello chart, as older setups left behind.
fn legacy_configmap(ns: &str, release: &str, revision: i64, status: &str, message: &str) -> Value {
    let rel = legacy_release(ns, release, revision, status, message);
    let record: release::Release = serde_json::from_value(rel).expect("a release record");
    let data = release::codec::encode(&record).expect("encodes");
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("sh.helm.release.v1.{release}.v{revision}"),
            "namespace": ns,
            "labels": {"owner": "helm", "name": release, "status": status, "version": revision.to_string()},
        },
        "data": {"release": data},
    })
}

#[test]
fn legacy_configmap_records_move_to_secrets() {
    let Some(c) = Cluster::start("migrate") else {
        return;
    };
    c.apply_file(&examples().join("crd.yaml"));
    c.wait_crd(HELLO_CRD);
    for (rev, status) in [(1, "superseded"), (2, "deployed")] {
        let cm = legacy_configmap(c.ns(), "hello-sample", rev, status, "old");
        c.apply_yaml(&serde_json::to_string(&cm).expect("json"));
    }
    c.apply_file(&examples().join("cr.yaml"));
    // An early helm-operator kept the whole release in the CR's status.
    c.apply_yaml(
        "apiVersion: demo.rudder.dev/v1alpha1\nkind: Hello\nmetadata: {name: legacy-status}\nspec: {message: old}\n",
    );
    let legacy = json!({"status": {"release": legacy_release(c.ns(), "legacy-status", 3, "deployed", "old")}});
    c.ok(&[
        "patch",
        "hello",
        "legacy-status",
        "-n",
        c.ns(),
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        &legacy.to_string(),
    ]);
    let op = c.operator("operator", &examples().join("watches.yaml"), &[]);

    c.wait_condition("hello", "hello-sample", "Deployed", "True", &op);
    let records = wait_for("the migrated history and an upgrade", SETTLE, || {
        let r = c.records("hello-sample");
        (r.len() >= 3).then_some(r)
    });
    assert_eq!(
        &records[..2],
        &[(1, "superseded".into()), (2, "superseded".into())]
    );
    assert_history_sane(&records);
    let leftovers = c.items(&[
        "configmaps",
        "-n",
        c.ns(),
        "-l",
        "owner=helm,name=hello-sample",
    ]);
    assert!(
        leftovers.is_empty(),
        "the ConfigMap records are removed once copied: {leftovers:?}"
    );

    c.wait_condition("hello", "legacy-status", "Deployed", "True", &op);
    let records = wait_for(
        "the status release as a Secret and an upgrade",
        SETTLE,
        || {
            let r = c.records("legacy-status");
            (r.len() >= 2).then_some(r)
        },
    );
    assert_eq!(records[0], (3, "superseded".to_string()), "{records:?}");
    assert_history_sane(&records);
    let cr = c
        .get(&["hello", "legacy-status", "-n", c.ns()])
        .expect("CR exists");
    assert!(
        cr.pointer("/status/release").is_none_or(Value::is_null),
        "the legacy release is removed from the status: {cr:#}"
    );
}

/// The lease holder of the operator's leader election Lease.
fn leader(c: &Cluster, lease: &str) -> Option<String> {
    c.get(&["lease", lease, "-n", c.ns()])?
        .pointer("/spec/holderIdentity")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
        .map(str::to_string)
}

#[test]
fn leader_election_one_replica_reconciles_and_the_other_takes_over() {
    let Some(c) = Cluster::start("leader") else {
        return;
    };
    c.apply_file(&examples().join("crd.yaml"));
    c.wait_crd(HELLO_CRD);
    let watches = examples().join("watches.yaml");
    let flags = [
        "--leader-elect",
        "--leader-election-id",
        "rudder-e2e",
        "--leader-election-namespace",
        c.ns(),
    ];
    let mut a = c.operator("replica-a", &watches, &flags);
    let first = wait_for("replica A to take the lease", SETTLE, || {
        leader(&c, "rudder-e2e")
    });
    let b = c.operator("replica-b", &watches, &flags);

    c.apply_file(&examples().join("cr.yaml"));
    c.wait_condition("hello", "hello-sample", "Deployed", "True", &a);
    assert_eq!(c.records("hello-sample"), vec![(1, "deployed".to_string())]);
    assert_eq!(
        leader(&c, "rudder-e2e").as_deref(),
        Some(first.as_str()),
        "the lease stays with replica A while it lives"
    );
    // The standby never reconciled: it would have logged the CR's name, as the
    // leader did.
    assert!(
        a.stderr().contains("hello-sample") || a.stdout().contains("hello-sample"),
        "the leader logs the CRs it reconciles:\n{}",
        a.logs()
    );
    assert!(
        !b.stderr().contains("hello-sample") && !b.stdout().contains("hello-sample"),
        "the standby replica touched the CR:\n{}",
        b.logs()
    );

    a.kill();
    let second = wait_for("replica B to take the lease over", AFTER_CRASH, || {
        leader(&c, "rudder-e2e").filter(|h| *h != first)
    });
    assert_ne!(first, second);
    c.ok(&[
        "patch",
        "hello",
        "hello-sample",
        "-n",
        c.ns(),
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"message":"after failover"}}"#,
    ]);
    wait_for("replica B to upgrade the release", SETTLE, || {
        c.records("hello-sample")
            .contains(&(2, "deployed".to_string()))
            .then_some(())
    });
    assert_history_sane(&c.records("hello-sample"));
}

#[test]
fn a_release_may_not_escape_its_namespace() {
    let Some(c) = Cluster::start("escape") else {
        return;
    };
    let elsewhere_ns = c.namespace("elsewhere");
    let elsewhere = elsewhere_ns.name();
    c.apply_yaml(&test_crd("Escape", "escapes"));
    c.wait_crd("escapes.e2e.rudder.dev");
    let watches = test_watches(c.dir(), "Escape", &fixtures().join("charts/escape"));
    let op = c.operator("operator", &watches, &[]);
    c.apply_yaml(&format!(
        "apiVersion: e2e.rudder.dev/v1\nkind: Escape\nmetadata: {{name: other-ns}}\nspec: {{otherNamespace: {elsewhere}}}\n",
    ));
    c.apply_yaml(
        "apiVersion: e2e.rudder.dev/v1\nkind: Escape\nmetadata: {name: cluster-role}\nspec: {clusterRole: true}\n",
    );
    let cr = c.wait_condition("escapes", "other-ns", "ReleaseFailed", "True", &op);
    let message = cond_field(&cr, "ReleaseFailed", "message");
    assert!(
        message.contains(elsewhere) && message.contains("other-ns-stray"),
        "the message names the object and the namespace: {message}"
    );
    let cr = c.wait_condition("escapes", "cluster-role", "ReleaseFailed", "True", &op);
    let message = cond_field(&cr, "ReleaseFailed", "message");
    assert!(
        message.contains("cluster-role-stray") && message.contains("allowClusterScoped"),
        "the message names the object and the way to allow it: {message}"
    );
    assert!(c
        .get(&["configmap", "other-ns-stray", "-n", elsewhere])
        .is_none());
    assert!(c.get(&["clusterrole", "cluster-role-stray"]).is_none());
    for name in ["other-ns", "cluster-role"] {
        assert!(
            c.get(&["configmap", &format!("{name}-ok"), "-n", c.ns()])
                .is_none(),
            "nothing of release {name} is applied"
        );
        assert!(
            c.records(name).iter().all(|(_, s)| s != "deployed"),
            "release {name} is not deployed"
        );
        let cr = c.get(&["escapes", name, "-n", c.ns()]).expect("CR exists");
        assert!(!has_condition(&cr, "Deployed", "True"), "{cr:#}");
    }
}

#[test]
fn rudder_up_deploys_the_example() {
    // `rudder up` serves its own embedded API server, wherever the suite runs.
    let Some(kubectl) = testkit::tools::kubectl() else {
        return;
    };
    let dir = scratch("up");
    let kubeconfig = dir.join("up.kubeconfig");
    let mut up = Process::spawn(
        "rudder-up",
        &dir,
        Command::new(rudder()).current_dir(&dir).args([
            "up",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            kubeconfig.to_str().expect("utf-8"),
            "--timeout",
            "120s",
        ]),
    );
    let deadline = Instant::now() + SETTLE + Duration::from_secs(30);
    loop {
        let out = up.stdout();
        if out.contains("Deployed: revision 1") && out.contains("Ctrl-C") {
            break;
        }
        if let Some(status) = up.exited() {
            panic!(
                "rudder up exited ({status}) before deploying:\n{}",
                up.logs()
            );
        }
        assert!(
            Instant::now() < deadline,
            "rudder up did not deploy:\n{}",
            up.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = up.stdout();
    assert!(
        out.contains(kubeconfig.to_str().expect("utf-8")),
        "the kubeconfig path is printed:\n{out}"
    );
    assert!(
        out.contains("kubectl get hellos"),
        "commands to try are printed"
    );
    let got = kubectl
        .command()
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["get", "hellos", "-o", "json"])
        .output()
        .expect("kubectl runs");
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let list: Value = serde_json::from_slice(&got.stdout).expect("json");
    let names: Vec<&str> = list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i.pointer("/metadata/name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, vec!["hello-sample"]);

    // Ctrl-C stops it cleanly.
    let _ = Command::new("kill")
        .args(["-INT", &up.pid().to_string()])
        .status();
    let status = wait_for("rudder up to stop after SIGINT", SETTLE, || up.exited());
    assert!(
        status.success(),
        "rudder up exit status {status}:\n{}",
        up.logs()
    );
}

/// `deploy/manifests` as a user applies them, moved into the test's namespace (which
/// stands in for `rudder-system`) with the ClusterRole and its binding named after it,
/// so that nothing outside the test is touched; both are deleted with the namespace.
#[test]
fn deploy_manifests_apply_to_a_cluster() {
    let Some(c) = Cluster::start("deploy") else {
        return;
    };
    c.apply_file(&examples().join("crd.yaml"));
    c.wait_crd(HELLO_CRD);
    let role = format!("{}-rudder-operator", c.ns());
    for kind in ["ClusterRole", "ClusterRoleBinding"] {
        c.ns.delete_on_teardown(
            kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "rbac.authorization.k8s.io",
                "v1",
                kind,
            )),
            &role,
        );
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_root().join("deploy/manifests"))
        .expect("deploy/manifests")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("manifest");
        if text.contains("kind: Namespace") {
            continue;
        }
        let mut text = text.replace(
            "namespace: rudder-system",
            &format!("namespace: {}", c.ns()),
        );
        // Only the cluster-scoped objects (and the binding's roleRef) get the test's
        // name; the namespaced ones keep theirs inside the test's namespace.
        if text.contains("kind: ClusterRole") {
            text = text.replace(
                "\n  name: rudder-operator\n",
                &format!("\n  name: {role}\n"),
            );
        }
        c.apply_yaml(&text);
    }
    let dep = c
        .get(&["deployment", "rudder-operator", "-n", c.ns()])
        .expect("the operator Deployment exists");
    let args = dep
        .pointer("/spec/template/spec/containers/0/args")
        .cloned()
        .unwrap_or(json!([]));
    assert!(
        args.as_array()
            .is_some_and(|a| a.contains(&json!("--leader-elect"))),
        "the Deployment runs with --leader-elect: {args}"
    );
    assert!(c
        .get(&["clusterrole", &role])
        .is_some_and(|r| r.pointer("/rules").is_some()));
    let binding = c
        .get(&["clusterrolebinding", &role])
        .expect("the ClusterRoleBinding exists");
    assert_eq!(binding.pointer("/roleRef/name"), Some(&json!(role)));
    assert_eq!(
        binding.pointer("/subjects/0/namespace"),
        Some(&json!(c.ns()))
    );
    assert!(c
        .get(&["serviceaccount", "rudder-operator", "-n", c.ns()])
        .is_some());
}

/// A chart whose `depth` value makes it render a block mapping nested that deep.
const NESTING_CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        "apiVersion: v2\nname: nesting\nversion: 0.1.0\n",
    ),
    ("values.yaml", "depth: 0\n"),
    (
        "templates/cm.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  depth: {{ .Values.depth | quote }}
{{- if .Values.depth }}
nested:
{{- range $i := until (int .Values.depth) }}
{{ repeat (int (add1 $i)) " " }}k:
{{- end }}
{{- end }}
"#,
    ),
];

#[test]
fn a_cr_rendering_deeply_nested_output_fails_alone() {
    let Some(c) = Cluster::start("nesting") else {
        return;
    };
    let chart = testkit::write_chart(c.dir(), "nesting", NESTING_CHART);
    c.apply_yaml(&test_crd("Nest", "nests"));
    c.wait_crd("nests.e2e.rudder.dev");
    let op = c.operator("operator", &test_watches(c.dir(), "Nest", &chart), &[]);
    // 5,000 levels from a 12-byte spec: more than the 3,000 that once overflowed the
    // operator's stack on every start, within the 10,000 Go's YAML reader accepts.
    c.apply_yaml(&format!(
        "apiVersion: e2e.rudder.dev/v1\nkind: Nest\nmetadata: {{name: deep, namespace: {ns}}}\nspec: {{depth: 5000}}\n---\napiVersion: e2e.rudder.dev/v1\nkind: Nest\nmetadata: {{name: fine, namespace: {ns}}}\nspec: {{depth: 0}}\n",
        ns = c.ns()
    ));
    let deep = c.wait_condition("nest", "deep", "ReleaseFailed", "True", &op);
    let message = cond_field(&deep, "ReleaseFailed", "message");
    assert!(!message.is_empty() && message.len() < 4096, "{message}");
    c.wait_condition("nest", "fine", "Deployed", "True", &op);
    // The operator is still up, and a restart meets the deep CR again and survives it.
    let mut op = op;
    assert!(op.exited().is_none(), "the operator exited\n{}", op.logs());
    drop(op);
    let mut again = c.operator(
        "operator-again",
        &test_watches(c.dir(), "Nest", &chart),
        &[],
    );
    c.apply_yaml(&format!(
        "apiVersion: e2e.rudder.dev/v1\nkind: Nest\nmetadata: {{name: later, namespace: {ns}}}\nspec: {{depth: 0}}\n",
        ns = c.ns()
    ));
    c.wait_condition("nest", "later", "Deployed", "True", &again);
    assert!(
        again.exited().is_none(),
        "the operator exited\n{}",
        again.logs()
    );
    assert!(c.records("deep").iter().all(|(_, s)| s != "deployed"));
}

/// `manager/operation[/subresource]` of each managed-fields entry of `obj`, sorted.
fn managers(obj: &Value) -> Vec<String> {
    let mut out: Vec<String> = obj
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let sub = s("subresource");
            let sub = if sub.is_empty() {
                String::new()
            } else {
                format!("/{sub}")
            };
            format!("{}/{}{sub}", s("manager"), s("operation"))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The fields (`f:…` keys, at any depth) the entry of `manager` on `obj` owns.
fn owned_fields(obj: &Value, manager: &str, subresource: &str) -> String {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e["manager"] == manager)
        .filter(|e| e["subresource"].as_str().unwrap_or_default() == subresource)
        .map(|e| e["fieldsV1"].to_string())
        .collect()
}

#[test]
fn every_write_of_the_operator_carries_its_name() {
    let Some(c) = Cluster::start("writers") else {
        return;
    };
    let name = "hello-operator";
    let (op, _) = hello_deployed(&c, &[&format!("--field-manager={name}")]);
    let get = |kind: &str, obj: &str| {
        c.get(&[kind, obj, "-n", c.ns(), "--show-managed-fields"])
            .unwrap_or_else(|| panic!("{kind}/{obj} exists\n{}", op.logs()))
    };

    // The CR: the finalizer on the object, the conditions on its status.
    let cr = get("hello", "hello-sample");
    let m = managers(&cr);
    assert!(m.contains(&format!("{name}/Update")), "{m:?}");
    assert!(m.contains(&format!("{name}/Update/status")), "{m:?}");
    assert!(
        owned_fields(&cr, name, "").contains("f:finalizers"),
        "{cr:#}"
    );
    assert!(owned_fields(&cr, name, "status").contains("f:conditions"));

    // The release record, and the lock the operator put on it and took off.
    let record = get("secret", "sh.helm.release.v1.hello-sample.v1");
    assert_eq!(managers(&record), [format!("{name}/Update")]);

    // The release's objects are applied as Helm, whatever the operator is called.
    for kind in ["deployment", "service", "configmap"] {
        let obj = get(kind, "hello-sample");
        let main: Vec<String> = managers(&obj)
            .into_iter()
            .filter(|m| !m.ends_with("/status"))
            .collect();
        assert_eq!(main, ["helm/Apply"], "{kind}");
    }

    // The Events about the CR.
    let events: Vec<Value> = wait_for("the operator's Events", SETTLE, || {
        let events: Vec<Value> = c
            .items(&["events", "-n", c.ns(), "--show-managed-fields"])
            .into_iter()
            .filter(|e| e.pointer("/involvedObject/name") == Some(&json!("hello-sample")))
            .collect();
        (!events.is_empty()).then_some(events)
    });
    for e in &events {
        assert_eq!(managers(e), [format!("{name}/Update")], "{e:#}");
    }
}

/// Runs the real `helm` against the test's namespace, requiring success.
fn helm(c: &Cluster, tool: &testkit::Tool, args: &[&str]) -> String {
    let home = c.dir().join("helm-home");
    let out = Command::new(tool.path())
        .args(args)
        .args(["-n", c.ns()])
        .env("KUBECONFIG", c.ns.kubeconfig())
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "helm {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_history_helm_wrote_is_pruned_to_the_limit_and_helm_still_reads_it() {
    let Some(c) = Cluster::start("helm-history") else {
        return;
    };
    let Some(tool) = testkit::tools::helm() else {
        return;
    };
    // The example CR's spec, as helm values.
    let values = c.dir().join("cr-values.yaml");
    std::fs::write(
        &values,
        "replicaCount: 2\nmessage: Hello from a custom resource\nservice:\n  port: 8080\n",
    )
    .expect("values file");
    let values = values.to_str().expect("utf-8 path");
    let chart = repo_root().join("examples/charts/hello");
    let chart = chart.to_str().expect("utf-8 path");
    // Twelve revisions by helm, unbounded (`--history-max 0`); the last one has the
    // CR's spec, so the operator adopts it rather than upgrading.
    for i in 1..=12 {
        let message = format!("message=helm revision {i}");
        let mut args = if i == 1 {
            vec!["install", "hello-sample", chart, "-f", values]
        } else {
            vec![
                "upgrade",
                "hello-sample",
                chart,
                "--history-max",
                "0",
                "-f",
                values,
            ]
        };
        if i < 12 {
            args.extend(["--set", &message]);
        }
        helm(&c, &tool, &args);
    }
    assert_eq!(c.records("hello-sample").len(), 12);

    c.apply_file(&examples().join("crd.yaml"));
    c.wait_crd(HELLO_CRD);
    let op = c.operator(
        "operator",
        &examples().join("watches.yaml"),
        &["--max-history=3"],
    );
    c.apply_file(&examples().join("cr.yaml"));
    c.wait_condition("hello", "hello-sample", "Deployed", "True", &op);
    let superseded = "superseded".to_string();
    let kept = vec![
        (10, superseded.clone()),
        (11, superseded),
        (12, "deployed".to_string()),
    ];
    wait_for("the history pruned to 3 records", SETTLE, || {
        (c.records("hello-sample") == kept).then_some(())
    });

    // helm reads what is left as its own: the history, and an old revision's values.
    let history: Value =
        serde_json::from_str(&helm(&c, &tool, &["history", "hello-sample", "-o", "json"]))
            .expect("helm history prints JSON");
    let revisions: Vec<(i64, String)> = history
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let n = r["revision"].as_i64().unwrap_or_default();
            (n, r["status"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    assert_eq!(revisions, kept);
    let old: Value = serde_json::from_str(&helm(
        &c,
        &tool,
        &[
            "get",
            "values",
            "hello-sample",
            "--revision",
            "10",
            "-o",
            "json",
        ],
    ))
    .expect("helm get values prints JSON");
    assert_eq!(old["message"], "helm revision 10");
}
