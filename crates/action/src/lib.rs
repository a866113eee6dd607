//! Helm's `pkg/action` for rudder: the release verbs against any Kubernetes API through
//! kube-rs. Objects are applied with server-side apply under Helm's own field manager
//! (`helm`) and carry Helm's ownership metadata; the release records are Helm's, so the
//! real `helm` CLI sees the same releases and can take turns with rudder on them.
//!
//! Start here: build an [`ActionConfig`] (client, storage driver, locks, discovery),
//! then run a verb with it, e.g. `Install::new(&cfg, opts).run(&chart, values)`. One
//! module per verb (`install`, `upgrade`, `rollback`, `uninstall`, `repair`,
//! `recover`, `adopt`, `list`, `history`, `status`, `get`, `diff`, `test`); the shared
//! machinery is in `plan` (parse, transform, apply, CRDs, delete stale) and `store`
//! (record reads and writes), the cluster side in `kube` (Helm's `pkg/kube`).
//!
//! Safety rules every verb follows:
//! - it holds the release's lock from start to end (`ActionConfig::with_lock`);
//! - it first turns a `pending-*`/`uninstalling` leftover of a crashed action into
//!   `failed` ("interrupted: ..."), never deleting anything for it;
//! - everything that can be checked (parsing, kinds, the caller's transform) is checked
//!   before the pending record is written, so a refused release leaves no trace;
//! - once the pending record exists, every error marks it `failed`;
//! - no failure path deletes objects, except `rollback_on_failure` on install, which
//!   uninstalls like Helm's `--atomic` but only deletes objects that install created.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod adopt;
mod config;
mod diff;
mod error;
mod get;
mod history;
pub mod identity;
mod install;
mod kube;
mod list;
mod lock;
mod name;
mod options;
mod ownership;
mod plan;
mod record;
mod recover;
mod render;
mod repair;
mod rollback;
mod status;
mod store;
mod test;
#[cfg(test)]
mod testing;
mod transition;
mod uninstall;
mod upgrade;

pub use self::kube::capabilities::{
    apiservice_name, discover, Capabilities, DiscoveryError, GROUP_VERSION_TIMEOUT,
    ROOT_DISCOVERY_TIMEOUT, WARNING_LOG_TARGET,
};
pub use self::kube::discovery::{DiscoveryCache, KindError, MISS_REFRESH};
/// The retry policy of every Kubernetes request rudder makes, and clients that follow it.
pub mod retry {
    pub use crate::kube::retry::{
        client, client_builder, with_retries, BaseService, MAX_RETRIES, REPORT_AFTER, RETRY_BUDGET,
    };
}
pub use self::kube::wait::{
    WaitReport, WaitReportFn, Write, WriteReport, WriteReportFn, WAIT_LOG_TARGET,
};
pub use self::kube::{
    ObjectRef, FIELD_MANAGER, MANAGED_BY_LABEL, RELEASE_NAMESPACE_ANNOTATION,
    RELEASE_NAME_ANNOTATION,
};
pub use adopt::Adopt;
pub use config::ActionConfig;
pub use diff::{same_manifest, UpgradeDiff};
pub use error::{Error, Result};
pub use get::{release_values, Get};
pub use history::History;
pub use install::{DryRun, Install, Installed};
pub use list::{List, Namespaces, StateFilter};
pub use lock::hostname;
pub use name::{validate_release_name, MAX_RELEASE_NAME_LEN};
pub use options::{ActionOptions, Transform, TransformFn, UninstallOptions};
pub use ownership::LiveObjects;
pub use record::{chart_metadata, chart_record, manifest_kinds, APPLY_METHOD_SSA};
pub use recover::Recover;
pub use render::{render, renders, Revision};
pub use repair::{Repair, RepairReport};
pub use rollback::Rollback;
pub use status::ReleaseStatus;
pub use test::ReleaseTest;
pub use uninstall::Uninstall;
pub use upgrade::{ReuseValues, Upgrade};
