//! The rudder operator: each custom resource of a watched kind becomes one Helm release.
//! The CR's `.spec` is the release's values; records are Helm-format Secrets in the CR's
//! namespace. A drop-in for operator-sdk's Go `helm-operator` (same `watches.yaml`,
//! flags, annotations and status).
//!
//! Start here: [`Operator`] (`manager`: the process, its servers, leadership and
//! shutdown) runs one controller per watch (`controller`), which calls the reconciler
//! (`reconcile`: the flow; `reconcile::plan::decide`: what to do with a release) for
//! each CR. The reconciler reaches releases only through [`ActionClient`]
//! (`action_client`), whose real implementation is the `action` crate.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod action_client;
mod annotations;
mod controller;
pub mod cr;
mod drift;
mod error;
mod events;
pub mod leader;
pub mod logging;
mod manager;
pub mod metrics;
pub mod migrate;
pub mod options;
pub mod reconcile;
pub mod shard;
mod status;
pub mod watches;

pub use action_client::{ActionClient, Actions};
pub use error::{Error, Result};
pub use manager::{run, run_with_shutdown, shutdown_signal, LeaseLocation, Operator};
pub use options::{Options, Sharding};
pub use shard::ShardSettings;
