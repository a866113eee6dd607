//! The `process_*` metrics of client_golang's process collector, read from `/proc` at
//! scrape time (Linux; elsewhere the family is left out, as Go leaves it out where it
//! cannot collect).

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// One scrape's reading of this process.
#[derive(Debug, Default, Clone, PartialEq)]
struct Reading {
    cpu_seconds: Option<f64>,
    open_fds: Option<f64>,
    max_fds: Option<f64>,
    virtual_bytes: Option<f64>,
    virtual_max_bytes: Option<f64>,
    resident_bytes: Option<f64>,
    start_time: Option<f64>,
    received_bytes: Option<f64>,
    sent_bytes: Option<f64>,
}

#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

impl ProcessCollector {
    pub(super) fn new() -> ProcessCollector {
        ProcessCollector
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let r = read();
        let mut counter = |name: &str, help: &str, v: Option<f64>| {
            if let Some(v) = v {
                let m = ConstCounter::new(v);
                m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)?;
            }
            Ok::<(), std::fmt::Error>(())
        };
        // Counter names get their `_total` from the encoder.
        counter(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            r.cpu_seconds,
        )?;
        counter(
            "process_network_receive_bytes",
            "Number of bytes received by the process over the network.",
            r.received_bytes,
        )?;
        counter(
            "process_network_transmit_bytes",
            "Number of bytes sent by the process over the network.",
            r.sent_bytes,
        )?;
        for (name, help, v) in [
            (
                "process_open_fds",
                "Number of open file descriptors.",
                r.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                r.max_fds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                r.virtual_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                r.virtual_max_bytes,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                r.resident_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                r.start_time,
            ),
        ] {
            if let Some(v) = v {
                let m = ConstGauge::new(v);
                m.encode(encoder.encode_descriptor(name, help, None, m.metric_type())?)?;
            }
        }
        Ok(())
    }
}

/// Clock ticks per second of `/proc` times: USER_HZ, fixed at 100 in Linux's ABI
/// (Go's procfs takes the same constant).
const USER_HZ: f64 = 100.0;

#[cfg(target_os = "linux")]
fn read() -> Reading {
    let mut r = Reading::default();
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        if let Some(s) = parse_stat(&stat) {
            r.cpu_seconds = Some((s.utime + s.stime) as f64 / USER_HZ);
            r.start_time = boot_time().map(|boot| boot + s.start_ticks as f64 / USER_HZ);
            r.virtual_bytes = Some(s.vsize as f64);
        }
    }
    // The resident set in bytes without asking for the page size.
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        r.resident_bytes = status_kib(&status, "VmRSS:").map(|kib| kib * 1024.0);
    }
    r.open_fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as f64);
    if let Ok(limits) = std::fs::read_to_string("/proc/self/limits") {
        r.max_fds = soft_limit(&limits, "Max open files");
        r.virtual_max_bytes = soft_limit(&limits, "Max address space");
    }
    if let Ok(netstat) = std::fs::read_to_string("/proc/self/net/netstat") {
        r.received_bytes = ip_ext(&netstat, "InOctets");
        r.sent_bytes = ip_ext(&netstat, "OutOctets");
    }
    r
}

/// A `kB` row of `/proc/<pid>/status`.
fn status_kib(status: &str, row: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with(row))?;
    line[row.len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse::<u64>().ok())
        .map(|v| v as f64)
}

#[cfg(not(target_os = "linux"))]
fn read() -> Reading {
    Reading::default()
}

/// The fields of `/proc/<pid>/stat` the collector reports.
#[derive(Debug, PartialEq)]
struct Stat {
    utime: u64,
    stime: u64,
    start_ticks: u64,
    vsize: u64,
}

/// Parses `/proc/<pid>/stat`; the command name (2nd field) may hold spaces and
/// parentheses, so fields are counted from its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: state is field 3, so field n is rest[n - 3].
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        utime: field(14)?,
        stime: field(15)?,
        start_ticks: field(22)?,
        vsize: field(23)?,
    })
}

/// `btime` of `/proc/stat`: when the system booted, in Unix seconds.
fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<f64>().ok())
}

/// The soft limit of one `/proc/<pid>/limits` row; `unlimited` reads as the largest
/// 64-bit value, as Go's procfs reads it.
fn soft_limit(limits: &str, row: &str) -> Option<f64> {
    let line = limits.lines().find(|l| l.starts_with(row))?;
    let soft = line[row.len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(u64::MAX as f64);
    }
    soft.parse::<u64>().ok().map(|v| v as f64)
}

/// A counter of the `IpExt:` rows of `/proc/<pid>/net/netstat` (a header row of names,
/// then a row of values).
fn ip_ext(netstat: &str, name: &str) -> Option<f64> {
    let mut rows = netstat.lines().filter(|l| l.starts_with("IpExt:"));
    let names = rows.next()?;
    let values = rows.next()?;
    let at = names.split_whitespace().position(|n| n == name)?;
    values
        .split_whitespace()
        .nth(at)
        .and_then(|v| v.parse::<u64>().ok())
        .map(|v| v as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (rudder (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 150 50 0 0 20 0 9 0 123456 987654321 2048 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                utime: 150,
                stime: 50,
                start_ticks: 123456,
                vsize: 987654321,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn limits_and_netstat_rows() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1048576              1048576              files\nMax address space         unlimited            unlimited            bytes\n";
        assert_eq!(soft_limit(limits, "Max open files"), Some(1048576.0));
        assert_eq!(
            soft_limit(limits, "Max address space"),
            Some(u64::MAX as f64)
        );
        let netstat =
            "TcpExt: A B\nTcpExt: 1 2\nIpExt: InNoRoutes InOctets OutOctets\nIpExt: 0 1234 5678\n";
        assert_eq!(ip_ext(netstat, "InOctets"), Some(1234.0));
        assert_eq!(ip_ext(netstat, "OutOctets"), Some(5678.0));
        assert_eq!(ip_ext(netstat, "Nope"), None);
        assert_eq!(
            status_kib("Name:\trudder\nVmRSS:\t  10240 kB\n", "VmRSS:"),
            Some(10240.0)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let r = read();
        assert!(r.resident_bytes.is_some_and(|v| v > 0.0), "{r:?}");
        assert!(r.open_fds.is_some_and(|v| v >= 1.0), "{r:?}");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        let start = r.start_time.expect("start time");
        assert!(
            start <= now + 1.0 && start > now - 86_400.0 * 365.0,
            "{start}"
        );
    }
}
