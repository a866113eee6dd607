//! What `status.deployedRelease.manifest` shows ([`StatusManifest`]): anyone allowed
//! to read a CR reads its status, and a release's manifest holds its Secrets, so by
//! default every Secret's `data` and `stringData` values are replaced with
//! [`REDACTED`] (keys kept, so what the release holds stays visible). `full` keeps the
//! Go helm-operator's behaviour, `none` leaves the manifest out.
//!
//! Only the documents that mention `Secret` are parsed; the rest of the manifest is
//! kept byte for byte, so a redacted manifest reads like the stored one.

use serde_json::Value;

/// What replaces each value of a Secret's `data` and `stringData`. Not valid base64,
/// so a redacted manifest applied by mistake fails instead of writing garbage.
pub(crate) const REDACTED: &str = "<redacted>";

/// `--status-manifest` / a watch's `statusManifest`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatusManifest {
    /// The manifest as the release recorded it (the Go helm-operator's behaviour).
    Full,
    /// Secrets' values replaced, keys kept (the default).
    #[default]
    Redacted,
    /// No manifest in the status.
    None,
}

impl std::str::FromStr for StatusManifest {
    type Err = String;

    fn from_str(s: &str) -> Result<StatusManifest, String> {
        match s.trim() {
            "full" => Ok(StatusManifest::Full),
            "redacted" => Ok(StatusManifest::Redacted),
            "none" => Ok(StatusManifest::None),
            other => Err(format!(
                "{other:?} is not a status manifest mode: use full, redacted or none"
            )),
        }
    }
}

impl std::fmt::Display for StatusManifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StatusManifest::Full => "full",
            StatusManifest::Redacted => "redacted",
            StatusManifest::None => "none",
        })
    }
}

impl StatusManifest {
    /// What the status shows of a release's `manifest` (empty: nothing).
    pub(crate) fn shown(self, manifest: &str) -> String {
        match self {
            StatusManifest::Full => manifest.to_string(),
            StatusManifest::Redacted => redact(manifest),
            StatusManifest::None => String::new(),
        }
    }
}

/// `manifest` with the values of every Secret's `data` and `stringData` replaced.
pub(crate) fn redact(manifest: &str) -> String {
    if !manifest.contains("Secret") {
        return manifest.to_string();
    }
    let mut out = String::with_capacity(manifest.len());
    for doc in documents(manifest) {
        match redact_document(doc) {
            Some(redacted) => out.push_str(&redacted),
            None => out.push_str(doc),
        }
    }
    out
}

/// The documents of a manifest, each from its `---` line to the next, together
/// covering the whole text.
fn documents(manifest: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in manifest.split_inclusive('\n') {
        if line.trim_end() == "---" && at > start {
            docs.push(&manifest[start..at]);
            start = at;
        }
        at += line.len();
    }
    if at > start {
        docs.push(&manifest[start..at]);
    }
    docs
}

/// A document with its Secrets' values replaced; `None` when it holds no Secret.
fn redact_document(doc: &str) -> Option<String> {
    if !doc.contains("Secret") {
        return None;
    }
    // The separator and the `# Source:` comments stay as they are.
    let mut header_len = 0;
    for line in doc.split_inclusive('\n') {
        let t = line.trim();
        if t == "---" || t.is_empty() || t.starts_with('#') {
            header_len += line.len();
        } else {
            break;
        }
    }
    let (header, body) = doc.split_at(header_len);
    let mut object = match gocodec::yaml::parse_yaml_to_json(body) {
        Ok(v) => v,
        // Nothing Helm recorded fails to parse; should something, it is not shown.
        Err(_) => {
            return Some(format!(
                "{header}# rudder: a document that could not be parsed is left out\n"
            ))
        }
    };
    if !redact_object(&mut object) {
        return None;
    }
    let yaml = gocodec::yaml::json_to_yaml(&object).ok()?;
    Some(format!("{header}{}\n", yaml.trim_end_matches('\n')))
}

/// Replaces the values of a Secret (or of the Secrets in a `List`); whether it did.
fn redact_object(object: &mut Value) -> bool {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.ends_with("List") {
        let Some(items) = object.get_mut("items").and_then(Value::as_array_mut) else {
            return false;
        };
        let mut any = false;
        for item in items {
            any |= redact_object(item);
        }
        return any;
    }
    if kind != "Secret" {
        return false;
    }
    let mut any = false;
    for field in ["data", "stringData"] {
        if let Some(Value::Object(values)) = object.get_mut(field) {
            for v in values.values_mut() {
                *v = Value::String(REDACTED.to_string());
                any = true;
            }
        }
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  password: not-a-secret\n---\n# Source: app/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ntype: Opaque\ndata:\n  password: czNjcjN0\n  token: |\n    bXVsdGkK\nstringData:\n  plain: s3cr3t-plain\n---\n# Source: app/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n  data: {k: aW5saXN0}\n";

    #[test]
    fn secrets_keep_their_keys_and_lose_their_values() {
        let out = redact(MANIFEST);
        for value in ["czNjcjN0", "bXVsdGkK", "s3cr3t-plain", "aW5saXN0"] {
            assert!(!out.contains(value), "{value} is still in:\n{out}");
        }
        let docs = gocodec::yaml::parse_yaml_documents(&out).expect("still YAML");
        assert_eq!(docs.len(), 3, "{out}");
        assert_eq!(
            docs[1]["data"],
            serde_json::json!({"password": REDACTED, "token": REDACTED})
        );
        assert_eq!(docs[1]["stringData"]["plain"], REDACTED);
        assert_eq!(docs[1]["metadata"]["name"], "creds");
        assert_eq!(docs[2]["items"][0]["data"]["k"], REDACTED);
        // Other documents, and the comments naming each template, stay as they were.
        assert!(out.starts_with(
            &MANIFEST[..MANIFEST
                .find("---\n# Source: app/templates/secret")
                .unwrap()]
        ));
        assert!(out.contains("# Source: app/templates/secret.yaml\n"));
        assert!(
            out.contains("password: not-a-secret"),
            "a ConfigMap is no Secret"
        );
        // Redacting again changes nothing.
        assert_eq!(redact(&out), out);
    }

    #[test]
    fn a_manifest_without_secrets_is_kept_byte_for_byte() {
        let plain = &MANIFEST[..MANIFEST
            .find("---\n# Source: app/templates/secret")
            .unwrap()];
        assert_eq!(redact(plain), plain);
        let empty_secret = "---\napiVersion: v1\nkind: Secret\nmetadata: {name: x}\n";
        assert_eq!(redact(empty_secret), empty_secret);
    }

    #[test]
    fn modes_parse_and_show() {
        assert_eq!("full".parse(), Ok(StatusManifest::Full));
        assert_eq!(" redacted ".parse(), Ok(StatusManifest::Redacted));
        assert_eq!("none".parse(), Ok(StatusManifest::None));
        let err = "all".parse::<StatusManifest>().unwrap_err();
        assert!(err.contains("full, redacted or none"), "{err}");
        assert_eq!(StatusManifest::default(), StatusManifest::Redacted);
        assert_eq!(StatusManifest::Full.shown(MANIFEST), MANIFEST);
        assert_eq!(StatusManifest::None.shown(MANIFEST), "");
        assert_eq!(StatusManifest::Redacted.shown(MANIFEST), redact(MANIFEST));
        assert_eq!(StatusManifest::Redacted.to_string(), "redacted");
    }
}
