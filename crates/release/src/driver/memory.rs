//! An in-memory driver (Helm's `Memory` driver): records are kept decoded, with the
//! labels the cluster drivers would put on them, for tests and dry runs.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{
    filter_system_labels, labels_match, record_labels, Driver, Filter, RecordMeta, OWNER_HELM,
};
use crate::error::{Error, Result};
use crate::record::Release;
use crate::time::Time;

/// Stored labels and the record, by key.
type Records = BTreeMap<String, (BTreeMap<String, String>, Release)>;

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

    /// The stored labels of a record, as a cluster driver would have written them.
    pub fn labels_of(&self, key: &str) -> Option<BTreeMap<String, String>> {
        self.lock().get(key).map(|(l, _)| l.clone())
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
            .get(key)
            .map(|(l, r)| with_labels(l, r))
            .ok_or_else(|| Error::NotFound(key.to_string()))
    }

    async fn list(&self, filter: Filter<'_>) -> Result<Vec<Release>> {
        let owner = super::selector([("owner", OWNER_HELM)]);
        Ok(self
            .lock()
            .values()
            .filter(|(l, _)| labels_match(&owner, l))
            .map(|(l, r)| with_labels(l, r))
            .filter(|r| filter(r))
            .collect())
    }

    async fn query(&self, labels: &BTreeMap<String, String>) -> Result<Vec<Release>> {
        let found: Vec<Release> = self
            .lock()
            .values()
            .filter(|(l, _)| labels_match(labels, l))
            .map(|(l, r)| with_labels(l, r))
            .collect();
        if found.is_empty() {
            return Err(Error::NotFound(format!("{labels:?}")));
        }
        Ok(found)
    }

    async fn query_meta(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>> {
        Ok(self
            .lock()
            .iter()
            .filter(|(_, (l, _))| labels_match(labels, l))
            .map(|(k, (l, _))| RecordMeta::from_labels(k, l))
            .collect())
    }

    async fn create(&self, key: &str, rel: &Release) -> Result<()> {
        let mut records = self.lock();
        if records.contains_key(key) {
            return Err(Error::AlreadyExists(key.to_string()));
        }
        let mut labels = record_labels(rel);
        labels.insert("createdAt".into(), Time::now().unix_seconds().to_string());
        records.insert(key.to_string(), (labels, rel.clone()));
        Ok(())
    }

    async fn update(&self, key: &str, rel: &Release) -> Result<()> {
        let mut records = self.lock();
        let slot = records
            .get_mut(key)
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        let mut labels = record_labels(rel);
        labels.insert("modifiedAt".into(), Time::now().unix_seconds().to_string());
        *slot = (labels, rel.clone());
        Ok(())
    }

    async fn delete(&self, key: &str) -> Result<Release> {
        self.lock()
            .remove(key)
            .map(|(l, r)| with_labels(&l, &r))
            .ok_or_else(|| Error::NotFound(key.to_string()))
    }
}
