//! Helm's release-name rule (`chartutil.ValidateReleaseName`), checked before an
//! install or upgrade touches anything: a DNS-1123 subdomain of at most 53
//! characters, so every object a chart names after its release stays within
//! Kubernetes' limits, and the record's key (`sh.helm.release.v1.NAME.vN`) too.

use crate::error::{Error, Result};

/// Helm's `maxReleaseNameLen`.
pub const MAX_RELEASE_NAME_LEN: usize = 53;

/// The pattern Helm names in its message.
pub(crate) const RELEASE_NAME_PATTERN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// [`Error::InvalidReleaseName`] unless `name` is a valid Helm release name.
pub fn validate_release_name(name: &str) -> Result<()> {
    let label_ok = |l: &str| {
        let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        let b = l.as_bytes();
        match (b.first(), b.last()) {
            (Some(&first), Some(&last)) => {
                alnum(first) && alnum(last) && b.iter().all(|&c| alnum(c) || c == b'-')
            }
            _ => false,
        }
    };
    if name.is_empty() {
        return Err(Error::MissingReleaseName);
    }
    if name.len() > MAX_RELEASE_NAME_LEN || !name.split('.').all(label_ok) {
        return Err(Error::InvalidReleaseName {
            release: name.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_helm_checks_them() {
        let (longest, too_long) = ("a".repeat(53), "a".repeat(54));
        for ok in ["a", "web", "my-app.v2", "0x", longest.as_str()] {
            assert!(validate_release_name(ok).is_ok(), "{ok}");
        }
        for bad in ["Web", "-a", "a-", "a..b", ".a", "a_b", too_long.as_str()] {
            let e = validate_release_name(bad).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "release name check failed: release name {bad:?}: invalid release name, \
                     must match regex {RELEASE_NAME_PATTERN} and the length must not be longer than 53"
                )
            );
        }
        assert_eq!(
            validate_release_name("").unwrap_err().to_string(),
            "release name check failed: no name provided"
        );
    }
}
