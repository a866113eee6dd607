//! Test support for the verbs' unit tests, in the spirit of Helm's action tests
//! (`kubefake` + `driver.NewMemory()`): an [`ActionConfig`] over memory storage, whose client talks to [`FakeCluster`], a few hundred lines that
//! answer discovery for a handful of kinds and keep objects in a map. Server-side
//! apply replaces the object; there is no validation, no field ownership and no
//! controller, so readiness waits are not for these tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use chart::loader::{BufferedFile, Chart};
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kube::Client;
use release::{MemoryDriver, StorageDriver};
use serde_json::{json, Value};

use crate::config::ActionConfig;
use crate::options::ActionOptions;

pub(crate) const NS: &str = "default";

/// The kinds the fake cluster serves: (group/version, plural, kind, namespaced).
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("v1", "configmaps", "ConfigMap", true),
    ("v1", "services", "Service", true),
    ("v1", "namespaces", "Namespace", false),
    ("apps/v1", "deployments", "Deployment", true),
];

/// Objects by request path (`/api/v1/namespaces/default/configmaps/a`).
#[derive(Default)]
pub(crate) struct FakeCluster {
    objects: Mutex<BTreeMap<String, Value>>,
    version: Mutex<u64>,
    /// Every request, as `METHOD path`.
    requests: Mutex<Vec<String>>,
}

impl FakeCluster {
    /// The stored object at `path`, if any.
    pub(crate) fn object(&self, path: &str) -> Option<Value> {
        self.lock_objects().get(path).cloned()
    }

    /// Puts an object in place, as someone else would have created it.
    pub(crate) fn put(&self, path: &str, object: Value) {
        let stored = self.stamp(object, None);
        self.lock_objects().insert(path.to_string(), stored);
    }

    /// Deletes an object behind the release's back.
    pub(crate) fn remove(&self, path: &str) {
        self.lock_objects().remove(path);
    }

    /// The requests seen so far that start with `prefix` (`"PATCH "`, say).
    pub(crate) fn requests(&self, prefix: &str) -> Vec<String> {
        let seen = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter()
            .filter(|r| r.starts_with(prefix))
            .cloned()
            .collect()
    }

    fn lock_objects(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        self.objects.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The object with a new resourceVersion, keeping the uid of `before`.
    fn stamp(&self, mut object: Value, before: Option<&Value>) -> Value {
        let rv = {
            let mut v = self.version.lock().unwrap_or_else(|e| e.into_inner());
            *v += 1;
            *v
        };
        let uid = before
            .and_then(|b| b.pointer("/metadata/uid").cloned())
            .unwrap_or_else(|| json!(format!("uid-{rv}")));
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(rv.to_string()));
            meta.insert("uid".into(), uid);
        }
        object
    }

    fn answer(&self, method: &Method, path: &str, body: &[u8]) -> (StatusCode, Value) {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!("{method} {path}"));
        if let Some(discovery) = discovery(path) {
            return (StatusCode::OK, discovery);
        }
        let not_found = || (StatusCode::NOT_FOUND, status(404, "NotFound", path));
        if !is_object_path(path) {
            return not_found();
        }
        match *method {
            Method::GET => match self.object(path) {
                Some(o) => (StatusCode::OK, o),
                None => not_found(),
            },
            Method::PATCH => {
                let Ok(object) = serde_json::from_slice::<Value>(body) else {
                    return (
                        StatusCode::BAD_REQUEST,
                        status(400, "BadRequest", "not JSON"),
                    );
                };
                let mut objects = self.lock_objects();
                let before = objects.get(path).cloned();
                // Like the API server, an apply that changes nothing keeps the version.
                if let Some(b) = before.as_ref().filter(|b| unstamped(b) == object) {
                    return (StatusCode::OK, b.clone());
                }
                let stored = self.stamp(object, before.as_ref());
                objects.insert(path.to_string(), stored.clone());
                let code = if before.is_some() {
                    StatusCode::OK
                } else {
                    StatusCode::CREATED
                };
                (code, stored)
            }
            Method::DELETE => match self.lock_objects().remove(path) {
                Some(_) => (StatusCode::OK, status(200, "", "deleted")),
                None => not_found(),
            },
            _ => (
                StatusCode::METHOD_NOT_ALLOWED,
                status(405, "MethodNotAllowed", path),
            ),
        }
    }
}

/// The object without what the server adds.
fn unstamped(object: &Value) -> Value {
    let mut o = object.clone();
    if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("uid");
    }
    o
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": if code < 400 { "Success" } else { "Failure" },
        "message": message, "reason": reason, "code": code})
}

/// Whether `path` names one object of a served kind.
fn is_object_path(path: &str) -> bool {
    KINDS.iter().any(|(gv, plural, _, namespaced)| {
        let base = if gv.contains('/') {
            format!("/apis/{gv}/")
        } else {
            format!("/api/{gv}/")
        };
        let Some(rest) = path.strip_prefix(&base) else {
            return false;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        match (namespaced, parts.as_slice()) {
            (true, ["namespaces", _, p, _]) | (false, [p, _]) => p == plural,
            _ => false,
        }
    })
}

/// The discovery documents the fake serves.
fn discovery(path: &str) -> Option<Value> {
    let resources = |gv: &str| {
        let list: Vec<Value> = KINDS
            .iter()
            .filter(|(g, ..)| *g == gv)
            .map(|(_, plural, kind, namespaced)| {
                json!({"name": plural, "singularName": kind.to_ascii_lowercase(),
                    "namespaced": namespaced, "kind": kind,
                    "verbs": ["get", "list", "create", "update", "patch", "delete"]})
            })
            .collect();
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": list})
    };
    match path {
        "/version" => Some(json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0",
            "gitCommit": "", "gitTreeState": "", "buildDate": "", "goVersion": "",
            "compiler": "", "platform": "linux/amd64"})),
        "/api" => Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": []})),
        "/apis" => Some(
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}),
        ),
        "/api/v1" => Some(resources("v1")),
        "/apis/apps/v1" => Some(resources("apps/v1")),
        _ => None,
    }
}

/// A client whose every request the fake cluster answers.
pub(crate) fn fake_client(cluster: Arc<FakeCluster>) -> Client {
    let svc = tower::service_fn(move |req: Request<Body>| {
        let cluster = cluster.clone();
        async move {
            let method = req.method().clone();
            let path = req.uri().path().to_string();
            let body = http_body_util::BodyExt::collect(req.into_body())
                .await
                .map(|b| b.to_bytes().to_vec())
                .unwrap_or_default();
            let (code, answer) = cluster.answer(&method, &path, &body);
            let bytes = serde_json::to_vec(&answer).unwrap_or_default();
            Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(bytes))
                .map_err(|e| kube::Error::Service(e.into()))
        }
    });
    Client::new(svc, NS)
}

/// An action configuration over memory storage (the locks on its records), talking
/// to a fresh fake cluster.
pub(crate) fn memory_config() -> (ActionConfig, Arc<FakeCluster>) {
    let cluster = Arc::new(FakeCluster::default());
    let cfg = ActionConfig::new(fake_client(cluster.clone()))
        .with_driver(StorageDriver::Memory(Arc::new(MemoryDriver::new())));
    (cfg, cluster)
}

/// Stores `rel` as a crashed rudder action leaves it: with the lock of a holder that
/// stopped renewing it long ago.
pub(crate) async fn leave_crashed(cfg: &ActionConfig, rel: &release::Release) {
    let store = cfg.storage(&rel.namespace);
    store.create(rel).await.expect("create record");
    let long_ago = k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).expect("time");
    let lock = release::lock::LockState::expired("crashed-host/4242/deadbeef", long_ago);
    store
        .driver()
        .annotate(
            &release::make_key(&rel.name, rel.version),
            None,
            release::lock::LOCK_ANNOTATION,
            Some(&lock.encode()),
        )
        .await
        .expect("lock annotation");
}

/// Options with explicit capabilities, so no test depends on discovery by accident.
pub(crate) fn opts(name: &str) -> ActionOptions {
    let mut o = ActionOptions::new(name, NS);
    o.kube_version = Some("v1.33.0".into());
    o
}

/// A chart made of `Chart.yaml`, `values.yaml` and the given templates.
pub(crate) fn chart(values: &str, templates: &[(&str, &str)]) -> Arc<Chart> {
    let mut files = vec![
        file("Chart.yaml", "apiVersion: v2\nname: demo\nversion: 0.1.0\n"),
        file("values.yaml", values),
    ];
    files.extend(
        templates
            .iter()
            .map(|(n, t)| file(&format!("templates/{n}"), t)),
    );
    Arc::new(chart::loader::load_files(files).expect("test chart loads"))
}

fn file(name: &str, text: &str) -> BufferedFile {
    BufferedFile {
        name: name.to_string(),
        data: text.as_bytes().to_vec(),
    }
}

/// A ConfigMap `{{ .Release.Name }}-cfg` holding `.Values.greeting`.
pub(crate) const CONFIGMAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  greeting: {{ .Values.greeting | quote }}\n";

/// The `demo` chart: one ConfigMap greeting `hello`.
pub(crate) fn demo_chart() -> Arc<Chart> {
    chart("greeting: hello\n", &[("cm.yaml", CONFIGMAP)])
}

/// The path of ConfigMap `name` in [`NS`].
pub(crate) fn configmap_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/configmaps/{name}")
}
