//! What a test needs from outside Rust — kubectl, the real helm CLI, the Helm oracle
//! (python3 with `helm_python`) and the shared test data in `../shared` — found once, or
//! reported missing with the line a test prints when it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Prints `SKIPPED <test>: <why>` on stderr, where `cargo test` shows it; the test then
/// returns without asserting anything.
pub fn skip_message(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("test");
    eprintln!("SKIPPED {test}: {why}");
}

/// Prints a skip message (see [`skip_message`]) and returns from the calling test.
#[macro_export]
macro_rules! skip {
    ($($why:tt)+) => {{
        $crate::skip_message(&format!($($why)+));
        return;
    }};
}

/// The workspace root (this crate lives at `crates/testkit`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared` beside the repository (corpus, conformance cases, tools), or `None` with
/// a skip message. `RUDDER_SHARED` points elsewhere.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("RUDDER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared"));
    if dir.is_dir() {
        Some(dir)
    } else {
        skip_message(&format!(
            "{} is absent (the shared test data: corpus, conformance cases, tools)",
            dir.display()
        ));
        None
    }
}

/// A program found on this machine.
#[derive(Debug, Clone)]
pub struct Tool {
    path: PathBuf,
}

impl Tool {
    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A command running it.
    pub fn command(&self) -> Command {
        Command::new(&self.path)
    }
}

fn runs(program: &Path, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn found(cache: &OnceLock<Option<Tool>>, find: impl FnOnce() -> Option<Tool>) -> Option<Tool> {
    cache.get_or_init(find).clone()
}

/// kubectl from PATH (`RUDDER_KUBECTL` overrides), or `None` with a skip message.
pub fn kubectl() -> Option<Tool> {
    static CACHE: OnceLock<Option<Tool>> = OnceLock::new();
    let tool = found(&CACHE, || {
        let path = std::env::var_os("RUDDER_KUBECTL")
            .map(PathBuf::from)
            .unwrap_or_else(|| "kubectl".into());
        runs(&path, &["version", "--client"]).then_some(Tool { path })
    });
    if tool.is_none() {
        skip_message("kubectl is not on PATH (RUDDER_KUBECTL names another)");
    }
    tool
}

/// The real helm CLI: `RUDDER_HELM`, else `/usr/local/bin/helm`, else `helm` on PATH;
/// `None` with a skip message (install it with ../shared/tools/install-helm-cli.sh).
pub fn helm() -> Option<Tool> {
    static CACHE: OnceLock<Option<Tool>> = OnceLock::new();
    let tool = found(&CACHE, || {
        let candidates: Vec<PathBuf> = match std::env::var_os("RUDDER_HELM") {
            Some(p) => vec![p.into()],
            None => vec!["/usr/local/bin/helm".into(), "helm".into()],
        };
        candidates
            .into_iter()
            .find(|p| runs(p, &["version", "--short"]))
            .map(|path| Tool { path })
    });
    if tool.is_none() {
        skip_message(
            "the helm CLI is not installed (run ../shared/tools/install-helm-cli.sh; RUDDER_HELM names another)",
        );
    }
    tool
}

/// python3 with the `helm_python` wheel (the real Helm engine): `RUDDER_PYTHON`, else
/// `python3`; `None` with a skip message (install it with
/// ../shared/tools/install-oracle.sh).
pub fn oracle_python() -> Option<Tool> {
    static CACHE: OnceLock<Option<Tool>> = OnceLock::new();
    let tool = found(&CACHE, || {
        let path = std::env::var_os("RUDDER_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| "python3".into());
        runs(&path, &["-c", "import helm_python"]).then_some(Tool { path })
    });
    if tool.is_none() {
        skip_message(
            "python3 with helm_python is not installed (run ../shared/tools/install-oracle.sh; RUDDER_PYTHON names another python)",
        );
    }
    tool
}

/// The `helm-oracle` command-line tool in `../shared/tools`, or `None` with a skip
/// message.
pub fn oracle_cli() -> Option<Tool> {
    let path = shared_dir()?.join("tools/helm-oracle");
    if path.exists() {
        Some(Tool { path })
    } else {
        skip_message(&format!("{} is absent", path.display()));
        None
    }
}
