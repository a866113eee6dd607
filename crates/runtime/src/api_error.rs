//! How a Kubernetes API error reads in the runtime's messages and logs: the server's
//! own message, as kubectl prints it, instead of kube-client's `Display`, which ends
//! with a `Debug` dump of the whole `Status` and says `Failed to parse error data`
//! when a real server answers without one (`404 page not found`).
//!
//! The same rule as `release::api_error::describe`, kept here so the runtime needs
//! nothing of the release crates; the two must read alike (the tests below pin it).

/// The reason kube-client gives an API error whose body was not a `Status`.
const UNPARSED_BODY: &str = "Failed to parse error data";

/// `e` as a user reads it: the server's message for an API error, client-go's
/// wording for an answer without one, the client's own message otherwise.
pub(crate) fn describe(e: &kube::Error) -> String {
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
    fn reads_as_the_servers_message_or_client_gos_words() {
        let e = api(409, "Conflict", "the object has been modified");
        assert!(e.to_string().contains("Status {"), "kube's own text: {e}");
        assert_eq!(describe(&e), "the object has been modified");
        assert_eq!(describe(&api(409, "Conflict", "")), "Conflict (HTTP 409)");
        assert_eq!(
            describe(&api(404, UNPARSED_BODY, "404 page not found\n")),
            "the server could not find the requested resource"
        );
        assert_eq!(
            describe(&api(500, UNPARSED_BODY, "etcdserver: request timed out\nmore")),
            "an error on the server (\"etcdserver: request timed out\") has prevented the request from succeeding"
        );
        assert_eq!(
            describe(&api(418, UNPARSED_BODY, "")),
            "the server responded with the status code 418 but did not return more information"
        );
        let other = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert_eq!(describe(&other), other.to_string());
    }
}
