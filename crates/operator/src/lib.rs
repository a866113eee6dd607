//! The rudder operator: each custom resource of a watched kind becomes one Helm release.
//! The CR's `.spec` is the release's values; records are Helm-format Secrets in the CR's
//! namespace. A drop-in for operator-sdk's Go `helm-operator` (same `watches.yaml`,
//! flags, annotations and status).

pub mod annotations;
pub mod controller;
pub mod error;
pub mod events;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod migrate;
pub mod options;
pub mod reconcile;
pub mod status;
pub mod watches;

pub use controller::{run, run_with_shutdown};
pub use error::{Error, Result};
pub use options::Options;
