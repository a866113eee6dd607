//! The options of the verbs: [`ActionOptions`] for install, upgrade, rollback, repair
//! and test (Helm's flags of those commands), [`UninstallOptions`], and the caller's
//! per-object [`Transform`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::DynamicObject;
use release::storage::DEFAULT_MAX_HISTORY;

use crate::kube::wait::{WaitReport, WriteReport};
use crate::kube::{ApplyOptions, ObjectRef, Owner};

/// Options of install, upgrade and rollback.
#[derive(Debug, Clone)]
pub struct ActionOptions {
    pub name: String,
    pub namespace: String,
    /// Adopt existing objects that belong to another release or to none.
    pub take_ownership: bool,
    /// How long to wait for each hook, CRD or deletion.
    pub timeout: Duration,
    /// Revisions kept in history (Helm's `--history-max`, default 10; 0 keeps all).
    pub max_history: usize,
    /// `.Capabilities.KubeVersion` (`--kube-version`). When this and `api_versions` are
    /// both `None`, install, upgrade and diff_upgrade discover the cluster's version and
    /// served APIs as Helm does; [`render()`](crate::render()) alone uses Helm's defaults.
    pub kube_version: Option<String>,
    /// API versions added to Helm's defaults in `.Capabilities.APIVersions`
    /// (`--api-versions`); setting it (or `kube_version`) skips cluster discovery.
    pub api_versions: Option<Vec<String>>,
    /// Skip the release's hooks (`--no-hooks`).
    pub disable_hooks: bool,
    /// Replace objects that cannot be patched (`--force`).
    pub force: bool,
    /// The record's description instead of the default one (`--description`).
    pub description: Option<String>,
    /// Wait until the release's objects are ready, up to `timeout` (`--wait`).
    pub wait: bool,
    /// With `wait`, also wait for Jobs to complete (`--wait-for-jobs`).
    pub wait_for_jobs: bool,
    /// Undo a failed action (`--atomic` / `--rollback-on-failure`): a failed upgrade is
    /// rolled back to the previously deployed revision; a failed install is uninstalled
    /// (records purged, like Helm), deleting only the objects this install created.
    /// Implies `wait`, as in Helm.
    pub rollback_on_failure: bool,
    /// Custom labels written on the release record (`--labels`).
    pub labels: BTreeMap<String, String>,
    /// Called on every object before anything is written; an error refuses the action.
    pub transform: Option<Transform>,
    /// An owner reference every release record this action writes carries (the
    /// operator's CR, so its records are garbage-collected with it).
    pub record_owner: Option<OwnerReference>,
    /// Install and upgrade record, under this label, a digest of what the render's
    /// `lookup` calls returned (removing the label when it made none), so a caller can
    /// tell later whether a looked-up object changed ([`crate::UpgradeDiff::lookups`]).
    pub lookups_label: Option<String>,
    /// A label every record this action writes carries with that record's own
    /// revision, so a reader can tell labels written for a revision from labels another
    /// tool copied onto a later one (`helm upgrade` and `helm rollback` copy a record's
    /// custom labels). The operator sets it; Helm's CLI writes nothing like it.
    pub revision_label: Option<String>,
    /// Where the action's waits (hooks, `wait`, deletions) report what they still wait
    /// for, besides the log.
    pub wait_report: WaitReport,
    /// Who hears of the action's writes to the release's objects.
    pub write_report: WriteReport,
}

/// Changes (or refuses) each object of a release before it is applied: the operator
/// adds owner references here and enforces which namespaces a release may reach.
///
/// Called once per action for every manifest object and every hook (not for the
/// chart's `crds/`, which Helm never post-renders), after parsing and scope resolution
/// (`ObjectRef.namespace` is `None` for cluster-scoped kinds) and before anything is
/// written. The record keeps the chart's rendered manifest; rollback and repair run the
/// transform again on it. It may change the object's namespace or name.
#[derive(Clone)]
pub struct Transform(Arc<TransformFn>);

/// The function inside a [`Transform`]: `Err(message)` refuses the object.
pub type TransformFn =
    dyn Fn(&mut DynamicObject, &ObjectRef) -> std::result::Result<(), String> + Send + Sync;

impl Transform {
    /// A transform calling `f` on every object.
    pub fn new(
        f: impl Fn(&mut DynamicObject, &ObjectRef) -> std::result::Result<(), String>
            + Send
            + Sync
            + 'static,
    ) -> Transform {
        Transform(Arc::new(f))
    }

    pub(crate) fn apply(
        &self,
        obj: &mut DynamicObject,
        reference: &ObjectRef,
    ) -> std::result::Result<(), String> {
        (self.0)(obj, reference)
    }
}

impl std::fmt::Debug for Transform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Transform(..)")
    }
}

impl ActionOptions {
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> ActionOptions {
        ActionOptions {
            name: name.into(),
            namespace: namespace.into(),
            take_ownership: false,
            timeout: Duration::from_secs(300),
            max_history: DEFAULT_MAX_HISTORY,
            kube_version: None,
            api_versions: None,
            disable_hooks: false,
            force: false,
            description: None,
            wait: false,
            wait_for_jobs: false,
            rollback_on_failure: false,
            labels: BTreeMap::new(),
            transform: None,
            record_owner: None,
            lookups_label: None,
            revision_label: None,
            wait_report: WaitReport::default(),
            write_report: WriteReport::default(),
        }
    }

    pub(crate) fn owner(&self) -> Owner {
        Owner {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            report: self.wait_report.clone(),
            writes: self.write_report.clone(),
        }
    }

    pub(crate) fn apply(&self) -> ApplyOptions {
        ApplyOptions {
            take_ownership: self.take_ownership,
        }
    }

    /// `rollback_on_failure` implies waiting, as Helm's `--atomic` does.
    pub(crate) fn waits(&self) -> bool {
        self.wait || self.rollback_on_failure
    }
}

/// Options of uninstall.
#[derive(Debug, Clone)]
pub struct UninstallOptions {
    pub name: String,
    pub namespace: String,
    /// Keep the records, marked `uninstalled` (Helm's `--keep-history`).
    pub keep_history: bool,
    pub timeout: Duration,
    /// Skip the release's hooks (`--no-hooks`).
    pub disable_hooks: bool,
    /// Wait until the deleted objects are gone (`--wait`).
    pub wait: bool,
    /// The record's description instead of the default one (`--description`).
    pub description: Option<String>,
    /// An owner reference the records this uninstall rewrites carry.
    pub record_owner: Option<OwnerReference>,
}

impl UninstallOptions {
    pub fn new(name: impl Into<String>, namespace: impl Into<String>) -> UninstallOptions {
        UninstallOptions {
            name: name.into(),
            namespace: namespace.into(),
            keep_history: false,
            timeout: Duration::from_secs(300),
            disable_hooks: false,
            wait: false,
            description: None,
            record_owner: None,
        }
    }
}
