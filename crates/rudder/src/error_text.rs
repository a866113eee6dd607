//! How the CLI words a failure: one line, the way Helm prints it.

/// The error chain on one line, as Helm prints it: each cause once (the action and
/// release errors already carry their causes' text, worded for a user), and a Kubernetes
/// API error as the server's message rather than kube-client's dump of the `Status`
/// (whose own causes are kube internals).
pub(crate) fn chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let kube_error = release::api_error::as_kube_error(cause);
        let part = match kube_error {
            Some(k) => release::api_error::describe(k),
            None => cause.to_string(),
        };
        if !text.contains(&part) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&part);
        }
        // These crates' errors carry their whole cause in their own text.
        if kube_error.is_some() || cause.is::<action::Error>() || cause.is::<release::Error>() {
            break;
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn refused() -> kube::Error {
        kube::Error::Api(
            Status::failure("Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive", "Invalid")
                .with_code(422)
                .boxed(),
        )
    }

    #[test]
    fn a_kube_cause_reads_as_the_servers_message() {
        let e = anyhow::Error::new(refused()).context("creating Service web");
        assert_eq!(
            chain(&e),
            "creating Service web: Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let typed = release::Error::Api {
            context: "create Secret ns/x".into(),
            source: Box::new(refused()),
        };
        let e = anyhow::Error::new(typed).context("INSTALLATION FAILED");
        assert_eq!(
            chain(&e),
            "INSTALLATION FAILED: create Secret ns/x: Service \"web\" is invalid: spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
        let io = anyhow::Error::new(std::io::Error::other("disk full")).context("writing x");
        assert_eq!(chain(&io), "writing x: disk full");
    }
}
