//! The operator's own type for the CRs it watches, in place of kube's `DynamicObject`.
//!
//! Two reasons. A CR's `spec` (and `status`) are kept as raw JSON text: serde_json
//! reads a raw value by skipping over it without recursion, so a spec nested as deep
//! as kube-apiserver accepts (10,000 levels) decodes inside a LIST or a watch event,
//! where a `serde_json::Value` stops at 128 levels and fails the whole list — and with
//! it every CR of the kind. The values are parsed from the raw spec when a reconcile
//! needs them, with the project's depth-bounded parser ([`CustomResource::spec_json`]).
//! And the cache holds one of these per CR: raw text costs a fraction of a `Value`
//! tree, and the metadata keeps only what reconciling reads (no managed fields, whose
//! `fieldsV1` mirror the spec's depth, no owner references, no `kubectl apply` copy).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{ApiResource, DynamicObject};
use kube::core::DynamicResourceScope;
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The annotation `kubectl apply` keeps a CR's last applied copy in: never read here.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// One CR of a watched kind: the metadata reconciling reads, and `spec` and `status`
/// as the raw JSON the API server sent. Its kind is the watch's [`ApiResource`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(from = "Wire")]
pub struct CustomResource {
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Box<RawValue>>,
}

/// The CR as the API server sends it; unknown fields (`apiVersion`, `kind`, and any
/// other top-level field) are skipped without being parsed.
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    spec: Option<Box<RawValue>>,
    #[serde(default)]
    status: Option<Box<RawValue>>,
}

/// The metadata fields a reconcile, the cache's change filter and the metrics read.
/// `managedFields` is skipped unparsed: its `fieldsV1` nest as deep as the spec.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    finalizers: Option<Vec<String>>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

impl From<Wire> for CustomResource {
    fn from(w: Wire) -> CustomResource {
        let m = w.metadata;
        let annotations = m.annotations.map(|mut a| {
            a.remove(LAST_APPLIED);
            a
        });
        CustomResource {
            metadata: ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                resource_version: m.resource_version,
                generation: m.generation,
                labels: m.labels,
                annotations,
                finalizers: m.finalizers,
                creation_timestamp: m.creation_timestamp,
                deletion_timestamp: m.deletion_timestamp,
                ..ObjectMeta::default()
            },
            spec: w.spec,
            status: w.status,
        }
    }
}

/// A CR read as a `DynamicObject` elsewhere (tests, tools), trimmed the same way.
impl From<&DynamicObject> for CustomResource {
    fn from(o: &DynamicObject) -> CustomResource {
        let raw = |field: &str| {
            o.data
                .get(field)
                .filter(|v| !v.is_null())
                .and_then(|v| serde_json::value::to_raw_value(v).ok())
        };
        let wire = Wire {
            metadata: WireMeta {
                name: o.metadata.name.clone(),
                namespace: o.metadata.namespace.clone(),
                uid: o.metadata.uid.clone(),
                resource_version: o.metadata.resource_version.clone(),
                generation: o.metadata.generation,
                labels: o.metadata.labels.clone(),
                annotations: o.metadata.annotations.clone(),
                finalizers: o.metadata.finalizers.clone(),
                creation_timestamp: o.metadata.creation_timestamp.clone(),
                deletion_timestamp: o.metadata.deletion_timestamp.clone(),
            },
            spec: raw("spec"),
            status: raw("status"),
        };
        wire.into()
    }
}

impl From<DynamicObject> for CustomResource {
    fn from(o: DynamicObject) -> CustomResource {
        CustomResource::from(&o)
    }
}

impl CustomResource {
    /// The raw `spec`, if the CR has one (JSON `null` counts as none).
    pub fn spec_raw(&self) -> Option<&RawValue> {
        self.spec.as_deref()
    }

    /// The raw `status`, if the CR has one.
    pub fn status_raw(&self) -> Option<&RawValue> {
        self.status.as_deref()
    }

    /// The `spec` parsed as JSON, as deep as Go's readers go
    /// ([`gocodec::depth::MAX_DEPTH`]); `None` without a spec. The error says how deep
    /// the reader goes.
    pub fn spec_json(&self) -> Option<Result<serde_json::Value, String>> {
        self.spec_raw()
            .map(|raw| gocodec::depth::parse_json_text(raw.get().as_bytes()))
    }

    /// The `status` parsed as JSON, as [`CustomResource::spec_json`] parses the spec;
    /// `None` without a status or when it cannot be read.
    pub(crate) fn status_json(&self) -> Option<serde_json::Value> {
        self.status_raw()
            .and_then(|raw| gocodec::depth::parse_json_text(raw.get().as_bytes()).ok())
    }

    /// Trims the CR to what the operator's cache keeps of it: the status with a
    /// stand-in for `deployedRelease.manifest` (the metadata is trimmed as it is
    /// decoded).
    pub fn slim_for_cache(&mut self) {
        crate::status::slim(self);
    }

    /// Replaces the raw status (the cache's slimmed copy of it).
    pub(crate) fn set_status(&mut self, status: Option<Box<RawValue>>) {
        self.status = status;
    }

    /// Bytes the CR takes without its status, as JSON: what a status write must leave
    /// room for.
    pub(crate) fn weight_without_status(&self) -> usize {
        let meta = serde_json::to_vec(&self.metadata).map_or(0, |v| v.len());
        meta + self.spec_raw().map_or(0, |s| s.get().len())
    }

    /// How logs and errors name the CR: `Kind namespace/name` (`Kind name` when
    /// cluster-scoped).
    pub(crate) fn display_id(&self, kind: &str) -> String {
        let name = self.metadata.name.as_deref().unwrap_or_default();
        match self.metadata.namespace.as_deref() {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        }
    }
}

impl Resource for CustomResource {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests;
