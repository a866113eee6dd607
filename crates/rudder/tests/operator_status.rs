//! What the operator shows of a CR besides its release, end to end with the `rudder`
//! binary against the test cluster (the embedded API server, or
//! `RUDDER_TEST_KUBECONFIG`'s):
//!
//! - `status.deployedRelease.manifest` per `--status-manifest` and a watch's
//!   `statusManifest` (`none`, `redacted`, `full`), and no Secret value in any Event
//!   or log line (debug level) through an install, an upgrade, a repaired drift and an
//!   uninstall, whatever the mode;
//! - `rudder values KIND/NAME`: the values the operator gives the CR's release (the
//!   same as the release it then installs records), overrides marked on request,
//!   nothing written.
//!
//! Skips (with a message) without kubectl.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};
use testkit::{wait_for, Kubectl, Process, TestNamespace};

const SETTLE: Duration = Duration::from_secs(120);
const GROUP: &str = "status.e2e.rudder.dev";

fn rudder() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rudder"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write_chart(dir: &Path, name: &str, files: &[(&str, &str)]) -> PathBuf {
    testkit::write_chart(dir, name, files)
}

/// `rudder run` on `watches` in the namespace's scratch directory, watching only it.
fn operator(ns: &TestNamespace, watches: &Path, extra: &[&str]) -> Process {
    let mut cmd = rudder();
    cmd.current_dir(ns.dir())
        .env("KUBECONFIG", ns.kubeconfig())
        .env("WATCH_NAMESPACE", ns.name())
        .env_remove("RUST_LOG")
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
    Process::spawn("operator", ns.dir(), &mut cmd)
}

fn condition(obj: &Value, ty: &str) -> Option<String> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)?
        .get("status")?
        .as_str()
        .map(str::to_string)
}

/// The CR, once a reconcile of its current generation ended with it `Ready`.
fn wait_ready(k: &Kubectl, kind: &str, name: &str, op: &Process) -> Value {
    let deadline = Instant::now() + SETTLE;
    loop {
        let cr = k.get(&[kind, name]);
        if let Some(cr) = &cr {
            let observed =
                cr.pointer("/status/observedGeneration") == cr.pointer("/metadata/generation");
            if observed && condition(cr, "Ready").as_deref() == Some("True") {
                return cr.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {kind}/{name} to be Ready: {cr:#?}\n{}",
            op.logs()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

const CREDS_CHART: &[(&str, &str)] = &[
    ("Chart.yaml", "apiVersion: v2\nname: creds\nversion: 0.1.0\n"),
    (
        "templates/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-creds\ntype: Opaque\ndata:\n  password: {{ .Values.password | b64enc }}\nstringData:\n  token: {{ .Values.token | quote }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  user: {{ .Values.user | quote }}\n",
    ),
    ("templates/NOTES.txt", "Release {{ .Release.Name }} is up for {{ .Values.user }}.\n"),
];

/// The kinds of the Secrets test and how each shows the manifest: the first by
/// `--status-manifest=none`, the others by their watch's `statusManifest`.
const MODES: &[(&str, &str, Option<&str>)] = &[
    ("Quiet", "quiets", None),
    ("Masked", "maskeds", Some("redacted")),
    ("Open", "opens", Some("full")),
];

#[test]
fn secret_values_stay_out_of_status_events_and_logs() {
    let cluster = testkit::Cluster::start();
    for (kind, _, _) in MODES {
        cluster.install_crd(&testkit::crd::open_crd(GROUP, "v1", kind));
    }
    let ns = cluster.namespace("secrets");
    let Some(k) = ns.kubectl() else {
        return;
    };
    let chart = write_chart(ns.dir(), "creds", CREDS_CHART);
    let mut watches = String::new();
    for (kind, _, mode) in MODES {
        watches.push_str(&format!(
            "- group: {GROUP}\n  version: v1\n  kind: {kind}\n  chart: {}\n",
            chart.display()
        ));
        if let Some(mode) = mode {
            watches.push_str(&format!("  statusManifest: {mode}\n"));
        }
    }
    let watches_file = ns.dir().join("watches.yaml");
    std::fs::write(&watches_file, watches).expect("watches");
    let op = operator(
        &ns,
        &watches_file,
        &["--status-manifest=none", "--zap-log-level=debug"],
    );

    let secrets = ["pw-SENTINEL-4f1c", "tok-SENTINEL-9a2e", "pw2-SENTINEL-77d0"];
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let apply = |kind: &str, name: &str, password: &str| {
        k.apply_yaml(&format!(
            "apiVersion: {GROUP}/v1\nkind: {kind}\nmetadata:\n  name: {name}\nspec:\n  user: alice\n  password: {password}\n  token: {}\n",
            secrets[1]
        ));
    };
    for (kind, _, _) in MODES {
        apply(kind, &kind.to_lowercase(), secrets[0]);
    }
    let mut statuses = Vec::new();
    for (kind, plural, _) in MODES {
        let cr = wait_ready(&k, plural, &kind.to_lowercase(), &op);
        statuses.push((*kind, cr["status"].clone()));
    }

    // What each mode shows.
    let quiet = &statuses[0].1["deployedRelease"];
    assert_eq!(quiet["name"], "quiet");
    assert!(quiet.get("manifest").is_none(), "none: {quiet:#}");
    let masked = statuses[1].1["deployedRelease"]["manifest"]
        .as_str()
        .expect("a redacted manifest");
    let docs = gocodec::yaml::parse_yaml_documents(masked).expect("YAML");
    let secret = docs
        .iter()
        .find(|d| d["kind"] == "Secret")
        .expect("the Secret, redacted");
    assert_eq!(secret["data"], json!({"password": "<redacted>"}));
    assert_eq!(secret["stringData"], json!({"token": "<redacted>"}));
    let cm = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("ConfigMap");
    assert_eq!(cm["data"]["user"], "alice", "only Secrets are redacted");
    let open = statuses[2].1["deployedRelease"]["manifest"]
        .as_str()
        .expect("the full manifest");
    assert!(
        open.contains(&b64(secrets[0])),
        "full is the Go operator's: {open}"
    );

    // Upgrade (a new password), drift repaired, uninstall: Events and logs of each.
    for (kind, _, _) in MODES {
        apply(kind, &kind.to_lowercase(), secrets[2]);
    }
    for (kind, plural, _) in MODES {
        let cr = wait_ready(&k, plural, &kind.to_lowercase(), &op);
        statuses.push((*kind, cr["status"].clone()));
    }
    let before = k.get(&["secret", "masked-creds"]).expect("the Secret");
    k.ok(&["delete", "secret", "masked-creds"]);
    wait_for("the deleted Secret to be repaired", SETTLE, || {
        let now = k.get(&["secret", "masked-creds"])?;
        (now["metadata"]["uid"] != before["metadata"]["uid"]).then_some(())
    });
    for (kind, plural, _) in MODES {
        k.ok(&[
            "delete",
            plural,
            &kind.to_lowercase(),
            "--wait=true",
            "--timeout=120s",
        ]);
    }

    let events = [
        k.ok(&["get", "events", "-o", "json"]),
        k.ok(&["get", "events.v1.events.k8s.io", "-o", "json"]),
    ]
    .join("\n");
    assert!(
        events.contains("Repaired"),
        "the repair's Event is there: {events}"
    );
    assert!(
        events.contains("masked-creds"),
        "naming the Secret: {events}"
    );
    let logs = op.logs();
    assert!(logs.contains("Uninstalled release"), "{logs}");
    let mut shown: Vec<(&str, String)> = vec![("Events", events), ("operator logs", logs)];
    for (kind, status) in &statuses {
        if *kind != "Open" {
            shown.push((kind, status.to_string()));
        }
    }
    for (place, text) in &shown {
        for value in secrets {
            for form in [value.to_string(), b64(value)] {
                assert!(
                    !text.contains(&form),
                    "{place} carry a Secret's value {form:?}"
                );
            }
        }
    }
}

#[test]
fn rudder_values_prints_what_the_release_gets_and_writes_nothing() {
    let cluster = testkit::Cluster::start();
    cluster.install_crd(&testkit::crd::open_crd(GROUP, "v1", "Valued"));
    let ns = cluster.namespace("values");
    let Some(k) = ns.kubectl() else {
        return;
    };
    let chart = write_chart(
        ns.dir(),
        "valued",
        &[
            ("Chart.yaml", "apiVersion: v2\nname: valued\nversion: 0.1.0\n"),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  values: {{ toJson .Values | quote }}\n",
            ),
        ],
    );
    let watches = ns.dir().join("watches.yaml");
    std::fs::write(
        &watches,
        format!(
            "- group: {GROUP}\n  version: v1\n  kind: Valued\n  chart: {}\n  overrideValues:\n    image.tag: \"1.2.3\"\n    replicas: \"2\"\n",
            chart.display()
        ),
    )
    .expect("watches");
    k.apply_yaml(&format!(
        "apiVersion: {GROUP}/v1\nkind: Valued\nmetadata:\n  name: web\nspec:\n  image:\n    repository: nginx\n    tag: latest\n  replicas: 1\n  name: web\n"
    ));
    let cr_before = k.get(&["valued", "web"]).expect("the CR");

    let values = |extra: &[&str]| -> Output {
        let mut cmd = rudder();
        cmd.args(["values", "valued/web", "-n", ns.name(), "--watches-file"])
            .arg(&watches)
            .arg("--kubeconfig")
            .arg(ns.kubeconfig())
            .args(extra);
        cmd.output().expect("rudder runs")
    };
    let out = values(&[]);
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    let composed = gocodec::yaml::parse_yaml_to_json(&printed).expect("YAML");
    let want = json!({
        "image": {"repository": "nginx", "tag": "1.2.3"},
        "replicas": "2",
        "name": "web",
    });
    assert_eq!(composed, want, "{printed}");

    let out = values(&["--show-overrides"]);
    assert!(out.status.success(), "{}", text(&out));
    let marked = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = marked
        .lines()
        .filter(|l| l.contains("# overrideValues (watches.yaml)"))
        .map(str::trim)
        .collect();
    assert_eq!(
        lines,
        [
            "tag: 1.2.3 # overrideValues (watches.yaml)",
            "replicas: \"2\" # overrideValues (watches.yaml)"
        ],
        "{marked}"
    );
    assert_eq!(
        gocodec::yaml::parse_yaml_to_json(&marked).expect("still YAML"),
        want
    );

    // Nothing was written.
    let cr_after = k.get(&["valued", "web"]).expect("the CR");
    assert_eq!(
        cr_after["metadata"]["resourceVersion"],
        cr_before["metadata"]["resourceVersion"]
    );
    assert!(k.items(&["secrets", "-l", "owner=helm"]).is_empty());

    // What is wrong is said.
    let out = rudder()
        .args(["values", "valued/nope", "-n", ns.name(), "--watches-file"])
        .arg(&watches)
        .arg("--kubeconfig")
        .arg(ns.kubeconfig())
        .output()
        .expect("rudder runs");
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains(&format!("Valued {}/nope not found", ns.name())),
        "{said}"
    );
    let out = rudder()
        .args(["values", "memcached/web", "-n", ns.name(), "--watches-file"])
        .arg(&watches)
        .arg("--kubeconfig")
        .arg(ns.kubeconfig())
        .output()
        .expect("rudder runs");
    assert!(
        text(&out).contains("watches no kind \"memcached\" (it watches: Valued)"),
        "{}",
        text(&out)
    );

    // The release the operator installs gets exactly these values.
    let op = operator(&ns, &watches, &[]);
    wait_ready(&k, "valueds", "web", &op);
    let out = rudder()
        .args(["get", "values", "web", "-o", "json", "-n", ns.name()])
        .arg("--kubeconfig")
        .arg(ns.kubeconfig())
        .output()
        .expect("rudder runs");
    assert!(out.status.success(), "{}", text(&out));
    let recorded: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(recorded, want);
}
