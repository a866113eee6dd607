//! Child processes of end-to-end tests (`rudder run`, `rudder apiserver`, a second
//! replica): output to log files in the test's directory, killed when dropped, stopped
//! with SIGTERM the way the kubelet stops a pod, and a free loopback port to serve on.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Lines of each log a failure message shows.
const TAIL_LINES: usize = 40;

/// A running child; `SIGKILL`ed when dropped so a failing test leaves nothing behind.
pub struct Process {
    name: String,
    child: Child,
    stdout: PathBuf,
    /// Equal to `stdout` when both streams go to one log.
    stderr: PathBuf,
}

impl Process {
    /// Starts `cmd` with stdin closed, stdout in `<dir>/<name>.stdout` and stderr in
    /// `<dir>/<name>.stderr`.
    pub fn spawn(name: &str, dir: &Path, cmd: &mut Command) -> Process {
        let stdout = dir.join(format!("{name}.stdout"));
        let stderr = dir.join(format!("{name}.stderr"));
        let out = File::create(&stdout).expect("create the stdout log");
        let err = File::create(&stderr).expect("create the stderr log");
        Process::start(name, cmd, out, err, stdout, stderr)
    }

    /// Starts `cmd` with stdin closed and both streams, interleaved as written, in
    /// `<dir>/<name>.log`.
    pub fn spawn_one_log(name: &str, dir: &Path, cmd: &mut Command) -> Process {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).expect("create the log");
        let err = out.try_clone().expect("share the log");
        Process::start(name, cmd, out, err, log.clone(), log)
    }

    fn start(
        name: &str,
        cmd: &mut Command,
        out: File,
        err: File,
        stdout: PathBuf,
        stderr: PathBuf,
    ) -> Process {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"));
        Process {
            name: name.to_string(),
            child,
            stdout,
            stderr,
        }
    }

    /// What the process wrote to stdout so far (both streams for a single log).
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    /// What the process wrote to stderr so far (both streams for a single log).
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The last lines of its logs, labelled, for failure messages.
    pub fn logs(&self) -> String {
        let tail = |s: String| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
        };
        if self.stdout == self.stderr {
            return format!("--- {} log ---\n{}", self.name, tail(self.stdout()));
        }
        format!(
            "--- {name} stdout ---\n{}\n--- {name} stderr ---\n{}",
            tail(self.stdout()),
            tail(self.stderr()),
            name = self.name,
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its exit status once it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// `kill -9`: no chance to clean up, like a node dying.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, as the kubelet stops a pod, and its exit status; panics with the logs
    /// if it is still running after `limit`.
    pub fn terminate(&mut self, limit: Duration) -> ExitStatus {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(
            sent.is_ok_and(|s| s.success()),
            "cannot signal {} ({pid})",
            self.name
        );
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.exited() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "{} still runs {limit:?} after SIGTERM\n{}",
                self.name,
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A loopback port free at the time of the call (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_exit_and_sigterm() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut done = Process::spawn(
            "echo",
            dir.path(),
            Command::new("sh").args(["-c", "echo out; echo err >&2"]),
        );
        let status = loop {
            if let Some(s) = done.exited() {
                break s;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(status.success());
        assert_eq!(done.stdout(), "out\n");
        assert_eq!(done.stderr(), "err\n");
        assert!(done.logs().contains("--- echo stderr ---\nerr"));

        let mut sleeper = Process::spawn_one_log(
            "sleeper",
            dir.path(),
            Command::new("sh").args(["-c", "echo up; echo also >&2; exec sleep 60"]),
        );
        let start = Instant::now();
        while !sleeper.stdout().contains("also") {
            assert!(start.elapsed() < Duration::from_secs(10), "no output");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(sleeper.stdout(), sleeper.stderr());
        let status = sleeper.terminate(Duration::from_secs(10));
        assert!(!status.success(), "sleep dies of SIGTERM: {status}");
        assert!(free_port() > 0);
    }
}
