//! Helm release actions (install, upgrade, uninstall, rollback) against any Kubernetes
//! API through kube-rs: objects are applied with server-side apply under the `rudder`
//! field manager, carry Helm's ownership metadata, and the release records are written
//! in Helm's Secret format so the real `helm` CLI sees the same releases.

pub mod action;
pub mod capabilities;
pub mod cluster;
pub mod error;
pub mod hooks;
pub mod lock;
pub mod lookup;
pub mod record;
pub mod wait;

pub use action::{
    diff_upgrade, install, recover_pending, render, render_in_cluster, repair, rollback,
    same_manifest, test, uninstall, upgrade, ActionOptions, RepairReport, Transform, TransformFn,
    UninstallOptions, UpgradeDiff,
};
pub use capabilities::{discover, Capabilities, DiscoveryCache, DiscoveryError};
pub use cluster::{ApplyOptions, Kube, ObjectRef, Owner, FIELD_MANAGER};
pub use error::{Error, Result};
