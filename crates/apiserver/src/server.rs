//! The server itself: its shared state ([`App`]: store, registry, auth,
//! faults, request counters), how it is configured ([`Config`]) and its
//! life ([`Server`]: certificates, storage, the serving runtime, the
//! listener, the kubeconfig, the controllers, shutdown).

use crate::error::{ApiError, ServerError};
use crate::http::auth::Authorization;
use crate::{controllers, faults, http, object, storage};
use serde_json::json;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// Shared state of a running server.
pub(crate) struct App {
    pub(crate) store: storage::Store,
    pub(crate) registry: apitypes::Registry,
    pub(crate) simulate_readiness: bool,
    pub(crate) shutdown: tokio::sync::watch::Receiver<bool>,
    /// Injected API errors for tests; inactive unless a rule is added.
    pub(crate) faults: faults::Faults,
    /// Authentication and (optional) RBAC.
    pub(crate) auth: http::auth::Auth,
    /// Request counters for `/metrics`.
    pub(crate) requests: http::metrics::Requests,
    /// The CA clients trust, for ServiceAccount token Secrets.
    pub(crate) ca_pem: Option<String>,
    ip_counter: AtomicU32,
}

impl App {
    /// State over `backend`, authorizing as `authorization` says; `ca_pem`
    /// is the CA that ServiceAccount token Secrets hand out.
    pub(crate) fn new(
        backend: Box<dyn storage::Backend>,
        simulate_readiness: bool,
        shutdown: tokio::sync::watch::Receiver<bool>,
        authorization: Authorization,
        ca_pem: Option<String>,
    ) -> Result<Arc<Self>, String> {
        let app = Arc::new(App {
            store: storage::Store::new(backend)?,
            registry: apitypes::Registry::default(),
            simulate_readiness,
            shutdown,
            faults: faults::Faults::default(),
            auth: http::auth::Auth::new(authorization),
            requests: http::metrics::Requests::default(),
            ca_pem,
            ip_counter: AtomicU32::new(10),
        });
        // CRDs persisted by a previous run are served again.
        for (_, crd) in app
            .store
            .entries("apiextensions.k8s.io/customresourcedefinitions/")
        {
            let crd = crd.value();
            if !object::admission::crd_established(&crd) {
                continue;
            }
            if let Err(e) = app.registry.install_crd(&crd) {
                tracing::warn!("persisted CRD not served: {e}");
            }
        }
        let ns_type = app.registry.find("", "v1", "namespaces");
        if let Some(rt) = ns_type {
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                if app.store.get(&rt.key("", ns)).is_none() {
                    let obj =
                        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                    let opts = object::WriteOpts {
                        manager: "rudder-apiserver".into(),
                        ..Default::default()
                    };
                    if let Err(e) = object::create(&app, &rt, "", obj, &opts) {
                        tracing::warn!("cannot create namespace {ns}: {e}");
                    }
                }
            }
        }
        Ok(app)
    }

    /// Next service cluster IP suffix.
    pub(crate) fn next_ip(&self) -> u32 {
        self.ip_counter.fetch_add(1, Ordering::Relaxed)
    }
}

/// How to run a server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Directory for durable state (redb); `None` keeps state in memory.
    pub data_dir: Option<PathBuf>,
    /// Where to write a kubeconfig; a temporary path when `None`.
    pub kubeconfig_out: Option<PathBuf>,
    /// Make workloads and jobs report ready/complete shortly after changes.
    pub simulate_readiness: bool,
    /// Serve HTTPS with a CA generated at start (kept in `data_dir` when
    /// set); the kubeconfig then carries that CA.
    pub tls: bool,
    /// `Rbac` authenticates bearer tokens (the kubeconfig's admin token,
    /// ServiceAccount tokens) and authorizes with RBAC objects.
    pub authorization: Authorization,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir: None,
            kubeconfig_out: None,
            simulate_readiness: false,
            tls: false,
            authorization: Authorization::AlwaysAllow,
        }
    }
}

/// Stack of every thread serving requests: objects may nest as deep as
/// kube-apiserver stores them (10,000 levels), and cloning, comparing,
/// validating and dropping them recurses once per level. Address space
/// only; what a request really uses becomes resident.
const SERVING_STACK: usize = 256 << 20;

/// The runtime a server's connections, watches and background tasks run
/// on, its own so that its threads have [`SERVING_STACK`] whatever runtime
/// the caller has. Dropping it ends them without waiting (also from inside
/// another runtime).
struct ServingRuntime(Option<tokio::runtime::Runtime>);

impl ServingRuntime {
    fn new() -> std::io::Result<ServingRuntime> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("apiserver")
            .thread_stack_size(SERVING_STACK)
            .enable_all()
            .build()?;
        Ok(ServingRuntime(Some(rt)))
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        match &self.0 {
            Some(rt) => rt.handle(),
            None => unreachable!("the runtime is taken only on drop"),
        }
    }
}

impl Drop for ServingRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A running API server; dropping it without `stop` stops serving at once.
pub struct Server {
    addr: SocketAddr,
    kubeconfig_path: PathBuf,
    app: Arc<App>,
    shutdown_tx: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    controllers: controllers::Controllers,
    /// A temporary directory we created for the kubeconfig, removed on stop.
    temp_dir: Option<TempDir>,
    /// The CA clients must trust (PEM, DER) when serving HTTPS.
    ca: Option<(String, Vec<u8>)>,
    /// Last, so it ends after everything that runs on it.
    runtime: ServingRuntime,
}

impl Server {
    /// Binds, loads state and starts serving in the background.
    pub async fn start(config: Config) -> Result<Server, ServerError> {
        // Certificates first: a bad persisted CA should fail before we
        // open storage or bind.
        let tls = if config.tls {
            Some(http::tls::material(
                config.data_dir.as_deref(),
                config.listen.ip(),
            )?)
        } else {
            None
        };
        let backend: Box<dyn storage::Backend> = match &config.data_dir {
            Some(dir) => Box::new(storage::RedbBackend::open(dir).map_err(|message| {
                ServerError::Storage {
                    path: dir.display().to_string(),
                    message,
                }
            })?),
            None => Box::new(storage::MemoryBackend),
        };
        let (shutdown_tx, shutdown_rx) = tokio::sync::watch::channel(false);
        let app = App::new(
            backend,
            config.simulate_readiness,
            shutdown_rx.clone(),
            config.authorization,
            tls.as_ref().map(|t| t.ca_pem.clone()),
        )
        .map_err(|message| ServerError::Storage {
            path: config
                .data_dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
            message,
        })?;
        let bind_err = |source| ServerError::Bind {
            addr: config.listen.to_string(),
            source,
        };
        let runtime = ServingRuntime::new().map_err(bind_err)?;
        // Bound on the serving runtime, so that its reactor drives the socket.
        let listen = config.listen;
        let listener = runtime
            .handle()
            .spawn(async move { tokio::net::TcpListener::bind(listen).await })
            .await
            .map_err(|e| bind_err(std::io::Error::other(e.to_string())))?
            .map_err(bind_err)?;
        let addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: config.listen.to_string(),
            source,
        })?;
        let temp_dir = config.kubeconfig_out.is_none().then(|| {
            TempDir(std::env::temp_dir().join(format!(
                "rudder-apiserver-{}-{}",
                std::process::id(),
                addr.port()
            )))
        });
        let kubeconfig_path = match (&config.kubeconfig_out, &temp_dir) {
            (Some(p), _) => p.clone(),
            (None, Some(d)) => d.0.join("kubeconfig"),
            (None, None) => std::env::temp_dir().join("kubeconfig"),
        };
        let ca = tls.as_ref().map(|t| (t.ca_pem.clone(), t.ca_der.clone()));
        let token =
            (config.authorization == Authorization::Rbac).then(|| app.auth.admin_token.clone());
        write_kubeconfig(
            &kubeconfig_path,
            &kubeconfig_yaml(addr, ca.as_ref().map(|c| c.0.as_str()), token.as_deref()),
        )?;
        // Everything spawned from here on runs on the serving runtime.
        let (controllers, task) = {
            let _serving = runtime.handle().enter();
            let controllers = controllers::start(&app);
            let router = http::router::router(app.clone());
            let mut rx = shutdown_rx;
            let shutdown = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            let task = match tls {
                Some(t) => {
                    let listener = http::tls::TlsListener::new(listener, t.server_config).map_err(
                        |source| ServerError::Bind {
                            addr: config.listen.to_string(),
                            source,
                        },
                    )?;
                    tokio::spawn(async move {
                        let res = axum::serve(listener, router)
                            .with_graceful_shutdown(shutdown)
                            .await;
                        if let Err(e) = res {
                            tracing::error!("apiserver stopped: {e}");
                        }
                    })
                }
                None => tokio::spawn(async move {
                    let res = axum::serve(listener, router)
                        .with_graceful_shutdown(shutdown)
                        .await;
                    if let Err(e) = res {
                        tracing::error!("apiserver stopped: {e}");
                    }
                }),
            };
            (controllers, task)
        };
        Ok(Server {
            addr,
            kubeconfig_path,
            app,
            shutdown_tx,
            task,
            controllers,
            temp_dir,
            ca,
            runtime,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL clients use: `https` when serving TLS, and loopback when
    /// listening on every interface.
    pub fn url(&self) -> String {
        server_url(self.addr, self.ca.is_some())
    }

    /// The CA certificate (PEM) clients must trust, when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca.as_ref().map(|c| c.0.as_str())
    }

    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(self.addr, self.ca_pem(), self.admin_token())
    }

    /// The admin bearer token, when RBAC is on.
    pub fn admin_token(&self) -> Option<&str> {
        (self.app.auth.mode == Authorization::Rbac).then_some(self.app.auth.admin_token.as_str())
    }

    /// The fault injector: tests add rules to make chosen requests fail.
    pub fn faults(&self) -> faults::Faults {
        self.app.faults.clone()
    }

    /// Writes an object straight into the store, bypassing admission and
    /// the HTTP layer (for tests that need many events fast); `key` is
    /// `group/plural/namespace/name`.
    #[doc(hidden)]
    pub fn put_raw(&self, key: &str, obj: serde_json::Value) -> Result<(), ApiError> {
        self.app
            .store
            .transact(key, |_| Ok(storage::Mutation::Put(obj)))
            .map(|_| ())
    }

    /// The stored JSON of an object (for benchmarks and tests).
    #[doc(hidden)]
    pub fn stored(&self, key: &str) -> Option<serde_json::Value> {
        self.app.store.get(key)
    }

    /// How many events the watch log keeps.
    pub const WATCH_LOG_CAP: usize = storage::LOG_CAP;

    /// A kube-rs client talking to this server (namespace `default`), as
    /// the admin when RBAC is on.
    pub fn client(&self) -> Result<kube::Client, ServerError> {
        self.client_as(self.admin_token())
    }

    /// A kube-rs client authenticating with `token` (e.g. a ServiceAccount's).
    pub fn client_with_token(&self, token: &str) -> Result<kube::Client, ServerError> {
        self.client_as(Some(token))
    }

    fn client_as(&self, token: Option<&str>) -> Result<kube::Client, ServerError> {
        let url = self
            .url()
            .parse()
            .map_err(|e| ServerError::Client(format!("{e}")))?;
        let mut config = kube::Config::new(url);
        if let Some((_, der)) = &self.ca {
            config.root_cert = Some(vec![der.clone()]);
        }
        if let Some(t) = token {
            config.auth_info.token = Some(t.to_string().into());
        }
        kube::Client::try_from(config).map_err(|e| ServerError::Client(e.to_string()))
    }

    /// Stops serving, ends open watches, waits for the server task and the
    /// controllers and removes the temporary kubeconfig directory (if one
    /// was created). Storage is closed when it returns.
    pub async fn stop(self) {
        let _ = self.shutdown_tx.send(true);
        let _ = self.task.await;
        self.controllers.join().await;
        drop(self.temp_dir);
        // Stored objects may nest 10,000 levels: they are dropped on a serving
        // thread's deep stack, never on the caller's.
        let app = self.app;
        let _ = self
            .runtime
            .handle()
            .spawn_blocking(move || drop(app))
            .await;
    }

    /// Serves until the process is stopped (for the CLI).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

fn server_url(addr: SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    // 0.0.0.0 is not an address to connect to, nor one a certificate names.
    let addr = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::from(([127, 0, 0, 1], addr.port()))
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, addr.port()))
        }
        _ => addr,
    };
    format!("{scheme}://{addr}")
}

fn kubeconfig_yaml(addr: SocketAddr, ca_pem: Option<&str>, token: Option<&str>) -> String {
    use base64::Engine as _;
    let server = server_url(addr, ca_pem.is_some());
    let ca = ca_pem
        .map(|pem| {
            format!(
                "\n    certificate-authority-data: {}",
                base64::engine::general_purpose::STANDARD.encode(pem)
            )
        })
        .unwrap_or_default();
    // kubectl asks for a username on a terminal when an HTTPS cluster's
    // user has no credentials at all; the server accepts any token.
    let user = match (token, ca_pem) {
        (Some(t), _) => format!("{{token: {t}}}"),
        (None, Some(_)) => "{token: rudder}".to_string(),
        (None, None) => "{}".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: rudder\n  cluster:\n    server: {server}{ca}\ncontexts:\n- name: rudder\n  context:\n    cluster: rudder\n    user: rudder\n    namespace: default\ncurrent-context: rudder\nusers:\n- name: rudder\n  user: {user}\npreferences: {{}}\n"
    )
}

fn write_kubeconfig(path: &Path, yaml: &str) -> Result<(), ServerError> {
    let err = |source| ServerError::Kubeconfig {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    std::fs::write(path, yaml).map_err(err)
}

/// The server's own directory for its kubeconfig, removed when the server is
/// stopped or dropped (a test that panics leaves nothing behind either).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
