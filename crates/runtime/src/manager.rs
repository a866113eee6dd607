//! The process around the controllers, like controller-runtime's `pkg/manager`: its
//! runnables kept in groups that one [`Manager::run`] starts in order and stops in
//! reverse (`runnable_group.go`, `internal.go`'s `Start`):
//!
//! 1. **HTTP servers**: `/metrics` and the health probes, first, so a replica waiting
//!    for leadership is scraped and probed too;
//! 2. **leader election** (optional): waits for the Lease, and leadership lost ends
//!    the run with an error;
//! 3. **others**, which need no leadership: sharding's membership (optional; the
//!    replicas then split the objects instead of electing a leader);
//! 4. **controllers**, which wait for leadership: each gets a [`Controller`] handle
//!    (when to stop, the shard share, and [`Started`] to say it runs).
//!
//! The run ends when `shutdown` resolves (then `Ok`) or when a part fails (then
//! `Err`). Stopping goes backwards: controllers stop taking work and in-flight
//! reconciles get `shutdown_timeout` to finish, the replica leaves the shards,
//! the leader Lease is released (after a clean shutdown only), and the HTTP servers
//! stop last.
//!
//! Readiness as controller-runtime's: `/readyz` succeeds once every controller
//! started, and on a replica standing by for leadership too (Go's readiness check is
//! a ping), so a one-replica Deployment's rolling update can finish while the new pod
//! waits.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{BoxFuture, Shared};
use futures::FutureExt;
use kube::Client;
use tokio::net::TcpListener;
use tokio::task::{JoinError, JoinHandle, JoinSet};

use crate::leader::{default_identity, LeaderElection, LeaderError, LeaderGuard};
use crate::metrics::{self, Health, Metrics, MetricsServer, MetricsServing, TlsError};
use crate::shard::membership::Membership;
use crate::shard::{ShardError, ShardSettings, Shards};

/// Resolves once, when every holder should stop; cheap to clone.
pub type Stop = Shared<BoxFuture<'static, ()>>;

/// How long in-flight reconciles may run after a shutdown was asked for
/// (controller-runtime's default graceful shutdown timeout).
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long leaving the shards may wait for reconciles still running.
const LEAVE_WAIT: Duration = Duration::from_secs(5);

/// Where the leader Lease lives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseLocation {
    pub namespace: String,
    pub name: String,
}

/// Why the manager stopped, or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error("cannot serve {what} on {addr}")]
    Serve {
        what: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },

    #[error(transparent)]
    MetricsTls(#[from] TlsError),

    #[error("the metrics or health server stopped")]
    ServerFailed(#[source] std::io::Error),

    #[error("the metrics or health server stopped")]
    ServerStopped,

    #[error("the metrics or health server crashed")]
    ServerCrashed(#[source] JoinError),

    #[error("leader election failed")]
    LeaderElection(#[source] LeaderError),

    #[error("leader election lost: another replica holds lease {namespace}/{name}; exiting")]
    LeadershipLost { namespace: String, name: String },

    #[error(transparent)]
    Sharding(#[from] ShardError),

    #[error("a controller stopped unexpectedly")]
    ControllerStopped,

    #[error("a controller crashed")]
    ControllerCrashed(#[source] JoinError),
}

/// What a controller gets when the manager starts it.
pub struct Controller {
    /// Resolves when the controller should stop taking work; the manager then waits
    /// for the controller's future (up to the shutdown timeout) and drops it.
    pub stop: Stop,
    /// With sharding, this replica's share: ask it before each reconcile.
    pub shards: Option<Arc<Shards>>,
    /// Call [`Started::done`] once the controller runs.
    pub started: Started,
}

/// Tells the manager one controller runs; once all have, the manager is ready.
pub struct Started {
    count: Arc<AtomicUsize>,
    total: usize,
    health: Health,
}

impl Started {
    pub fn done(self) {
        if self.count.fetch_add(1, Ordering::SeqCst) + 1 == self.total {
            tracing::info!("all controllers started");
            self.health.set_ready(true);
        }
    }
}

type StartController = Box<dyn FnOnce(Controller) -> BoxFuture<'static, ()> + Send>;

/// The `/metrics` server: where, and how.
struct MetricsEndpoint {
    addr: SocketAddr,
    /// The address as the flag gave it, for the log.
    bind_address: String,
    serving: MetricsServing,
}

/// The process's runnables; see the module documentation.
pub struct Manager {
    parts: Parts,
    controllers: Vec<StartController>,
}

/// Everything but the controllers (which are only `Send`), shared by the groups'
/// start and stop.
struct Parts {
    client: Client,
    metrics: Metrics,
    health: Health,
    metrics_server: Option<MetricsEndpoint>,
    health_probes: Option<SocketAddr>,
    leader_election: Option<LeaseLocation>,
    sharding: Option<(ShardSettings, Vec<String>)>,
    shutdown_timeout: Duration,
}

impl Manager {
    /// A manager with no servers, no leader election, no sharding and no controllers
    /// yet; every part reports into `metrics`.
    pub fn new(client: Client, metrics: Metrics) -> Manager {
        Manager {
            parts: Parts {
                client,
                metrics,
                health: Health::new(),
                metrics_server: None,
                health_probes: None,
                leader_election: None,
                sharding: None,
                shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            },
            controllers: Vec::new(),
        }
    }

    /// Serves `/metrics` on `addr` (`bind_address`: the address as configured, for
    /// the log), as `serving` says.
    pub fn metrics_server(
        mut self,
        addr: SocketAddr,
        bind_address: impl Into<String>,
        serving: MetricsServing,
    ) -> Manager {
        self.parts.metrics_server = Some(MetricsEndpoint {
            addr,
            bind_address: bind_address.into(),
            serving,
        });
        self
    }

    /// Serves `/healthz` and `/readyz` on `addr`.
    pub fn health_probes(mut self, addr: SocketAddr) -> Manager {
        self.parts.health_probes = Some(addr);
        self
    }

    /// Runs the controllers only while holding `lease`.
    pub fn leader_election(mut self, lease: LeaseLocation) -> Manager {
        self.parts.leader_election = Some(lease);
        self
    }

    /// Splits the objects of `watches` (the controllers' watch names) with the other
    /// replicas of `settings.group`.
    pub fn sharding(mut self, settings: ShardSettings, watches: Vec<String>) -> Manager {
        self.parts.sharding = Some((settings, watches));
        self
    }

    /// How long in-flight reconciles may finish after a shutdown was asked for.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Manager {
        self.parts.shutdown_timeout = timeout;
        self
    }

    /// Adds a controller: `start` is called with its [`Controller`] handle once the
    /// manager may reconcile (after leader election); its future should run until
    /// the handle's `stop` resolves.
    pub fn add_controller<F, Fut>(mut self, start: F) -> Manager
    where
        F: FnOnce(Controller) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.controllers.push(Box::new(move |c| start(c).boxed()));
        self
    }

    /// Runs until `shutdown` resolves (then stops everything in reverse order and
    /// returns `Ok`), or until a part fails or leadership is lost (then `Err`).
    /// Dropping the future stops everything it started, without waiting.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ManagerError> {
        let Manager { parts, controllers } = self;
        parts.run(controllers, shutdown).await
    }
}

impl Parts {
    async fn run(
        &self,
        starters: Vec<StartController>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ManagerError> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut servers = self.start_servers().await?;

        let leadership = match &self.leader_election {
            None => None,
            Some(lease) => {
                tokio::select! {
                    _ = &mut shutdown => {
                        tracing::info!("shutting down before becoming the leader");
                        return Ok(());
                    }
                    guard = self.elect(lease) => Some((guard?, lease.clone())),
                }
            }
        };

        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let stop: Stop = async move {
            // A dropped sender (the caller dropped this future) stops everything too.
            let _ = stop_rx.await;
        }
        .boxed()
        .shared();

        let mut shard = self.join_shards()?;
        let mut controllers = self.start_controllers(starters, &stop, shard.as_ref());

        let result = tokio::select! {
            _ = &mut shutdown => {
                tracing::info!("shutdown requested; finishing in-flight reconciles");
                Ok(())
            }
            _ = async {
                match &leadership {
                    Some((guard, _)) => guard.lost().await,
                    None => std::future::pending().await,
                }
            } => {
                let lease = leadership.as_ref().map(|(_, l)| l.clone()).unwrap_or_default();
                tracing::error!(namespace = %lease.namespace, name = %lease.name, "leader election lost");
                Err(ManagerError::LeadershipLost {
                    namespace: lease.namespace,
                    name: lease.name,
                })
            }
            lost = async {
                match shard.as_mut() {
                    Some(shard) => shard.lost().await,
                    None => std::future::pending().await,
                }
            } => {
                tracing::error!(target: "rudder::shard", "{lost}");
                Err(ManagerError::Sharding(lost))
            }
            Some(ended) = servers.join_next() => Err(match ended {
                Ok(Err(e)) => ManagerError::ServerFailed(e),
                Ok(Ok(())) => ManagerError::ServerStopped,
                Err(e) => ManagerError::ServerCrashed(e),
            }),
            Some(ended) = controllers.join_next() => Err(match ended {
                Ok(()) => ManagerError::ControllerStopped,
                Err(e) => ManagerError::ControllerCrashed(e),
            }),
        };

        // Stop in reverse: controllers, the shards, leadership, the HTTP servers.
        self.health.set_ready(false);
        let _ = stop_tx.send(());
        self.drain(controllers).await;
        if let Some(shard) = shard {
            shard.leave().await;
        }
        if let Some((guard, lease)) = leadership {
            self.metrics.set_leader(&lease.name, false);
            if result.is_ok() {
                match guard.release().await {
                    Ok(()) => tracing::info!(
                        namespace = %lease.namespace,
                        name = %lease.name,
                        "released the leader lease"
                    ),
                    // The lease then expires on its own after its duration.
                    Err(e) => {
                        tracing::warn!("cannot release the leader lease: {}", apierror::Chain(&e))
                    }
                }
            }
        }
        servers.abort_all();
        result
    }

    /// The HTTP servers group: binds and serves `/metrics` and the health probes.
    async fn start_servers(&self) -> Result<JoinSet<std::io::Result<()>>, ManagerError> {
        let mut servers = JoinSet::new();
        if let Some(endpoint) = &self.metrics_server {
            let listener = bind(endpoint.addr, "metrics").await?;
            let serving = &endpoint.serving;
            tracing::info!(target: "controller-runtime.metrics", "Starting metrics server");
            let server = MetricsServer::new(
                listener,
                self.metrics.clone(),
                serving,
                serving.require_rbac.then(|| self.client.clone()),
            )?;
            if let Some(cert) = server.certificate() {
                tracing::info!(target: "controller-runtime.metrics", certificate = %cert, "Serving metrics over HTTPS");
            }
            tracing::info!(
                target: "controller-runtime.metrics",
                { "bindAddress" = %endpoint.bind_address, secure = serving.secure },
                "Serving metrics server"
            );
            servers.spawn(server.serve());
        }
        if let Some(addr) = self.health_probes {
            let listener = bind(addr, "health probes").await?;
            tracing::info!(target: "", kind = "health probe", addr = %addr, "Starting server");
            servers.spawn(metrics::serve_on(
                listener,
                metrics::health_router(self.health.clone()),
            ));
        }
        Ok(servers)
    }

    /// Leader election: waits until this process holds `lease`. A standby replica
    /// is ready meanwhile (see the module documentation).
    async fn elect(&self, lease: &LeaseLocation) -> Result<LeaderGuard, ManagerError> {
        self.health.set_ready(true);
        tracing::info!(
            target: "leaderelection",
            "attempting to acquire leader lease {}/{}...",
            lease.namespace,
            lease.name
        );
        let guard = LeaderElection::new(
            self.client.clone(),
            &lease.namespace,
            &lease.name,
            default_identity(),
        )
        .acquire()
        .await
        .map_err(ManagerError::LeaderElection)?;
        tracing::info!(
            target: "leaderelection",
            "successfully acquired lease {}/{}",
            lease.namespace,
            lease.name
        );
        self.metrics.set_leader(&lease.name, true);
        self.health.set_ready(false);
        Ok(guard)
    }

    /// The others group: sharding's membership, when asked for.
    fn join_shards(&self) -> Result<Option<ShardGroup>, ManagerError> {
        let Some((settings, watches)) = &self.sharding else {
            return Ok(None);
        };
        let shards = Shards::new(&settings.identity);
        let membership = Arc::new(Membership::new(
            self.client.clone(),
            settings.clone(),
            watches,
        )?);
        tracing::info!(
            target: "rudder::shard",
            lease = %format!("{}/{}", membership.namespace(), membership.lease_name()),
            identity = %shards.identity(),
            "sharding: joining the replicas that split the custom resources"
        );
        let task = tokio::spawn({
            let membership = Arc::clone(&membership);
            let shards = Arc::clone(&shards);
            async move { membership.run(shards).await }
        });
        Ok(Some(ShardGroup {
            shards,
            membership,
            task,
        }))
    }

    /// The controllers group: starts every controller, each told when to stop.
    fn start_controllers(
        &self,
        starters: Vec<StartController>,
        stop: &Stop,
        shard: Option<&ShardGroup>,
    ) -> JoinSet<()> {
        let total = starters.len();
        let count = Arc::new(AtomicUsize::new(0));
        if total == 0 {
            self.health.set_ready(true);
        }
        let mut set = JoinSet::new();
        for start in starters {
            set.spawn(start(Controller {
                stop: stop.clone(),
                shards: shard.map(|s| Arc::clone(&s.shards)),
                started: Started {
                    count: Arc::clone(&count),
                    total,
                    health: self.health.clone(),
                },
            }));
        }
        set
    }

    /// Stops the controllers: in-flight reconciles may finish within the shutdown
    /// timeout, then the rest is dropped.
    async fn drain(&self, mut controllers: JoinSet<()>) {
        let drained = tokio::time::timeout(self.shutdown_timeout, async {
            while controllers.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                "in-flight reconciles did not finish within {}s; stopping them",
                self.shutdown_timeout.as_secs()
            );
            controllers.abort_all();
        }
    }
}

/// Sharding's membership while the manager runs.
struct ShardGroup {
    shards: Arc<Shards>,
    membership: Arc<Membership>,
    task: JoinHandle<ShardError>,
}

impl ShardGroup {
    /// Resolves when the membership ends: this replica's Lease could not be renewed.
    async fn lost(&mut self) -> ShardError {
        match (&mut self.task).await {
            Ok(lost) => lost,
            Err(e) => ShardError::Config(format!("the membership task stopped: {e}")),
        }
    }

    /// Leaves the group, so the other replicas take this one's objects over.
    async fn leave(self) {
        self.task.abort();
        let membership = &self.membership;
        match tokio::time::timeout(LEAVE_WAIT * 2, membership.leave(&self.shards, LEAVE_WAIT)).await
        {
            Ok(Ok(())) => tracing::info!(
                target: "rudder::shard",
                lease = %format!("{}/{}", membership.namespace(), membership.lease_name()),
                "sharding: left; the other replicas take this replica's custom resources over"
            ),
            Ok(Err(e)) => {
                tracing::warn!(target: "rudder::shard", "sharding: could not leave cleanly: {e}")
            }
            Err(_) => tracing::warn!(target: "rudder::shard",
                "sharding: could not delete this replica's Lease in time; it expires on its own"),
        }
    }
}

async fn bind(addr: SocketAddr, what: &'static str) -> Result<TcpListener, ManagerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ManagerError::Serve { what, addr, source })
}

/// Resolves on the first SIGTERM or ctrl-c.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    // Without a signal handler, wait for ctrl-c alone (or forever if that fails too).
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}
