//! Kubernetes backends: release records as Secrets (Helm's default driver) or as
//! ConfigMaps, in one namespace, in exactly Helm's layout (see [`super::objects`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use super::objects::{ObjectBackend, ObjectDriver, RawObject};
use super::{parse_key, SECRET_TYPE};
use crate::cache::{RecordCache, Written};
use crate::error::{Error, Result};

/// Release records stored as Secrets (Helm's `secret` driver).
pub type SecretDriver = ObjectDriver<SecretBackend>;
/// Release records stored as ConfigMaps (Helm's `configmap` driver).
pub type ConfigMapDriver = ObjectDriver<ConfigMapBackend>;

impl SecretDriver {
    /// A Secret driver for `namespace`.
    pub fn for_namespace(client: Client, namespace: &str) -> SecretDriver {
        ObjectDriver::new(SecretBackend::new(client, namespace))
    }

    /// A Secret driver for `namespace` that reads record metadata from `cache` (a
    /// cache of Secrets) and tells it of its writes.
    pub fn cached(client: Client, namespace: &str, cache: Arc<RecordCache>) -> SecretDriver {
        ObjectDriver::new(SecretBackend::new(client, namespace).with_cache(cache))
    }
}

impl ConfigMapDriver {
    /// A ConfigMap driver for `namespace`.
    pub fn for_namespace(client: Client, namespace: &str) -> ConfigMapDriver {
        ObjectDriver::new(ConfigMapBackend::new(client, namespace))
    }

    /// A ConfigMap driver for `namespace` that reads record metadata from `cache` (a
    /// cache of ConfigMaps) and tells it of its writes.
    pub fn cached(client: Client, namespace: &str, cache: Arc<RecordCache>) -> ConfigMapDriver {
        ObjectDriver::new(ConfigMapBackend::new(client, namespace).with_cache(cache))
    }
}

fn selector_string(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Maps API errors to the typed ones the drivers act on.
fn map_err(kind: &str, namespace: &str, op: &str, name: &str, e: kube::Error) -> Error {
    if let kube::Error::Api(status) = &e {
        if status.is_not_found() {
            return Error::NotFound(name.to_string());
        }
        if status.is_already_exists() {
            return Error::AlreadyExists(name.to_string());
        }
        if status.code == 409 {
            return Error::Conflict(name.to_string());
        }
    }
    Error::api(format!("{op} {kind} {namespace}/{name}"), e)
}

/// Sets or removes one annotation of `name` with a merge patch, conditional on
/// `resource_version` when given.
async fn patch_annotation<K>(
    api: &Api<K>,
    name: &str,
    resource_version: Option<&str>,
    annotation: &str,
    value: Option<&str>,
) -> std::result::Result<K, kube::Error>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut meta = json!({"annotations": {annotation: value}});
    if let Some(rv) = resource_version {
        meta["resourceVersion"] = json!(rv);
    }
    let patch = json!({ "metadata": meta });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}

fn meta(obj: &RawObject) -> ObjectMeta {
    ObjectMeta {
        name: Some(obj.name.clone()),
        labels: Some(obj.labels.clone()),
        annotations: (!obj.annotations.is_empty()).then(|| obj.annotations.clone()),
        resource_version: obj.resource_version.clone(),
        owner_references: (!obj.owner_references.is_empty()).then(|| obj.owner_references.clone()),
        ..ObjectMeta::default()
    }
}

fn raw_from_meta(m: &ObjectMeta) -> RawObject {
    RawObject {
        name: m.name.clone().unwrap_or_default(),
        labels: m.labels.clone().unwrap_or_default(),
        annotations: m.annotations.clone().unwrap_or_default(),
        resource_version: m.resource_version.clone(),
        owner_references: m.owner_references.clone().unwrap_or_default(),
        finalizers: m.finalizers.clone().unwrap_or_default(),
        ..RawObject::default()
    }
}

/// A kind of object records can be kept in, and how a record maps onto it.
pub trait RecordKind:
    kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::Serialize
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The kind as messages name it.
    const KIND: &'static str;
    /// Helm's object `type` for records of this kind, where the kind has one.
    const RECORD_TYPE: Option<&'static str>;
    fn to_raw(self) -> RawObject;
    fn from_raw(obj: &RawObject) -> Self;
}

impl RecordKind for Secret {
    const KIND: &'static str = "Secret";
    const RECORD_TYPE: Option<&'static str> = Some(SECRET_TYPE);

    fn to_raw(self) -> RawObject {
        let mut raw = raw_from_meta(&self.metadata);
        raw.type_ = self.type_;
        raw.data = self
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        raw
    }

    fn from_raw(obj: &RawObject) -> Secret {
        Secret {
            metadata: meta(obj),
            type_: obj.type_.clone().or_else(|| Some(SECRET_TYPE.to_string())),
            data: Some(
                obj.data
                    .iter()
                    .map(|(k, v)| (k.clone(), ByteString(v.clone())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }
}

impl RecordKind for ConfigMap {
    const KIND: &'static str = "ConfigMap";
    const RECORD_TYPE: Option<&'static str> = None;

    fn to_raw(self) -> RawObject {
        let mut raw = raw_from_meta(&self.metadata);
        raw.data = self
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()))
            .collect();
        raw
    }

    fn from_raw(obj: &RawObject) -> ConfigMap {
        ConfigMap {
            metadata: meta(obj),
            data: Some(
                obj.data
                    .iter()
                    // Our values are base64 text or JSON, so always UTF-8.
                    .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
                    .collect(),
            ),
            ..ConfigMap::default()
        }
    }
}

/// Objects of kind `K` in one namespace, their metadata read from a
/// [`RecordCache`] when it has one.
#[derive(Clone)]
pub struct KindBackend<K: RecordKind> {
    api: Api<K>,
    namespace: String,
    cache: Option<Arc<RecordCache>>,
}

/// Secrets in one namespace.
pub type SecretBackend = KindBackend<Secret>;
/// ConfigMaps in one namespace.
pub type ConfigMapBackend = KindBackend<ConfigMap>;

impl<K: RecordKind> KindBackend<K> {
    fn new(client: Client, namespace: &str) -> Self {
        KindBackend {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            cache: None,
        }
    }

    fn with_cache(mut self, cache: Arc<RecordCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    fn err(&self, op: &str, name: &str, e: kube::Error) -> Error {
        map_err(K::KIND, &self.namespace, op, name, e)
    }

    /// The cache, when it is fresh for `release` (`None`: every release).
    async fn fresh_cache(&self, release: Option<&str>) -> Option<&RecordCache> {
        let cache = self.cache.as_deref()?;
        cache.fresh(&self.namespace, release).await.then_some(cache)
    }

    /// Runs the write `op` on object `name`, telling the cache of it (so reads wait
    /// until its watch delivers the version written) and keeping the server's answer
    /// for the next read of the object.
    async fn write<F, Fut>(&self, name: &str, release: Option<&str>, op: F) -> Result<()>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Answer<K>>>,
    {
        let guard = self
            .cache
            .as_deref()
            .map(|c| (c, c.write_started(&self.namespace, name, release)));
        // An error drops the guard, which tells the cache the write failed.
        let answer = op().await?;
        if let Some((cache, guard)) = guard {
            match answer {
                Answer::Stored(o) => {
                    let meta = Box::new(o.meta().clone());
                    cache.keep_answer(&self.namespace, o.to_raw());
                    guard.done(Written::Stored(meta));
                }
                Answer::Gone => guard.done(Written::Gone),
            }
        }
        Ok(())
    }
}

/// What the server answered a write with.
enum Answer<K> {
    /// The object as stored.
    Stored(K),
    /// The object is gone.
    Gone,
}

fn raw_meta<K: RecordKind>(m: kube::core::PartialObjectMeta<K>) -> RawObject {
    raw_from_meta(&m.metadata)
}

#[async_trait]
impl<K: RecordKind> ObjectBackend for KindBackend<K> {
    fn kind(&self) -> &'static str {
        K::KIND
    }

    fn record_type(&self) -> Option<&'static str> {
        K::RECORD_TYPE
    }

    async fn get(&self, name: &str) -> Result<Option<RawObject>> {
        match self.api.get_opt(name).await {
            Ok(o) => Ok(o.map(K::to_raw)),
            Err(e) => Err(self.err("get", name, e)),
        }
    }

    async fn list(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        let lp = ListParams::default().labels(&selector_string(selector));
        match self.api.list(&lp).await {
            Ok(list) => Ok(list.items.into_iter().map(K::to_raw).collect()),
            Err(e) => Err(Error::api(
                format!(
                    "list {}s in {} with labels {}",
                    K::KIND,
                    self.namespace,
                    selector_string(selector)
                ),
                e,
            )),
        }
    }

    async fn list_meta(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        if let Some(cache) = self
            .fresh_cache(selector.get("name").map(String::as_str))
            .await
        {
            return Ok(cache.list(&self.namespace, selector));
        }
        self.list_meta_fresh(selector).await
    }

    async fn list_meta_fresh(&self, selector: &BTreeMap<String, String>) -> Result<Vec<RawObject>> {
        let lp = ListParams::default().labels(&selector_string(selector));
        match self.api.list_metadata(&lp).await {
            Ok(list) => Ok(list.items.into_iter().map(raw_meta).collect()),
            Err(e) => Err(Error::api(
                format!(
                    "list {}s in {} with labels {}",
                    K::KIND,
                    self.namespace,
                    selector_string(selector)
                ),
                e,
            )),
        }
    }

    async fn get_recent(&self, name: &str) -> Result<Option<RawObject>> {
        let release = parse_key(name).map(|(r, _)| r);
        if let Some(cache) = self.fresh_cache(release).await {
            if let Some(answer) = cache.answer(&self.namespace, name) {
                return Ok(Some(answer));
            }
        }
        self.get(name).await
    }

    async fn get_meta(&self, name: &str) -> Result<Option<RawObject>> {
        let release = parse_key(name).map(|(r, _)| r);
        if let Some(cache) = self.fresh_cache(release).await {
            return Ok(cache.get(&self.namespace, name));
        }
        match self.api.get_metadata_opt(name).await {
            Ok(o) => Ok(o.map(raw_meta)),
            Err(e) => Err(self.err("get", name, e)),
        }
    }

    fn cached_reads(&self) -> bool {
        self.cache.is_some()
    }

    async fn create(&self, obj: &RawObject) -> Result<()> {
        let mut o = K::from_raw(obj);
        o.meta_mut().resource_version = None;
        let release = obj.labels.get("name").map(String::as_str);
        self.write(&obj.name, release, || async {
            self.api
                .create(&PostParams::default(), &o)
                .await
                .map(Answer::Stored)
                .map_err(|e| self.err("create", &obj.name, e))
        })
        .await
    }

    async fn replace(&self, obj: &RawObject) -> Result<()> {
        let release = obj.labels.get("name").map(String::as_str);
        self.write(&obj.name, release, || async {
            self.api
                .replace(&obj.name, &PostParams::default(), &K::from_raw(obj))
                .await
                .map(Answer::Stored)
                .map_err(|e| self.err("update", &obj.name, e))
        })
        .await
    }

    async fn delete(&self, name: &str) -> Result<()> {
        self.write(name, None, || async {
            match self.api.delete(name, &DeleteParams::default()).await {
                // Held by a finalizer: it stays, marked for deletion.
                Ok(either::Either::Left(o)) if o.meta().deletion_timestamp.is_some() => {
                    Ok(Answer::Stored(o))
                }
                // A server that answers with the deleted object itself.
                Ok(either::Either::Left(_)) => Ok(Answer::Gone),
                Ok(either::Either::Right(_)) => Ok(Answer::Gone),
                Err(e) => Err(self.err("delete", name, e)),
            }
        })
        .await
    }

    async fn annotate(
        &self,
        name: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()> {
        self.write(name, None, || async {
            patch_annotation(&self.api, name, resource_version, annotation, value)
                .await
                .map(Answer::Stored)
                .map_err(|e| self.err("annotate", name, e))
        })
        .await
    }
}
