//! operator-sdk's own Helm sample, unchanged, run under rudder the way operator-sdk's
//! `test/e2e/helm` runs it: the `config/default` kustomization rendered with
//! `kubectl kustomize` (CRD, RBAC, namespace, ServiceAccount, metrics Service) is
//! applied, `rudder run` is started from the sample's directory with the manager
//! Deployment's own arguments, and the sample CR is installed, upgraded, repaired and
//! uninstalled while the logs, the status and the HTTPS metrics are checked; then
//! the operator is stopped with SIGTERM and started again with the kube-rbac-proxy
//! era's manager arguments (plain-HTTP metrics on loopback), which must keep working.
//!
//! Runs against the embedded API server, or any cluster with
//! `RUDDER_TEST_KUBECONFIG=path` (everything it creates is deleted at the end). The
//! RBAC half (the operator authenticated as the sample's ServiceAccount, the metrics
//! endpoint's TokenReview/SubjectAccessReview) runs where the server authorizes
//! requests: a real cluster, or `rudder apiserver --authorization rbac` when this
//! build has it. Skips with a message when kubectl or the sample is absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use testkit::{free_port, wait_for, Process};

/// Upper bound for anything to happen; it only stops a hung test.
const SETTLE: Duration = Duration::from_secs(120);
const SYSTEM_NS: &str = "memcached-operator-system";
const SA: &str = "memcached-operator-controller-manager";
const CR: &str = "memcached-sample";

fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/memcached-operator")
}

fn have(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Where the test runs: a kubeconfig (the embedded server's, or the one given).
struct Cluster {
    dir: PathBuf,
    kubeconfig: PathBuf,
    /// Whether requests are authorized (RBAC), so ServiceAccount tokens mean something.
    rbac: bool,
    _server: Option<Process>,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        if let Ok(path) = std::env::var("RUDDER_TEST_KUBECONFIG") {
            return Cluster {
                dir: dir.to_path_buf(),
                kubeconfig: PathBuf::from(path),
                rbac: true,
                _server: None,
            };
        }
        let kubeconfig = dir.join("admin.kubeconfig");
        let help = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(["apiserver", "--help"])
            .output()
            .expect("rudder runs");
        let rbac = String::from_utf8_lossy(&help.stdout).contains("--authorization");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
        cmd.args([
            "apiserver",
            "--listen",
            "127.0.0.1:0",
            "--simulate-readiness",
        ])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig);
        if rbac {
            // kubectl sends bearer tokens over HTTPS only.
            cmd.args(["--authorization", "rbac", "--tls"]);
        } else {
            eprintln!(
                "NOTE: this rudder apiserver has no --authorization; the RBAC checks \
                 (ServiceAccount identity, metrics 401/403) are skipped"
            );
        }
        let server = Process::spawn_one_log("apiserver", dir, &mut cmd);
        wait_for("the API server to listen", SETTLE, || {
            server
                .stdout()
                .contains("apiserver listening on")
                .then_some(())
        });
        Cluster {
            dir: dir.to_path_buf(),
            kubeconfig,
            rbac,
            _server: Some(server),
        }
    }

    fn kubectl_with(
        &self,
        kubeconfig: &Path,
        args: &[&str],
        stdin: Option<&str>,
    ) -> (bool, String) {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(kubeconfig).args(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(text) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        let out = child.wait_with_output().expect("kubectl finishes");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    fn kubectl(&self, args: &[&str]) -> (bool, String) {
        self.kubectl_with(&self.kubeconfig, args, None)
    }

    fn must(&self, args: &[&str]) -> String {
        let (ok, out) = self.kubectl(args);
        assert!(ok, "kubectl {args:?} failed: {out}");
        out
    }

    fn apply(&self, manifest: &str) {
        let (ok, out) = self.kubectl_with(&self.kubeconfig, &["apply", "-f", "-"], Some(manifest));
        assert!(ok, "kubectl apply failed: {out}\n{manifest}");
    }

    fn json(&self, args: &[&str]) -> Option<Value> {
        let mut full = args.to_vec();
        full.extend(["-o", "json"]);
        let (ok, out) = self.kubectl(&full);
        if !ok {
            return None;
        }
        serde_json::from_str(&out).ok()
    }

    /// A token of ServiceAccount `ns/name`, from a TokenRequest (sent as JSON with
    /// `--raw`: `kubectl create token` sends protobuf, which the embedded server
    /// does not read for TokenRequest).
    fn token(&self, ns: &str, name: &str) -> String {
        let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token");
        let body = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#;
        let (ok, out) = self.kubectl_with(
            &self.kubeconfig,
            &["create", "--raw", &path, "-f", "-"],
            Some(body),
        );
        assert!(ok, "TokenRequest for {ns}/{name} failed: {out}");
        let answer: Value = serde_json::from_str(&out).expect("TokenRequest JSON");
        answer["status"]["token"]
            .as_str()
            .expect("a token")
            .to_string()
    }

    /// A kubeconfig that authenticates with `token` against the same server.
    fn kubeconfig_for(&self, token: &str, file: &str) -> PathBuf {
        let view = self.must(&["config", "view", "--raw", "--minify", "-o", "json"]);
        let mut cfg: Value = serde_json::from_str(&view).expect("kubeconfig JSON");
        cfg["users"] = json!([{"name": "sa", "user": {"token": token}}]);
        if let Some(ctx) = cfg["contexts"].get_mut(0) {
            ctx["context"]["user"] = json!("sa");
        }
        let path = self.dir.join(file);
        std::fs::write(&path, serde_json::to_string_pretty(&cfg).expect("JSON")).expect("write");
        path
    }
}

/// The documents of a YAML stream, as JSON.
fn documents(stream: &str) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in stream.lines().chain(std::iter::once("---")) {
        if line == "---" {
            if !current.trim().is_empty() {
                docs.push(gocodec::yaml::parse_yaml_to_json(&current).expect("YAML document"));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

/// The manager container's arguments, from the rendered Deployment.
fn manager_args(docs: &[Value]) -> Vec<String> {
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the manager Deployment");
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    let manager = containers
        .iter()
        .find(|c| c["name"] == "manager")
        .expect("the manager container");
    manager["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg").to_string())
        .collect()
}

/// `rudder run` as the manager container, from the sample's directory, with the
/// Deployment's `args` but for what a shared test machine needs: free loopback ports
/// for the fixed metrics and probe ports, and the Lease namespace a pod would read
/// from its ServiceAccount mount. Returns it with its metrics and probe ports.
fn start_manager(
    args: &[String],
    kubeconfig: &Path,
    sample: &Path,
    name: &str,
    dir: &Path,
) -> (Process, u16, u16) {
    let metrics_port = free_port();
    let health_port = free_port();
    let mut run_args: Vec<String> = args
        .iter()
        .map(|a| {
            if a.starts_with("--metrics-bind-address=") {
                format!("--metrics-bind-address=127.0.0.1:{metrics_port}")
            } else if a.starts_with("--health-probe-bind-address=") {
                format!("--health-probe-bind-address=127.0.0.1:{health_port}")
            } else {
                a.clone()
            }
        })
        .collect();
    run_args.push(format!("--leader-election-namespace={SYSTEM_NS}"));
    run_args.push("--reconcile-period=5s".into());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rudder"));
    cmd.arg("run")
        .args(&run_args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .current_dir(sample)
        .env_remove("WATCH_NAMESPACE");
    (
        Process::spawn_one_log(name, dir, &mut cmd),
        metrics_port,
        health_port,
    )
}

/// `https://127.0.0.1:<port>/metrics` with curl: the status code and the body.
fn scrape(port: u16, token: Option<&str>) -> (u16, String) {
    fetch(&format!("https://127.0.0.1:{port}/metrics"), token)
}

/// A GET with curl (any certificate accepted): the status code and the body.
fn fetch(url: &str, token: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-sk", "-o", "-", "-w", "\n%{http_code}"]);
    if let Some(t) = token {
        cmd.arg("-H").arg(format!("Authorization: Bearer {t}"));
    }
    let out = cmd.arg(url).output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// The manager's arguments in the kube-rbac-proxy era's patch (the proxy sidecar
/// served HTTPS and the manager plain HTTP on loopback).
fn legacy_manager_args(sample: &Path) -> Vec<String> {
    let path = sample.join("legacy/manager_auth_proxy_patch.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    manager_args(&documents(&text))
}

/// The value of the series `series` (name and labels, exactly) in a scrape.
fn series_value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

/// The operator's JSON log lines.
fn log_lines(op: &Process) -> Vec<Value> {
    op.stdout()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn logged(op: &Process, msg: &str) -> Option<Value> {
    log_lines(op).into_iter().find(|l| l["msg"] == msg)
}

fn condition(cr: &Value, kind: &str) -> Option<Value> {
    cr["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .cloned()
}

#[test]
fn operator_sdk_memcached_sample_runs_unchanged() {
    let sample = sample_dir();
    if !sample.join("watches.yaml").exists() {
        eprintln!(
            "SKIPPED: operator-sdk's sample is not at {}",
            sample.display()
        );
        return;
    }
    if !have("kubectl", "version") && !have("kubectl", "--help") {
        eprintln!("SKIPPED: kubectl is not on PATH");
        return;
    }
    let curl = have("curl", "--version");
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("memcached-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let cluster = Cluster::start(&dir);

    // The scaffold, rendered as `make deploy` renders it.
    let (ok, rendered) = cluster.kubectl(&[
        "kustomize",
        sample.join("config/default").to_str().expect("path"),
    ]);
    assert!(ok, "kubectl kustomize: {rendered}");
    let docs = documents(&rendered);
    let args = manager_args(&docs);
    assert_eq!(
        args,
        [
            "--metrics-require-rbac",
            "--metrics-secure",
            "--metrics-bind-address=:8443",
            "--leader-elect",
            "--leader-election-id=memcached-operator",
            "--health-probe-bind-address=:8081",
        ],
        "the current scaffold's manager arguments"
    );
    // Everything but the Deployment (rudder runs here instead) and the ServiceMonitor
    // (no Prometheus operator here).
    let to_apply: Vec<&Value> = docs
        .iter()
        .filter(|d| d["kind"] != "Deployment" && d["kind"] != "ServiceMonitor")
        .collect();
    let manifest = to_apply
        .iter()
        .map(|d| serde_json::to_string(d).expect("JSON"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    cluster.apply(&manifest);
    wait_for("the Memcached CRD to be served", SETTLE, || {
        cluster
            .kubectl(&["get", "memcacheds", "-A"])
            .0
            .then_some(())
    });

    // The operator authenticates as the sample's ServiceAccount where requests are
    // authorized, so the scaffold's RBAC is what it runs with.
    let operator_kubeconfig = if cluster.rbac {
        let token = cluster.token(SYSTEM_NS, SA);
        cluster.kubeconfig_for(&token, "operator.kubeconfig")
    } else {
        cluster.kubeconfig.clone()
    };
    // Without an authorizing server the metrics filter has no TokenReview to ask, so
    // `--metrics-require-rbac` is left out there.
    let args: Vec<String> = args
        .into_iter()
        .filter(|a| cluster.rbac || a != "--metrics-require-rbac")
        .collect();
    let (op, metrics_port, _) =
        start_manager(&args, &operator_kubeconfig, &sample, "operator", &dir);

    // The Go operator's startup lines, zap JSON.
    let watching = wait_for("\"Watching resource\" in the logs", SETTLE, || {
        logged(&op, "Watching resource")
    });
    assert_eq!(watching["logger"], "helm.controller", "{watching}");
    assert_eq!(watching["apiVersion"], "cache.example.com/v1alpha1");
    assert_eq!(watching["kind"], "Memcached");
    assert_eq!(watching["reconcilePeriod"], "5s");
    assert!(
        watching["ts"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{watching}"
    );
    wait_for("leadership", SETTLE, || {
        logged(
            &op,
            "successfully acquired lease memcached-operator-system/memcached-operator",
        )
    });

    // The sample CR, unchanged, in a namespace of its own.
    let ns = format!("memcached-e2e-{}", std::process::id());
    cluster.must(&["create", "namespace", &ns]);
    let cr_file = sample.join("config/samples/cache_v1alpha1_memcached.yaml");
    cluster.must(&["apply", "-n", &ns, "-f", cr_file.to_str().expect("path")]);

    let cr = wait_for("Deployed=True", SETTLE, || {
        let cr = cluster.json(&["get", "memcached", CR, "-n", &ns])?;
        (condition(&cr, "Deployed")?["status"] == "True").then_some(cr)
    });
    let deployed = condition(&cr, "Deployed").expect("Deployed");
    assert_eq!(deployed["reason"], "InstallSuccessful", "{deployed}");
    assert_eq!(
        condition(&cr, "Initialized").expect("Initialized")["status"],
        "True"
    );
    let release = cr["status"]["deployedRelease"]["name"]
        .as_str()
        .expect("release name")
        .to_string();
    assert_eq!(release, CR);
    let sts = wait_for("the StatefulSet", SETTLE, || {
        cluster.json(&["get", "statefulset", &release, "-n", &ns])
    });
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(sts["metadata"]["ownerReferences"][0]["kind"], "Memcached");
    let installed = wait_for("\"Installed release\"", SETTLE, || {
        logged(&op, "Installed release")
    });
    for (k, v) in [
        ("level", "info"),
        ("logger", "helm.controller"),
        ("namespace", ns.as_str()),
        ("name", CR),
        ("apiVersion", "cache.example.com/v1alpha1"),
        ("kind", "Memcached"),
        ("release", CR),
    ] {
        assert_eq!(installed[k], v, "{k} of {installed}");
    }

    // Upgrade: change the spec.
    cluster.must(&[
        "patch",
        "memcached",
        CR,
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicaCount":2}}"#,
    ]);
    wait_for("the StatefulSet scaled to 2", SETTLE, || {
        let sts = cluster.json(&["get", "statefulset", &release, "-n", &ns])?;
        (sts["spec"]["replicas"] == 2).then_some(())
    });
    let upgraded = wait_for("\"Upgraded release\"", SETTLE, || {
        logged(&op, "Upgraded release")
    });
    assert_eq!(upgraded["force"], false, "{upgraded}");
    wait_for("UpgradeSuccessful", SETTLE, || {
        let cr = cluster.json(&["get", "memcached", CR, "-n", &ns])?;
        (condition(&cr, "Deployed")?["reason"] == "UpgradeSuccessful").then_some(())
    });

    // Repair: a deleted dependent comes back, a drifted one is set back.
    let service = wait_for("the release's Service", SETTLE, || {
        let list = cluster.json(&[
            "get",
            "service",
            "-n",
            &ns,
            "-l",
            &format!("app.kubernetes.io/instance={release}"),
        ])?;
        list["items"][0]["metadata"]["name"]
            .as_str()
            .map(str::to_string)
    });
    cluster.must(&["delete", "service", &service, "-n", &ns, "--wait=false"]);
    cluster.must(&["scale", "statefulset", &release, "-n", &ns, "--replicas=5"]);
    wait_for(
        "the Service re-created and the StatefulSet back at 2",
        SETTLE,
        || {
            let svc = cluster.json(&["get", "service", &service, "-n", &ns])?;
            let sts = cluster.json(&["get", "statefulset", &release, "-n", &ns])?;
            (svc["metadata"]["deletionTimestamp"].is_null() && sts["spec"]["replicas"] == 2)
                .then_some(())
        },
    );
    wait_for("\"Reconciled release\"", SETTLE, || {
        logged(&op, "Reconciled release")
    });

    // The HTTPS metrics endpoint, as the scaffold's ServiceMonitor scrapes it.
    if curl {
        let reader =
            if cluster.rbac {
                // A scraper bound to the sample's metrics-reader ClusterRole, and a stranger.
                cluster.must(&["create", "serviceaccount", "scraper", "-n", &ns]);
                cluster.must(&["create", "serviceaccount", "stranger", "-n", &ns]);
                let binding = format!("memcached-e2e-metrics-{}", std::process::id());
                cluster.apply(&json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": binding},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "memcached-operator-metrics-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": ns}],
            }).to_string());
                let scraper = cluster.token(&ns, "scraper");
                let stranger = cluster.token(&ns, "stranger");
                assert_eq!(
                    scrape(metrics_port, None),
                    (401, "Unauthorized\n".to_string())
                );
                let (code, body) = scrape(metrics_port, Some(&stranger));
                assert_eq!(code, 403, "{body}");
                assert_eq!(
                    body,
                    format!("Authorization denied for user system:serviceaccount:{ns}:stranger\n")
                );
                Some((scraper, binding))
            } else {
                None
            };
        let token = reader.as_ref().map(|(t, _)| t.as_str());
        let (code, body) = wait_for("a 200 from /metrics", SETTLE, || {
            let got = scrape(metrics_port, token);
            (got.0 == 200).then_some(got)
        });
        assert_eq!(code, 200);
        for needle in [
            format!("resource_created_at_seconds{{group=\"cache.example.com\",kind=\"Memcached\",name=\"{CR}\",namespace=\"{ns}\",version=\"v1alpha1\"}}"),
            "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue_after\"}".to_string(),
            "controller_runtime_reconcile_errors_total{controller=\"memcached-controller\"}".to_string(),
            "controller_runtime_max_concurrent_reconciles{controller=\"memcached-controller\"}".to_string(),
            "workqueue_adds_total{controller=\"memcached-controller\",name=\"memcached-controller\"}".to_string(),
            "leader_election_master_status{name=\"memcached-operator\"} 1".to_string(),
            "rest_client_requests_total{code=\"200\"".to_string(),
            "helm_operator_build_info{".to_string(),
            "process_resident_memory_bytes ".to_string(),
        ] {
            assert!(body.contains(&needle), "missing {needle} in:\n{body}");
        }
        if let Some((_, binding)) = &reader {
            cluster.kubectl(&["delete", "clusterrolebinding", binding]);
        }
    } else {
        eprintln!("NOTE: curl is not on PATH; the metrics endpoint is not scraped");
    }

    // Uninstall: deleting the CR removes the release and lets the CR go.
    cluster.must(&["delete", "memcached", CR, "-n", &ns, "--wait=false"]);
    wait_for("the CR to be gone", SETTLE, || {
        (!cluster.kubectl(&["get", "memcached", CR, "-n", &ns]).0).then_some(())
    });
    wait_for("the StatefulSet to be gone", SETTLE, || {
        (!cluster
            .kubectl(&["get", "statefulset", &release, "-n", &ns])
            .0)
            .then_some(())
    });
    wait_for("\"Uninstalled release\"", SETTLE, || {
        logged(&op, "Uninstalled release")
    });
    wait_for("\"Removing finalizer\"", SETTLE, || {
        logged(&op, "Removing finalizer")
    });
    let records = cluster
        .json(&["get", "secrets", "-n", &ns, "-l", "owner=helm"])
        .expect("secrets");
    assert_eq!(
        records["items"].as_array().map(Vec::len),
        Some(0),
        "release records left: {records}"
    );

    // No value of the CR's spec appears in the logs.
    let text = op.stdout();
    assert!(
        !text.contains("memcached:1.5.20"),
        "values leaked into the logs"
    );
    for line in text.lines().filter(|l| l.starts_with('{')) {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(
            v["level"].is_string() && v["ts"].is_string() && v["msg"].is_string(),
            "{line}"
        );
    }

    // Stopped as a pod is: it hands the Lease over at once.
    let mut op = op;
    let stopped = op.terminate(SETTLE);
    assert!(
        stopped.success(),
        "exit after SIGTERM: {stopped}\n{}",
        op.logs()
    );
    wait_for("\"released the leader lease\"", SETTLE, || {
        logged(&op, "released the leader lease")
    });
    drop(op);

    // The kube-rbac-proxy era's manager arguments keep working: metrics over plain
    // HTTP on loopback (the sidecar did TLS and RBAC in front), the probes, and the
    // same install and uninstall.
    let legacy = legacy_manager_args(&sample);
    assert_eq!(
        legacy,
        [
            "--health-probe-bind-address=:8081",
            "--metrics-bind-address=127.0.0.1:8080",
            "--leader-elect",
            "--leader-election-id=memcached-operator",
        ],
        "the kube-rbac-proxy era's manager arguments"
    );
    let (op, metrics_port, health_port) = start_manager(
        &legacy,
        &operator_kubeconfig,
        &sample,
        "legacy-operator",
        &dir,
    );
    wait_for("leadership after the hand-over", SETTLE, || {
        logged(
            &op,
            "successfully acquired lease memcached-operator-system/memcached-operator",
        )
    });
    cluster.must(&["apply", "-n", &ns, "-f", cr_file.to_str().expect("path")]);
    wait_for("Deployed=True under the legacy arguments", SETTLE, || {
        let cr = cluster.json(&["get", "memcached", CR, "-n", &ns])?;
        let deployed = condition(&cr, "Deployed")?;
        (deployed["status"] == "True" && deployed["reason"] == "InstallSuccessful").then_some(())
    });
    if curl {
        let url = format!("http://127.0.0.1:{metrics_port}/metrics");
        let (_, body) = wait_for("a 200 from the plain-HTTP /metrics", SETTLE, || {
            let got = fetch(&url, None);
            let counted = series_value(
                &got.1,
                "controller_runtime_reconcile_total{controller=\"memcached-controller\",result=\"requeue_after\"}",
            );
            (got.0 == 200 && counted.is_some_and(|n| n >= 1.0)).then_some(got)
        });
        for needle in [
            "leader_election_master_status{name=\"memcached-operator\"} 1",
            "workqueue_adds_total{controller=\"memcached-controller\",name=\"memcached-controller\"}",
        ] {
            assert!(body.contains(needle), "missing {needle} in:\n{body}");
        }
        assert_eq!(
            scrape(metrics_port, None).0,
            0,
            "the legacy metrics address speaks plain HTTP, not TLS"
        );
        for probe in ["healthz", "readyz"] {
            let url = format!("http://127.0.0.1:{health_port}/{probe}");
            wait_for(&format!("200 from /{probe}"), SETTLE, || {
                (fetch(&url, None).0 == 200).then_some(())
            });
        }
    }
    cluster.must(&["delete", "memcached", CR, "-n", &ns, "--wait=false"]);
    wait_for(
        "the CR to be gone under the legacy arguments",
        SETTLE,
        || (!cluster.kubectl(&["get", "memcached", CR, "-n", &ns]).0).then_some(()),
    );
    drop(op);

    cluster.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
    cluster.kubectl_with(
        &cluster.kubeconfig,
        &["delete", "--ignore-not-found", "--wait=false", "-f", "-"],
        Some(&manifest),
    );
}
