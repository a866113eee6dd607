//! `rudder` and the real `helm` v4 CLI take turns on one release: install, upgrade,
//! rollback and uninstall alternate between the two tools, with Helm's default
//! (server-side) apply and with `--server-side=false`, on the `turns` chart whose
//! revisions change replicas, env, ports and volumeMounts, drop a field and drop an
//! object. After every step: no error, a contiguous history (both tools print the same
//! one), and the live objects exactly as a fresh `helm install` of that revision's
//! values leaves them (no stale field, list item or object), owned by Helm's field
//! manager only. Then the operator's case: a CR's release rolled back (and upgraded)
//! with `helm`, which the operator restores to the CR's spec once, and stops.
//!
//! Runs against `rudder apiserver`, or the cluster `RUDDER_TEST_KUBECONFIG` names;
//! skips (with a message) without helm or kubectl.

mod interop;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use interop::{chart, path_str, state_file, wait_for, Cluster, Namespace, Tool, SETTLE};
use serde_json::{json, Value};
use testkit::Process;

use Tool::{Helm, Rudder};

const RELEASE: &str = "web";

/// One step of a sequence.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `install` of a state (`a`, `b`, `c`) with extra flags.
    Install(Tool, char, &'static [&'static str]),
    Upgrade(Tool, char, &'static [&'static str]),
    /// `rollback` to a revision with extra flags.
    Rollback(Tool, i64, &'static [&'static str]),
    Uninstall(Tool),
}

use Step::{Install, Rollback, Uninstall, Upgrade};

const CLIENT_SIDE: &[&str] = &["--server-side=false"];
const SERVER_SIDE: &[&str] = &["--server-side=true"];
const DEFAULTS: &[&str] = &[];

/// What a release's object is, without what the server assigns, counts or allocates
/// and without the namespace it lives in.
fn normalized(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "namespace",
            "selfLink",
            "ownerReferences",
        ] {
            m.remove(k);
        }
        // The operator labels every object of its releases with the chart's name, as
        // the Go helm-operator does; a CLI release has no such label.
        if let Some(l) = m.get_mut("labels").and_then(Value::as_object_mut) {
            l.remove("helm.sdk.operatorframework.io/chart");
            if l.is_empty() {
                m.remove("labels");
            }
        }
        if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("meta.helm.sh/release-namespace");
            a.remove("deployment.kubernetes.io/revision");
            if a.is_empty() {
                m.remove("annotations");
            }
        }
    }
    if let Some(o) = o.as_object_mut() {
        o.remove("status");
    }
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        for k in ["clusterIP", "clusterIPs"] {
            spec.remove(k);
        }
    }
    o
}

fn is_hook(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations/helm.sh~1hook").is_some()
}

/// The release's objects (hooks aside), `Kind/name` → the object as shown.
fn release_objects(ns: &Namespace<'_>) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for kind in ["deployments", "services", "configmaps"] {
        for obj in ns.items(kind, None) {
            let owned = obj.pointer("/metadata/annotations/meta.helm.sh~1release-name")
                == Some(&json!(RELEASE));
            if !owned || is_hook(&obj) {
                continue;
            }
            let key = format!(
                "{}/{}",
                obj["kind"].as_str().unwrap_or_default(),
                obj["metadata"]["name"].as_str().unwrap_or_default()
            );
            out.insert(key, obj);
        }
    }
    out
}

fn normalized_objects(ns: &Namespace<'_>) -> BTreeMap<String, Value> {
    release_objects(ns)
        .into_iter()
        .map(|(k, v)| (k, normalized(&v)))
        .collect()
}

/// The objects a fresh `helm install` of each state leaves.
struct References(BTreeMap<char, BTreeMap<String, Value>>);

impl References {
    fn new(cluster: &Cluster) -> References {
        let mut out = BTreeMap::new();
        for s in ['a', 'b', 'c'] {
            let ns = cluster.namespace(&format!("ref-{s}"));
            let file = state_file(s);
            ns.ok(Helm, None, &["install", RELEASE, &chart(), "-f", &file]);
            out.insert(s, normalized_objects(&ns));
        }
        References(out)
    }

    fn of(&self, state: char) -> &BTreeMap<String, Value> {
        &self.0[&state]
    }
}

/// Field managers of the main resource (status writers aside), as `manager/Operation`.
fn spec_managers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e["subresource"].as_str().unwrap_or("").is_empty())
        .map(|e| {
            format!(
                "{}/{}",
                e["manager"].as_str().unwrap_or_default(),
                e["operation"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// The history both tools print, checked contiguous with exactly the newest deployed.
fn checked_history(ns: &Namespace<'_>, revisions: usize, what: &str) -> Value {
    let helm = ns.json(Helm, None, &["history", RELEASE]);
    let rudder = ns.json(Rudder, None, &["history", RELEASE]);
    assert_eq!(
        rudder, helm,
        "{what}: rudder and helm print the same history"
    );
    let rows = helm.as_array().cloned().unwrap_or_default();
    let got: Vec<(i64, String)> = rows
        .iter()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap_or_default(),
                r["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want: Vec<(i64, String)> = (1..=revisions as i64)
        .map(|v| {
            let status = if v == revisions as i64 {
                "deployed"
            } else {
                "superseded"
            };
            (v, status.to_string())
        })
        .collect();
    assert_eq!(got, want, "{what}: history {helm:#}");
    helm
}

/// The live objects are exactly those of a fresh install of `state`, owned by Helm's
/// field manager only.
fn assert_live_is(ns: &Namespace<'_>, refs: &References, state: char, what: &str) {
    let live = release_objects(ns);
    let got: BTreeMap<String, Value> = live
        .iter()
        .map(|(k, v)| (k.clone(), normalized(v)))
        .collect();
    let want = refs.of(state);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{what}: the release's objects"
    );
    for (key, obj) in &got {
        assert_eq!(
            obj, &want[key],
            "{what}: {key} differs from a fresh install of state {state}"
        );
    }
    for (key, obj) in &live {
        let managers = spec_managers(obj);
        assert!(
            managers
                .iter()
                .all(|m| m == "helm/Apply" || m == "helm/Update"),
            "{what}: {key} has managers {managers:?}"
        );
    }
}

/// Runs `steps` on release `web` in a namespace of its own, checking after each.
fn take_turns(cluster: &Cluster, refs: &References, name: &str, steps: &[Step]) {
    let ns = cluster.namespace(name);
    let chart = chart();
    // The state each revision deployed.
    let mut states: Vec<char> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let what = format!("{name}, step {} ({step:?})", i + 1);
        let (tool, state) = match *step {
            Install(tool, s, flags) | Upgrade(tool, s, flags) => {
                let verb = if matches!(step, Install(..)) {
                    "install"
                } else {
                    "upgrade"
                };
                let file = state_file(s);
                let mut args = vec![verb, RELEASE, &chart, "-f", &file];
                args.extend_from_slice(flags);
                ns.ok(tool, None, &args);
                (tool, s)
            }
            Rollback(tool, to, flags) => {
                let to_s = to.to_string();
                let mut args = vec!["rollback", RELEASE, &to_s];
                args.extend_from_slice(flags);
                ns.ok(tool, None, &args);
                (tool, states[(to - 1) as usize])
            }
            Uninstall(tool) => {
                ns.ok(tool, None, &["uninstall", RELEASE]);
                assert!(release_objects(&ns).is_empty(), "{what}: objects left");
                let list = ns.json(Helm, None, &["list"]);
                assert_eq!(list, json!([]), "{what}: records left");
                return;
            }
        };
        states.push(state);
        checked_history(&ns, states.len(), &what);
        assert_live_is(&ns, refs, state, &what);
        if tool == Rudder {
            let meta = ns.json(Helm, None, &["get", "metadata", RELEASE]);
            assert_eq!(meta["applyMethod"], "ssa", "{what}: {meta}");
        }
    }
}

/// Sequences of turns with Helm applying server-side (its default), each on a fresh release.
const SERVER_SIDE_TURNS: &[(&str, &[Step])] = &[
    (
        "rudder-first",
        &[
            Install(Rudder, 'a', DEFAULTS),
            Upgrade(Helm, 'b', DEFAULTS),
            Upgrade(Rudder, 'c', DEFAULTS),
            Rollback(Helm, 1, DEFAULTS),
            Upgrade(Helm, 'c', DEFAULTS),
            Rollback(Rudder, 2, DEFAULTS),
            Upgrade(Rudder, 'a', DEFAULTS),
            Upgrade(Helm, 'b', SERVER_SIDE),
            Uninstall(Helm),
        ],
    ),
    (
        "helm-first",
        &[
            Install(Helm, 'a', DEFAULTS),
            Upgrade(Rudder, 'b', DEFAULTS),
            Upgrade(Helm, 'c', DEFAULTS),
            Rollback(Rudder, 1, DEFAULTS),
            Rollback(Helm, 2, DEFAULTS),
            Upgrade(Rudder, 'c', DEFAULTS),
            Uninstall(Rudder),
        ],
    ),
];

/// Sequences of turns with Helm's client-side apply in the mix, each on a fresh release.
const CLIENT_SIDE_TURNS: &[(&str, &[Step])] = &[
    (
        "helm-csa-first",
        &[
            Install(Helm, 'a', CLIENT_SIDE),
            Upgrade(Rudder, 'b', DEFAULTS),
            Upgrade(Helm, 'c', CLIENT_SIDE),
            Upgrade(Rudder, 'a', DEFAULTS),
            // Back to a client-side revision: helm applies client-side again...
            Rollback(Helm, 1, DEFAULTS),
            // ...and so does its next upgrade (`auto` follows the last record).
            Upgrade(Helm, 'b', DEFAULTS),
            Rollback(Rudder, 3, DEFAULTS),
            Upgrade(Helm, 'a', DEFAULTS),
            Uninstall(Helm),
        ],
    ),
    (
        "rudder-then-helm-csa",
        &[
            Install(Rudder, 'a', DEFAULTS),
            Upgrade(Helm, 'b', CLIENT_SIDE),
            Upgrade(Helm, 'c', DEFAULTS),
            // Helm's own move from client-side to server-side apply.
            Upgrade(Helm, 'a', SERVER_SIDE),
            Rollback(Rudder, 2, DEFAULTS),
            Upgrade(Helm, 'c', CLIENT_SIDE),
            Rollback(Helm, 1, CLIENT_SIDE),
            Upgrade(Rudder, 'c', DEFAULTS),
            Rollback(Helm, 4, DEFAULTS),
            Uninstall(Rudder),
        ],
    ),
];

#[test]
fn rudder_and_helm_take_turns_applying_server_side() {
    let Some(cluster) = Cluster::start("ssa") else {
        return;
    };
    let refs = References::new(&cluster);
    for (name, steps) in SERVER_SIDE_TURNS {
        take_turns(&cluster, &refs, name, steps);
    }
}

#[test]
fn rudder_and_helm_take_turns_with_helms_client_side_apply() {
    let Some(cluster) = Cluster::start("csa") else {
        return;
    };
    let refs = References::new(&cluster);
    for (name, steps) in CLIENT_SIDE_TURNS {
        take_turns(&cluster, &refs, name, steps);
    }
}

/// A namespaced CRD for the operator case (cluster-scoped: deleted when dropped).
struct Crd<'c> {
    ns: &'c Namespace<'c>,
    name: String,
}

impl Drop for Crd<'_> {
    fn drop(&mut self) {
        let _ = self
            .ns
            .kubectl(&["delete", "crd", &self.name, "--wait=false"]);
    }
}

fn install_crd<'c>(ns: &'c Namespace<'c>, group: &str) -> Crd<'c> {
    let name = format!("turns.{group}");
    let crd = format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {name}
spec:
  group: {group}
  scope: Namespaced
  names: {{kind: Turn, plural: turns, singular: turn, listKind: TurnList}}
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
"#
    );
    let path = ns.cluster.dir.join("crd.yaml");
    std::fs::write(&path, crd).expect("write CRD");
    ns.kubectl_ok(&["apply", "-f", &path_str(&path)]);
    wait_for("the CRD to be served", SETTLE, || {
        ns.kubectl(&["get", "turns", "-n", &ns.name])
            .status
            .success()
            .then_some(())
    });
    Crd { ns, name }
}

/// Applies the `Turn` CR named like the release with state `s`'s values as its spec.
fn apply_cr(ns: &Namespace<'_>, group: &str, s: char) {
    let values = std::fs::read_to_string(state_file(s)).expect("state file");
    let spec: String = values.lines().map(|l| format!("  {l}\n")).collect();
    let cr = format!(
        "apiVersion: {group}/v1\nkind: Turn\nmetadata:\n  name: {RELEASE}\n  namespace: {}\nspec:\n{spec}",
        ns.name
    );
    let path = ns.cluster.dir.join(format!("cr-{s}.yaml"));
    std::fs::write(&path, cr).expect("write CR");
    ns.kubectl_ok(&["apply", "-f", &path_str(&path)]);
}

/// The release's (revision, status) pairs as helm lists them.
fn revisions(ns: &Namespace<'_>) -> Vec<(i64, String)> {
    let out = ns.run(Helm, None, &["history", RELEASE, "-o", "json"]);
    if !out.status.success() {
        return Vec::new();
    }
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    rows.as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["revision"].as_i64().unwrap_or_default(),
                r["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Waits until revision `n` is the deployed newest one and the objects are `state`'s.
fn wait_deployed(ns: &Namespace<'_>, refs: &References, n: i64, state: char, op: &Process) {
    let what = format!("revision {n} deployed with state {state}");
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let history = revisions(ns);
        let settled = history.last() == Some(&(n, "deployed".to_string()))
            && normalized_objects(ns) == *refs.of(state);
        if settled {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}; history {history:?}\n{}",
            op.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    checked_history(ns, n as usize, &what);
    assert_live_is(ns, refs, state, &what);
}

/// No new revision for a while (several reconciles: the dependent watches saw the
/// restore, the operator's own writes trigger nothing more).
fn assert_steady(ns: &Namespace<'_>, n: i64, op: &Process) {
    std::thread::sleep(Duration::from_secs(5));
    let history = revisions(ns);
    assert_eq!(
        history.len(),
        n as usize,
        "the operator kept writing revisions: {history:?}\n{}",
        op.logs()
    );
}

#[test]
fn the_operator_restores_a_release_helm_rolled_back() {
    let Some(cluster) = Cluster::start("operator") else {
        return;
    };
    let refs = References::new(&cluster);
    let ns = cluster.namespace("operator");
    let group = format!("{}.interop.rudder.dev", ns.name);
    let _crd = install_crd(&ns, &group);
    let watches = cluster.dir.join("watches.yaml");
    std::fs::write(
        &watches,
        format!(
            "- group: {group}\n  version: v1\n  kind: Turn\n  chart: {}\n",
            chart()
        ),
    )
    .expect("write watches");
    let op = Process::spawn(
        "operator",
        &cluster.dir,
        Command::new(env!("CARGO_BIN_EXE_rudder"))
            .env("KUBECONFIG", &cluster.kubeconfig)
            .env("WATCH_NAMESPACE", &ns.name)
            .env("RUST_LOG", "info")
            .args([
                "run",
                "--watches-file",
                &path_str(&watches),
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "127.0.0.1:0",
            ]),
    );
    apply_cr(&ns, &group, 'a');
    wait_deployed(&ns, &refs, 1, 'a', &op);
    apply_cr(&ns, &group, 'b');
    wait_deployed(&ns, &refs, 2, 'b', &op);

    // On-call rolls the release back with helm: revision 3 is state A, and the
    // operator restores the CR's spec (B) as revision 4, once.
    ns.ok(Helm, None, &["rollback", RELEASE, "1"]);
    wait_deployed(&ns, &refs, 4, 'b', &op);
    assert_steady(&ns, 4, &op);
    for (key, obj) in release_objects(&ns) {
        let owner = obj.pointer("/metadata/ownerReferences/0/kind");
        assert_eq!(
            owner,
            Some(&json!("Turn")),
            "{key} is owned by the CR again"
        );
    }

    // `helm upgrade` with other values is restored the same way.
    ns.ok(
        Helm,
        None,
        &["upgrade", RELEASE, &chart(), "-f", &state_file('c')],
    );
    wait_deployed(&ns, &refs, 6, 'b', &op);
    assert_steady(&ns, 6, &op);

    // A helm upgrade with the CR's own values: the chart's hook prints the revision,
    // so the CR's spec (rendered as the next revision) differs from revision 7 and is
    // restored once as revision 8 (a chart without such output would be adopted with
    // no new revision; see docs/releases.md). Then it stops.
    ns.ok(
        Helm,
        None,
        &["upgrade", RELEASE, &chart(), "-f", &state_file('b')],
    );
    wait_deployed(&ns, &refs, 8, 'b', &op);
    assert_steady(&ns, 8, &op);

    ns.kubectl_ok(&["delete", "turn", RELEASE, "-n", &ns.name]);
    wait_for("the operator to uninstall", SETTLE, || {
        (revisions(&ns).is_empty() && release_objects(&ns).is_empty()).then_some(())
    });
}
