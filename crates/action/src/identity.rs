//! Who rudder's requests say they are: the User-Agent every client rudder builds
//! sends (`rudder/<version> (<os>/<arch>)`, or a name the user chose).
//!
//! Kubernetes records the field manager of a write that names none as the
//! User-Agent up to its first `/` (kube-apiserver's `managerOrUserAgent`), which is
//! how the Go helm-operator's client-go writes come to be `helm-operator`. So this one
//! setting names every write rudder makes besides its applies — release records and
//! their lock, finalizers, status, Events, Leases, deletions in audit logs — with no
//! write path able to forget it. Objects of releases are still applied as field
//! manager `helm` ([`crate::FIELD_MANAGER`]), whatever the name.

use http::header::{HeaderValue, USER_AGENT};

/// The name rudder's writes carry unless the user picks another.
pub const DEFAULT_NAME: &str = "rudder";

/// The longest field manager Kubernetes accepts.
const MAX_NAME_LEN: usize = 128;

/// A name that cannot name rudder's writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} cannot name the writes: {reason}")]
pub struct InvalidName {
    name: String,
    reason: &'static str,
}

/// Checks a name for writes: 1 to 128 visible ASCII characters without `/` (the
/// API server would cut the field manager at the first `/` of the User-Agent).
pub fn validate_name(name: &str) -> Result<(), InvalidName> {
    let fail = |reason| {
        Err(InvalidName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return fail("it is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return fail("Kubernetes takes field managers of at most 128 characters");
    }
    if !name.bytes().all(|b| b.is_ascii_graphic() && b != b'/') {
        return fail("use visible ASCII characters other than '/', without spaces");
    }
    Ok(())
}

/// The User-Agent of rudder's requests written as `name`:
/// `name/<version> (<os>/<arch>)`, client-go's shape.
pub fn user_agent(name: &str) -> String {
    format!(
        "{name}/{} ({}/{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Makes every request of clients built from `config` say they come from `name`
/// (replacing a User-Agent set before).
pub fn identify(config: &mut kube::Config, name: &str) -> Result<(), InvalidName> {
    validate_name(name)?;
    let value = HeaderValue::from_str(&user_agent(name)).map_err(|_| InvalidName {
        name: name.to_string(),
        reason: "it is not a valid header value",
    })?;
    config.headers.retain(|(k, _)| k != USER_AGENT);
    config.headers.push((USER_AGENT, value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_agent_starts_with_the_name() {
        let ua = user_agent(DEFAULT_NAME);
        assert!(ua.starts_with("rudder/"), "{ua}");
        // What the API server takes as the field manager.
        assert_eq!(ua.split('/').next(), Some("rudder"));
        assert!(ua.contains(std::env::consts::OS), "{ua}");
    }

    #[test]
    fn names_that_would_not_survive_as_field_managers_are_refused() {
        for ok in ["rudder", "helm-operator", "my.op_1"] {
            assert_eq!(validate_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "a/b", "two words", "tab\there", "é", &"x".repeat(129)] {
            let err = validate_name(bad).expect_err(bad);
            assert!(err.to_string().contains("cannot name the writes"), "{err}");
        }
    }

    #[test]
    fn identify_sets_one_user_agent() {
        let mut config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        identify(&mut config, "first").expect("valid");
        identify(&mut config, "second").expect("valid");
        let agents: Vec<_> = config
            .headers
            .iter()
            .filter(|(k, _)| k == USER_AGENT)
            .map(|(_, v)| v.to_str().unwrap_or_default().to_string())
            .collect();
        assert_eq!(agents, [user_agent("second")]);
        assert!(identify(&mut config, "a/b").is_err());
    }
}
