//! An unavailable aggregated API on any test cluster, the most common broken state of a
//! real cluster (metrics-server or a metrics adapter down), which a client must survive
//! without stalling. Two ways to get one:
//!
//! - [`TestNamespace::unavailable_apiservice`] registers a real `APIService` whose
//!   Service does not exist. The embedded server and a real kube-apiserver alike then list
//!   its group version in `/apis` and answer its discovery and every request under it
//!   with `503` `service unavailable`, and its status says `ServiceNotFound`. It is
//!   cluster-wide while it exists (on a shared cluster every test sees it; give it a group
//!   of the test's own) and deleted at teardown.
//! - [`TestNamespace::unavailable_api`] is a small HTTP proxy that forwards every request
//!   to the cluster, except that it adds a group version to `/apis` and answers it as
//!   kube-apiserver does for such an APIService. It registers nothing and counts the
//!   requests that reach the unavailable group version, so tests can assert that a client
//!   asks once and never retries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body as AxumBody;
use axum::extract::State;
use axum::http::{HeaderValue, Request, Response, StatusCode};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{json, Value};

use crate::namespace::{TestNamespace, CREATED_BY};
use crate::Error;

/// How long a new APIService may take to be reported unavailable (a real aggregator
/// notices within seconds).
const APISERVICE_SETTLES: Duration = Duration::from_secs(60);

/// The (missing) Service an [`TestNamespace::unavailable_apiservice`] names.
const MISSING_SERVICE: &str = "unavailable-api";

/// kube-apiserver's answer for an unavailable APIService (`http.Error` in
/// kube-aggregator's proxy handler).
pub const UNAVAILABLE_BODY: &str = "service unavailable\n";

/// The largest request body forwarded.
const MAX_BODY: usize = 64 << 20;

/// A proxy serving an unavailable aggregated API; see the module docs. Stops when
/// dropped.
pub struct UnavailableApi {
    group_version: String,
    kubeconfig: PathBuf,
    url: String,
    requests: Arc<Mutex<HashMap<String, usize>>>,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Proxy {
    upstream: kube::Client,
    group: String,
    version: String,
    requests: Arc<Mutex<HashMap<String, usize>>>,
}

impl TestNamespace {
    /// A proxy in front of this namespace's cluster that also lists `group_version`
    /// (`custom.metrics.k8s.io/v1beta1`) as an aggregated API whose service is down;
    /// its kubeconfig defaults to this namespace.
    pub fn unavailable_api(&self, group_version: &str) -> UnavailableApi {
        match UnavailableApi::start(self, group_version) {
            Ok(u) => u,
            Err(e) => panic!(
                "cannot start the unavailable API proxy: {}",
                apierror::Chain(&e)
            ),
        }
    }
}

impl TestNamespace {
    /// Registers an `APIService` for `group_version` (`group/version`) whose Service, in
    /// this namespace, does not exist, and waits until the cluster reports it unavailable
    /// (`Available` `False`, its discovery answering 503); returns its name
    /// (`version.group`). It is labelled [`CREATED_BY`] and deleted at teardown, before
    /// the namespace, which could not finish while it exists.
    pub fn unavailable_apiservice(&self, group_version: &str) -> String {
        match self.try_unavailable_apiservice(group_version) {
            Ok(name) => name,
            Err(e) => panic!(
                "cannot register an unavailable APIService: {}",
                apierror::Chain(&e)
            ),
        }
    }

    fn try_unavailable_apiservice(&self, group_version: &str) -> Result<String, Error> {
        let (group, version) = group_version
            .split_once('/')
            .ok_or_else(|| Error::Invalid(format!("{group_version:?} is not group/version")))?;
        let name = format!("{version}.{group}");
        let resource = apiservice_resource();
        // Registered first: a failure below still deletes it.
        self.delete_on_teardown(resource.clone(), &name);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name, "labels": {CREATED_BY.0: CREATED_BY.1}},
            "spec": {
                "group": group, "version": version,
                "groupPriorityMinimum": 100, "versionPriority": 100,
                "insecureSkipTLSVerify": true,
                "service": {"name": MISSING_SERVICE, "namespace": self.name(), "port": 443},
            },
        }))
        .map_err(|e| Error::Invalid(e.to_string()))?;
        let api: Api<DynamicObject> = Api::all_with(self.cluster().inner.client.clone(), &resource);
        // Made here, on the test's thread, so that its deadline knows what it waits for.
        let settled = {
            let (api, quick) = (api.clone(), self.cluster().inner.quick.clone());
            let (path, name) = (format!("/apis/{group}/{version}"), name.clone());
            crate::eventually(APISERVICE_SETTLES, move || {
                let (api, quick, path, name) =
                    (api.clone(), quick.clone(), path.clone(), name.clone());
                async move { unavailable_now(&api, &quick, &path, &name).await }
            })
        };
        let created = name.clone();
        self.cluster().inner.worker.run(async move {
            api.create(&PostParams::default(), &object)
                .await
                .map_err(|e| Error::kube(&format!("create APIService {created}"), e))?;
            settled.await;
            Ok::<_, Error>(())
        })?;
        Ok(name)
    }
}

/// `Ok` once APIService `name` is `Available` `False` and `path` (its discovery)
/// answers 503; otherwise what was seen.
async fn unavailable_now(
    api: &Api<DynamicObject>,
    quick: &kube::Client,
    path: &str,
    name: &str,
) -> Result<(), String> {
    let apiservice = api
        .get(name)
        .await
        .map_err(|e| format!("APIService {name}: {e}"))?;
    let available = apiservice
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .cloned();
    if available.as_ref().map(|c| c["status"].clone()) != Some(json!("False")) {
        return Err(format!(
            "APIService {name} is not unavailable yet: {available:?}"
        ));
    }
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    match quick.request_text(request).await {
        Err(kube::Error::Api(s)) if s.code == 503 => Ok(()),
        other => Err(format!("{path} answered {other:?}, not 503")),
    }
}

fn apiservice_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
        "apiservices",
    )
}

impl UnavailableApi {
    fn start(ns: &TestNamespace, group_version: &str) -> Result<UnavailableApi, Error> {
        let (group, version) = group_version
            .split_once('/')
            .ok_or_else(|| Error::Invalid(format!("{group_version:?} is not group/version")))?;
        let mut config = ns.cluster().config().clone();
        // A proxy passes answers on as they are.
        config.default_retry = false;
        let upstream = ns
            .cluster()
            .block_on(async move { kube::Client::try_from(config) })
            .map_err(|e| Error::kube("build the proxy's client", e))?;
        let requests = Arc::new(Mutex::new(HashMap::new()));
        let proxy = Proxy {
            upstream,
            group: group.to_string(),
            version: version.to_string(),
            requests: requests.clone(),
        };
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| Error::Io {
            what: "bind the unavailable API proxy".into(),
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| Error::Io {
            what: "read the proxy's address".into(),
            source,
        })?;
        listener.set_nonblocking(true).map_err(|source| Error::Io {
            what: "set up the proxy's socket".into(),
            source,
        })?;
        let app = axum::Router::new().fallback(forward).with_state(proxy);
        let server = ns.cluster().inner.worker.spawn(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            let _ = axum::serve(listener, app).await;
        });
        let url = format!("http://{addr}");
        let kubeconfig = ns
            .dir()
            .join(format!("kubeconfig-unavailable-{group}-{version}"));
        write_kubeconfig(&kubeconfig, &url, ns.name())?;
        Ok(UnavailableApi {
            group_version: group_version.to_string(),
            kubeconfig,
            url,
            requests,
            server,
        })
    }

    /// The unavailable group version.
    pub fn group_version(&self) -> &str {
        &self.group_version
    }

    /// Its APIService's name (`v1beta1.custom.metrics.k8s.io`).
    pub fn apiservice(&self) -> String {
        let (group, version) = self
            .group_version
            .split_once('/')
            .unwrap_or(("", &self.group_version));
        format!("{version}.{group}")
    }

    /// A kubeconfig for the proxy (no credentials: it adds the cluster's), whose
    /// context defaults to the namespace.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Client settings for the proxy (kube's default retries included; switch them off
    /// to see a client's own behaviour).
    pub fn config(&self, namespace: &str) -> kube::Config {
        match self.url.parse() {
            Ok(url) => {
                let mut c = kube::Config::new(url);
                c.default_namespace = namespace.to_string();
                c
            }
            Err(e) => panic!("the proxy's URL {} does not parse: {e}", self.url),
        }
    }

    /// How many requests reached the unavailable group version (its discovery and
    /// everything under it).
    pub fn requests(&self) -> usize {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        requests.values().sum()
    }

    /// How many requests asked for `path` exactly (`/apis/<group>/<version>`).
    pub fn requests_for(&self, path: &str) -> usize {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        requests.get(path).copied().unwrap_or_default()
    }
}

impl Drop for UnavailableApi {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn forward(State(proxy): State<Proxy>, req: Request<AxumBody>) -> Response<AxumBody> {
    let path = req.uri().path().to_string();
    let prefix = format!("/apis/{}/{}", proxy.group, proxy.version);
    if path == prefix || path.starts_with(&format!("{prefix}/")) {
        let mut requests = proxy.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests.entry(path).or_default() += 1;
        return unavailable();
    }
    if path == format!("/apis/{}", proxy.group) {
        return json_response(StatusCode::OK, &proxy.group_doc());
    }
    let listing = path == "/apis" || path == "/apis/";
    match send(&proxy.upstream, req, listing).await {
        Ok(res) if listing && res.status().is_success() => {
            let bytes = match axum::body::to_bytes(AxumBody::new(res.into_body()), MAX_BODY).await {
                Ok(b) => b,
                Err(e) => return bad_gateway(&e.to_string()),
            };
            let mut list: Value = match serde_json::from_slice(&bytes) {
                Ok(v) => v,
                Err(e) => return bad_gateway(&format!("/apis is not an APIGroupList: {e}")),
            };
            if let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) {
                groups.push(proxy.group_doc());
            }
            json_response(StatusCode::OK, &list)
        }
        Ok(res) => {
            let (parts, body) = res.into_parts();
            Response::from_parts(parts, AxumBody::new(body))
        }
        Err(e) => bad_gateway(&e.to_string()),
    }
}

impl Proxy {
    fn group_doc(&self) -> Value {
        let gv = json!({
            "groupVersion": format!("{}/{}", self.group, self.version),
            "version": self.version,
        });
        json!({
            "kind": "APIGroup", "apiVersion": "v1", "name": self.group,
            "versions": [gv.clone()], "preferredVersion": gv,
        })
    }
}

/// Sends `req` on to the cluster; the group list is asked for in its plain form, so
/// the added group fits in (clients asking for aggregated discovery accept it too).
async fn send(
    upstream: &kube::Client,
    req: Request<AxumBody>,
    listing: bool,
) -> Result<Response<kube::client::Body>, String> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| e.to_string())?;
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mut out = http::Request::builder().method(parts.method).uri(path);
    for (name, value) in &parts.headers {
        if name == http::header::HOST || name == http::header::AUTHORIZATION {
            continue;
        }
        if listing && name == http::header::ACCEPT {
            continue;
        }
        out = out.header(name, value);
    }
    if listing {
        out = out.header(http::header::ACCEPT, "application/json");
    }
    let out = out
        .body(kube::client::Body::from(bytes))
        .map_err(|e| e.to_string())?;
    upstream.send(out).await.map_err(|e| e.to_string())
}

fn unavailable() -> Response<AxumBody> {
    let mut res = Response::new(AxumBody::from(UNAVAILABLE_BODY));
    *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let h = res.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

fn json_response(status: StatusCode, v: &Value) -> Response<AxumBody> {
    let mut res = Response::new(AxumBody::from(v.to_string()));
    *res.status_mut() = status;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

fn bad_gateway(why: &str) -> Response<AxumBody> {
    let mut res = Response::new(AxumBody::from(format!("testkit proxy: {why}\n")));
    *res.status_mut() = StatusCode::BAD_GATEWAY;
    res
}

/// A kubeconfig for the plain-HTTP proxy, defaulting to `namespace`.
fn write_kubeconfig(path: &Path, url: &str, namespace: &str) -> Result<(), Error> {
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "proxy", "cluster": {"server": url}}],
        "users": [{"name": "proxy", "user": {}}],
        "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy", "namespace": namespace}}],
        "current-context": "proxy",
    });
    std::fs::write(path, config.to_string()).map_err(|source| Error::Io {
        what: format!("write {}", path.display()),
        source,
    })
}
