//! The cluster side of the actions, like Helm's `pkg/kube`: [`KubeClient`] turns
//! manifest documents into `DynamicObject`s, finds each kind's API resource through
//! discovery, and applies, reads, deletes and waits for objects. Every write of a
//! release object carries Helm's ownership metadata, and objects that belong to another
//! release are refused before anything is written.
//!
//! Beside it: readiness (`wait`), hooks (`hooks`), `lookup` for templates (`lookup`),
//! the cluster's `.Capabilities` (`capabilities`), what discovery found, kept and
//! shared (`discovery`), the retry policy of every request (`retry`) and field
//! ownership (`managers`: rudder applies as Helm's field manager and takes over what
//! other writers of the release recorded).

pub(crate) mod capabilities;
pub(crate) mod discovery;
pub(crate) mod hooks;
pub(crate) mod lookup;
pub(crate) mod managers;
pub(crate) mod retry;
pub(crate) mod wait;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde_json::Value;

use crate::error::{Error, Result};
use discovery::{DiscoveryCache, KindError, Mapping};
use wait::Write;

pub use managers::FIELD_MANAGER;
/// Helm's annotation naming the release that owns an object.
pub const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
/// Helm's annotation naming the namespace of the release that owns an object.
pub const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// The label Helm sets on every object it manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The annotation that keeps an object when the release drops it.
pub(crate) const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";
/// The value of [`RESOURCE_POLICY_ANNOTATION`] that keeps an object.
pub(crate) const KEEP_POLICY: &str = "keep";

const POLL: Duration = Duration::from_millis(100);
/// Attempts at taking over field ownership while other writers change the object.
const TAKE_OVER_ATTEMPTS: usize = 5;

/// Names one object: `Kind namespace/name` (or `Kind name` when cluster-scoped).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        match self.api_version.split_once('/') {
            Some((g, _)) => g,
            None => "",
        }
    }

    /// Identity across API versions: an object keeps its identity when a chart moves
    /// it from one version of its group to another.
    pub fn identity(&self) -> (String, String, Option<String>, String) {
        (
            self.group().to_string(),
            self.kind.clone(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {}/{}", self.kind, ns, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// The release objects belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub name: String,
    pub namespace: String,
    /// Where its waits report besides the log.
    pub report: wait::WaitReport,
    /// Who hears of its writes to the release's objects.
    pub writes: wait::WriteReport,
}

/// How objects are applied.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApplyOptions {
    /// Adopt existing objects even when they belong to another release or to none.
    pub take_ownership: bool,
}

/// A parsed object whose API resource and namespace are known.
#[derive(Debug, Clone)]
pub(crate) struct Object {
    pub object: DynamicObject,
    pub resource: ApiResource,
    pub reference: ObjectRef,
    /// Where the document came from (`chart/templates/x.yaml`), for messages.
    pub source: String,
}

/// A kube client with the resource mappings of one action, over a [`DiscoveryCache`]
/// (shared between actions when the caller keeps one).
pub(crate) struct KubeClient {
    client: Client,
    cache: Mutex<HashMap<(String, String), Mapping>>,
    /// Kinds the chart's CRDs will define, for resolving objects before those CRDs
    /// are installed (so the whole release is checked before anything is written).
    planned: Mutex<HashMap<(String, String), Mapping>>,
    /// What discovery found, possibly shared with other actions.
    discovery: Arc<DiscoveryCache>,
}

impl KubeClient {
    /// A client whose kinds resolve afresh (a discovery cache of its own, without TTL).
    pub(crate) fn new(client: Client) -> KubeClient {
        KubeClient::with_discovery(client, Arc::new(DiscoveryCache::new(Duration::ZERO)))
    }

    /// A client whose kinds resolve through `discovery`.
    pub(crate) fn with_discovery(client: Client, discovery: Arc<DiscoveryCache>) -> KubeClient {
        KubeClient {
            client,
            cache: Mutex::new(HashMap::new()),
            planned: Mutex::new(HashMap::new()),
            discovery,
        }
    }

    /// Remembers the kinds a CustomResourceDefinition object defines; objects of those
    /// kinds resolve through it while the cluster does not serve them yet.
    pub(crate) fn plan_crd(&self, crd: &DynamicObject) {
        let Some(spec) = crd.data.get("spec") else {
            return;
        };
        let s = |p: &str| spec.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (group, kind, plural) = (s("/group"), s("/names/kind"), s("/names/plural"));
        if group.is_empty() || kind.is_empty() || plural.is_empty() {
            return;
        }
        let namespaced = s("/scope") != "Cluster";
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Ok(mut planned) = self.planned.lock() else {
            return;
        };
        for v in versions {
            let Some(version) = v.get("name").and_then(Value::as_str) else {
                continue;
            };
            let gvk = GroupVersionKind::gvk(group, version, kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
            planned.insert(
                (resource.api_version.clone(), kind.to_string()),
                (resource, namespaced),
            );
        }
    }

    /// After `crd` was installed: the group versions it serves are discovered again
    /// (by later actions sharing the cache, and by the operator's dependent watches).
    pub(crate) async fn crd_installed(&self, crd: &DynamicObject) {
        let Some(spec) = crd.data.get("spec") else {
            return;
        };
        let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
        let versions: Vec<String> = spec
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .map(|v| format!("{group}/{v}"))
            .collect();
        self.discovery.forget(&versions).await;
    }

    /// Parses one YAML document; `None` for an empty (comment-only) document.
    pub(crate) fn parse_document(
        release: &str,
        source: &str,
        doc: &str,
    ) -> Result<Option<DynamicObject>> {
        let invalid = |message: String| Error::InvalidDocument {
            release: release.to_string(),
            source_path: source.to_string(),
            message,
        };
        let json = gocodec::yaml::parse_yaml_to_json(doc).map_err(|e| invalid(e.to_string()))?;
        if json.is_null() {
            return Ok(None);
        }
        let obj: DynamicObject =
            serde_json::from_value(json).map_err(|e| invalid(e.to_string()))?;
        let types_ok = obj
            .types
            .as_ref()
            .is_some_and(|t| !t.api_version.is_empty() && !t.kind.is_empty());
        if !types_ok {
            return Err(invalid("the object has no apiVersion or kind".into()));
        }
        if obj.metadata.name.as_deref().unwrap_or("").is_empty() {
            return Err(invalid("the object has no metadata.name".into()));
        }
        Ok(Some(obj))
    }

    /// Parses a document and resolves its kind and namespace; namespaced objects
    /// without a namespace go to the release namespace.
    pub(crate) async fn prepare(
        &self,
        owner: &Owner,
        source: &str,
        doc: &str,
    ) -> Result<Option<Object>> {
        let Some(mut object) = Self::parse_document(&owner.name, source, doc)? else {
            return Ok(None);
        };
        let (api_version, kind) = object
            .types
            .as_ref()
            .map(|t| (t.api_version.clone(), t.kind.clone()))
            .unwrap_or_default();
        let mut reference = ObjectRef {
            api_version: api_version.clone(),
            kind: kind.clone(),
            namespace: object.metadata.namespace.clone(),
            name: object.metadata.name.clone().unwrap_or_default(),
        };
        let (resource, namespaced) =
            self.resolve(&api_version, &kind)
                .await
                .map_err(|source| Error::UnknownKind {
                    release: owner.name.clone(),
                    object: Box::new(reference.clone()),
                    source: Box::new(source),
                })?;
        if namespaced {
            let ns = object
                .metadata
                .namespace
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| owner.namespace.clone());
            object.metadata.namespace = Some(ns.clone());
            reference.namespace = Some(ns);
        } else {
            object.metadata.namespace = None;
            reference.namespace = None;
        }
        Ok(Some(Object {
            object,
            resource,
            reference,
            source: source.to_string(),
        }))
    }

    async fn resolve(&self, api_version: &str, kind: &str) -> Result<Mapping, KindError> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(hit);
        }
        let hit = match self
            .discovery
            .resolve(&self.client, api_version, kind)
            .await
        {
            Ok(hit) => hit,
            Err(e) => {
                let planned = self.planned.lock().ok().and_then(|p| p.get(&key).cloned());
                // Not cached: the CRD gets installed later and discovery then answers.
                return planned.ok_or(e);
            }
        };
        if let Ok(mut c) = self.cache.lock() {
            c.insert(key, hit.clone());
        }
        Ok(hit)
    }

    fn api(&self, o: &Object) -> Api<DynamicObject> {
        match &o.reference.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &o.resource),
            None => Api::all_with(self.client.clone(), &o.resource),
        }
    }

    /// The live object, if it exists.
    pub(crate) async fn get(&self, owner: &Owner, o: &Object) -> Result<Option<DynamicObject>> {
        self.api(o)
            .get_opt(&o.reference.name)
            .await
            .map_err(|e| Error::api(&owner.name, "read", &o.reference, e))
    }

    /// Server-side applies the object, forcing conflicts, as field manager `helm`;
    /// with `mark_owner` it first adds Helm's ownership annotations and label.
    pub(crate) async fn apply(
        &self,
        owner: &Owner,
        o: &Object,
        mark_owner: bool,
    ) -> Result<DynamicObject> {
        let mut obj = o.object.clone();
        if mark_owner {
            let ann = obj
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            ann.insert(RELEASE_NAME_ANNOTATION.into(), owner.name.clone());
            ann.insert(RELEASE_NAMESPACE_ANNOTATION.into(), owner.namespace.clone());
            let labels = obj.metadata.labels.get_or_insert_with(Default::default);
            labels.insert(MANAGED_BY_LABEL.into(), "Helm".into());
        }
        // Server-side apply rejects these fields in the request body.
        obj.metadata.resource_version = None;
        obj.metadata.managed_fields = None;
        let params = PatchParams::apply(FIELD_MANAGER).force();
        owner.writes.report(&o.reference, Write::Sending);
        let applied = self
            .api(o)
            .patch(&o.reference.name, &params, &Patch::Apply(&obj))
            .await;
        let step = match &applied {
            Ok(a) => Write::Done(a.metadata.resource_version.as_deref()),
            Err(_) => Write::Failed,
        };
        owner.writes.report(&o.reference, step);
        applied.map_err(|e| Error::api(&owner.name, "apply", &o.reference, e))
    }

    /// Moves the ownership other writers of the release recorded on the `live` object
    /// to rudder's field manager (see `managers`), so the next apply removes what it
    /// no longer renders. One merge patch of `metadata.managedFields`, guarded by the
    /// resourceVersion it was computed from (re-read and retried when someone else
    /// wrote in between). Returns the object's resourceVersion after the patch;
    /// `None` when there was nothing to take over.
    pub(crate) async fn take_over_fields(
        &self,
        owner: &Owner,
        o: &Object,
        live: &DynamicObject,
    ) -> Result<Option<String>> {
        let api = self.api(o);
        let failed = |e| {
            Error::api(
                &owner.name,
                "take over the field ownership of",
                &o.reference,
                e,
            )
        };
        let mut live = std::borrow::Cow::Borrowed(live);
        for _ in 0..TAKE_OVER_ATTEMPTS {
            let entries = live.metadata.managed_fields.as_deref().unwrap_or_default();
            let Some(entries) = managers::taken_over(entries) else {
                return Ok(None);
            };
            let patch = serde_json::json!({"metadata": {
                "resourceVersion": live.metadata.resource_version,
                "managedFields": entries,
            }});
            let params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..PatchParams::default()
            };
            owner.writes.report(&o.reference, Write::Sending);
            let patched = api
                .patch(&o.reference.name, &params, &Patch::Merge(&patch))
                .await;
            let step = match &patched {
                Ok(p) => Write::Done(p.metadata.resource_version.as_deref()),
                Err(_) => Write::Failed,
            };
            owner.writes.report(&o.reference, step);
            match patched {
                Ok(patched) => return Ok(patched.metadata.resource_version),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    match api.get_opt(&o.reference.name).await.map_err(failed)? {
                        Some(fresh) => live = std::borrow::Cow::Owned(fresh),
                        None => return Ok(None),
                    }
                }
                Err(e) => return Err(failed(e)),
            }
        }
        // Ownership is bookkeeping: the apply still sets every rendered value.
        tracing::warn!(release = %owner.name, object = %o.reference,
            "the object kept changing; applying without taking over other managers' fields");
        Ok(None)
    }

    /// Like [`KubeClient::apply`] after [`KubeClient::take_over_fields`] of the `live`
    /// object (when it exists), but with `replace` an object the API server refuses to
    /// change in place (an immutable field, a conflict) is deleted and created again,
    /// as Helm's `--force` does.
    pub(crate) async fn apply_or_replace(
        &self,
        owner: &Owner,
        o: &Object,
        live: Option<&DynamicObject>,
        replace: bool,
        timeout: Duration,
    ) -> Result<DynamicObject> {
        if let Some(live) = live {
            self.take_over_fields(owner, o, live).await?;
        }
        match self.apply(owner, o, true).await {
            Err(Error::Api { source, .. }) if replace && needs_replace(&source) => {
                tracing::info!(release = %owner.name, object = %o.reference, error = %source, "replacing an object that cannot be changed in place");
                self.delete_and_wait(owner, o, timeout).await?;
                self.apply(owner, o, true).await
            }
            other => other,
        }
    }

    /// Deletes the object with background propagation; `false` when it was already gone.
    pub(crate) async fn delete(&self, owner: &Owner, o: &Object) -> Result<bool> {
        owner.writes.report(&o.reference, Write::Sending);
        let deleted = self
            .api(o)
            .delete(&o.reference.name, &DeleteParams::background())
            .await;
        let step = match &deleted {
            Ok(_) => Write::Done(None),
            Err(_) => Write::Failed,
        };
        owner.writes.report(&o.reference, step);
        match deleted {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(Error::api(&owner.name, "delete", &o.reference, e)),
        }
    }

    /// Deletes the object and waits until the API server no longer returns it.
    pub(crate) async fn delete_and_wait(
        &self,
        owner: &Owner,
        o: &Object,
        timeout: Duration,
    ) -> Result<()> {
        if !self.delete(owner, o).await? {
            return Ok(());
        }
        let start = Instant::now();
        let mut progress = wait::Progress::new(owner, timeout);
        loop {
            if self.get(owner, o).await?.is_none() {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(Error::Timeout {
                    release: owner.name.clone(),
                    object: Box::new(o.reference.clone()),
                    what: "disappear after deletion",
                    timeout,
                });
            }
            progress.still_waiting(|| format!("{} to disappear after deletion", o.reference));
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls the object until `check` says it is done (`Ok(true)`) or failed (`Err`).
    pub(crate) async fn wait_for<F>(
        &self,
        owner: &Owner,
        o: &Object,
        what: &'static str,
        timeout: Duration,
        check: F,
    ) -> Result<Result<(), String>>
    where
        F: Fn(&DynamicObject) -> Result<bool, String>,
    {
        let start = Instant::now();
        let mut progress = wait::Progress::new(owner, timeout);
        loop {
            if let Some(live) = self.get(owner, o).await? {
                match check(&live) {
                    Ok(true) => return Ok(Ok(())),
                    Ok(false) => {}
                    Err(reason) => return Ok(Err(reason)),
                }
            }
            if start.elapsed() >= timeout {
                return Err(Error::Timeout {
                    release: owner.name.clone(),
                    object: Box::new(o.reference.clone()),
                    what,
                    timeout,
                });
            }
            progress.still_waiting(|| format!("{} to {what}", o.reference));
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Whether `live` carries `owner`'s Helm ownership annotations.
pub(crate) fn owned_by(live: &DynamicObject, owner: &Owner) -> bool {
    let ann = live.metadata.annotations.as_ref();
    let get = |k: &str| ann.and_then(|a| a.get(k));
    get(RELEASE_NAME_ANNOTATION) == Some(&owner.name)
        && get(RELEASE_NAMESPACE_ANNOTATION) == Some(&owner.namespace)
}

/// Refuses an existing object that carries another release's ownership (or none),
/// unless `take_ownership` is set; objects already owned by `owner` are adopted.
pub(crate) fn check_live_ownership(
    owner: &Owner,
    o: &Object,
    live: &DynamicObject,
    opts: &ApplyOptions,
) -> Result<()> {
    if opts.take_ownership {
        return Ok(());
    }
    let ann = live.metadata.annotations.clone().unwrap_or_default();
    let name = ann.get(RELEASE_NAME_ANNOTATION);
    let ns = ann.get(RELEASE_NAMESPACE_ANNOTATION);
    if name == Some(&owner.name) && ns == Some(&owner.namespace) {
        return Ok(());
    }
    let phrase = match (name, ns) {
        (Some(n), Some(ns)) => format!("is owned by release {ns}/{n}"),
        (Some(n), None) => format!("is owned by release {n:?}"),
        _ => format!("is not managed by Helm (no {RELEASE_NAME_ANNOTATION} annotation)"),
    };
    Err(Error::Conflict {
        release: owner.name.clone(),
        object: Box::new(o.reference.clone()),
        owner: phrase,
    })
}

/// Whether an apply error means the object must be recreated to change: a conflict,
/// or a 422 about fields that cannot change (other invalid values would fail a
/// re-create too, so those never delete anything).
pub(crate) fn needs_replace(e: &kube::Error) -> bool {
    let kube::Error::Api(s) = e else {
        return false;
    };
    if s.code == 409 {
        return true;
    }
    let m = s.message.to_ascii_lowercase();
    s.code == 422
        && (m.contains("immutable") || m.contains("forbidden") || m.contains("may not change"))
}

/// The `status` of condition `type_` in `status.conditions`, if present.
pub(crate) fn condition<'a>(obj: &'a DynamicObject, type_: &str) -> Option<(&'a str, &'a Value)> {
    obj.data
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
        .and_then(|c| Some((c.get("status")?.as_str()?, c)))
}

/// Whether the object carries `helm.sh/resource-policy: keep`.
pub(crate) fn is_kept(obj: &DynamicObject) -> bool {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
        .is_some_and(|v| v.trim() == KEEP_POLICY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_documents_and_rejects_bad_ones() {
        let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
        let obj = KubeClient::parse_document("r", "t.yaml", doc)
            .unwrap()
            .unwrap();
        assert_eq!(obj.metadata.name.as_deref(), Some("a"));
        assert!(
            KubeClient::parse_document("r", "t.yaml", "# only a comment\n")
                .unwrap()
                .is_none()
        );
        let err =
            KubeClient::parse_document("r", "t.yaml", "kind: ConfigMap\nmetadata:\n  name: a\n")
                .unwrap_err();
        assert!(err.to_string().contains("t.yaml"), "{err}");
        let err = KubeClient::parse_document("r", "t.yaml", "apiVersion: v1\nkind: ConfigMap\n")
            .unwrap_err();
        assert!(err.to_string().contains("metadata.name"), "{err}");
    }

    #[test]
    fn object_ref_display_and_identity() {
        let a = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        };
        assert_eq!(a.to_string(), "Deployment ns/web");
        let b = ObjectRef {
            api_version: "apps/v1beta1".into(),
            ..a.clone()
        };
        assert_eq!(a.identity(), b.identity());
        let c = ObjectRef {
            api_version: "v1".into(),
            kind: "Namespace".into(),
            namespace: None,
            name: "x".into(),
        };
        assert_eq!(c.to_string(), "Namespace x");
        assert_eq!(c.group(), "");
    }

    #[test]
    fn keep_policy() {
        let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    helm.sh/resource-policy: keep\n";
        let obj = KubeClient::parse_document("r", "t", doc).unwrap().unwrap();
        assert!(is_kept(&obj));
    }
}
