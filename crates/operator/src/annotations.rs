//! The `helm.sdk.operatorframework.io/*` annotations a CR can carry to tune its release,
//! and the finalizers that keep a CR until its release is uninstalled. Names and
//! parsing follow the Go helm-operator (and helm-operator-plugins, whose older
//! `helm.operator-sdk/*` spellings are accepted too).

use std::collections::BTreeMap;
use std::time::Duration;

/// The finalizer that makes deleting a CR uninstall its release first.
pub(crate) const FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";
/// The finalizer older Go helm-operators used; removed along with [`FINALIZER`].
pub(crate) const LEGACY_FINALIZER: &str = "uninstall-helm-release";

/// Annotation prefix of the Go helm-operator.
pub(crate) const PREFIX: &str = "helm.sdk.operatorframework.io/";
/// Annotation prefix of older helm-operator-plugins releases.
const LEGACY_PREFIX: &str = "helm.operator-sdk/";

pub(crate) const INSTALL_DISABLE_HOOKS: &str = "install-disable-hooks";
pub(crate) const INSTALL_DESCRIPTION: &str = "install-description";
pub(crate) const UPGRADE_FORCE: &str = "upgrade-force";
pub(crate) const UPGRADE_DISABLE_HOOKS: &str = "upgrade-disable-hooks";
pub(crate) const UPGRADE_DESCRIPTION: &str = "upgrade-description";
pub(crate) const ROLLBACK_FORCE: &str = "rollback-force";
pub(crate) const UNINSTALL_DISABLE_HOOKS: &str = "uninstall-disable-hooks";
pub(crate) const UNINSTALL_WAIT: &str = "uninstall-wait";
pub(crate) const UNINSTALL_DESCRIPTION: &str = "uninstall-description";
pub(crate) const RECONCILE_PERIOD: &str = "reconcile-period";
/// rudder extension: `"true"` pauses the CR (nothing is applied until it is removed).
pub(crate) const RECONCILE_PAUSED: &str = "reconcile-paused";
/// rudder extension: after an install, `Deployed` waits for the workloads to be ready.
pub(crate) const INSTALL_WAIT: &str = "install-wait";
/// rudder extension: after an upgrade, `Deployed` waits for the workloads to be ready.
pub(crate) const UPGRADE_WAIT: &str = "upgrade-wait";
/// rudder extension: how long `install-wait`/`upgrade-wait` wait before `ReleaseFailed`.
pub(crate) const WAIT_TIMEOUT: &str = "wait-timeout";

/// The label every object of a release (and its records) carries: the chart's name,
/// as the Go helm-operator's clients put it (its cache selects objects by it).
pub(crate) const CHART_LABEL: &str = "helm.sdk.operatorframework.io/chart";

/// Objects outside the CR's namespace name their CR here (`<namespace>/<name>`).
pub(crate) const PRIMARY_RESOURCE: &str = "operator-sdk/primary-resource";
/// ... and its kind here (`<Kind>.<group>`).
pub(crate) const PRIMARY_RESOURCE_TYPE: &str = "operator-sdk/primary-resource-type";

/// A CR's annotations, read with the Go helm-operator's rules.
#[derive(Debug, Clone, Default)]
pub(crate) struct Annotations<'a> {
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
    pub(crate) fn new(map: Option<&'a BTreeMap<String, String>>) -> Annotations<'a> {
        Annotations { map }
    }

    /// The value of `helm.sdk.operatorframework.io/<short>` (or the legacy spelling).
    pub(crate) fn get(&self, short: &str) -> Option<&'a str> {
        let map = self.map?;
        map.get(&format!("{PREFIX}{short}"))
            .or_else(|| map.get(&format!("{LEGACY_PREFIX}{short}")))
            .map(String::as_str)
    }

    /// A boolean annotation; unset or unparsable values give `default`, as in Go
    /// (which logs and ignores a value `strconv.ParseBool` rejects).
    pub(crate) fn bool_or(&self, short: &str, default: bool) -> bool {
        match self.get(short) {
            Some(v) => match gostd::strconv::parse_bool(v) {
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
    pub(crate) fn text(&self, short: &str) -> Option<String> {
        self.get(short)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }

    /// `reconcile-period` as a Go duration (`30s`, `1m30s`, `2h`).
    pub(crate) fn reconcile_period(&self) -> Result<Option<Duration>, AnnotationError> {
        self.duration(RECONCILE_PERIOD)
    }

    /// A duration annotation, as Go's `time.ParseDuration` reads it.
    pub(crate) fn duration(&self, short: &str) -> Result<Option<Duration>, AnnotationError> {
        match self.get(short) {
            None => Ok(None),
            Some(v) => gostd::time::Duration::parse(v)
                .ok()
                .and_then(|d| d.to_std())
                .map(Some)
                .ok_or_else(|| AnnotationError {
                    name: format!("{PREFIX}{short}"),
                    value: v.to_string(),
                    expected: "duration (e.g. \"30s\", \"5m\", \"1h30m\")",
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        m.insert(format!("{PREFIX}reconcile-period"), "-1s".to_string());
        let a = Annotations::new(Some(&m));
        assert!(
            a.reconcile_period().is_err(),
            "a negative period is refused"
        );
    }
}
