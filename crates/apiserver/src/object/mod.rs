//! Object semantics: what every write does to an object whatever the
//! endpoint — admission (decode checks, defaults, validation), create,
//! update, server-side apply and deletion with finalizers ([`verbs`]),
//! `managedFields` ([`managed`]), strategic merge patches ([`patch`]) and
//! the metadata helpers they share ([`meta`]). The HTTP layer and the
//! controllers both write through here.

pub(crate) mod admission;
pub(crate) mod managed;
pub(crate) mod meta;
pub(crate) mod patch;
mod verbs;

pub(crate) use verbs::{
    apply, create, delete, finalizers, modify, name_of, DeleteOpts, Propagation, Target, WriteOpts,
    CRD_CLEANUP,
};
