//! kubectl as a test uses it: bound to one kubeconfig (a test namespace's, so commands
//! without `-n` act there), failing the test with kubectl's own stderr when a command
//! that must work does not.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use crate::tools::Tool;

/// kubectl with a fixed kubeconfig.
#[derive(Debug, Clone)]
pub struct Kubectl {
    tool: Tool,
    kubeconfig: PathBuf,
    namespace: String,
}

impl Kubectl {
    /// kubectl at `tool` using `kubeconfig`, whose context defaults to `namespace`.
    pub fn new(tool: Tool, kubeconfig: &Path, namespace: &str) -> Kubectl {
        Kubectl {
            tool,
            kubeconfig: kubeconfig.to_path_buf(),
            namespace: namespace.to_string(),
        }
    }

    /// The namespace commands default to.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The kubeconfig it uses.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Runs `kubectl args…` and returns what happened.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, None)
    }

    /// Runs `kubectl args…` with `stdin` as its input.
    pub(crate) fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use std::io::Write as _;
        use std::process::Stdio;
        let mut cmd = self.tool.command();
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run kubectl: {e}"),
        };
        if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
            if let Err(e) = input.write_all(text.as_bytes()) {
                panic!("cannot write kubectl's input: {e}");
            }
        }
        match child.wait_with_output() {
            Ok(o) => o,
            Err(e) => panic!("kubectl did not finish: {e}"),
        }
    }

    /// Runs kubectl and returns its stdout; fails the test with its stderr when it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "kubectl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl expecting it to fail, and returns its stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kubectl {} succeeded, expected a failure: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `kubectl get -o json args…`; `None` when the object does not exist.
    pub fn get(&self, args: &[&str]) -> Option<Value> {
        let mut full = vec!["get", "-o", "json"];
        full.extend_from_slice(args);
        let out = self.run(&full);
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("NotFound") || err.contains("not found"),
                "kubectl {} failed: {err}",
                full.join(" ")
            );
            return None;
        }
        match serde_json::from_slice(&out.stdout) {
            Ok(v) => Some(v),
            Err(e) => panic!("kubectl {} printed no JSON: {e}", full.join(" ")),
        }
    }

    /// The `items` of `kubectl get -o json args…` (empty when there are none).
    pub fn items(&self, args: &[&str]) -> Vec<Value> {
        self.get(args)
            .and_then(|l| l.get("items").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    }

    /// `kubectl apply -f -` with `yaml` as input.
    pub fn apply_yaml(&self, yaml: &str) -> String {
        let out = self.run_with_stdin(&["apply", "-f", "-"], Some(yaml));
        assert!(
            out.status.success(),
            "kubectl apply failed: {}\n--- input ---\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl apply -f path`.
    pub fn apply_file(&self, path: &Path) -> String {
        let path = path.to_string_lossy();
        self.ok(&["apply", "-f", &path])
    }
}

/// A number unique within the process, for file and object names.
pub fn unique() -> u32 {
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
