//! [`ReconcileError`]: why a reconcile failed, naming the CR and what to change, and
//! when the controller should try again.

use std::time::Duration;

use super::timing::IN_PROGRESS_RETRY;
use crate::annotations::AnnotationError;

/// Why a reconcile failed; the message names the CR and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{cr}: custom resources without a namespace are not supported; make the CRD's scope Namespaced")]
    NoNamespace { cr: String },
    #[error("{cr}: {message}")]
    InvalidSpec { cr: String, message: String },
    /// The CR's name is no Helm release name (Helm's message); only a rename helps.
    #[error("{cr}: {source}; give the custom resource a shorter name")]
    InvalidName {
        cr: String,
        #[source]
        source: Box<action::Error>,
    },
    #[error("{cr}: {source}; fix or remove the annotation")]
    Annotation {
        cr: String,
        #[source]
        source: AnnotationError,
    },
    #[error("{cr}: cannot migrate the release's old records: {source}")]
    Migrate {
        cr: String,
        #[source]
        source: Box<crate::migrate::MigrateError>,
    },
    #[error("{cr}: cannot adopt the release's existing objects: {source}")]
    Adopt {
        cr: String,
        #[source]
        source: Box<action::Error>,
    },
    /// The release named after the CR belongs to another chart (Go's message, then
    /// what to do).
    #[error("{cr}: {}; rename the custom resource, or uninstall that release first", duplicate_message(.release, .chart))]
    DuplicateName {
        cr: String,
        release: String,
        chart: String,
    },
    #[error("{cr}: {}", no_chart_message(.release))]
    NoChartMetadata { cr: String, release: String },
    #[error("{cr}: cannot read the records of release {release:?}: {source}")]
    Storage {
        cr: String,
        release: String,
        #[source]
        source: release::Error,
    },
    #[error("{cr}: {action} failed: {source}")]
    Action {
        cr: String,
        action: &'static str,
        #[source]
        source: Box<action::Error>,
        /// When to try again (the backoff of this failure).
        retry_in: Option<Duration>,
    },
    #[error("{cr}: revision {version} of release {release:?} is {status}: another operation is in progress; will retry")]
    InProgress {
        cr: String,
        release: String,
        version: i64,
        status: String,
    },
    #[error("{cr}: {attempts} attempt(s) with the current spec and chart failed; retrying in {}s (change the spec to retry now): {last}", retry_in.as_secs())]
    BackingOff {
        cr: String,
        attempts: u32,
        retry_in: Duration,
        /// The last failure, as in the status.
        last: String,
    },
    #[error(
        "{cr}: cannot {action} the custom resource: {}",
        release::api_error::describe(source)
    )]
    Kube {
        cr: String,
        action: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// Go's `getReleaseName` error, as the status shows it.
pub(super) fn duplicate_message(release: &str, chart: &str) -> String {
    format!(
        "failed to get helm release name: duplicate release name: found existing release with name {} for chart {}",
        gostd::strconv::quote(release),
        gostd::strconv::quote(chart)
    )
}

pub(super) fn no_chart_message(release: &str) -> String {
    format!(
        "failed to get helm release name: could not find chart metadata in release with name {}",
        gostd::strconv::quote(release)
    )
}

impl ReconcileError {
    /// When the controller should try again, if this error knows better than the
    /// controller's default error backoff.
    pub fn requeue_after(&self) -> Option<Duration> {
        match self {
            ReconcileError::BackingOff { retry_in, .. } => Some(*retry_in),
            ReconcileError::Action { retry_in, .. } => *retry_in,
            ReconcileError::InProgress { .. } => Some(IN_PROGRESS_RETRY),
            _ => None,
        }
    }
}
