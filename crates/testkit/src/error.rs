//! What can go wrong setting up a test cluster, with the step that failed.

use std::path::PathBuf;

/// A setup step that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The embedded server did not start.
    #[error("the embedded API server did not start: {0}")]
    Server(String),
    /// A kubeconfig could not be read.
    #[error("kubeconfig {}: {message}", path.display())]
    Kubeconfig {
        /// Which file.
        path: PathBuf,
        /// What was wrong with it.
        message: String,
    },
    /// A request to the cluster failed.
    #[error("cannot {what}: {message}")]
    Kube {
        /// What the kit was doing.
        what: String,
        /// The server's message (or the transport's).
        message: String,
    },
    /// A local file or process operation failed.
    #[error("cannot {what}")]
    Io {
        /// What the kit was doing.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Input the kit was given is not usable.
    #[error("{0}")]
    Invalid(String),
    /// Something did not happen in time.
    #[error("{0}")]
    Timeout(String),
}

impl Error {
    pub(crate) fn kube(what: &str, e: kube::Error) -> Error {
        let message = match &e {
            kube::Error::Api(s) => s.message.clone(),
            other => other.to_string(),
        };
        Error::Kube {
            what: what.to_string(),
            message,
        }
    }
}
