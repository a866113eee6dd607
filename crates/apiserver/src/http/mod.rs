//! The HTTP face of the server, as kube-apiserver's handler chain: routing
//! of API paths ([`router`]), authentication and RBAC ([`auth`]), query
//! parameters, request bodies ([`body`], protobuf), the resource handlers
//! by verb (`resource/`), watch streams, Table printing, discovery and
//! OpenAPI documents, the server's own `/metrics`, the `events.k8s.io` view
//! of core Events, TLS, and kube-aggregator's part ([`aggregator`]: the
//! groups of APIServices and the 503 of an unavailable one). Every verb
//! ends in the object layer (`crate::object`).

mod aggregator;
pub(crate) mod auth;
pub(crate) mod body;
mod discovery;
mod events;
pub(crate) mod metrics;
mod openapi;
mod params;
mod protobuf;
mod resource;
mod response;
pub(crate) mod router;
mod table;
pub(crate) mod tls;
mod watch;
