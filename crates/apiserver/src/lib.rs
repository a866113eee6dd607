//! An embedded, Kubernetes-compatible API server for tests and demos.
//!
//! It stores objects of any kind as JSON, implements the API machinery
//! clients depend on (resourceVersions, watches, selectors, patches,
//! server-side apply, finalizers, garbage collection, CRDs, discovery) and
//! serves HTTP, or HTTPS with its own CA when `tls` is set. Nothing
//! schedules Pods: it is not a cluster, only its API. With
//! `simulate_readiness` workloads report ready.
//!
//! The public surface is [`Server`], [`Config`], [`Authorization`], the
//! errors and the test-facing [`faults`] injector; everything else is
//! internal. Inside, the layers are folders, as in kube-apiserver's tree:
//! `http/` (routing, auth, the resource handlers by verb, bodies, watch,
//! printing, discovery), `object/` (what every write does: admission,
//! verbs, server-side apply), `storage/` (the store and its change stream)
//! and `controllers/` (gc, tokens, readiness, workloads, which follow the
//! change stream like kube-controller-manager's and write through
//! `object/` like any client), with `server.rs` holding them together.
//! `aggregation.rs` reads the APIServices that kube-aggregator's part of
//! both (discovery, the 503 of an unavailable API, its status) follows.
//! What the server knows about kinds (registry, schemas, validation) is
//! the `apitypes` crate.

// The only unsafe code is the counting allocator of the store's memory
// tests.
#![cfg_attr(not(test), forbid(unsafe_code))]
#![warn(unreachable_pub)]
// One module-file style: `foo/mod.rs`, as most of the workspace.
#![warn(clippy::self_named_module_files)]

mod aggregation;
mod controllers;
mod error;
pub mod faults;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod object;
mod server;
mod storage;

pub use error::{ApiError, ServerError};
pub use http::auth::Authorization;
pub use http::tls::TlsError;
pub use server::{Config, Server};

pub(crate) use server::App;

/// Kubernetes version reported by `/version`.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "33";
