//! What the helm-interop suites share: a cluster (the embedded API server as a
//! `rudder apiserver` child process, or the cluster `RUDDER_TEST_KUBECONFIG` names),
//! namespaces of a test's own that are deleted when it ends, and the `helm`, `rudder`
//! and `kubectl` binaries run against it. The `turns` fixture chart and its three
//! value states live in `tests/fixtures/turns`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use testkit::{unique, Process, KUBECONFIG_ENV};

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

/// Whether the helm CLI under test prints Helm 4.1's manifest layout (documents
/// trimmed), where rudder, like Helm >= 4.2, keeps each document's trailing
/// newlines (helm/helm#31952).
pub fn helm_has_4_1_layout() -> bool {
    static OLD: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OLD.get_or_init(|| {
        let Some(helm) = testkit::tools::helm() else {
            return false;
        };
        let out = helm.command().args(["version", "--short"]).output();
        let version = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut parts = version.trim().trim_start_matches('v').split('.');
        let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        (major, minor) < (4, 2)
    })
}

/// `text` in Helm 4.1's layout where Helm 4.2 keeps documents' trailing
/// newlines: no blank lines before a `---` or `MANIFEST:` line, one before
/// `NOTES:`, no newline at the end (a 4.1 hook's manifest has none). Applied to both tools' output when the helm CLI
/// is older than 4.2, so that only this known difference is set aside.
pub fn helm_4_1_layout(text: &str) -> String {
    let mut out = text.to_string();
    for marker in ["---", "MANIFEST:"] {
        let (blank, tight) = (format!("\n\n{marker}"), format!("\n{marker}"));
        while out.contains(&blank) {
            out = out.replace(&blank, &tight);
        }
    }
    while out.contains("\n\n\nNOTES:") {
        out = out.replace("\n\n\nNOTES:", "\n\nNOTES:");
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

pub fn path_str(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

pub use testkit::wait_for;

/// The cluster the tools act on.
pub struct Cluster {
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    pub helm: PathBuf,
    _server: Option<Process>,
}

impl Cluster {
    /// `None` (with a message) when helm or kubectl is missing.
    pub fn start(name: &str) -> Option<Cluster> {
        let helm = testkit::tools::helm()?.path().to_path_buf();
        testkit::tools::kubectl()?;
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
        let server = Process::spawn(
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
    /// `tool ARGS -n NS` with `HELM_DRIVER` = `driver` (Helm's default when `None`),
    /// not started: for a command a test runs in the background.
    pub fn command(&self, tool: Tool, driver: Option<&str>, args: &[&str]) -> Command {
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
        cmd
    }

    /// Runs `tool ARGS -n NS` with `HELM_DRIVER` = `driver` (Helm's default when `None`).
    pub fn run(&self, tool: Tool, driver: Option<&str>, args: &[&str]) -> Output {
        self.command(tool, driver, args)
            .output()
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
