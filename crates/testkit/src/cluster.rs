//! The cluster a test talks to: rudder's embedded API server started in this process,
//! or, when `RUDDER_TEST_KUBECONFIG` names a kubeconfig, whatever cluster that points at.
//!
//! Work the kit does on the test's behalf (creating and deleting namespaces, installing
//! CRDs, simulating readiness) runs on a runtime of its own, on its own thread, so it
//! works the same from `#[test]` and `#[tokio::test]` functions and from `Drop`. The
//! embedded server runs there too: it outlives whichever runtime the test uses, and a
//! test blocked on it cannot stall it.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::deadline;
use crate::namespace::TestNamespace;
use crate::Error;

/// The environment variable that points the suites at an external cluster.
pub const KUBECONFIG_ENV: &str = "RUDDER_TEST_KUBECONFIG";
/// Overrides the kubelet detection: `true` when Pods really run, `false` when they do not.
pub const KUBELET_ENV: &str = "RUDDER_TEST_KUBELET";

/// How to start a cluster; [`Cluster::start`] takes the defaults.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    simulate_readiness: bool,
    helper: bool,
    tls: bool,
    authorization: apiserver::Authorization,
    deadline: Option<Duration>,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            simulate_readiness: true,
            helper: false,
            tls: false,
            authorization: apiserver::Authorization::AlwaysAllow,
            deadline: None,
        }
    }
}

impl ClusterBuilder {
    /// The test's overall deadline (default: `RUDDER_TEST_DEADLINE` seconds, else 30
    /// minutes), for suites that run long on purpose; see [`crate::deadline`].
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Whether workloads, Jobs and PVCs report ready although nothing runs them
    /// (default: yes). Off, an embedded server leaves every status as written, and no
    /// readiness helper runs on an external cluster; a cluster with a kubelet still
    /// runs what it runs.
    pub fn simulate_readiness(mut self, on: bool) -> Self {
        self.simulate_readiness = on;
        self
    }

    /// Simulate readiness with the kit's helper on the embedded server too, in place of
    /// the server's own simulation: for tests of the helper, which otherwise only runs
    /// on external clusters without a kubelet.
    pub fn readiness_helper(mut self) -> Self {
        self.simulate_readiness = true;
        self.helper = true;
        self
    }

    /// Serve the embedded server over HTTPS with its own CA (no effect on an external
    /// cluster, which has its own transport).
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }

    /// How the embedded server authorizes requests (default: everything is allowed;
    /// `Rbac` evaluates Roles and ServiceAccount tokens as kube-apiserver does). The
    /// kubeconfig's credentials stay the admin's. An external cluster enforces its own.
    pub fn authorization(mut self, authorization: apiserver::Authorization) -> Self {
        self.authorization = authorization;
        self
    }

    /// Starts the embedded server, or connects to the cluster `RUDDER_TEST_KUBECONFIG`
    /// names. Panics with the reason when neither works: a test cannot go on without it.
    pub fn start(self) -> Cluster {
        match self.try_start() {
            Ok(c) => c,
            Err(e) => panic!("cannot start the test cluster: {}", apierror::Chain(&e)),
        }
    }

    /// [`ClusterBuilder::start`], returning the error.
    pub(crate) fn try_start(self) -> Result<Cluster, Error> {
        let worker = Worker::start()?;
        let external = std::env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty());
        let (backend, kubeconfig, scratch) = match external {
            Some(path) => {
                let path = PathBuf::from(path);
                let path = path.canonicalize().map_err(|source| Error::Io {
                    what: format!("{KUBECONFIG_ENV}={}", path.display()),
                    source,
                })?;
                (Backend::External, path, tempdir()?)
            }
            None => {
                let scratch = tempdir()?;
                let kubeconfig = scratch.path().join("kubeconfig");
                let config = apiserver::Config {
                    kubeconfig_out: Some(kubeconfig.clone()),
                    simulate_readiness: self.simulate_readiness && !self.helper,
                    tls: self.tls,
                    authorization: self.authorization,
                    ..apiserver::Config::default()
                };
                let server = worker
                    .run(async move { apiserver::Server::start(config).await })
                    .map_err(|e| Error::Server(apierror::chain(&e)))?;
                (
                    Backend::Embedded(Some(Box::new(server))),
                    kubeconfig,
                    scratch,
                )
            }
        };
        let config = {
            let path = kubeconfig.clone();
            worker.run(async move { client_config(&path).await })?
        };
        let client = {
            let config = config.clone();
            worker
                .run(async move { kube::Client::try_from(config) })
                .map_err(|e| Error::kube("build a client", e))?
        };
        let quick = {
            let mut config = config.clone();
            config.default_retry = false;
            worker
                .run(async move { kube::Client::try_from(config) })
                .map_err(|e| Error::kube("build a client", e))?
        };
        let kubelet = match (&backend, kubelet_override()) {
            (_, Some(v)) => v,
            (Backend::Embedded(_), None) => false,
            (Backend::External, None) => {
                let client = client.clone();
                worker.run(async move { any_node_ready(client).await })?
            }
        };
        let readiness = match (&backend, self.simulate_readiness) {
            (_, false) => Readiness::None,
            (Backend::Embedded(_), true) if self.helper => Readiness::Helper,
            (Backend::Embedded(_), true) => Readiness::Server,
            (Backend::External, true) if kubelet => Readiness::Kubelet,
            (Backend::External, true) => Readiness::Helper,
        };
        let test = deadline::current_test();
        deadline::cluster_started(
            &test,
            self.deadline.unwrap_or_else(deadline::default_deadline),
        );
        LIVE.fetch_add(1, Ordering::SeqCst);
        Ok(Cluster {
            inner: Arc::new(Inner {
                backend,
                kubeconfig,
                config,
                client,
                quick,
                kubelet,
                readiness,
                scratch,
                test,
                worker,
            }),
        })
    }
}

/// A cluster to run a test against; see the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    backend: Backend,
    kubeconfig: PathBuf,
    pub(crate) config: kube::Config,
    /// A client on the kit's own runtime, for the kit's own work.
    pub(crate) client: kube::Client,
    /// The same without kube's retries, for discovery and reads that must not wait on
    /// an unavailable API.
    pub(crate) quick: kube::Client,
    kubelet: bool,
    pub(crate) readiness: Readiness,
    scratch: tempfile::TempDir,
    /// The test the cluster was started for.
    test: String,
    pub(crate) worker: Worker,
}

/// Clusters alive in this process: the run's shared CRDs are let go with the last.
static LIVE: AtomicUsize = AtomicUsize::new(0);

enum Backend {
    /// `Option` so that `Drop` can hand the server back to its runtime to stop it.
    Embedded(Option<Box<apiserver::Server>>),
    External,
}

/// Who makes workloads report ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// Nobody: statuses stay as written.
    None,
    /// The embedded server's own simulation (`--simulate-readiness`).
    Server,
    /// The kit's helper, patching status subresources in the test's namespaces.
    Helper,
    /// A real kubelet (and controllers) run what is created.
    Kubelet,
}

impl Cluster {
    /// The default cluster: embedded with simulated readiness, or the external one.
    pub fn start() -> Cluster {
        ClusterBuilder::default().start()
    }

    /// A builder for other settings.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// A client with the caller's runtime (call it inside the test's runtime). Its
    /// default namespace is the kubeconfig's; tests name theirs, or use
    /// [`TestNamespace::client`].
    pub fn client(&self) -> kube::Client {
        match kube::Client::try_from(self.inner.config.clone()) {
            Ok(c) => c,
            Err(e) => panic!("cannot build a client for the test cluster: {e}"),
        }
    }

    /// A client of this cluster (on the caller's runtime) that authenticates with
    /// `token` alone, such as a ServiceAccount's.
    pub fn client_with_token(&self, token: &str) -> kube::Client {
        let mut config = self.inner.config.clone();
        config.auth_info = Default::default();
        config.auth_info.token = Some(token.to_string().into());
        match kube::Client::try_from(config) {
            Ok(c) => c,
            Err(e) => panic!("cannot build a token client for the test cluster: {e}"),
        }
    }

    /// The connection settings, for callers that build their own client.
    pub fn config(&self) -> &kube::Config {
        &self.inner.config
    }

    /// The kubeconfig for kubectl, helm and the rudder binary.
    pub fn kubeconfig(&self) -> &Path {
        &self.inner.kubeconfig
    }

    /// The embedded server, for tests of its internals or of fault injection; `None`
    /// on an external cluster (such tests skip there).
    pub fn embedded(&self) -> Option<&apiserver::Server> {
        match &self.inner.backend {
            Backend::Embedded(s) => s.as_deref(),
            Backend::External => None,
        }
    }

    /// Whether this is an external cluster (`RUDDER_TEST_KUBECONFIG`).
    pub fn is_external(&self) -> bool {
        self.inner.is_external()
    }

    /// Whether Pods really run here (a Ready Node exists, or `RUDDER_TEST_KUBELET=true`).
    /// Tests that need something to stay unready skip where this holds.
    pub fn has_kubelet(&self) -> bool {
        self.inner.kubelet
    }

    /// Whether Deployments, StatefulSets, DaemonSets, Jobs and PVCs become ready here,
    /// by a kubelet or by simulation.
    pub fn workloads_become_ready(&self) -> bool {
        self.inner.readiness != Readiness::None
    }

    /// A scratch directory removed with the cluster.
    pub fn dir(&self) -> &Path {
        self.inner.scratch.path()
    }

    /// A fresh namespace for one test, deleted (and waited for) when dropped. `prefix`
    /// makes it recognisable: `prefix-<random>`.
    pub fn namespace(&self, prefix: &str) -> TestNamespace {
        match TestNamespace::create(self, prefix) {
            Ok(ns) => ns,
            Err(e) => panic!("cannot create a test namespace: {}", apierror::Chain(&e)),
        }
    }

    /// Runs `fut` on the kit's runtime and waits for it, from sync or async code.
    pub fn block_on<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> T {
        self.inner.worker.run(fut)
    }
}

impl Inner {
    pub(crate) fn is_external(&self) -> bool {
        matches!(self.backend, Backend::External)
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        deadline::cluster_dropped(&self.test);
        if LIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            crate::crd::release_users(self);
        }
        if let Backend::Embedded(server) = &mut self.backend {
            if let Some(server) = server.take() {
                self.worker.run(server.stop());
            }
        }
    }
}

/// Reads a kubeconfig (its current context) into client settings.
pub(crate) async fn client_config(path: &Path) -> Result<kube::Config, Error> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Kubeconfig {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
}

fn kubelet_override() -> Option<bool> {
    match std::env::var(KUBELET_ENV).ok()?.trim() {
        "1" | "true" | "yes" => Some(true),
        "0" | "false" | "no" => Some(false),
        _ => None,
    }
}

/// A Ready Node means a kubelet runs Pods; a bare control plane has none.
async fn any_node_ready(client: kube::Client) -> Result<bool, Error> {
    let nodes: Api<Node> = Api::all(client);
    let list = match nodes.list(&ListParams::default()).await {
        Ok(l) => l,
        // Not allowed to list Nodes: assume a real cluster runs its Pods.
        Err(kube::Error::Api(s)) if s.code == 403 => return Ok(true),
        Err(e) => return Err(Error::kube("list Nodes", e)),
    };
    Ok(list.items.iter().any(|n| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    }))
}

fn tempdir() -> Result<tempfile::TempDir, Error> {
    tempfile::Builder::new()
        .prefix("rudder-test-")
        .tempdir()
        .map_err(|source| Error::Io {
            what: "create a temporary directory".into(),
            source,
        })
}

/// The kit's runtime, on a thread of its own; dropped (and joined) with the cluster.
pub(crate) struct Worker {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn start() -> Result<Worker, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("testkit")
            .enable_all()
            .build()
            .map_err(|source| Error::Io {
                what: "start the test kit's runtime".into(),
                source,
            })?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("testkit-runtime".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Whatever is still running (a readiness helper mid-request) is cut.
                runtime.shutdown_timeout(Duration::from_secs(1));
            })
            .map_err(|source| Error::Io {
                what: "start the test kit's thread".into(),
                source,
            })?;
        Ok(Worker {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Runs `fut` here and blocks the caller until it is done. The caller's own runtime
    /// (if any) is not involved, so this is safe from async tests and from `Drop`.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> T {
        let task = self.handle.spawn(fut);
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(task.await);
        });
        match rx.recv() {
            Ok(Ok(v)) => v,
            // A failed assertion inside the task fails the test with its own message.
            Ok(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            _ => panic!("the test kit's runtime stopped while running a task"),
        }
    }

    /// Starts `fut` here without waiting for it.
    pub(crate) fn spawn(
        &self,
        fut: impl Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        self.handle.spawn(fut)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
