//! An in-memory driver (Helm's `Memory` driver): records are kept decoded, with the
//! labels the cluster drivers would put on them, for tests and dry runs.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{
    filter_system_labels, labels_match, record_labels, Driver, Filter, RecordMeta, WriteMeta,
    OWNER_HELM,
};
use crate::error::{Error, Result};
use crate::record::Release;
use crate::time::Time;

/// One stored record with the object metadata a cluster driver would keep.
#[derive(Debug, Clone)]
struct Entry {
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    resource_version: u64,
    release: Release,
}

/// Stored records by key, and the last resource version handed out.
#[derive(Debug, Default)]
struct Records {
    entries: BTreeMap<String, Entry>,
    version: u64,
}

impl Records {
    fn next_version(&mut self) -> u64 {
        self.version += 1;
        self.version
    }

    fn values(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }
}

/// Records held in process memory. Cheap to clone records out; never encodes.
#[derive(Debug, Default)]
pub struct MemoryDriver {
    records: Mutex<Records>,
}

impl MemoryDriver {
    /// An empty store.
    pub fn new() -> MemoryDriver {
        MemoryDriver::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        // A panic in another test thread must not make the store unusable.
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stored annotations of a record.
    #[cfg(test)]
    pub(crate) fn annotations_of(&self, key: &str) -> Option<BTreeMap<String, String>> {
        self.lock().entries.get(key).map(|e| e.annotations.clone())
    }
}

fn with_labels(labels: &BTreeMap<String, String>, rel: &Release) -> Release {
    let mut rel = rel.clone();
    rel.labels = filter_system_labels(labels);
    rel
}

#[async_trait]
impl Driver for MemoryDriver {
    fn name(&self) -> &'static str {
        "Memory"
    }

    async fn get(&self, key: &str) -> Result<Release> {
        self.lock()
            .entries
            .get(key)
            .map(|e| with_labels(&e.labels, &e.release))
            .ok_or_else(|| Error::NotFound(key.to_string()))
    }

    async fn list(&self, filter: Filter<'_>) -> Result<Vec<Release>> {
        let owner = super::selector([("owner", OWNER_HELM)]);
        Ok(self
            .lock()
            .values()
            .filter(|e| labels_match(&owner, &e.labels))
            .map(|e| with_labels(&e.labels, &e.release))
            .filter(|r| filter(r))
            .collect())
    }

    async fn query(&self, labels: &BTreeMap<String, String>) -> Result<Vec<Release>> {
        let found: Vec<Release> = self
            .lock()
            .values()
            .filter(|e| labels_match(labels, &e.labels))
            .map(|e| with_labels(&e.labels, &e.release))
            .collect();
        if found.is_empty() {
            return Err(Error::NotFound(format!("{labels:?}")));
        }
        Ok(found)
    }

    async fn query_meta(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>> {
        Ok(self
            .lock()
            .entries
            .iter()
            .filter(|(_, e)| labels_match(labels, &e.labels))
            .map(|(k, e)| RecordMeta {
                annotations: e.annotations.clone(),
                resource_version: Some(e.resource_version.to_string()),
                ..RecordMeta::from_labels(k, &e.labels)
            })
            .collect())
    }

    async fn create_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()> {
        let mut records = self.lock();
        if records.entries.contains_key(key) {
            return Err(Error::AlreadyExists(key.to_string()));
        }
        let mut labels = record_labels(rel);
        labels.insert("createdAt".into(), Time::now().unix_seconds().to_string());
        let resource_version = records.next_version();
        let entry = Entry {
            labels,
            annotations: meta.annotations.clone(),
            resource_version,
            release: rel.clone(),
        };
        records.entries.insert(key.to_string(), entry);
        Ok(())
    }

    async fn update_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()> {
        let mut records = self.lock();
        let resource_version = records.next_version();
        let entry = records
            .entries
            .get_mut(key)
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        crate::lock::check_not_held_by_other(key, &entry.annotations, meta)?;
        let mut labels = record_labels(rel);
        labels.insert("modifiedAt".into(), Time::now().unix_seconds().to_string());
        *entry = Entry {
            labels,
            annotations: meta.annotations.clone(),
            resource_version,
            release: rel.clone(),
        };
        Ok(())
    }

    async fn annotate(
        &self,
        key: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()> {
        let mut records = self.lock();
        let next = records.next_version();
        let entry = records
            .entries
            .get_mut(key)
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        if let Some(rv) = resource_version {
            if rv != entry.resource_version.to_string() {
                return Err(Error::Conflict(key.to_string()));
            }
        }
        match value {
            Some(v) => entry
                .annotations
                .insert(annotation.to_string(), v.to_string()),
            None => entry.annotations.remove(annotation),
        };
        entry.resource_version = next;
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<Release> {
        self.lock()
            .entries
            .remove(key)
            .map(|e| with_labels(&e.labels, &e.release))
            .ok_or_else(|| Error::NotFound(key.to_string()))
    }
}
