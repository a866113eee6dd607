//! [`ReconcileError`]: why a reconcile failed, naming the CR and what to change, and
//! when the controller should try again. A variant with a cause says only its own
//! context; the cause comes from `source()`, and status conditions, events and logs
//! word the whole with [`release::api_error::chain`].

use std::time::Duration;

use super::timing::IN_PROGRESS_RETRY;
use crate::annotations::AnnotationError;

/// Why a reconcile failed; the message (with its causes, as
/// [`release::api_error::chain`] words them) names the CR and what to change.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("{cr}: custom resources without a namespace are not supported; make the CRD's scope Namespaced")]
    NoNamespace { cr: String },
    #[error("{cr}: {message}")]
    InvalidSpec { cr: String, message: String },
    /// The CR's name is no Helm release name (Helm's message); only a rename helps.
    /// Helm's message is quoted inside the sentence, before what to do, so it is a
    /// detail of this error (worded in full), not its `source()`.
    #[error("{cr}: {}; give the custom resource a shorter name", release::api_error::chain(&**problem))]
    InvalidName {
        cr: String,
        problem: Box<action::Error>,
    },
    /// An annotation of the CR is unusable; quoted inside the sentence, as
    /// [`ReconcileError::InvalidName`] quotes Helm's message.
    #[error("{cr}: {problem}; fix or remove the annotation")]
    Annotation {
        cr: String,
        problem: AnnotationError,
    },
    #[error("{cr}: cannot migrate the release's old records")]
    Migrate {
        cr: String,
        #[source]
        source: Box<crate::migrate::MigrateError>,
    },
    #[error("{cr}: cannot adopt the release's existing objects")]
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
    #[error("{cr}: cannot read the records of release {release:?}")]
    Storage {
        cr: String,
        release: String,
        #[source]
        source: release::Error,
    },
    #[error("{cr}: {action} failed")]
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
    #[error("{cr}: cannot {action} the custom resource")]
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

#[cfg(test)]
mod tests {
    use super::*;
    use release::api_error::chain;

    fn timed_out() -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("etcdserver: request timed out", "Timeout")
                .with_code(504)
                .boxed(),
        )
    }

    /// The operator's error, the action's, the release store's and the server's: each
    /// once, outermost first.
    #[test]
    fn a_failed_action_reads_with_each_cause_once() {
        let err = ReconcileError::Action {
            cr: "Demo ns/web".into(),
            action: "install",
            source: Box::new(action::Error::Storage {
                release: "web".into(),
                source: release::Error::Api {
                    context: "create Secret ns/sh.helm.release.v1.web.v1".into(),
                    source: Box::new(timed_out()),
                },
            }),
            retry_in: None,
        };
        assert_eq!(err.to_string(), "Demo ns/web: install failed");
        assert_eq!(
            chain(&err),
            "Demo ns/web: install failed: release \"web\": release storage: \
             create Secret ns/sh.helm.release.v1.web.v1: etcdserver: request timed out"
        );
    }

    #[test]
    fn what_to_do_follows_the_quoted_problem() {
        let problem = match action::validate_release_name("") {
            Err(e) => e,
            Ok(()) => panic!("an empty name is refused"),
        };
        let err = ReconcileError::InvalidName {
            cr: "Demo ns/x".into(),
            problem: Box::new(problem),
        };
        assert_eq!(
            chain(&err),
            "Demo ns/x: release name check failed: no name provided; give the custom \
             resource a shorter name"
        );
        let err = ReconcileError::Kube {
            cr: "Demo ns/x".into(),
            action: "update the status of",
            source: timed_out(),
        };
        assert_eq!(
            chain(&err),
            "Demo ns/x: cannot update the status of the custom resource: etcdserver: request \
             timed out"
        );
    }
}
