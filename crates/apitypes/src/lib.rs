//! What the embedded API server (`apiserver`) knows about the kinds it
//! serves, apart from serving them: which resources exist ([`Registry`]:
//! the built-in kinds and those CustomResourceDefinitions add), the shape
//! of each kind's objects ([`schema`]: the built-in table and compiled CRD
//! schemas), the typed operations of structured-merge-diff over that shape
//! ([`typed`], [`fieldset`]) and the checks kube-apiserver runs on a write
//! ([`validation`]), with the real server's messages, and the columns
//! Kubernetes' printers show for the built-in kinds ([`printers`]).
//!
//! kube-apiserver takes the same knowledge from k8s.io/apimachinery,
//! apiextensions-apiserver and sigs.k8s.io/structured-merge-diff. Nothing
//! here does I/O, holds objects or knows HTTP: the server turns what these
//! functions return into stored objects and `Status` answers.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
// One module-file style: `foo/mod.rs`, as most of the workspace.
#![warn(clippy::self_named_module_files)]

pub mod fieldset;
pub mod printers;
pub mod registry;
pub mod schema;
pub mod typed;
pub mod validation;

pub use registry::{Registry, ResourceType};
pub use schema::Schema;

use serde_json::Value;

/// The strings of a JSON list (`finalizers`, `required`, list-map keys);
/// anything else is no strings.
pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
