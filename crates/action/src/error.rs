//! The errors of release actions; every message names the release and, where one is
//! involved, the object (`Kind namespace/name`). The cause is not in the message: it
//! comes from `source()`, and [`release::api_error::chain`] words the whole chain for a
//! user (`release "web": cannot apply Service ns/web: Service "web" is invalid: …`).

use std::time::Duration;

use release::api_error::chain;

use crate::kube::ObjectRef;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong during a release action.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The release name breaks Helm's rule (Helm's own words).
    #[error(
        "release name check failed: release name {release:?}: invalid release name, must match regex {} and the length must not be longer than {}",
        crate::name::RELEASE_NAME_PATTERN,
        crate::name::MAX_RELEASE_NAME_LEN
    )]
    InvalidReleaseName { release: String },
    /// No release name was given.
    #[error("release name check failed: no name provided")]
    MissingReleaseName,
    /// A manifest document is not a Kubernetes object.
    #[error("release {release:?}: invalid manifest document from {source_path}: {message}")]
    InvalidDocument {
        release: String,
        source_path: String,
        message: String,
    },
    /// The cluster does not serve the object's kind (missing CRD or API group), or the
    /// API that serves it is unavailable (an aggregated API whose service is down).
    #[error("release {release:?}: {object}")]
    UnknownKind {
        release: String,
        object: Box<ObjectRef>,
        #[source]
        source: Box<crate::kube::discovery::KindError>,
    },
    /// The object exists and belongs to another release (or to no Helm release).
    #[error(
        "release {release:?}: {object} exists and {owner}; refusing to take it over (set take_ownership to adopt it)"
    )]
    Conflict {
        release: String,
        object: Box<ObjectRef>,
        /// Who owns it, as a phrase ("is owned by release ns/name").
        owner: String,
    },
    /// A Kubernetes API call on an object failed.
    #[error("release {release:?}: cannot {action} {object}")]
    Api {
        release: String,
        action: &'static str,
        object: Box<ObjectRef>,
        #[source]
        source: Box<kube::Error>,
    },
    /// An object did not reach the awaited state in time.
    #[error("release {release:?}: {object} did not {what} within {timeout:?}")]
    Timeout {
        release: String,
        object: Box<ObjectRef>,
        what: &'static str,
        timeout: Duration,
    },
    /// A hook Job or Pod failed.
    #[error("release {release:?}: {event} hook {object} failed: {reason}")]
    HookFailed {
        release: String,
        event: String,
        object: Box<ObjectRef>,
        reason: String,
    },
    /// The cluster's `.Capabilities` (version, served APIs) could not be discovered;
    /// set `kube_version`/`api_versions` explicitly to render without asking it.
    #[error("release {release:?}: cannot discover the cluster's capabilities")]
    Discovery {
        release: String,
        #[source]
        source: crate::kube::capabilities::DiscoveryError,
    },
    /// The chart could not be rendered; `source` keeps the template, line and Go's
    /// message.
    #[error("release {release:?}: cannot render chart")]
    Render {
        release: String,
        #[source]
        source: Box<chart::render::RenderChartError>,
    },
    /// The render stopped without an answer (it panicked or was cancelled).
    #[error("release {release:?}: cannot render chart: render task failed: {message}")]
    RenderAborted { release: String, message: String },
    /// Reading or writing the release records failed.
    #[error("release {release:?}: release storage")]
    Storage {
        release: String,
        #[source]
        source: release::Error,
    },
    /// `install` found a release of this name that is deployed (or being changed).
    #[error("release {release:?}: cannot re-use a name that is still in use (revision {version} is {status})")]
    InUse {
        release: String,
        version: i64,
        status: String,
    },
    /// A read found no release of this name (or not that revision of it).
    #[error("release {release:?}: not found")]
    ReleaseNotFound { release: String },
    /// `upgrade`/`uninstall` found no release of this name.
    #[error("release {release:?}: has no deployed revision")]
    NotDeployed { release: String },
    /// `uninstall` with `keep_history` of a release that is already uninstalled.
    #[error("release {release:?}: is already uninstalled (revision {version})")]
    AlreadyUninstalled { release: String, version: i64 },
    /// `rollback` to a revision that is not stored.
    #[error("release {release:?}: revision {version} not found")]
    RevisionNotFound { release: String, version: i64 },
    /// Another action holds the release's lock.
    #[error(
        "another operation (holder {holder}, since {since}) is in progress on release {release:?}; retry after {retry_after}"
    )]
    Locked {
        release: String,
        holder: String,
        since: String,
        retry_after: String,
    },
    /// The release's newest record is `pending-*` (or `uninstalling`), written
    /// recently by a tool that does not take rudder's lock (the `helm` CLI): that
    /// tool may still be at work, so the record is not taken for a leftover yet.
    #[error(
        "another operation ({status}, revision {version}, started by a tool that does not take rudder's lock, such as helm) is in progress on release {release:?}; rudder leaves it alone until {recover_after}, then takes it for interrupted and marks it failed"
    )]
    PendingElsewhere {
        release: String,
        version: i64,
        status: String,
        recover_after: String,
    },
    /// The release's lock could not be read, taken or kept.
    #[error("release {release:?}: lock")]
    Lock {
        release: String,
        #[source]
        source: release::lock::LockError,
    },
    /// The caller's transform refused (or failed on) an object; nothing was applied.
    #[error("release {release:?}: {object} (from {source_path}) was refused: {message}")]
    Transform {
        release: String,
        object: Box<ObjectRef>,
        source_path: String,
        message: String,
    },
    /// `wait` gave up: these objects were still not ready when the timeout passed.
    #[error("release {release:?}: timed out after {timeout:?} waiting for {}", not_ready.join("; "))]
    NotReady {
        release: String,
        timeout: Duration,
        /// One line per object: `Kind ns/name: why it is not ready`.
        not_ready: Vec<String>,
    },
    /// The release had no records but live objects of it, and recording a release over
    /// them failed (for example because one of them belongs to another release).
    /// Nothing was deleted.
    #[error(
        "release {namespace}/{release}: found {found} existing object(s) of this release (e.g. {example}) but could not record a release over them; nothing was deleted"
    )]
    Adopt {
        release: String,
        namespace: String,
        found: usize,
        example: String,
        #[source]
        source: Box<Error>,
    },
    /// The action failed and `rollback_on_failure` undid it (`outcome` says how).
    #[error("release {release:?}: {action} failed and {outcome} (rollback_on_failure)")]
    RolledBack {
        release: String,
        action: &'static str,
        outcome: String,
        #[source]
        cause: Box<Error>,
    },
    /// The action failed and undoing it with `rollback_on_failure` failed too.
    ///
    /// Two failures, and a chain has one next link: both are details of this error
    /// (neither is its `source()`), so its message words each in full.
    #[error("release {release:?}: {action} failed: {}; undoing it failed too: {}", chain(&**cause), chain(&**undo))]
    RollbackFailed {
        release: String,
        action: &'static str,
        cause: Box<Error>,
        undo: Box<Error>,
    },
}

impl Error {
    pub(crate) fn storage(release: &str, source: release::Error) -> Error {
        Error::Storage {
            release: release.to_string(),
            source,
        }
    }

    pub(crate) fn lock(release: &str, source: release::lock::LockError) -> Error {
        Error::Lock {
            release: release.to_string(),
            source,
        }
    }

    pub(crate) fn api(
        release: &str,
        action: &'static str,
        object: &ObjectRef,
        source: kube::Error,
    ) -> Error {
        Error::Api {
            release: release.to_string(),
            action,
            object: Box::new(object.clone()),
            source: Box::new(source),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_release_object_and_cause() {
        let object = Box::new(ObjectRef {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            namespace: Some("apps".into()),
            name: "w".into(),
        });
        let e = Error::Conflict {
            release: "web".into(),
            object: object.clone(),
            owner: "is owned by release apps/other".into(),
        };
        assert_eq!(
            e.to_string(),
            "release \"web\": Widget apps/w exists and is owned by release apps/other; refusing to take it over (set take_ownership to adopt it)"
        );
        let e = Error::Timeout {
            release: "web".into(),
            object,
            what: "complete",
            timeout: Duration::from_secs(5),
        };
        assert_eq!(
            e.to_string(),
            "release \"web\": Widget apps/w did not complete within 5s"
        );
    }

    fn refused() -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("secrets \"x\" is forbidden: exceeded quota", "Forbidden")
                .with_code(403)
                .boxed(),
        )
    }

    /// An action error whose cause is the release store's error, whose cause is the
    /// server's answer: each said once, the server in its own words.
    #[test]
    fn a_cause_from_the_release_store_reads_once() {
        let e = Error::RolledBack {
            release: "web".into(),
            action: "upgrade",
            outcome: "was rolled back to revision 1".into(),
            cause: Box::new(Error::storage(
                "web",
                release::Error::Api {
                    context: "create Secret apps/sh.helm.release.v1.web.v2".into(),
                    source: Box::new(refused()),
                },
            )),
        };
        assert_eq!(
            e.to_string(),
            "release \"web\": upgrade failed and was rolled back to revision 1 (rollback_on_failure)"
        );
        assert_eq!(
            chain(&e),
            "release \"web\": upgrade failed and was rolled back to revision 1 (rollback_on_failure): \
             release \"web\": release storage: create Secret apps/sh.helm.release.v1.web.v2: \
             secrets \"x\" is forbidden: exceeded quota"
        );
    }

    #[test]
    fn a_failed_undo_words_both_failures_in_full() {
        let object = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("apps".into()),
            name: "c".into(),
        };
        let e = Error::RollbackFailed {
            release: "web".into(),
            action: "install",
            cause: Box::new(Error::api("web", "apply", &object, refused())),
            undo: Box::new(Error::storage(
                "web",
                release::Error::Api {
                    context: "delete Secret apps/s".into(),
                    source: Box::new(refused()),
                },
            )),
        };
        assert_eq!(
            chain(&e),
            "release \"web\": install failed: release \"web\": cannot apply ConfigMap apps/c: \
             secrets \"x\" is forbidden: exceeded quota; undoing it failed too: release \"web\": \
             release storage: delete Secret apps/s: secrets \"x\" is forbidden: exceeded quota"
        );
    }
}
