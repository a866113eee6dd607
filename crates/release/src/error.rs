//! Errors of the release store, typed so callers can tell a missing record from a
//! conflict, a damaged record or a failing API server. Each says its own context; its
//! cause (a codec or Kubernetes API error) comes from `source()`, and
//! [`crate::api_error::chain`] words the whole for a user.

use crate::codec::CodecError;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while reading or writing release records.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No record with this key (or matching these labels) exists.
    #[error("release record {0:?} not found")]
    NotFound(String),
    /// A record with this key exists already; revisions are never overwritten by create.
    #[error("release record {0:?} already exists")]
    AlreadyExists(String),
    /// Someone else changed the object between our read and our write; retry the action.
    #[error("release record {0:?} was modified concurrently; retry")]
    Conflict(String),
    /// The record carries the lock of another operation that is still running.
    #[error("release record {key:?} is locked by {holder:?}: another operation is in progress on the release")]
    Locked { key: String, holder: String },
    /// The stored object exists but its data cannot be decoded.
    #[error("cannot decode release record {key:?}")]
    Decode {
        key: String,
        #[source]
        source: CodecError,
    },
    /// A chunked record is incomplete or does not match its digest.
    #[error("chunked release record {key:?} is damaged: {reason}")]
    Chunk { key: String, reason: String },
    /// The release could not be serialized.
    #[error("cannot encode release {name:?}")]
    Encode {
        name: String,
        #[source]
        source: CodecError,
    },
    /// A label value that Kubernetes would reject.
    #[error("invalid label value {value:?} for {key:?}: {reason}")]
    InvalidLabel {
        key: String,
        value: String,
        reason: &'static str,
    },
    /// `HELM_DRIVER` names a driver rudder does not have.
    #[error("unknown driver {0:?} (HELM_DRIVER: use secret, configmap or memory)")]
    UnknownDriver(String),
    /// The Kubernetes API call failed.
    #[error("{context}")]
    Api {
        context: String,
        #[source]
        source: Box<kube::Error>,
    },
}

impl Error {
    /// Whether this is [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound(_))
    }

    pub(crate) fn api(context: impl Into<String>, source: kube::Error) -> Error {
        Error::Api {
            context: context.into(),
            source: Box::new(source),
        }
    }
}
