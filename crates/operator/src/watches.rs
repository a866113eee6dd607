//! `watches.yaml`: which custom resource kinds the operator watches and which chart
//! each becomes, in the Go helm-operator's format plus rudder's scope extensions.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// One entry of `watches.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// The chart directory or archive (resolved to a usable path).
    pub chart: PathBuf,
    /// Watch the kinds of the release's objects and repair drift (default true).
    pub watch_dependent_resources: bool,
    /// `overrideValues` after `$VAR` expansion, still as `--set` expressions' raw text.
    pub override_values: BTreeMap<String, String>,
    pub reconcile_period: Option<Duration>,
    pub max_concurrent_reconciles: Option<usize>,
    /// Only CRs matching this label selector are reconciled.
    pub selector: Option<LabelSelector>,
    /// rudder extension: the release may create cluster-scoped objects.
    pub allow_cluster_scoped: bool,
    /// rudder extension: other namespaces the release may create objects in (`"*"`: any).
    pub allowed_namespaces: Vec<String>,
}
