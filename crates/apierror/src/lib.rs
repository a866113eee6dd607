//! How an error reads in rudder's messages (CLI output, status conditions, events and
//! logs alike): one line, each cause once, and a Kubernetes API error as the server's
//! own message, as Helm and kubectl print it. One rule for every crate.
//!
//! The convention every crate's errors follow: an error that has a cause says only its
//! own context in its `Display` (`release "web": cannot render chart`) and hands the
//! cause out from [`std::error::Error::source`]; a pure wrapper is
//! `#[error(transparent)]`. [`chain`] puts the pieces together, joining each level of
//! the `source()` chain with `": "`, so no cause is printed twice and no printer has to
//! guess which error already carries which text. Anything that shows an error to a user
//! words it with [`chain`] (or [`Chain`] in a `format!` or a `tracing` field), never
//! with the error's bare `Display`, which would drop the causes.
//!
//! kube-client's `Display` for an API error ends with a `Debug` dump of the whole
//! `Status` (`… (Status { status: Some(Failure), code: 422, … })`), and when the server
//! answers with something that is not a `Status` (a missing API group on a real server
//! answers `404 page not found`) it reports `Failed to parse error data`. So a kube error
//! in a chain reads as [`describe`] words it, and ends the chain: its own causes are
//! kube-client internals. [`as_kube_error`] finds it, boxed or not. kube-client's
//! configuration errors (a kubeconfig that cannot be read) end a chain too: unlike
//! rudder's errors, their text already says their cause.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

/// The reason kube-client gives an API error whose body was not a `Status`.
const UNPARSED_BODY: &str = "Failed to parse error data";

/// `e` as a user reads it: the server's message for an API error (which names the
/// object and the field), client-go's wording for an answer without one, and the
/// client's own message for errors that never reached the server.
pub fn describe(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if status.reason == UNPARSED_BODY => {
            without_status(status.code, status.message.trim())
        }
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        kube::Error::Api(status) if !status.reason.is_empty() => {
            format!("{} (HTTP {})", status.reason, status.code)
        }
        kube::Error::Api(status) => without_status(status.code, ""),
        other => other.to_string(),
    }
}

/// `e` (a cause in an error chain) as a kube-client error, boxed or not, so a printer of
/// the chain can [`describe`] it (and stop there: its own causes are kube internals).
pub fn as_kube_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a kube::Error> {
    e.downcast_ref::<kube::Error>()
        .or_else(|| e.downcast_ref::<Box<kube::Error>>().map(|b| &**b))
}

/// `e` and its causes on one line, outermost first, each level's own text joined with
/// `": "`: `release "web": cannot apply Service ns/web: Service "web" is invalid: …`.
///
/// Each level is its `Display` (which, by the convention above, is its own context
/// only); a level with no text of its own (an empty message) is skipped. A kube-client
/// error ends the chain: a [`kube::Error`] reads as [`describe`] words it, and its
/// configuration errors (a kubeconfig that cannot be read), whose text already says
/// their cause, read as their own text.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    Chain(e).to_string()
}

/// [`chain`] as a `Display`, for `format!` arguments and `tracing` fields
/// (`error = %Chain(&e)`) without an intermediate `String`.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        let mut level = Some(self.0);
        while let Some(e) = level {
            let (text, last) = match as_kube_error(e) {
                Some(k) => (describe(k), true),
                None => (e.to_string(), says_its_causes(e)),
            };
            if !text.is_empty() {
                if !first {
                    f.write_str(": ")?;
                }
                f.write_str(&text)?;
                first = false;
            }
            if last {
                break;
            }
            level = e.source();
        }
        Ok(())
    }
}

/// Whether `e` is one of kube-client's configuration errors, which (unlike rudder's own
/// errors) print their cause in their own text (`failed to read kubeconfig from
/// "/x": No such file or directory (os error 2)`): a chain ends with them, as with
/// [`kube::Error`].
fn says_its_causes(e: &(dyn std::error::Error + 'static)) -> bool {
    use kube::config::{InClusterError, InferConfigError, KubeconfigError, LoadDataError};
    e.is::<KubeconfigError>()
        || e.is::<InferConfigError>()
        || e.is::<InClusterError>()
        || e.is::<LoadDataError>()
}

/// What client-go says for an error answer that carries no `Status`
/// (`k8s.io/apimachinery/pkg/api/errors.NewGenericServerResponse`).
fn without_status(code: u16, body: &str) -> String {
    let text = match code {
        400 => "the server rejected our request for an unknown reason",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "the server could not find the requested resource",
        405 => "the server does not allow this method on the requested resource",
        409 => "the server reported a conflict",
        413 => "the server has rejected the request because the request is too large",
        422 => "the server rejected our request due to an error in our request",
        429 => "the server has received too many requests and has asked us to try again later",
        503 => "the server is currently unable to handle the request",
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request",
        _ if code >= 500 && !body.is_empty() => {
            return format!(
                "an error on the server ({:?}) has prevented the request from succeeding",
                first_line(body)
            );
        }
        _ if code >= 500 => "an error on the server has prevented the request from succeeding",
        _ => return format!("the server responded with the status code {code} but did not return more information"),
    };
    text.to_string()
}

/// The first line of a response body, capped, for quoting in a message.
fn first_line(body: &str) -> String {
    let line = body.lines().next().unwrap_or_default();
    match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut status = Status::failure(message, reason).with_code(code);
        status.details = None;
        kube::Error::Api(Box::new(status))
    }

    /// The Service refusal of the CLI's and operator's tests.
    fn refused() -> kube::Error {
        kube::Error::Api(
            Status::failure("Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive", "Invalid")
                .with_code(422)
                .boxed(),
        )
    }

    const REFUSED: &str = "Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive";

    /// Errors of two crates as the convention has them: each says its own context,
    /// its cause comes from `source()`.
    mod storage {
        #[derive(Debug, thiserror::Error)]
        pub(super) enum Error {
            #[error("{context}")]
            Api {
                context: String,
                #[source]
                source: Box<kube::Error>,
            },
            #[error("cannot decode release record {key:?}")]
            Decode {
                key: String,
                #[source]
                source: std::io::Error,
            },
        }
    }

    mod action {
        #[derive(Debug, thiserror::Error)]
        pub(super) enum Error {
            #[error("release {release:?}: release storage")]
            Storage {
                release: String,
                #[source]
                source: super::storage::Error,
            },
            #[error(transparent)]
            Wrapped(#[from] super::storage::Error),
        }
    }

    #[test]
    fn a_kube_cause_reads_as_the_servers_message() {
        let e = anyhow::Error::new(refused()).context("creating Service web");
        assert_eq!(chain(&*e), format!("creating Service web: {REFUSED}"));
        assert!(!chain(&*e).contains("Status {"));
    }

    #[test]
    fn three_levels_join_with_colons() {
        let e = action::Error::Storage {
            release: "web".into(),
            source: storage::Error::Decode {
                key: "sh.helm.release.v1.web.v1".into(),
                source: std::io::Error::other("unexpected end of file"),
            },
        };
        assert_eq!(
            chain(&e),
            "release \"web\": release storage: cannot decode release record \"sh.helm.release.v1.web.v1\": unexpected end of file"
        );
        assert_eq!(Chain(&e).to_string(), chain(&e));
    }

    #[test]
    fn a_chain_ends_at_the_kube_error() {
        let e = action::Error::Storage {
            release: "web".into(),
            source: storage::Error::Api {
                context: "create Secret ns/x".into(),
                source: Box::new(refused()),
            },
        };
        assert_eq!(
            chain(&e),
            format!("release \"web\": release storage: create Secret ns/x: {REFUSED}")
        );
        // A kube error that is not an API answer keeps the client's text, and ends the
        // chain too (its causes are the client's internals).
        let e = storage::Error::Api {
            context: "list Secrets".into(),
            source: Box::new(kube::Error::LinesCodecMaxLineLengthExceeded),
        };
        assert_eq!(
            chain(&e),
            format!(
                "list Secrets: {}",
                kube::Error::LinesCodecMaxLineLengthExceeded
            )
        );
    }

    #[test]
    fn an_anyhow_context_chain_reads_outermost_first() {
        let typed = storage::Error::Api {
            context: "create Secret ns/x".into(),
            source: Box::new(refused()),
        };
        let e = anyhow::Error::new(typed)
            .context("release \"x\"")
            .context("INSTALLATION FAILED");
        assert_eq!(
            chain(&*e),
            format!("INSTALLATION FAILED: release \"x\": create Secret ns/x: {REFUSED}")
        );
        let io = anyhow::Error::new(std::io::Error::other("disk full")).context("writing x");
        assert_eq!(chain(&*io), "writing x: disk full");
        let message = anyhow::anyhow!("no kubeconfig").context("finding a cluster");
        assert_eq!(chain(&*message), "finding a cluster: no kubeconfig");
    }

    #[test]
    fn a_typed_cause_of_another_crate_is_printed_once() {
        let e = action::Error::Storage {
            release: "web".into(),
            source: storage::Error::Api {
                context: "get Secret ns/sh.helm.release.v1.web.v1".into(),
                source: Box::new(refused()),
            },
        };
        let text = chain(&e);
        assert_eq!(
            text.matches("Service \"web\" is invalid").count(),
            1,
            "{text}"
        );
        assert_eq!(text.matches("get Secret").count(), 1, "{text}");
        // A transparent wrapper adds no level of its own.
        let wrapped = action::Error::from(storage::Error::Decode {
            key: "k".into(),
            source: std::io::Error::other("bad gzip"),
        });
        assert_eq!(
            chain(&wrapped),
            "cannot decode release record \"k\": bad gzip"
        );
    }

    #[test]
    fn a_kubeconfig_error_ends_the_chain() {
        let read = kube::config::KubeconfigError::ReadConfig(
            std::io::Error::from(std::io::ErrorKind::NotFound),
            "/nowhere".into(),
        );
        let text = read.to_string();
        let e = anyhow::Error::new(read).context("reading kubeconfig /nowhere");
        assert_eq!(chain(&*e), format!("reading kubeconfig /nowhere: {text}"));
    }

    #[test]
    fn a_level_without_text_is_skipped() {
        let e = anyhow::Error::new(std::io::Error::other("")).context("writing x");
        assert_eq!(chain(&*e), "writing x");
    }

    #[test]
    fn an_api_error_reads_as_the_servers_message() {
        let e = api(
            422,
            "Invalid",
            "Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        );
        assert!(e.to_string().contains("Status {"), "kube's own text: {e}");
        assert_eq!(
            describe(&e),
            "Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
    }

    #[test]
    fn a_missing_api_group_reads_as_kubectl_says_it() {
        // What kube-client makes of a real server's `404 page not found` body.
        let e = api(404, UNPARSED_BODY, "404 page not found\n");
        assert_eq!(
            describe(&e),
            "the server could not find the requested resource"
        );
    }

    #[test]
    fn a_server_error_without_a_status_quotes_its_body() {
        let e = api(500, UNPARSED_BODY, "etcdserver: request timed out\nmore");
        assert_eq!(
            describe(&e),
            "an error on the server (\"etcdserver: request timed out\") has prevented the request from succeeding"
        );
        let e = api(418, UNPARSED_BODY, "");
        assert_eq!(
            describe(&e),
            "the server responded with the status code 418 but did not return more information"
        );
    }

    #[test]
    fn a_status_without_a_message_gives_its_reason_and_code() {
        assert_eq!(describe(&api(409, "Conflict", "")), "Conflict (HTTP 409)");
    }

    #[test]
    fn other_errors_keep_the_clients_text() {
        let e = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(describe(&e), e.to_string());
        assert!(as_kube_error(&e).is_some());
        let boxed = Box::new(kube::Error::LinesCodecMaxLineLengthExceeded);
        assert!(as_kube_error(&boxed).is_some());
        let io = std::io::Error::other("x");
        assert!(as_kube_error(&io).is_none());
    }
}
