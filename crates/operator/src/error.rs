//! The operator's errors: what stops `rudder run` (a reconcile's failure never does).

use std::path::PathBuf;

use runtime::metrics::BindAddressError;
use runtime::ManagerError;

/// An error that stops the operator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot load the watches file {}", path.display())]
    Watches {
        path: PathBuf,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    #[error("the watches file {} lists no kinds to watch", path.display())]
    NoWatches { path: PathBuf },

    #[error("nothing to watch: give the operator at least one watch (a kind and its chart)")]
    NothingToWatch,

    #[error("cannot load chart {} for {gvk}", path.display())]
    Chart {
        gvk: String,
        path: PathBuf,
        #[source]
        source: chart::loader::LoadError,
    },

    #[error("invalid value of {flag}")]
    BindAddress {
        flag: &'static str,
        #[source]
        source: BindAddressError,
    },

    #[error(
        "--leader-elect needs a lease name: set --leader-election-id (or the OPERATOR_NAME \
         environment variable)"
    )]
    LeaderElectionIdMissing,

    #[error(
        "--leader-elect needs a namespace for the lease: not running in a cluster, so set \
         --leader-election-namespace"
    )]
    LeaderElectionNamespaceMissing,

    #[error(
        "--shards=auto needs a namespace for the replicas' Leases: not running in a cluster, \
         so set --leader-election-namespace"
    )]
    ShardNamespaceMissing,

    /// The runtime stopped: a server, leadership, sharding or a controller.
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
