//! The processes a scenario runs (`rudder apiserver`, `rudder run`), what the kernel
//! says they cost (/proc: RSS, peak RSS, CPU time) and what their `/metrics` count.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The `rudder` binary cargo built for this bench, or `RUDDER_SCALE_BIN`'s (to
/// compare with another build).
pub fn rudder_bin() -> PathBuf {
    std::env::var_os("RUDDER_SCALE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rudder")))
}

/// The repository root, where `examples/` lives.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child process, killed (SIGKILL) when dropped so a failed bench leaves nothing behind.
pub struct Proc {
    child: Child,
    pub log: PathBuf,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// `kill -9`.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then SIGKILL if it has not stopped within `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if self.exited() {
            return;
        }
        // SAFETY: signalling our own child by its pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if self.exited() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill9();
    }

    /// What /proc says about the process now.
    pub fn usage(&self) -> Usage {
        Usage::of(self.pid())
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// Memory and CPU of one process, from /proc.
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    pub rss_kib: u64,
    /// Peak RSS since the process started (VmHWM).
    pub peak_kib: u64,
    /// User plus system CPU time.
    pub cpu_secs: f64,
}

impl Usage {
    pub fn of(pid: u32) -> Usage {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib = |field: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name (which may hold spaces) in parentheses.
        let after = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        Usage {
            rss_kib: kib("VmRSS:"),
            peak_kib: kib("VmHWM:"),
            cpu_secs: (ticks(11) + ticks(12)) as f64 / hz,
        }
    }
}

/// Starts `rudder apiserver --simulate-readiness` and waits until its kubeconfig is
/// written; returns the process and the kubeconfig path.
pub fn start_apiserver(dir: &Path) -> (Proc, PathBuf) {
    let kubeconfig = dir.join("kubeconfig");
    let log = dir.join("apiserver.log");
    let stderr = std::fs::File::create(&log).expect("apiserver log file");
    let mut child = Command::new(rudder_bin())
        .args([
            "apiserver",
            "--simulate-readiness",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start rudder apiserver");
    let stdout = child.stdout.take().expect("apiserver stdout");
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        let line = line.expect("apiserver output");
        if line.starts_with("kubeconfig written to") {
            break;
        }
    }
    // Keep draining so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (Proc { child, log }, kubeconfig)
}

/// A free loopback port (bound and released; good enough for a bench).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts `rudder run` on the example operator with default flags plus `extra`;
/// its metrics are served on `metrics_port`.
pub fn start_operator(
    name: &str,
    dir: &Path,
    kubeconfig: &Path,
    metrics_port: u16,
    extra: &[String],
) -> Proc {
    let log = dir.join(format!("{name}.log"));
    let out = std::fs::File::create(&log).expect("operator log file");
    let err = out.try_clone().expect("operator log file");
    // `RUDDER_SCALE_OPERATOR_WRAP` (e.g. `heaptrack -o /tmp/op`) runs the
    // operator under a profiler; its RSS figures then include the profiler's.
    let wrap: Vec<String> = std::env::var("RUDDER_SCALE_OPERATOR_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(rudder_bin());
            c
        }
        None => Command::new(rudder_bin()),
    };
    let child = command
        .current_dir(repo_root())
        .args(["run", "--watches-file", "examples/operator/watches.yaml"])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics_port}"))
        .arg("--health-probe-bind-address=0")
        .args(extra)
        // The pod name Leases and Events name this replica by.
        .env("HOSTNAME", name)
        .env("POD_NAME", name)
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("start rudder run");
    Proc { child, log }
}

/// The text of `http://addr/metrics`, or empty when it cannot be read.
pub fn scrape(addr: SocketAddr) -> String {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return String::new();
    }
    let mut body = String::new();
    let _ = stream.read_to_string(&mut body);
    match body.split_once("\r\n\r\n") {
        Some((_, b)) => b.to_string(),
        None => String::new(),
    }
}

/// The sum of every sample of `metric` (any labels) whose labels contain all of
/// `with`.
pub fn sum_metric(text: &str, metric: &str, with: &[&str]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let name = series.split('{').next()?;
            (name == metric && with.iter().all(|w| series.contains(w)))
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// `metric`'s samples keyed by the values of `labels`, summed over the other labels.
pub fn by_labels(text: &str, metric: &str, labels: &[&str]) -> Vec<(String, f64)> {
    let mut out: std::collections::BTreeMap<String, f64> = Default::default();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = l.rsplit_once(' ') else {
            continue;
        };
        if series.split('{').next() != Some(metric) {
            continue;
        }
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let key = labels
            .iter()
            .map(|name| label(series, name).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        *out.entry(key).or_insert(0.0) += v;
    }
    out.into_iter().collect()
}

/// The value of label `name` in a series like `m{a="1",b="2"}`.
pub fn label(series: &str, name: &str) -> Option<String> {
    let start = series.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &series[start..];
    Some(rest[..rest.find('"')?].to_string())
}

/// `uptime`'s load averages, for the figures' context.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
