//! Object semantics: what every write does to an object whatever the
//! endpoint — [`admission`] (decode checks, defaults, validation), then
//! create, update, server-side apply and deletion with finalizers
//! ([`verbs`]),
//! `managedFields` ([`managed`]), strategic merge patches ([`patch`]) and
//! the metadata helpers they share ([`meta`]). The HTTP layer and the
//! controllers both write through here.

pub(crate) mod admission;
pub(crate) mod managed;
pub(crate) mod meta;
pub(crate) mod patch;
mod verbs;

pub(crate) use admission::CRD_CLEANUP;
pub(crate) use meta::{finalizers, name_of};
pub(crate) use verbs::{apply, create, delete, modify, DeleteOpts, Propagation, Target, WriteOpts};
