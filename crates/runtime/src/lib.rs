//! A Kubernetes controller runtime, as controller-runtime is to Go controllers and
//! kube-runtime to kube-rs ones (it builds on kube-runtime's `Controller`): what runs
//! around a reconciler and knows nothing of what it reconciles.
//!
//! Start here: [`Manager`] (the process: HTTP servers, leader election, sharding,
//! controllers, and a shutdown that stops them in reverse). Its parts:
//! [`leader`] (Lease leader election, client-go's algorithm), [`shard`] (replicas
//! splitting the objects of each watch), [`metrics`] (controller-runtime's and
//! client-go's metrics under their Go names, served over HTTP or HTTPS),
//! [`logging`] (zap's log lines), [`events`] (core/v1 Events with client-go's
//! correlation) and the retry policy ([`Backoff`], [`RetryBucket`],
//! [`RetryLimiter`]).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod events;
pub mod leader;
pub mod logging;
mod manager;
pub mod metrics;
mod retry;
pub mod shard;

pub use manager::{
    shutdown_signal, Controller, LeaseLocation, Manager, ManagerError, Started, Stop,
    DEFAULT_SHUTDOWN_TIMEOUT,
};
pub use retry::{Backoff, Key, RetryBucket, RetryLimiter};
pub use shard::ShardSettings;
