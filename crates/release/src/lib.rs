//! Helm release records for rudder: the record type in Helm's exact JSON schema, Helm's
//! storage encoding, storage drivers (Secret, ConfigMap, memory) with Helm's object
//! layout so the real `helm` CLI can list, roll back and uninstall our releases, history
//! helpers with pruning, a chunked form for records over the Kubernetes size limit, and
//! a per-release lock kept on the newest release record.
//!
//! See `README.md` in this crate for the storage layout and the chunked format.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

/// How an API error reads (the `apierror` crate, under the name callers know).
pub use apierror as api_error;
pub mod cache;
pub mod codec;
pub mod driver;
mod error;
pub mod lock;
pub mod record;
pub mod storage;
mod time;

pub use driver::{
    make_key, ConfigMapDriver, Driver, MemoryDriver, ObjectDriver, RecordMeta, SecretDriver,
};
pub use error::{Error, Result};
pub use record::{Chart, File, Hook, HookExecution, Info, Metadata, Release, Status};
pub use storage::{Storage, StorageDriver};
pub use time::Time;
