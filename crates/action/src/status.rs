//! `helm status`: a revision of a release as the status output shows it (without its
//! chart, which the status never prints), and the release's live objects beside it,
//! read the way Helm v4's status reads them.

use kube::api::{DynamicObject, GetParams, ListParams};
use kube::core::Request;
use kube::Resource as _;
use release::record::Release;
use serde_json::{Map, Value};

use crate::config::ActionConfig;
use crate::error::Result;
use crate::get::Get;
use crate::kube::{wait::WaitReport, Owner};
use crate::record::manifest_documents;

/// What a table read accepts, as kubectl and Helm ask for server-side tables.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,\
                            application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// Where Helm lists the Pods of the release's workloads.
const RELATED_PODS: &str = "v1/Pod(related)";

/// The `status` verb.
pub struct ReleaseStatus<'a> {
    cfg: &'a ActionConfig,
    get: Get<'a>,
}

impl<'a> ReleaseStatus<'a> {
    pub fn new(cfg: &'a ActionConfig, namespace: impl Into<String>) -> ReleaseStatus<'a> {
        ReleaseStatus {
            cfg,
            get: Get::new(cfg, namespace),
        }
    }

    /// Revision `revision` of `name` (the newest when `None`), its chart left out.
    pub async fn run(&self, name: &str, revision: Option<i64>) -> Result<Release> {
        let mut rel = self.get.run(name, revision).await?;
        rel.chart = None;
        Ok(rel)
    }

    /// The release's live objects as `helm status` lists them (`info.resources`):
    /// by `version/Kind` of their API (`v1/Deployment`), in manifest order, and the
    /// Pods of each workload's label selector under `v1/Pod(related)` (one list per
    /// distinct selector). As the server's tables with `tables` (what the table output
    /// prints), else the objects themselves. Objects that are gone, and documents whose
    /// kind the cluster no longer serves, are left out: a status read never fails on
    /// what changed since the release was made.
    pub async fn resources(&self, rel: &Release, tables: bool) -> Result<Map<String, Value>> {
        let kube = self.cfg.kube();
        let owner = Owner {
            name: rel.name.clone(),
            namespace: rel.namespace.clone(),
            report: WaitReport::default(),
            writes: Default::default(),
        };
        let mut out = Map::new();
        let mut selectors: Vec<Map<String, Value>> = Vec::new();
        for (source, doc) in manifest_documents(&rel.manifest) {
            let Ok(Some(o)) = kube.prepare(&owner, &source, &doc).await else {
                continue;
            };
            let ns = o.reference.namespace.as_deref();
            let url = DynamicObject::url_path(&o.resource, ns);
            let get = Request::new(url).get(&o.reference.name, &GetParams::default());
            let Some(shown) = self.read(get, tables).await else {
                continue;
            };
            let key = format!("{}/{}", o.resource.version, o.resource.kind);
            push(&mut out, &key, shown);
            // As Helm does, the selector is the manifest's, so one read serves both
            // the table and the object output.
            let Some(selector) = workload_selector(&o.reference.kind, &o.object.data) else {
                continue;
            };
            if selectors.contains(&selector) {
                continue;
            }
            let labels = label_selector(&selector);
            selectors.push(selector);
            let pods_url = match ns {
                Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
                None => "/api/v1/pods".to_string(),
            };
            let list = Request::new(pods_url).list(&ListParams::default().labels(&labels));
            if let Some(pods) = self.read(list, tables).await {
                push(&mut out, RELATED_PODS, pods);
            }
        }
        Ok(out)
    }

    /// One read, as JSON (or as a server-side table); `None` when it fails.
    async fn read(
        &self,
        request: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
        table: bool,
    ) -> Option<Value> {
        let mut request = request.ok()?;
        if table {
            request.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(TABLE_ACCEPT),
            );
        }
        self.cfg.client().request::<Value>(request).await.ok()
    }
}

/// Appends `v` to the list under `key` (every value of `out` is a list).
fn push(out: &mut Map<String, Value>, key: &str, v: Value) {
    let list = out
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(items) = list {
        items.push(v);
    }
}

/// The label selector whose Pods Helm relates to a workload: `spec.selector` of a
/// ReplicationController, `spec.selector.matchLabels` of the apps and batch
/// workloads; `None` for every other kind. `obj` is the object without its
/// `apiVersion`, `kind` and `metadata` (a `DynamicObject`'s data).
fn workload_selector(kind: &str, obj: &Value) -> Option<Map<String, Value>> {
    let pointer = match kind {
        "ReplicationController" => "/spec/selector",
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => {
            "/spec/selector/matchLabels"
        }
        _ => return None,
    };
    Some(
        obj.pointer(pointer)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    )
}

/// `labels.Set(selector).AsSelector().String()`: `key=value` by key, comma-joined.
fn label_selector(selector: &Map<String, Value>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn workloads_relate_the_pods_of_their_selector() {
        let deploy = json!({"spec": {"selector": {
            "matchLabels": {"b": "2", "a": "1"}, "matchExpressions": []}}});
        let sel = workload_selector("Deployment", &deploy).expect("a workload");
        assert_eq!(label_selector(&sel), "a=1,b=2");
        let rc = json!({"spec": {"selector": {"app": "x"}}});
        assert_eq!(
            workload_selector("ReplicationController", &rc).map(|s| label_selector(&s)),
            Some("app=x".into())
        );
        assert_eq!(workload_selector("Service", &rc), None);
    }
}
