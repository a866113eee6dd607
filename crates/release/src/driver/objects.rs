//! The driver logic shared by the Secret and ConfigMap drivers, written once over a small
//! [`ObjectBackend`] (get/list/create/replace/delete of named objects with labels and
//! string data). [`MemoryObjects`] is an in-memory backend that behaves like the API
//! server for these calls, so the exact object layout can be tested without a cluster.
//!
//! # Record layout (Helm's)
//!
//! One object per revision, named `sh.helm.release.v1.<name>.v<version>`, labels
//! `name`, `owner=helm`, `status`, `version`, plus `createdAt` (set by create) or
//! `modifiedAt` (set by update) as Unix seconds, plus the release's custom labels.
//! Data key `release` holds base64(gzip(json)); Secrets have type `helm.sh/release.v1`.
//! Like Helm, an update writes the labels afresh: `createdAt` survives an update only if
//! the caller keeps it in `Release::labels`.
//!
//! # Chunked records (ours, only when the standard record does not fit)
//!
//! Kubernetes rejects a Secret or ConfigMap whose data exceeds 1 MiB. When the encoded
//! record is larger than [`ChunkConfig::max_object_data`], it is stored as:
//!
//! * chunk objects `<key>.<digest16>.<i>` (i = 0, 1, ...), each with data key `chunk`
//!   holding the next slice of the standard encoded string; labels `owner=rudder`,
//!   `rudder.dev/part=chunk`, `name`, `version`; Secret type `rudder.dev/release.v1.chunk`;
//! * an index object under the normal key with Helm's labels (`owner=helm`, `name`,
//!   `status`, `version`, `createdAt`/`modifiedAt`), annotation
//!   `rudder.dev/storage=chunked`, Secret type `helm.sh/release.v1` (a Secret's type is
//!   immutable and an update may switch between the forms), data key
//!   `chunks` (JSON: digest, size and chunk names) and data key `release` holding a
//!   marker that is valid base64 of a JSON string, so every Helm version fails to decode
//!   it cleanly and skips it instead of misreading or crashing.
//!
//! The chunk names contain the digest of their content, so an update writes a new set of
//! chunks, then switches the index, then deletes the old set: a reader never sees a
//! half-written record. Reads check size and SHA-256.
//!
//! **The real `helm` CLI cannot read chunked records.** `helm list`/`history` skip such
//! revisions (Helm logs a decode error at debug level), `helm get`/`rollback` of that
//! revision fail with a decode error, and `helm uninstall` leaves the index and chunk
//! objects behind. Chunk objects carry `owner=rudder`, never `owner=helm`, so Helm's
//! selectors never pick them up.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::{
    filter_system_labels, labels_match, record_labels, validate_label_value, Driver, Filter,
    RecordMeta, WriteMeta, OWNER_HELM, RELEASE_KEY,
};
use crate::codec;
use crate::error::{Error, Result};
use crate::record::Release;
use crate::time::Time;

/// Annotation marking a chunked index object.
pub(crate) const STORAGE_ANNOTATION: &str = "rudder.dev/storage";
/// Value of [`STORAGE_ANNOTATION`] on chunked records.
pub(crate) const STORAGE_CHUNKED: &str = "chunked";
/// Label marking chunk objects.
pub(crate) const PART_LABEL: &str = "rudder.dev/part";
/// `owner` label value of chunk objects (never `helm`).
pub(crate) const OWNER_CHUNK: &str = "rudder";
/// Data key of the chunk index.
pub(crate) const CHUNKS_KEY: &str = "chunks";
/// Data key of a chunk's content.
pub(crate) const CHUNK_KEY: &str = "chunk";
/// Secret type of a chunk.
pub(crate) const CHUNK_SECRET_TYPE: &str = "rudder.dev/release.v1.chunk";

const MARKER: &str = "this revision was stored in chunks by rudder because it exceeds the Kubernetes object size limit; the helm CLI cannot read it";

/// A stored object reduced to what the drivers use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawObject {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// Secret `type`; ignored by ConfigMap backends.
    pub type_: Option<String>,
    /// Data values (Secret bytes, ConfigMap UTF-8 strings).
    pub data: BTreeMap<String, Vec<u8>>,
    /// When set on replace, the write fails with [`Error::Conflict`] if the stored
    /// object has changed since.
    pub resource_version: Option<String>,
    pub owner_references: Vec<OwnerReference>,
    /// Kept across updates: a record held by someone's finalizer stays held.
    pub finalizers: Vec<String>,
}

impl RawObject {
    fn data_size(&self) -> usize {
        self.data.values().map(Vec::len).sum()
    }

    /// What the object's labels and metadata say about the record it holds.
    fn record_meta(&self) -> RecordMeta {
        RecordMeta {
            annotations: self.annotations.clone(),
            resource_version: self.resource_version.clone(),
            ..RecordMeta::from_labels(&self.name, &self.labels)
        }
    }

    /// Puts `meta`'s owner references and annotations on the object.
    fn stamp(&mut self, meta: &WriteMeta) {
        self.owner_references = meta.owner_references.clone();
        self.annotations
            .extend(meta.annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// Named objects with labels and data in one namespace.
#[async_trait]
pub trait ObjectBackend: Send + Sync {
    /// `Secret` or `ConfigMap`.
    fn kind(&self) -> &'static str;
    /// The type Helm gives release objects of this kind (Secrets only).
    fn record_type(&self) -> Option<&'static str>;
    async fn get(&self, name: &str) -> Result<Option<RawObject>>;
    /// Objects whose labels match all of `selector`.
    async fn list(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>>;
    /// Like [`ObjectBackend::list`], but only the metadata is needed (`data` may be
    /// left empty): a backend may answer from a cache that is at least as new as its
    /// own writes, or with a metadata-only list.
    async fn list_meta(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        self.list(selector).await
    }
    /// [`ObjectBackend::list_meta`] as the server has it now, bypassing any cache.
    async fn list_meta_fresh(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        self.list(selector).await
    }
    /// Like [`ObjectBackend::get`], but a backend may answer with the server's own
    /// answer to its last write of the object, while a cache at least as new as its
    /// own writes shows no later change of it (no GET right after a write).
    async fn get_recent(&self, name: &str) -> Result<Option<RawObject>> {
        self.get(name).await
    }
    /// Like [`ObjectBackend::get`], but only the metadata is needed (see
    /// [`ObjectBackend::list_meta`]).
    async fn get_meta(&self, name: &str) -> Result<Option<RawObject>> {
        self.get(name).await
    }
    /// Whether [`ObjectBackend::list_meta`] and [`ObjectBackend::get_meta`] may answer
    /// from a cache, which can lag writes of others: a conditional write that fails
    /// after such a read is worth one more try with a fresh read.
    fn cached_reads(&self) -> bool {
        false
    }
    /// [`Error::AlreadyExists`] if the name is taken.
    async fn create(&self, obj: &RawObject) -> Result<()>;
    /// [`Error::NotFound`] if missing, [`Error::Conflict`] on a stale resource version.
    async fn replace(&self, obj: &RawObject) -> Result<()>;
    /// [`Error::NotFound`] if missing.
    async fn delete(&self, name: &str) -> Result<()>;
    /// Sets (`Some`) or removes (`None`) one annotation, touching nothing else;
    /// [`Error::Conflict`] when `resource_version` is given and stale.
    async fn annotate(
        &self,
        name: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()>;
}

/// When and how records are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkConfig {
    /// The largest data size (sum of data values, bytes) one object may hold. Records
    /// up to this size are stored in Helm's standard form.
    pub max_object_data: usize,
    /// Bytes of encoded record per chunk object.
    pub chunk_size: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        // Kubernetes' limit for Secret and ConfigMap data is 1 MiB.
        ChunkConfig {
            max_object_data: 1024 * 1024,
            chunk_size: 1000 * 1000,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct ChunkIndex {
    format: u32,
    /// `sha256:<hex>` of the whole encoded record.
    digest: String,
    size: usize,
    chunks: Vec<String>,
}

/// A [`Driver`] over any [`ObjectBackend`], with Helm's layout and chunking.
pub struct ObjectDriver<B> {
    backend: B,
    chunking: ChunkConfig,
}

impl<B: ObjectBackend> ObjectDriver<B> {
    /// A driver with default chunk limits.
    pub fn new(backend: B) -> Self {
        ObjectDriver {
            backend,
            chunking: ChunkConfig::default(),
        }
    }

    /// Overrides when records are chunked (tests use small limits).
    pub fn with_chunking(mut self, chunking: ChunkConfig) -> Self {
        self.chunking = ChunkConfig {
            max_object_data: chunking.max_object_data,
            chunk_size: chunking.chunk_size.max(1),
        };
        self
    }

    /// The backend, e.g. to inspect stored objects.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    fn is_chunk(obj: &RawObject) -> bool {
        obj.labels.contains_key(PART_LABEL)
    }

    /// Whether a record object is a chunk index, from its data or (metadata only)
    /// from the annotation every index carries.
    fn is_chunked(obj: &RawObject) -> bool {
        obj.data.contains_key(CHUNKS_KEY)
            || obj.annotations.get(STORAGE_ANNOTATION).map(String::as_str) == Some(STORAGE_CHUNKED)
    }

    /// Decodes a listed or fetched object, following chunks if needed.
    async fn decode_object(&self, obj: &RawObject) -> Result<Release> {
        let encoded = if obj.data.contains_key(CHUNKS_KEY) {
            self.read_chunks(obj).await?
        } else {
            obj.data
                .get(RELEASE_KEY)
                .cloned()
                .ok_or_else(|| Error::Chunk {
                    key: obj.name.clone(),
                    reason: format!("{} has no {RELEASE_KEY:?} data key", self.backend.kind()),
                })?
        };
        let mut rel = codec::decode_bytes(&encoded).map_err(|source| Error::Decode {
            key: obj.name.clone(),
            source,
        })?;
        rel.labels = filter_system_labels(&obj.labels);
        Ok(rel)
    }

    async fn read_chunks(&self, index_obj: &RawObject) -> Result<Vec<u8>> {
        let key = &index_obj.name;
        let damaged = |reason: String| Error::Chunk {
            key: key.clone(),
            reason,
        };
        let raw = index_obj
            .data
            .get(CHUNKS_KEY)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let index: ChunkIndex = serde_json::from_slice(raw)
            .map_err(|e| damaged(format!("unreadable chunk index: {e}")))?;
        let mut out = Vec::with_capacity(index.size);
        for name in &index.chunks {
            let chunk = self
                .backend
                .get(name)
                .await?
                .ok_or_else(|| damaged(format!("chunk {name:?} is missing")))?;
            let data = chunk
                .data
                .get(CHUNK_KEY)
                .ok_or_else(|| damaged(format!("chunk {name:?} has no {CHUNK_KEY:?} data")))?;
            out.extend_from_slice(data);
        }
        if out.len() != index.size {
            return Err(damaged(format!(
                "chunks hold {} bytes, index says {}",
                out.len(),
                index.size
            )));
        }
        let digest = sha256_hex(&out);
        if index.digest != format!("sha256:{digest}") {
            return Err(damaged("content does not match the index digest".into()));
        }
        Ok(out)
    }

    /// Builds the objects for a record: one standard object, or an index plus chunks.
    fn build(
        &self,
        key: &str,
        rel: &Release,
        mut labels: BTreeMap<String, String>,
    ) -> Result<(RawObject, Vec<RawObject>)> {
        for (k, v) in &labels {
            validate_label_value(k, v)?;
        }
        let encoded = codec::encode(rel).map_err(|source| Error::Encode {
            name: rel.name.clone(),
            source,
        })?;
        let standard = RawObject {
            name: key.to_string(),
            labels: labels.clone(),
            type_: self.backend.record_type().map(str::to_string),
            data: BTreeMap::from([(RELEASE_KEY.to_string(), encoded.clone().into_bytes())]),
            ..RawObject::default()
        };
        if standard.data_size() <= self.chunking.max_object_data {
            return Ok((standard, Vec::new()));
        }

        let digest = sha256_hex(encoded.as_bytes());
        let chunk_labels = BTreeMap::from([
            ("owner".to_string(), OWNER_CHUNK.to_string()),
            (PART_LABEL.to_string(), "chunk".to_string()),
            ("name".to_string(), rel.name.clone()),
            ("version".to_string(), rel.version.to_string()),
        ]);
        let is_secret = self.backend.record_type().is_some();
        let chunks: Vec<RawObject> = encoded
            .as_bytes()
            .chunks(self.chunking.chunk_size)
            .enumerate()
            .map(|(i, piece)| RawObject {
                name: format!("{key}.{}.{i}", &digest[..16]),
                labels: chunk_labels.clone(),
                annotations: BTreeMap::from([("rudder.dev/chunk-of".to_string(), key.to_string())]),
                type_: is_secret.then(|| CHUNK_SECRET_TYPE.to_string()),
                data: BTreeMap::from([(CHUNK_KEY.to_string(), piece.to_vec())]),
                ..RawObject::default()
            })
            .collect();
        let index = ChunkIndex {
            format: 1,
            digest: format!("sha256:{digest}"),
            size: encoded.len(),
            chunks: chunks.iter().map(|c| c.name.clone()).collect(),
        };
        let index_json = serde_json::to_vec(&index).map_err(|e| Error::Encode {
            name: rel.name.clone(),
            source: codec::CodecError::Json(e),
        })?;
        let marker_json = serde_json::to_vec(MARKER).unwrap_or_default();
        let marker = base64::engine::general_purpose::STANDARD.encode(marker_json);
        labels.retain(|k, _| k != PART_LABEL);
        let index_obj = RawObject {
            name: key.to_string(),
            labels,
            annotations: BTreeMap::from([(
                STORAGE_ANNOTATION.to_string(),
                STORAGE_CHUNKED.to_string(),
            )]),
            // Same type as a standard record: Kubernetes forbids changing a Secret's
            // type, and an update may move a record between the two forms.
            type_: self.backend.record_type().map(str::to_string),
            data: BTreeMap::from([
                (RELEASE_KEY.to_string(), marker.into_bytes()),
                (CHUNKS_KEY.to_string(), index_json),
            ]),
            ..RawObject::default()
        };
        Ok((index_obj, chunks))
    }

    async fn write_chunks(&self, chunks: &[RawObject]) -> Result<()> {
        for chunk in chunks {
            match self.backend.create(chunk).await {
                // Chunk names are content-addressed: an existing one holds the same bytes.
                Ok(()) | Err(Error::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Deletes the chunk objects of a revision except those named in `keep`.
    async fn delete_chunks(&self, name: &str, version: i64, keep: &[RawObject]) -> Result<()> {
        let selector = BTreeMap::from([
            ("owner".to_string(), OWNER_CHUNK.to_string()),
            (PART_LABEL.to_string(), "chunk".to_string()),
            ("name".to_string(), name.to_string()),
            ("version".to_string(), version.to_string()),
        ]);
        for obj in self.backend.list_meta(&selector).await? {
            if keep.iter().any(|k| k.name == obj.name) {
                continue;
            }
            match self.backend.delete(&obj.name).await {
                Ok(()) | Err(Error::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Deletes a record's object and, for a chunked record, its chunks.
    async fn remove_object(&self, key: &str, obj: &RawObject) -> Result<()> {
        self.backend.delete(key).await?;
        if Self::is_chunked(obj) {
            let (name, version) = Self::rel_name_version(key, obj);
            self.delete_chunks(&name, version, &[]).await?;
        }
        Ok(())
    }

    fn rel_name_version(key: &str, obj: &RawObject) -> (String, i64) {
        let meta = RecordMeta::from_labels(key, &obj.labels);
        (meta.name, meta.version)
    }
}

fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn now_label() -> String {
    Time::now().unix_seconds().to_string()
}

#[async_trait]
impl<B: ObjectBackend> Driver for ObjectDriver<B> {
    fn name(&self) -> &'static str {
        self.backend.kind()
    }

    async fn get(&self, key: &str) -> Result<Release> {
        let obj = self
            .backend
            .get_recent(key)
            .await?
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        self.decode_object(&obj).await
    }

    async fn list(&self, filter: Filter<'_>) -> Result<Vec<Release>> {
        let selector = super::selector([("owner", OWNER_HELM)]);
        let mut out = Vec::new();
        for obj in self.backend.list(&selector).await? {
            if Self::is_chunk(&obj) {
                continue;
            }
            // Helm skips records it cannot decode rather than failing the whole list.
            if let Ok(rel) = self.decode_object(&obj).await {
                if filter(&rel) {
                    out.push(rel);
                }
            }
        }
        Ok(out)
    }

    async fn query(&self, labels: &BTreeMap<String, String>) -> Result<Vec<Release>> {
        for (k, v) in labels {
            validate_label_value(k, v)?;
        }
        let objects: Vec<RawObject> = self
            .backend
            .list(labels)
            .await?
            .into_iter()
            .filter(|o| !Self::is_chunk(o))
            .collect();
        if objects.is_empty() {
            return Err(Error::NotFound(format!("{labels:?}")));
        }
        let mut out = Vec::with_capacity(objects.len());
        for obj in &objects {
            if let Ok(rel) = self.decode_object(obj).await {
                out.push(rel);
            }
        }
        Ok(out)
    }

    async fn query_meta(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>> {
        for (k, v) in labels {
            validate_label_value(k, v)?;
        }
        Ok(self
            .backend
            .list_meta(labels)
            .await?
            .iter()
            .filter(|o| !Self::is_chunk(o))
            .map(RawObject::record_meta)
            .collect())
    }

    async fn query_meta_fresh(&self, labels: &BTreeMap<String, String>) -> Result<Vec<RecordMeta>> {
        for (k, v) in labels {
            validate_label_value(k, v)?;
        }
        Ok(self
            .backend
            .list_meta_fresh(labels)
            .await?
            .iter()
            .filter(|o| !Self::is_chunk(o))
            .map(RawObject::record_meta)
            .collect())
    }

    async fn create_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()> {
        let mut labels = record_labels(rel);
        labels.insert("createdAt".into(), now_label());
        let (mut main, mut chunks) = self.build(key, rel, labels)?;
        main.stamp(meta);
        for chunk in &mut chunks {
            chunk.owner_references = meta.owner_references.clone();
        }
        if chunks.is_empty() {
            return self.backend.create(&main).await;
        }
        if self.backend.get(key).await?.is_some() {
            return Err(Error::AlreadyExists(key.to_string()));
        }
        self.write_chunks(&chunks).await?;
        if let Err(e) = self.backend.create(&main).await {
            // Best effort: leave no orphaned chunks behind a failed create.
            let _ = self.delete_chunks(&rel.name, rel.version, &[]).await;
            return Err(e);
        }
        Ok(())
    }

    async fn update_with(&self, key: &str, rel: &Release, meta: &WriteMeta) -> Result<()> {
        // Only the metadata is used: the lock on it, its version and finalizers, and
        // whether it is chunked.
        let mut existing = self
            .backend
            .get_meta(key)
            .await?
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        let mut cached = self.backend.cached_reads();
        let mut labels = record_labels(rel);
        labels.insert("modifiedAt".into(), now_label());
        let (mut main, mut chunks) = self.build(key, rel, labels)?;
        main.stamp(meta);
        for chunk in &mut chunks {
            chunk.owner_references = meta.owner_references.clone();
        }
        self.write_chunks(&chunks).await?;
        let mut attempts = 0;
        loop {
            crate::lock::check_not_held_by_other(key, &existing.annotations, meta)?;
            main.resource_version = existing.resource_version.clone();
            main.finalizers = existing.finalizers.clone();
            match self.backend.replace(&main).await {
                Ok(()) => break,
                // Only the holder's own lock renewals race with its writes; anything
                // else that changed the record since we read it wins. A read from a
                // cache may just have been behind: that one is read again.
                Err(Error::Conflict(_)) if cached || (meta.holder.is_some() && attempts < 3) => {
                    if !std::mem::take(&mut cached) {
                        attempts += 1;
                    }
                    existing = self
                        .backend
                        .get(key)
                        .await?
                        .ok_or_else(|| Error::NotFound(key.to_string()))?;
                }
                Err(e) => return Err(e),
            }
        }
        let was_chunked = Self::is_chunked(&existing);
        if was_chunked || !chunks.is_empty() {
            let (name, version) = Self::rel_name_version(key, &existing);
            self.delete_chunks(&name, version, &chunks).await?;
        }
        Ok(())
    }

    async fn annotate(
        &self,
        key: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()> {
        self.backend
            .annotate(key, resource_version, annotation, value)
            .await
    }

    async fn delete(&self, key: &str) -> Result<Release> {
        let obj = self
            .backend
            .get(key)
            .await?
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        let rel = self.decode_object(&obj).await?;
        self.remove_object(key, &obj).await?;
        Ok(rel)
    }

    async fn remove(&self, key: &str) -> Result<()> {
        let obj = self
            .backend
            .get_meta(key)
            .await?
            .ok_or_else(|| Error::NotFound(key.to_string()))?;
        self.remove_object(key, &obj).await
    }
}

/// An in-memory [`ObjectBackend`] that mimics the API server for these calls, including
/// resource versions and the 1 MiB data limit.
#[derive(Debug, Default)]
pub struct MemoryObjects {
    inner: Mutex<(u64, BTreeMap<String, RawObject>)>,
    kind: MemoryKind,
}

/// Which kind [`MemoryObjects`] pretends to store.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    #[default]
    Secret,
    ConfigMap,
}

impl MemoryObjects {
    /// An empty store of the given kind.
    pub fn new(kind: MemoryKind) -> MemoryObjects {
        MemoryObjects {
            inner: Mutex::default(),
            kind,
        }
    }

    /// A copy of every stored object.
    pub fn objects(&self) -> Vec<RawObject> {
        self.lock().1.values().cloned().collect()
    }

    /// Stores an object as is, bypassing all checks (to plant fixtures).
    pub fn insert_raw(&self, obj: RawObject) {
        self.lock().1.insert(obj.name.clone(), obj);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, BTreeMap<String, RawObject>)> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_size(obj: &RawObject) -> Result<()> {
        if obj.data_size() > 1024 * 1024 {
            return Err(Error::Chunk {
                key: obj.name.clone(),
                reason: "object data exceeds 1 MiB (the API server would reject it)".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectBackend for MemoryObjects {
    fn kind(&self) -> &'static str {
        match self.kind {
            MemoryKind::Secret => "Secret",
            MemoryKind::ConfigMap => "ConfigMap",
        }
    }

    fn record_type(&self) -> Option<&'static str> {
        (self.kind == MemoryKind::Secret).then_some(super::SECRET_TYPE)
    }

    async fn get(&self, name: &str) -> Result<Option<RawObject>> {
        Ok(self.lock().1.get(name).cloned())
    }

    async fn list(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        Ok(self
            .lock()
            .1
            .values()
            .filter(|o| labels_match(selector, &o.labels))
            .cloned()
            .collect())
    }

    async fn create(&self, obj: &RawObject) -> Result<()> {
        Self::check_size(obj)?;
        let mut inner = self.lock();
        if inner.1.contains_key(&obj.name) {
            return Err(Error::AlreadyExists(obj.name.clone()));
        }
        inner.0 += 1;
        let mut stored = obj.clone();
        stored.resource_version = Some(inner.0.to_string());
        if self.kind == MemoryKind::ConfigMap {
            stored.type_ = None;
        }
        inner.1.insert(obj.name.clone(), stored);
        Ok(())
    }

    async fn replace(&self, obj: &RawObject) -> Result<()> {
        Self::check_size(obj)?;
        let mut inner = self.lock();
        let current = inner
            .1
            .get(&obj.name)
            .ok_or_else(|| Error::NotFound(obj.name.clone()))?;
        if obj.resource_version.is_some() && obj.resource_version != current.resource_version {
            return Err(Error::Conflict(obj.name.clone()));
        }
        inner.0 += 1;
        let mut stored = obj.clone();
        stored.resource_version = Some(inner.0.to_string());
        if self.kind == MemoryKind::ConfigMap {
            stored.type_ = None;
        }
        inner.1.insert(obj.name.clone(), stored);
        Ok(())
    }

    async fn delete(&self, name: &str) -> Result<()> {
        self.lock()
            .1
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| Error::NotFound(name.to_string()))
    }

    async fn annotate(
        &self,
        name: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()> {
        let mut inner = self.lock();
        inner.0 += 1;
        let next = inner.0.to_string();
        let obj = inner
            .1
            .get_mut(name)
            .ok_or_else(|| Error::NotFound(name.to_string()))?;
        if resource_version.is_some() && obj.resource_version.as_deref() != resource_version {
            return Err(Error::Conflict(name.to_string()));
        }
        match value {
            Some(v) => obj
                .annotations
                .insert(annotation.to_string(), v.to_string()),
            None => obj.annotations.remove(annotation),
        };
        obj.resource_version = Some(next);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Release, Status};

    fn release(name: &str, version: i64, manifest: String) -> Release {
        let mut rel = Release {
            name: name.into(),
            version,
            namespace: "ns".into(),
            manifest,
            ..Release::default()
        };
        rel.set_status(Status::Deployed, "Install complete");
        rel
    }

    /// Text that gzip cannot shrink much, so the encoded record is large.
    fn noise(len: usize) -> String {
        let mut x: u64 = 0x9e3779b97f4a7c15;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect()
    }

    fn small_chunks() -> ChunkConfig {
        ChunkConfig {
            max_object_data: 2000,
            chunk_size: 700,
        }
    }

    #[tokio::test]
    async fn standard_layout_matches_helm() {
        let driver = ObjectDriver::new(MemoryObjects::new(MemoryKind::Secret));
        let mut rel = release("web", 1, "kind: A".into());
        rel.labels.insert("team".into(), "x".into());
        driver
            .create("sh.helm.release.v1.web.v1", &rel)
            .await
            .unwrap();
        let objs = driver.backend().objects();
        assert_eq!(objs.len(), 1);
        let o = &objs[0];
        assert_eq!(o.name, "sh.helm.release.v1.web.v1");
        assert_eq!(o.type_.as_deref(), Some("helm.sh/release.v1"));
        assert_eq!(o.data.keys().collect::<Vec<_>>(), ["release"]);
        assert!(o.annotations.is_empty());
        let keys: Vec<_> = o.labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["createdAt", "name", "owner", "status", "team", "version"]
        );
        assert_eq!(o.labels["owner"], "helm");
        assert_eq!(o.labels["status"], "deployed");
        assert_eq!(o.labels["version"], "1");
        assert!(o.labels["createdAt"].parse::<i64>().unwrap() > 1_600_000_000);
        let back = driver.get("sh.helm.release.v1.web.v1").await.unwrap();
        assert_eq!(back, rel);

        // Update: modifiedAt replaces createdAt, as in Helm.
        let mut rel2 = back.clone();
        rel2.set_status(Status::Superseded, "Superseded");
        driver
            .update("sh.helm.release.v1.web.v1", &rel2)
            .await
            .unwrap();
        let o = &driver.backend().objects()[0];
        let keys: Vec<_> = o.labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["modifiedAt", "name", "owner", "status", "team", "version"]
        );
        assert_eq!(o.labels["status"], "superseded");
    }

    #[tokio::test]
    async fn configmaps_have_no_type() {
        let driver = ObjectDriver::new(MemoryObjects::new(MemoryKind::ConfigMap));
        driver
            .create("sh.helm.release.v1.web.v1", &release("web", 1, "x".into()))
            .await
            .unwrap();
        assert_eq!(driver.backend().objects()[0].type_, None);
        assert_eq!(driver.name(), "ConfigMap");
    }

    #[tokio::test]
    async fn create_twice_is_already_exists() {
        let driver = ObjectDriver::new(MemoryObjects::default());
        let rel = release("web", 1, "x".into());
        driver.create("k", &rel).await.unwrap();
        assert!(matches!(
            driver.create("k", &rel).await,
            Err(Error::AlreadyExists(_))
        ));
        assert!(matches!(
            driver.update("missing", &rel).await,
            Err(Error::NotFound(_))
        ));
        assert!(matches!(
            driver.get("missing").await,
            Err(Error::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn large_records_are_chunked_and_read_back() {
        let driver = ObjectDriver::new(MemoryObjects::default()).with_chunking(small_chunks());
        let key = "sh.helm.release.v1.big.v1";
        let rel = release("big", 1, noise(5000));
        driver.create(key, &rel).await.unwrap();

        let objs = driver.backend().objects();
        let index = objs.iter().find(|o| o.name == key).unwrap();
        assert_eq!(index.type_.as_deref(), Some("helm.sh/release.v1"));
        assert_eq!(index.annotations[STORAGE_ANNOTATION], STORAGE_CHUNKED);
        assert_eq!(index.labels["owner"], "helm");
        assert_eq!(index.labels["status"], "deployed");
        // Helm's decoder fails cleanly on the marker instead of misreading it.
        let marker = std::str::from_utf8(&index.data[RELEASE_KEY]).unwrap();
        assert!(matches!(
            codec::decode(marker),
            Err(codec::CodecError::Json(_))
        ));
        let chunks: Vec<_> = objs.iter().filter(|o| o.name != key).collect();
        assert!(chunks.len() >= 4, "{} chunks", chunks.len());
        for c in &chunks {
            assert_eq!(c.labels["owner"], OWNER_CHUNK);
            assert_eq!(c.type_.as_deref(), Some(CHUNK_SECRET_TYPE));
            assert!(c.data[CHUNK_KEY].len() <= 700);
            assert!(c.name.starts_with(key));
        }

        assert_eq!(driver.get(key).await.unwrap(), rel);
        // Label queries see one record per revision, never the chunks.
        let metas = driver
            .query_meta(&crate::driver::selector([("name", "big")]))
            .await
            .unwrap();
        assert_eq!(metas.len(), 1);
        assert_eq!(driver.list(&|_| true).await.unwrap().len(), 1);

        // Update with new content: a new chunk set replaces the old one.
        let mut rel2 = release("big", 1, noise(6000));
        rel2.set_status(Status::Superseded, "Superseded");
        driver.update(key, &rel2).await.unwrap();
        assert_eq!(driver.get(key).await.unwrap(), rel2);
        let digest_names: std::collections::BTreeSet<_> = driver
            .backend()
            .objects()
            .iter()
            .filter(|o| o.name != key)
            .map(|o| {
                o.name
                    .split('.')
                    .rev()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(digest_names.len(), 1, "stale chunks left: {digest_names:?}");

        // Shrinking back to the standard form removes all chunks.
        let small = release("big", 1, "tiny".into());
        driver.update(key, &small).await.unwrap();
        let objs = driver.backend().objects();
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0].type_.as_deref(), Some("helm.sh/release.v1"));

        // Delete of a chunked record removes index and chunks.
        driver.update(key, &rel).await.unwrap();
        assert_eq!(driver.delete(key).await.unwrap(), rel);
        assert!(driver.backend().objects().is_empty());
    }

    #[tokio::test]
    async fn records_that_fit_are_never_chunked() {
        let driver = ObjectDriver::new(MemoryObjects::default());
        // Just under 1 MiB of encoded data: still Helm's standard form.
        let rel = release("edge", 1, noise(1_150_000));
        driver.create("k", &rel).await.unwrap();
        let objs = driver.backend().objects();
        assert_eq!(objs.len(), 1);
        let size = objs[0].data[RELEASE_KEY].len();
        assert!((900_000..=1024 * 1024).contains(&size), "{size}");
        // And over the limit it is chunked with the default configuration.
        let rel = release("edge", 2, noise(1_500_000));
        driver.create("k2", &rel).await.unwrap();
        assert!(driver.backend().objects().len() > 2);
        assert_eq!(driver.get("k2").await.unwrap(), rel);
    }

    #[tokio::test]
    async fn damaged_chunks_are_reported() {
        let driver = ObjectDriver::new(MemoryObjects::default()).with_chunking(small_chunks());
        let key = "sh.helm.release.v1.big.v1";
        driver
            .create(key, &release("big", 1, noise(5000)))
            .await
            .unwrap();
        let victim = driver
            .backend()
            .objects()
            .into_iter()
            .find(|o| o.name != key)
            .unwrap();
        let mut bad = victim.clone();
        bad.data.insert(CHUNK_KEY.into(), b"AAAA".to_vec());
        driver.backend().insert_raw(bad);
        assert!(matches!(driver.get(key).await, Err(Error::Chunk { .. })));
        driver.backend().delete(&victim.name).await.unwrap();
        let err = driver.get(key).await.unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[tokio::test]
    async fn undecodable_records_are_skipped_by_list_and_named_by_get() {
        let driver = ObjectDriver::new(MemoryObjects::default());
        driver
            .create("good", &release("a", 1, "x".into()))
            .await
            .unwrap();
        driver.backend().insert_raw(RawObject {
            name: "sh.helm.release.v1.a.v2".into(),
            labels: crate::driver::selector([("owner", "helm"), ("name", "a"), ("version", "2")]),
            data: BTreeMap::from([(RELEASE_KEY.to_string(), b"not base64!".to_vec())]),
            ..RawObject::default()
        });
        assert_eq!(driver.list(&|_| true).await.unwrap().len(), 1);
        match driver.get("sh.helm.release.v1.a.v2").await {
            Err(Error::Decode { key, .. }) => assert_eq!(key, "sh.helm.release.v1.a.v2"),
            other => panic!("expected decode error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn invalid_label_values_are_rejected() {
        let driver = ObjectDriver::new(MemoryObjects::default());
        let err = driver
            .query(&crate::driver::selector([("name", "bad value")]))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::InvalidLabel { .. }));
    }
}
