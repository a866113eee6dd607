//! The rudder operator: each custom resource of a watched kind becomes one Helm release.
//! The CR's `.spec` is the release's values; records are Helm-format Secrets in the CR's
//! namespace. A drop-in for operator-sdk's Go `helm-operator` (same `watches.yaml`,
//! flags, annotations and status), built on the Helm-agnostic `runtime` crate.
//!
//! Start here: [`Operator`] (`manager`: the runtime's manager set up from the flags)
//! runs one controller per watch (`controller`), which calls the reconciler
//! (`reconcile`: the flow; `reconcile::decide`: what to do with a release) for each
//! CR. The reconciler reaches releases only through [`ActionClient`]
//! (`action_client`), whose real implementation is the `action` crate.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod action_client;
mod annotations;
mod controller;
mod cr;
mod drift;
mod error;
mod manager;
mod metrics;
mod migrate;
mod options;
mod reconcile;
mod status;
mod watches;

pub use action_client::{ActionClient, Actions};
pub use cr::CustomResource;
pub use error::{Error, Result};
pub use manager::{run, run_with_shutdown, Operator};
pub use metrics::new_metrics;
pub use migrate::{
    copy_configmap_records, migrate, write_status_records, CopyOutcome, MigrateError,
    MigrationReport,
};
pub use options::{
    default_max_concurrent_reconciles, split_namespaces, Options, Sharding, DEFAULT_REAPPLY_PERIOD,
};
pub use reconcile::{
    reconcile, release_values, Context, Outcome, ReconcileError, ValuesError, DISCOVERY_TTL,
};
pub use status::StatusManifest;
pub use watches::{
    load as load_watches, parse as parse_watches, DryRunOption, Watch, WatchesError,
};

// The runtime's parts that `rudder run` configures from its flags.
pub use runtime::logging;
pub use runtime::metrics::{Metrics, MetricsCerts, MetricsServing, RestClientMetricsLayer};
pub use runtime::{shutdown_signal, LeaseLocation, ShardSettings};
