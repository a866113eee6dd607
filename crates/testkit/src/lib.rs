//! Test support for rudder's integration and end-to-end suites (dev-only, never
//! published). Start here: [`Cluster::start`] gives the embedded API server, or the
//! cluster `RUDDER_TEST_KUBECONFIG` points at, and [`Cluster::namespace`] a namespace of
//! the test's own that is deleted when the test ends.
//!
//! | need | use |
//! |---|---|
//! | a cluster and a client | [`Cluster::start`], [`Cluster::builder`], [`TestNamespace::client`] |
//! | a kubeconfig for kubectl, helm, the rudder binary | [`TestNamespace::kubeconfig`] |
//! | a CRD, served | [`crd::open_crd`], [`Cluster::install_crd`] |
//! | a chart on disk | [`ChartDir::new`], [`write_chart`] |
//! | kubectl, helm, the oracle, `../shared` | [`tools`] (each `None` with a skip message), [`Kubectl`] |
//! | waiting | [`eventually`], [`eventually_blocking`], [`wait_for`] |
//! | a child process (`rudder run`, a replica) with logs | [`Process`], [`free_port`] |
//! | ready workloads without a kubelet | automatic: see [`readiness`](crate#readiness) |
//! | render a corpus case as the oracle does | [`oracle`] |
//! | an aggregated API whose service is down | [`TestNamespace::unavailable_apiservice`] (a real APIService), [`TestNamespace::unavailable_api`] (a proxy that counts requests) |
//! | an overall deadline per test, cleanup after an overrun | automatic: see [`deadline`] |
//!
//! # Readiness
//!
//! Tests that wait for workloads to be ready pass everywhere: the embedded server
//! simulates readiness, a cluster with a kubelet runs the Pods, and on a control plane
//! without one (no Ready Node) each test namespace gets a helper that patches the status
//! subresource of its Deployments, StatefulSets, DaemonSets, Jobs, PVCs and Pods the way
//! `rudder apiserver --simulate-readiness` does (where a kube-controller-manager runs, it
//! marks only the Pods ready and PVCs bound, and the controller manager computes the
//! workloads' status from them, as it would overwrite any other). [`ClusterBuilder::simulate_readiness`]
//! turns that off for tests that need workloads to stay unready; they skip where a kubelet
//! runs them anyway ([`Cluster::has_kubelet`]).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod aggregation;
mod charts;
mod cluster;
pub mod crd;
pub mod deadline;
mod error;
mod eventually;
mod kubectl;
mod namespace;
pub mod oracle;
mod process;
mod readiness;
pub mod tools;

pub use aggregation::{UnavailableApi, UNAVAILABLE_BODY};
/// The embedded server's crate, for tests that reach into it (fault injection) where
/// [`Cluster::embedded`] gives a server.
pub use apiserver;
pub use charts::{write_chart, ChartDir};
pub use cluster::{Cluster, ClusterBuilder, KUBECONFIG_ENV, KUBELET_ENV};
pub use error::Error;
pub use eventually::{eventually, eventually_blocking, wait_for, Settled};
pub use kubectl::{unique, Kubectl};
pub use namespace::{TestNamespace, CREATED_BY, OPERATOR_FINALIZERS};
pub use process::{free_port, Process};
pub use readiness::settle;
pub use tools::{skip_message, Tool};
