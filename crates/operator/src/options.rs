//! The operator's options: the Go helm-operator's `run` flags, already parsed.

use std::path::PathBuf;
use std::time::Duration;

use runtime::metrics::MetricsServing;
use runtime::DEFAULT_SHUTDOWN_TIMEOUT;

use crate::status::StatusManifest;

/// The deprecated environment variable the Go helm-operator falls back to for the
/// leader election id.
pub(crate) const OPERATOR_NAME_ENV: &str = "OPERATOR_NAME";

/// `--reapply-period`'s default: controller-runtime's default cache resync period
/// (`SyncPeriod`, 10 hours), the same safety net for changes no watch reported.
pub const DEFAULT_REAPPLY_PERIOD: Duration = Duration::from_secs(10 * 3600);

/// What `rudder run` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--watches-file`: which CR kinds to watch and which chart each becomes.
    pub watches_file: PathBuf,
    /// `--reconcile-period`: how often a CR is reconciled without any change
    /// (a watch's own `reconcilePeriod` wins). Zero: only on changes.
    pub reconcile_period: Duration,
    /// `--reapply-period`: the longest a release whose inputs did not change and
    /// whose objects no dependent watch saw move goes without a full re-apply of its
    /// objects. Zero: every reconcile re-applies them (the Go operator's behaviour).
    pub reapply_period: Duration,
    /// `--max-concurrent-reconciles`: reconciles of one kind running at once
    /// (a watch's own `maxConcurrentReconciles` wins).
    pub max_concurrent_reconciles: usize,
    /// `--metrics-bind-address` (`:8080`; `0` disables the metrics server).
    pub metrics_bind_address: String,
    /// `--metrics-secure`, `--metrics-require-rbac` and the certificate flags.
    pub metrics_serving: MetricsServing,
    /// `--health-probe-bind-address` (`:8081`; `0` disables `/healthz` and `/readyz`).
    pub health_probe_bind_address: String,
    /// `--leader-elect`: reconcile only while holding the leader Lease.
    pub leader_elect: bool,
    /// `--leader-election-id`: the Lease's name (falls back to `$OPERATOR_NAME`).
    pub leader_election_id: Option<String>,
    /// `--leader-election-namespace`: the Lease's namespace (default: the namespace
    /// the operator's pod runs in).
    pub leader_election_namespace: Option<String>,
    /// `WATCH_NAMESPACE`: the namespaces whose CRs are reconciled (empty: all).
    pub watch_namespaces: Vec<String>,
    /// `--suppress-override-values`: leave override values out of the
    /// `OverrideValuesInUse` event.
    pub suppress_override_values: bool,
    /// How long in-flight reconciles may finish after a shutdown was asked for.
    pub shutdown_timeout: Duration,
    /// `--shards`: whether replicas split the CRs among themselves.
    pub shards: Sharding,
    /// `--max-history`: release records kept per CR, counting the newest (a watch's
    /// own `maxHistory` wins); 0 keeps all. Helm's `--history-max` default, 10.
    pub max_history: usize,
    /// `--status-manifest`: what `status.deployedRelease.manifest` shows (a watch's
    /// own `statusManifest` wins): Secrets' values redacted by default.
    pub status_manifest: StatusManifest,
}

/// `--shards`: `off` (every replica, or the leader with `--leader-elect`, reconciles
/// every CR) or `auto` (the live replicas split every watch's CRs; see
/// [`runtime::shard`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sharding {
    #[default]
    Off,
    Auto,
}

impl std::str::FromStr for Sharding {
    type Err = String;

    fn from_str(s: &str) -> Result<Sharding, String> {
        match s.trim() {
            "off" => Ok(Sharding::Off),
            "auto" => Ok(Sharding::Auto),
            other => Err(format!("{other:?} is not a sharding mode: use auto or off")),
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            watches_file: PathBuf::from("./watches.yaml"),
            reconcile_period: Duration::from_secs(60),
            reapply_period: DEFAULT_REAPPLY_PERIOD,
            max_concurrent_reconciles: default_max_concurrent_reconciles(),
            metrics_bind_address: ":8080".into(),
            metrics_serving: MetricsServing::default(),
            health_probe_bind_address: ":8081".into(),
            leader_elect: false,
            leader_election_id: None,
            leader_election_namespace: None,
            watch_namespaces: Vec::new(),
            suppress_override_values: false,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            shards: Sharding::Off,
            max_history: release::storage::DEFAULT_MAX_HISTORY,
            status_manifest: StatusManifest::default(),
        }
    }
}

/// The Go default for `--max-concurrent-reconciles`: the number of CPUs.
pub fn default_max_concurrent_reconciles() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Splits `WATCH_NAMESPACE`'s value: comma-separated, blanks dropped; an empty
/// result means every namespace.
pub fn split_namespaces(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for ns in value.split(',').map(str::trim).filter(|ns| !ns.is_empty()) {
        if !out.iter().any(|seen| seen == ns) {
            out.push(ns.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_namespaces() {
        assert!(split_namespaces("").is_empty());
        assert!(split_namespaces(" , ").is_empty());
        assert_eq!(split_namespaces("a"), vec!["a"]);
        assert_eq!(split_namespaces("a, b,,a"), vec!["a", "b"]);
    }

    #[test]
    fn defaults_match_go() {
        let o = Options::default();
        assert_eq!(o.watches_file, PathBuf::from("./watches.yaml"));
        assert_eq!(o.reconcile_period, Duration::from_secs(60));
        assert_eq!(o.metrics_bind_address, ":8080");
        assert_eq!(o.health_probe_bind_address, ":8081");
        assert!(o.max_concurrent_reconciles >= 1);
        assert!(!o.leader_elect);
    }
}
