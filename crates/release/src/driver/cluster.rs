//! Kubernetes backends: release records as Secrets (Helm's default driver) or as
//! ConfigMaps, in one namespace, in exactly Helm's layout (see [`super::objects`]).

use std::collections::BTreeMap;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use super::objects::{ObjectBackend, ObjectDriver, RawObject};
use super::SECRET_TYPE;
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
}

impl ConfigMapDriver {
    /// A ConfigMap driver for `namespace`.
    pub fn for_namespace(client: Client, namespace: &str) -> ConfigMapDriver {
        ObjectDriver::new(ConfigMapBackend::new(client, namespace))
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
) -> std::result::Result<(), kube::Error>
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
        .map(|_| ())
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

/// Objects of kind `K` in one namespace.
#[derive(Clone)]
pub struct KindBackend<K: RecordKind> {
    api: Api<K>,
    namespace: String,
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
        }
    }

    fn err(&self, op: &str, name: &str, e: kube::Error) -> Error {
        map_err(K::KIND, &self.namespace, op, name, e)
    }
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

    async fn create(&self, obj: &RawObject) -> Result<()> {
        let mut o = K::from_raw(obj);
        o.meta_mut().resource_version = None;
        self.api
            .create(&PostParams::default(), &o)
            .await
            .map(|_| ())
            .map_err(|e| self.err("create", &obj.name, e))
    }

    async fn replace(&self, obj: &RawObject) -> Result<()> {
        self.api
            .replace(&obj.name, &PostParams::default(), &K::from_raw(obj))
            .await
            .map(|_| ())
            .map_err(|e| self.err("update", &obj.name, e))
    }

    async fn delete(&self, name: &str) -> Result<()> {
        self.api
            .delete(name, &DeleteParams::default())
            .await
            .map(|_| ())
            .map_err(|e| self.err("delete", name, e))
    }

    async fn annotate(
        &self,
        name: &str,
        resource_version: Option<&str>,
        annotation: &str,
        value: Option<&str>,
    ) -> Result<()> {
        patch_annotation(&self.api, name, resource_version, annotation, value)
            .await
            .map_err(|e| self.err("annotate", name, e))
    }
}
