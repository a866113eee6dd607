//! How a Kubernetes API error reads in rudder's messages (CLI output, status conditions,
//! events and logs alike): the server's own message, as Helm and kubectl print it.
//! One rule for every crate that talks to a cluster: the release storage and actions,
//! the controller runtime and the operator, the CLI.
//!
//! kube-client's `Display` for an API error ends with a `Debug` dump of the whole
//! `Status` (`… (Status { status: Some(Failure), code: 422, … })`), and when the server
//! answers with something that is not a `Status` (a missing API group on a real server
//! answers `404 page not found`) it reports `Failed to parse error data`. Every error
//! type of the crates that talk to the cluster formats its kube cause with [`describe`],
//! and the CLI prints error chains with [`as_kube_error`], so neither shows.

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
