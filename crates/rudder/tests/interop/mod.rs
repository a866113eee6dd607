//! What the helm-interop suites share: a cluster (the embedded API server as a
//! `rudder apiserver` child process, or the cluster `RUDDER_TEST_KUBECONFIG` names),
//! namespaces of a test's own that are deleted when it ends, and the `helm`, `rudder`
//! and `kubectl` binaries run against it. The `turns` fixture chart and its three
//! value states live in `tests/fixtures/turns`.

#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Points the suites at a real cluster instead of the embedded server.
pub const KUBECONFIG_ENV: &str = "RUDDER_TEST_KUBECONFIG";
/// The helm binary to drive (default: /usr/local/bin/helm, else `helm` on PATH).
pub const HELM_ENV: &str = "RUDDER_TEST_HELM";
/// Upper bound for things to settle; it only stops a hung test.
pub const SETTLE: Duration = Duration::from_secs(120);

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/turns")
}

/// The `turns` chart.
pub fn chart() -> String {
    path_str(&fixtures().join("chart"))
}

/// The values file of state `s` (`a`, `b` or `c`).
pub fn state_file(s: char) -> String {
    path_str(&fixtures().join(format!("{s}.yaml")))
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

fn works(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The helm binary, or `None` after printing why the test is skipped.
pub fn helm_bin() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os(HELM_ENV).map(PathBuf::from),
        Some(PathBuf::from("/usr/local/bin/helm")),
        Some(PathBuf::from("helm")),
    ];
    let found = candidates
        .into_iter()
        .flatten()
        .find(|p| works(Command::new(p).arg("version")));
    if found.is_none() {
        eprintln!(
            "SKIPPED: no helm binary (set {HELM_ENV}, or run ../shared/tools/install-helm-cli.sh)"
        );
    }
    found
}

fn kubectl_available() -> bool {
    let ok = works(Command::new("kubectl").args(["version", "--client"]));
    if !ok {
        eprintln!("SKIPPED: kubectl is not on PATH");
    }
    ok
}

fn unique() -> u32 {
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Polls `probe` until it returns `Some`, panicking with `what` after `limit`.
pub fn wait_for<T>(what: &str, limit: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A child process killed when dropped; its output goes to files in `dir`.
pub struct Proc {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Proc {
    pub fn spawn(name: &str, dir: &Path, cmd: &mut Command) -> Proc {
        let stdout = dir.join(format!("{name}.stdout"));
        let stderr = dir.join(format!("{name}.stderr"));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(File::create(&stdout).expect("log file"))
            .stderr(File::create(&stderr).expect("log file"))
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            child,
            stdout,
            stderr,
        }
    }

    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// The tail of the logs, for failure messages.
    pub fn logs(&self) -> String {
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = err.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cluster the tools act on.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub helm: PathBuf,
    _server: Option<Proc>,
}

impl Cluster {
    /// `None` (with a message) when helm or kubectl is missing.
    pub fn start(name: &str) -> Option<Cluster> {
        let helm = helm_bin()?;
        if !kubectl_available() {
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "interop-{name}-{}-{}",
            std::process::id(),
            unique()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        if let Some(kc) = std::env::var_os(KUBECONFIG_ENV) {
            return Some(Cluster {
                dir,
                kubeconfig: PathBuf::from(kc),
                helm,
                _server: None,
            });
        }
        let kubeconfig = dir.join("kubeconfig");
        let server = Proc::spawn(
            "apiserver",
            &dir,
            Command::new(env!("CARGO_BIN_EXE_rudder")).args([
                "apiserver",
                "--listen",
                "127.0.0.1:0",
                "--simulate-readiness",
                "--kubeconfig-out",
                &path_str(&kubeconfig),
            ]),
        );
        wait_for("the API server to start", SETTLE, || {
            server.stdout().contains("listening on").then_some(())
        });
        Some(Cluster {
            dir,
            kubeconfig,
            helm,
            _server: Some(server),
        })
    }

    /// A fresh namespace, deleted when the guard drops.
    pub fn namespace(&self, prefix: &str) -> Namespace<'_> {
        let name = format!("{prefix}-{}-{}", std::process::id(), unique());
        let ns = Namespace {
            cluster: self,
            name,
        };
        ns.kubectl_ok(&["create", "namespace", &ns.name]);
        ns
    }

    fn command(&self, program: &Path, driver: Option<&str>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .env_remove("HELM_NAMESPACE")
            .env_remove("HELM_KUBECONTEXT")
            // Helm keeps its caches and repositories here, away from the user's.
            .env("HELM_CACHE_HOME", self.dir.join("helm-cache"))
            .env("HELM_CONFIG_HOME", self.dir.join("helm-config"))
            .env("HELM_DATA_HOME", self.dir.join("helm-data"));
        match driver {
            Some(d) => cmd.env("HELM_DRIVER", d),
            None => cmd.env_remove("HELM_DRIVER"),
        };
        cmd
    }
}

/// Which CLI runs a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Helm,
    Rudder,
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tool::Helm => "helm",
            Tool::Rudder => "rudder",
        })
    }
}

/// A namespace of one test.
pub struct Namespace<'c> {
    pub cluster: &'c Cluster,
    pub name: String,
}

impl Namespace<'_> {
    /// Runs `tool ARGS -n NS` with `HELM_DRIVER` = `driver` (Helm's default when `None`).
    pub fn run(&self, tool: Tool, driver: Option<&str>, args: &[&str]) -> Output {
        let c = self.cluster;
        let program = match tool {
            Tool::Helm => c.helm.clone(),
            Tool::Rudder => PathBuf::from(env!("CARGO_BIN_EXE_rudder")),
        };
        let mut cmd = c.command(&program, driver);
        cmd.args(args).args(["-n", &self.name]);
        if tool == Tool::Rudder {
            cmd.arg("--kubeconfig").arg(&c.kubeconfig);
        }
        cmd.output()
            .unwrap_or_else(|e| panic!("{tool} does not run: {e}"))
    }

    /// Runs and requires success; returns stdout.
    pub fn ok(&self, tool: Tool, driver: Option<&str>, args: &[&str]) -> String {
        let out = self.run(tool, driver, args);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        assert!(
            out.status.success(),
            "{tool} {} failed in {}:\n{}{}",
            args.join(" "),
            self.name,
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// `tool ARGS -o json`, parsed.
    pub fn json(&self, tool: Tool, driver: Option<&str>, args: &[&str]) -> Value {
        let mut full = args.to_vec();
        full.extend(["-o", "json"]);
        let out = self.ok(tool, driver, &full);
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("{tool} {} printed no JSON ({e}): {out}", args.join(" ")))
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.cluster.kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs")
    }

    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The items of `kubectl get KIND -n NS -o json` (managed fields shown).
    pub fn items(&self, kind: &str, selector: Option<&str>) -> Vec<Value> {
        let mut args = vec![
            "get",
            kind,
            "-n",
            &self.name,
            "-o",
            "json",
            "--show-managed-fields",
        ];
        if let Some(s) = selector {
            args.extend(["-l", s]);
        }
        let out = self.kubectl_ok(&args);
        let list: Value = serde_json::from_str(&out).expect("kubectl prints JSON");
        list["items"].as_array().cloned().unwrap_or_default()
    }
}

impl Drop for Namespace<'_> {
    fn drop(&mut self) {
        let _ = self.kubectl(&["delete", "namespace", &self.name, "--wait=false"]);
    }
}
