//! Storage drivers with Helm's driver operations (`pkg/storage/driver.Driver`): get,
//! list, query, create, update, delete, keyed by `sh.helm.release.v1.<name>.v<version>`.
//!
//! Besides Helm's operations, [`Driver::query_meta`] selects records by their labels
//! without decoding any of them, so the latest or the deployed revision can be found and
//! then only that one record fetched and decoded.

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::error::{Error, Result};
use crate::record::{Release, Status};

pub mod cluster;
pub mod memory;
pub mod objects;

pub use cluster::{
    ConfigMapBackend, ConfigMapDriver, KindBackend, RecordKind, SecretBackend, SecretDriver,
};
pub use memory::MemoryDriver;
pub use objects::{ChunkConfig, MemoryObjects, ObjectBackend, ObjectDriver, RawObject};

/// Prefix of every storage key and object name (`HelmStorageType` in Helm).
pub(crate) const STORAGE_TYPE: &str = "sh.helm.release.v1";
/// The Secret `type` Helm sets on release Secrets.
pub(crate) const SECRET_TYPE: &str = "helm.sh/release.v1";
/// The data key holding the encoded record.
pub(crate) const RELEASE_KEY: &str = "release";
/// The `owner` label value on Helm's records.
pub const OWNER_HELM: &str = "helm";

/// Labels Helm manages itself; they are not custom release labels.
pub const SYSTEM_LABELS: [&str; 6] = [
    "name",
    "owner",
    "status",
    "version",
    "createdAt",
    "modifiedAt",
];

/// The storage key of a revision: `sh.helm.release.v1.<name>.v<version>`.
pub fn make_key(name: &str, version: i64) -> String {
    format!("{STORAGE_TYPE}.{name}.v{version}")
}

/// Splits a storage key into release name and version.
pub(crate) fn parse_key(key: &str) -> Option<(&str, i64)> {
    let rest = key.strip_prefix(STORAGE_TYPE)?.strip_prefix('.')?;
    let (name, version) = rest.rsplit_once(".v")?;
    Some((name, version.parse().ok()?))
}

/// Drops Helm's system labels, leaving the release's custom labels.
pub(crate) fn filter_system_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, _)| !SYSTEM_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The labels Helm puts on a stored record: the release's custom labels, then `name`,
/// `owner`, `status` and `version` (which win over custom labels of the same key).
pub fn record_labels(rel: &Release) -> BTreeMap<String, String> {
    let mut labels = rel.labels.clone();
    labels.insert("name".into(), rel.name.clone());
    labels.insert("owner".into(), OWNER_HELM.into());
    labels.insert("status".into(), rel.status().as_str().to_string());
    labels.insert("version".into(), rel.version.to_string());
    labels
}

/// Checks a label value the way Kubernetes does (`IsValidLabelValue`).
pub fn validate_label_value(key: &str, value: &str) -> Result<()> {
    let fail = |reason| {
        Err(Error::InvalidLabel {
            key: key.to_string(),
            value: value.to_string(),
            reason,
        })
    };
    if value.len() > 63 {
        return fail("must be no more than 63 characters");
    }
    let b = value.as_bytes();
    if b.is_empty() {
        return Ok(());
    }
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    if !alnum(&b[0]) || !alnum(&b[b.len() - 1]) {
        return fail("must start and end with an alphanumeric character");
    }
    if !b
        .iter()
        .all(|c| alnum(c) || matches!(c, b'-' | b'_' | b'.'))
    {
        return fail("may contain only alphanumerics, '-', '_' and '.'");
    }
    Ok(())
}

/// What a record's labels say about it, read without decoding the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMeta {
    /// Storage key (object name).
    pub key: String,
    /// Release name.
    pub name: String,
    /// Revision.
    pub version: i64,
    /// Status from the `status` label.
    pub status: Status,
    /// All labels of the stored object.
    pub labels: BTreeMap<String, String>,
    /// The stored object's annotations (where the release lock lives).
    pub annotations: BTreeMap<String, String>,
    /// The stored object's resource version, for writes conditional on it.
    pub resource_version: Option<String>,
}

impl Default for RecordMeta {
    fn default() -> RecordMeta {
        RecordMeta {
            key: String::new(),
            name: String::new(),
            version: 0,
            status: Status::Unknown,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            resource_version: None,
        }
    }
}

/// Object metadata a record write carries besides Helm's labels, chosen by whoever
/// writes through [`crate::Storage`] (see [`RecordStamp`]): owner references (the
/// operator's CR owns its release's records, as the Go helm-operator's records are),
/// annotations (the release lock), and the lock holder the write is made for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteMeta {
    pub owner_references: Vec<OwnerReference>,
    pub annotations: BTreeMap<String, String>,
    /// When set, an update refuses to overwrite a record whose lock annotation names
    /// another holder that is still live ([`Error::Locked`]), and retries a write that
    /// lost a race only against this holder's own lock renewals.
    pub holder: Option<String>,
}

/// Chooses the [`WriteMeta`] of each record a [`crate::Storage`] writes, and hears
/// which records were written.
pub trait RecordStamp: Send + Sync {
    /// The metadata `rel`'s record is written with.
    fn meta(&self, rel: &Release) -> WriteMeta;
    /// `rel`'s record was written.
    fn written(&self, _rel: &Release) {}
}

impl RecordMeta {
    /// Builds the metadata from an object's name and labels; the version falls back to
    /// the key's `.v<N>` suffix when the label is missing or damaged.
    pub(crate) fn from_labels(key: &str, labels: &BTreeMap<String, String>) -> RecordMeta {
        let from_key = parse_key(key);
        let version = labels
            .get("version")
            .and_then(|v| v.parse().ok())
            .or(from_key.map(|(_, v)| v))
            .unwrap_or(0);
        let name = labels
            .get("name")
            .cloned()
            .or(from_key.map(|(n, _)| n.to_string()))
            .unwrap_or_default();
        RecordMeta {
            key: key.to_string(),
            name,
            version,
            status: labels
                .get("status")
                .map(|s| Status::from(s.as_str()))
                .unwrap_or(Status::Unknown),
            labels: labels.clone(),
            annotations: BTreeMap::new(),
            resource_version: None,
        }
    }
}

/// Whether every selector label is present with the same value.
pub(crate) fn labels_match(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// A filter for [`Driver::list`].
pub type Filter<'a> = &'a (dyn Fn(&Release) -> bool + Send + Sync);

/// Helm's storage driver operations.
#[async_trait]
pub trait Driver: Send + Sync {
    /// A short name, like Helm's (`Secret`, `ConfigMap`, `Memory`).
    fn name(&self) -> &'static str;

    /// Fetches and decodes the record stored under `key`.
    async fn get(&self, key: &str) -> Result<Release>;

    /// Decodes every `owner=helm` record and returns those the filter accepts. Records
    /// that cannot be decoded are skipped, as Helm does.
    async fn list(&self, filter: Filter<'_>) -> Result<Vec<Release>>;

    /// Decodes every record whose labels match. Like Helm, returns
    /// [`Error::NotFound`] when nothing matches.
    async fn query(&self, labels: &BTreeMap<String, String>) -> Result<Vec<Release>>;

    /// The records whose labels match, without decoding them (empty when none match).
    /// May be answered from a cache that is at least as new as this driver's own
    /// writes (see [`crate::cache`]).
    async fn query_meta(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>>;

    /// [`Driver::query_meta`] as the API server has it now, bypassing any cache.
    async fn query_meta_fresh(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>> {
        self.query_meta(labels).await
    }

    /// Stores a new record; [`Error::AlreadyExists`] if the key is taken.
    async fn create(&self, key: &str, rel: &Release) -> Result<()> {
        self.create_with(key, rel, &WriteMeta::default()).await
    }

    /// Replaces an existing record; [`Error::NotFound`] if there is none.
    async fn update(&self, key: &str, rel: &Release) -> Result<()> {
        self.update_with(key, rel, &WriteMeta::default()).await
    }

    /// [`Driver::create`] with owner references and annotations on the stored object.
    async fn create_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()>;

    /// [`Driver::update`] with owner references and annotations on the stored object
    /// (replacing the ones it had, as Helm's update replaces the whole object).
    async fn update_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()>;

    /// Sets (`Some`) or removes (`None`) one annotation of the record stored under
    /// `key`, leaving its content alone; with `resource_version`, only if the object
    /// is unchanged since ([`Error::Conflict`] otherwise).
    async fn annotate(
        &self,
        key: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()>;

    /// Deletes a record and returns what it held.
    async fn delete(&self, key: &str) -> Result<Release>;

    /// Deletes a record without decoding it, so damaged records can be pruned too.
    async fn remove(&self, key: &str) -> Result<()> {
        self.delete(key).await.map(|_| ())
    }
}

/// Builds a selector from `(key, value)` pairs.
pub fn selector<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(make_key("web", 3), "sh.helm.release.v1.web.v3");
        assert_eq!(
            parse_key("sh.helm.release.v1.my.app.v12"),
            Some(("my.app", 12))
        );
        assert_eq!(parse_key("sh.helm.release.v1.web"), None);
        assert_eq!(parse_key("other.web.v1"), None);
    }

    #[test]
    fn label_values() {
        assert!(validate_label_value("k", "").is_ok());
        assert!(validate_label_value("k", "pending-install").is_ok());
        assert!(validate_label_value("k", "-x").is_err());
        assert!(validate_label_value("k", "a b").is_err());
        assert!(validate_label_value("k", &"a".repeat(64)).is_err());
    }

    #[test]
    fn system_labels_are_filtered() {
        let labels = selector([
            ("name", "a"),
            ("owner", "helm"),
            ("createdAt", "1"),
            ("team", "x"),
        ]);
        assert_eq!(filter_system_labels(&labels), selector([("team", "x")]));
    }

    #[test]
    fn meta_falls_back_to_key() {
        let m = RecordMeta::from_labels("sh.helm.release.v1.web.v7", &BTreeMap::new());
        assert_eq!(
            (m.name.as_str(), m.version, m.status),
            ("web", 7, Status::Unknown)
        );
    }
}
