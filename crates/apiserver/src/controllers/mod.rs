//! The controllers a cluster runs beside its API server (kube-controller-
//! manager's): garbage collection and namespace cleanup ([`gc`]), and with
//! `simulate_readiness` the simulated status of workloads ([`readiness`])
//! and the Deployment → ReplicaSet → Pod controllers ([`workloads`]).

pub(crate) mod gc;
pub(crate) mod readiness;
pub(crate) mod workloads;
