//! The `helm.sdk.operatorframework.io/*` annotations a CR can carry to tune its release,
//! and the finalizers that keep a CR until its release is uninstalled. Names and
//! parsing follow the Go helm-operator (and helm-operator-plugins, whose older
//! `helm.operator-sdk/*` spellings are accepted too).

use std::collections::BTreeMap;
use std::time::Duration;

/// The finalizer that makes deleting a CR uninstall its release first.
pub const FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";
/// The finalizer older Go helm-operators used; removed along with [`FINALIZER`].
pub const LEGACY_FINALIZER: &str = "uninstall-helm-release";

/// Annotation prefix of the Go helm-operator.
pub const PREFIX: &str = "helm.sdk.operatorframework.io/";
/// Annotation prefix of older helm-operator-plugins releases.
const LEGACY_PREFIX: &str = "helm.operator-sdk/";

pub const INSTALL_DISABLE_HOOKS: &str = "install-disable-hooks";
pub const INSTALL_DESCRIPTION: &str = "install-description";
pub const UPGRADE_FORCE: &str = "upgrade-force";
pub const UPGRADE_DISABLE_HOOKS: &str = "upgrade-disable-hooks";
pub const UPGRADE_DESCRIPTION: &str = "upgrade-description";
pub const ROLLBACK_FORCE: &str = "rollback-force";
pub const UNINSTALL_DISABLE_HOOKS: &str = "uninstall-disable-hooks";
pub const UNINSTALL_WAIT: &str = "uninstall-wait";
pub const UNINSTALL_DESCRIPTION: &str = "uninstall-description";
pub const RECONCILE_PERIOD: &str = "reconcile-period";
/// rudder extension: `"true"` pauses the CR (nothing is applied until it is removed).
pub const RECONCILE_PAUSED: &str = "reconcile-paused";
/// rudder extension: after an install, `Deployed` waits for the workloads to be ready.
pub const INSTALL_WAIT: &str = "install-wait";
/// rudder extension: after an upgrade, `Deployed` waits for the workloads to be ready.
pub const UPGRADE_WAIT: &str = "upgrade-wait";
/// rudder extension: how long `install-wait`/`upgrade-wait` wait before `ReleaseFailed`.
pub const WAIT_TIMEOUT: &str = "wait-timeout";

/// The label every object of a release (and its records) carries: the chart's name,
/// as the Go helm-operator's clients put it (its cache selects objects by it).
pub const CHART_LABEL: &str = "helm.sdk.operatorframework.io/chart";

/// Objects outside the CR's namespace name their CR here (`<namespace>/<name>`).
pub const PRIMARY_RESOURCE: &str = "operator-sdk/primary-resource";
/// ... and its kind here (`<Kind>.<group>`).
pub const PRIMARY_RESOURCE_TYPE: &str = "operator-sdk/primary-resource-type";

/// A CR's annotations, read with the Go helm-operator's rules.
#[derive(Debug, Clone, Default)]
pub struct Annotations<'a> {
    map: Option<&'a BTreeMap<String, String>>,
}

/// An annotation whose value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("annotation {name}: {value:?} is not a valid {expected}")]
pub struct AnnotationError {
    pub name: String,
    pub value: String,
    pub expected: &'static str,
}

impl<'a> Annotations<'a> {
    pub fn new(map: Option<&'a BTreeMap<String, String>>) -> Annotations<'a> {
        Annotations { map }
    }

    /// The value of `helm.sdk.operatorframework.io/<short>` (or the legacy spelling).
    pub fn get(&self, short: &str) -> Option<&'a str> {
        let map = self.map?;
        map.get(&format!("{PREFIX}{short}"))
            .or_else(|| map.get(&format!("{LEGACY_PREFIX}{short}")))
            .map(String::as_str)
    }

    /// A boolean annotation; unset or unparsable values give `default`, as in Go
    /// (which logs and ignores a value `strconv.ParseBool` rejects).
    pub fn bool_or(&self, short: &str, default: bool) -> bool {
        match self.get(short) {
            Some(v) => match parse_bool(v) {
                Some(b) => b,
                None => {
                    tracing::info!(
                        annotation = %format!("{PREFIX}{short}"),
                        value = v,
                        "could not parse annotation as a boolean"
                    );
                    default
                }
            },
            None => default,
        }
    }

    /// A free-text annotation; empty values count as unset.
    pub fn text(&self, short: &str) -> Option<String> {
        self.get(short)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }

    /// `reconcile-period` as a Go duration (`30s`, `1m30s`, `2h`).
    pub fn reconcile_period(&self) -> Result<Option<Duration>, AnnotationError> {
        self.duration(RECONCILE_PERIOD)
    }

    /// A duration annotation, as Go's `time.ParseDuration` reads it.
    pub fn duration(&self, short: &str) -> Result<Option<Duration>, AnnotationError> {
        match self.get(short) {
            None => Ok(None),
            Some(v) => parse_go_duration(v)
                .map(Some)
                .ok_or_else(|| AnnotationError {
                    name: format!("{PREFIX}{short}"),
                    value: v.to_string(),
                    expected: "duration (e.g. \"30s\", \"5m\", \"1h30m\")",
                }),
        }
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration` for non-negative durations: a sequence of decimal numbers,
/// each with an optional fraction and a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`, `h`).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    let s = s.strip_prefix('+').unwrap_or(s);
    if s == "0" {
        return Some(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return None;
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(num_len);
        if num.is_empty() || num == "." {
            return None;
        }
        let value: f64 = num.parse().ok()?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        let nanos_per = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * nanos_per;
        rest = tail;
    }
    if !total.is_finite() || total > u64::MAX as f64 {
        return None;
    }
    Some(Duration::from_nanos(total.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("-1s"), None);
        assert_eq!(parse_go_duration("1d"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn annotations_with_both_prefixes() {
        let mut m = BTreeMap::new();
        m.insert(format!("{PREFIX}upgrade-force"), "true".to_string());
        m.insert(
            "helm.operator-sdk/install-disable-hooks".to_string(),
            "T".to_string(),
        );
        m.insert(format!("{PREFIX}reconcile-period"), "2m".to_string());
        m.insert(format!("{PREFIX}rollback-force"), "maybe".to_string());
        let a = Annotations::new(Some(&m));
        assert!(a.bool_or(UPGRADE_FORCE, false));
        assert!(a.bool_or(INSTALL_DISABLE_HOOKS, false));
        assert!(!a.bool_or(UNINSTALL_WAIT, false));
        assert!(a.bool_or(ROLLBACK_FORCE, true));
        assert_eq!(a.reconcile_period(), Ok(Some(Duration::from_secs(120))));
        m.insert(format!("{PREFIX}reconcile-period"), "soon".to_string());
        let a = Annotations::new(Some(&m));
        let err = a.reconcile_period().unwrap_err();
        assert!(err.to_string().contains("reconcile-period"), "{err}");
    }
}
