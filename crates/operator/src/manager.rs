//! The process around the controllers, like controller-runtime's `pkg/manager` as the
//! Go helm-operator uses it: metrics and health servers, optional leader election
//! (exit when leadership is lost), one controller per watch, and graceful shutdown on
//! SIGTERM/ctrl-c with a bounded wait for in-flight reconciles. Start here:
//! [`Operator`].
//!
//! With `--shards=auto` every replica reconciles its share of the CRs ([`crate::shard`]);
//! leader election is then not used, so it cannot hold the other replicas back.
//!
//! Readiness as controller-runtime's: `/readyz` succeeds once the controllers run, and
//! on a replica standing by for leadership too (Go's readiness check is a ping), so a
//! one-replica Deployment's rolling update can finish while the new pod waits.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chart::loader::Chart;
use futures::channel::oneshot;
use futures::FutureExt;
use kube::Client;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::controller::{self, Stop};
use crate::leader::{default_identity, in_cluster_namespace, LeaderElection, LeaderGuard};
use crate::metrics::{self, Health, Metrics, MetricsServer};
use crate::options::{Sharding, OPERATOR_NAME_ENV};
use crate::shard::membership::Membership;
use crate::shard::{ShardError, ShardSettings, Shards};
use crate::watches::{self, Watch};
use crate::{Error, Options, Result};

/// The operator as a library: the watches and their charts given in code, no files on
/// disk. `rudder run` builds one from `--watches-file` ([`Operator::from_options`]).
///
/// ```no_run
/// # async fn example(client: kube::Client, watch: operator::watches::Watch,
/// #     chart: std::sync::Arc<chart::loader::Chart>) -> operator::Result<()> {
/// operator::Operator::new(client)
///     .watch(watch, chart)
///     .run(operator::shutdown_signal())
///     .await
/// # }
/// ```
pub struct Operator {
    client: Client,
    options: Options,
    watches: Vec<Prepared>,
    metrics: Metrics,
    shard_settings: Option<ShardSettings>,
}

/// A watch ready to run: its chart loaded, and whether to reload the chart from
/// `watch.chart` when its files change (only for watches read from a file).
struct Prepared {
    watch: Arc<Watch>,
    chart: Arc<Chart>,
    reload: bool,
}

impl Operator {
    /// An operator with the Go helm-operator's default flags and nothing to watch yet.
    pub fn new(client: Client) -> Operator {
        Operator {
            client,
            options: Options::default(),
            watches: Vec::new(),
            metrics: Metrics::new(),
            shard_settings: None,
        }
    }

    /// Loads `options.watches_file` and each watch's chart, failing fast on either.
    pub fn from_options(client: Client, options: Options) -> Result<Operator> {
        let watches = load_watches(&options)?;
        Ok(Operator {
            client,
            options,
            watches,
            metrics: Metrics::new(),
            shard_settings: None,
        })
    }

    /// Reports into `metrics` (for example the registry whose
    /// [`metrics::RestClientMetricsLayer`] counts the client's requests).
    pub fn with_metrics(mut self, metrics: Metrics) -> Operator {
        self.metrics = metrics;
        self
    }

    /// The flags (`watches_file` is not read here).
    pub fn with_options(mut self, options: Options) -> Operator {
        self.options = options;
        self
    }

    /// Splits the CRs with the other replicas of `settings.group` (as
    /// `--shards=auto` does, with the Lease namespace, identity and timings given
    /// here rather than taken from the flags and the pod).
    pub fn with_sharding(mut self, settings: ShardSettings) -> Operator {
        self.options.shards = Sharding::Auto;
        self.shard_settings = Some(settings);
        self
    }

    /// Reconciles every CR of `watch`'s kind into a release of `chart`
    /// (`watch.chart` is not read).
    pub fn watch(mut self, watch: Watch, chart: Arc<Chart>) -> Operator {
        self.watches.push(Prepared {
            watch: Arc::new(watch),
            chart,
            reload: false,
        });
        self
    }

    /// Runs until `shutdown` resolves (then stops taking work, lets in-flight
    /// reconciles finish within `shutdown_timeout`, releases the leader lease and
    /// returns `Ok`), or until it fails or loses leadership (then `Err`). Dropping the
    /// future stops everything it started, without waiting.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<()> {
        if self.watches.is_empty() {
            return Err(Error::NothingToWatch);
        }
        for prepared in &self.watches {
            // Bad overrides would fail every reconcile: refuse them at startup.
            prepared
                .watch
                .override_values()
                .map_err(|e| Error::Watches {
                    path: self.options.watches_file.clone(),
                    source: Box::new(e),
                })?;
        }
        let sharding = match (self.options.shards, self.shard_settings) {
            (Sharding::Off, _) => None,
            (Sharding::Auto, Some(settings)) => Some(settings),
            (Sharding::Auto, None) => Some(shard_settings(&self.options)?),
        };
        manage(
            self.client,
            self.options,
            self.watches,
            self.metrics,
            sharding,
            shutdown,
        )
        .await
    }
}

/// Runs the operator of `options.watches_file` until SIGTERM or ctrl-c (then `Ok`), or
/// until it fails or loses leadership (then `Err`).
pub async fn run(client: Client, options: Options) -> Result<()> {
    run_with_shutdown(client, options, shutdown_signal()).await
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

/// [`run`], until `shutdown` resolves: [`Operator::run`] of `options.watches_file`.
pub async fn run_with_shutdown(
    client: Client,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    Operator::from_options(client, options)?.run(shutdown).await
}

/// The manager: servers, leadership, one controller per watch, and the drain.
async fn manage(
    client: Client,
    options: Options,
    prepared: Vec<Prepared>,
    metrics: Metrics,
    sharding: Option<ShardSettings>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let options = Arc::new(options);
    let metrics_addr =
        metrics::parse_bind_address(&options.metrics_bind_address).map_err(|source| {
            Error::BindAddress {
                flag: "--metrics-bind-address",
                source,
            }
        })?;
    let health_addr =
        metrics::parse_bind_address(&options.health_probe_bind_address).map_err(|source| {
            Error::BindAddress {
                flag: "--health-probe-bind-address",
                source,
            }
        })?;
    let lease = if options.leader_elect && sharding.is_none() {
        Some(lease_location(&options)?)
    } else {
        None
    };
    if options.leader_elect && sharding.is_some() {
        tracing::info!(
            "--leader-elect is not used with --shards=auto: every replica reconciles its share"
        );
    }

    let health = Health::new();
    let mut servers = JoinSet::new();
    if let Some(addr) = metrics_addr {
        let listener = bind(addr, "metrics").await?;
        let serving = &options.metrics_serving;
        tracing::info!(target: "controller-runtime.metrics", "Starting metrics server");
        let server = MetricsServer::new(
            listener,
            metrics.clone(),
            serving,
            serving.require_rbac.then(|| client.clone()),
        )
        .map_err(|e| Error::Other(e.to_string()))?;
        if let Some(cert) = server.certificate() {
            tracing::info!(target: "controller-runtime.metrics", certificate = %cert, "Serving metrics over HTTPS");
        }
        tracing::info!(
            target: "controller-runtime.metrics",
            { "bindAddress" = %options.metrics_bind_address, secure = serving.secure },
            "Serving metrics server"
        );
        servers.spawn(server.serve());
    }
    if let Some(addr) = health_addr {
        let listener = bind(addr, "health probes").await?;
        tracing::info!(target: "", kind = "health probe", addr = %addr, "Starting server");
        servers.spawn(metrics::serve_on(
            listener,
            metrics::health_router(health.clone()),
        ));
    }

    let mut shutdown = std::pin::pin!(shutdown);
    let leadership = match lease {
        None => None,
        Some(lease) => {
            // A standby replica is ready: see the module documentation.
            health.set_ready(true);
            tracing::info!(
                target: "leaderelection",
                "attempting to acquire leader lease {}/{}...",
                lease.namespace,
                lease.name
            );
            let acquired = tokio::select! {
                _ = &mut shutdown => {
                    tracing::info!("shutting down before becoming the leader");
                    return Ok(());
                }
                acquired = acquire_leadership(client.clone(), &lease) => acquired?,
            };
            tracing::info!(
                target: "leaderelection",
                "successfully acquired lease {}/{}",
                lease.namespace,
                lease.name
            );
            metrics.set_leader(&lease.name, true);
            health.set_ready(false);
            Some((acquired, lease))
        }
    };

    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let stop: Stop = async move {
        // A dropped sender (the caller dropped this future) stops everything too.
        let _ = stop_rx.await;
    }
    .boxed()
    .shared();

    let shard = match sharding {
        None => None,
        Some(settings) => {
            let gvks: Vec<String> = prepared.iter().map(|p| p.watch.gvk_string()).collect();
            let shards = Shards::new(&settings.identity);
            let membership = Arc::new(Membership::new(client.clone(), settings, &gvks)?);
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
            Some((shards, membership, task))
        }
    };
    let mut membership_task = shard.as_ref().map(|(_, _, task)| task.abort_handle());
    let mut shard = shard.map(|(shards, membership, task)| (shards, membership, Some(task)));

    let total = prepared.len();
    let started = Arc::new(AtomicUsize::new(0));
    let mut controllers = JoinSet::new();
    for Prepared {
        watch,
        chart,
        reload,
    } in prepared
    {
        let started = Arc::clone(&started);
        let health = health.clone();
        let on_started = move || {
            if started.fetch_add(1, Ordering::SeqCst) + 1 == total {
                tracing::info!("all controllers started");
                health.set_ready(true);
            }
        };
        controllers.spawn(controller::run_watch(
            client.clone(),
            watch,
            chart,
            reload,
            Arc::clone(&options),
            metrics.clone(),
            shard.as_ref().map(|(shards, _, _)| Arc::clone(shards)),
            stop.clone(),
            on_started,
        ));
    }

    let lost_lease = leadership.as_ref().map(|(_, lease)| lease.clone());
    let shard_lost = async {
        match shard.as_mut().and_then(|(_, _, task)| task.as_mut()) {
            Some(task) => match task.await {
                Ok(lost) => lost,
                Err(e) => ShardError::Config(format!("the membership task stopped: {e}")),
            },
            None => std::future::pending().await,
        }
    };
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
            let lease = lost_lease.unwrap_or_default();
            tracing::error!(namespace = %lease.namespace, name = %lease.name, "leader election lost");
            Err(Error::LeadershipLost {
                namespace: lease.namespace,
                name: lease.name,
            })
        }
        lost = shard_lost => {
            tracing::error!(target: "rudder::shard", "{lost}");
            Err(Error::Sharding(lost))
        }
        Some(ended) = servers.join_next() => Err(Error::Other(match ended {
            Ok(Err(e)) => format!("the metrics or health server stopped: {e}"),
            Ok(Ok(())) => "the metrics or health server stopped".into(),
            Err(e) => format!("the metrics or health server crashed: {e}"),
        })),
        Some(ended) = controllers.join_next() => Err(Error::Other(match ended {
            Ok(()) => "a controller stopped unexpectedly".into(),
            Err(e) => format!("a controller crashed: {e}"),
        })),
    };

    health.set_ready(false);
    let _ = stop_tx.send(());
    let drained = tokio::time::timeout(options.shutdown_timeout, async {
        while controllers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            "in-flight reconciles did not finish within {}s; stopping them",
            options.shutdown_timeout.as_secs()
        );
        controllers.abort_all();
    }
    servers.abort_all();
    if let Some(task) = membership_task.take() {
        task.abort();
    }
    if let Some((shards, membership, _)) = shard {
        let wait = std::time::Duration::from_secs(5);
        match tokio::time::timeout(wait * 2, membership.leave(&shards, wait)).await {
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
    if let Some((guard, lease)) = leadership {
        metrics.set_leader(&lease.name, false);
        if result.is_ok() {
            match guard.release().await {
                Ok(()) => tracing::info!(
                    namespace = %lease.namespace,
                    name = %lease.name,
                    "released the leader lease"
                ),
                // The lease then expires on its own after its duration.
                Err(e) => tracing::warn!("cannot release the leader lease: {e}"),
            }
        }
    }
    result
}

async fn bind(addr: std::net::SocketAddr, what: &'static str) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Serve { what, addr, source })
}

/// Loads the watches and each watch's chart, once, failing fast on either.
fn load_watches(options: &Options) -> Result<Vec<Prepared>> {
    let path = &options.watches_file;
    let loaded = watches::load(path).map_err(|e| Error::Watches {
        path: path.clone(),
        source: Box::new(e),
    })?;
    if loaded.is_empty() {
        return Err(Error::NoWatches { path: path.clone() });
    }
    let mut out = Vec::with_capacity(loaded.len());
    for watch in loaded {
        let chart = chart::loader::load(&watch.chart).map_err(|source| Error::Chart {
            gvk: watch.gvk_string(),
            path: watch.chart.clone(),
            source,
        })?;
        out.push(Prepared {
            watch: Arc::new(watch),
            chart: Arc::new(chart),
            reload: true,
        });
    }
    Ok(out)
}

/// Where the leader Lease lives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseLocation {
    pub namespace: String,
    pub name: String,
}

/// The lease of `--leader-elect`: `--leader-election-id` (or `$OPERATOR_NAME`, as the Go
/// operator falls back to) in `--leader-election-namespace` (or the pod's namespace).
fn lease_location(options: &Options) -> Result<LeaseLocation> {
    let name = options
        .leader_election_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::env::var(OPERATOR_NAME_ENV)
                .ok()
                .filter(|s| !s.is_empty())
        })
        .ok_or(Error::LeaderElectionIdMissing)?;
    let namespace = options
        .leader_election_namespace
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(in_cluster_namespace)
        .ok_or(Error::LeaderElectionNamespaceMissing)?;
    Ok(LeaseLocation { namespace, name })
}

/// `--shards=auto`'s Leases: in `--leader-election-namespace` (or the pod's namespace),
/// grouped by `--leader-election-id` (or `$OPERATOR_NAME`, else `rudder`).
fn shard_settings(options: &Options) -> Result<ShardSettings> {
    let namespace = options
        .leader_election_namespace
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(in_cluster_namespace)
        .ok_or(Error::ShardNamespaceMissing)?;
    let group = options
        .leader_election_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::env::var(OPERATOR_NAME_ENV)
                .ok()
                .filter(|s| !s.is_empty())
        })
        .unwrap_or_else(|| "rudder".to_string());
    Ok(ShardSettings::new(namespace, group))
}

async fn acquire_leadership(client: Client, lease: &LeaseLocation) -> Result<LeaderGuard> {
    LeaderElection::new(client, &lease.namespace, &lease.name, default_identity())
        .acquire()
        .await
        .map_err(|e| Error::LeaderElection(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_needs_a_name_and_a_namespace() {
        let mut o = Options {
            leader_elect: true,
            leader_election_id: Some("my-operator".into()),
            leader_election_namespace: Some("ops".into()),
            ..Options::default()
        };
        assert_eq!(
            lease_location(&o).unwrap(),
            LeaseLocation {
                namespace: "ops".into(),
                name: "my-operator".into()
            }
        );
        if std::env::var(OPERATOR_NAME_ENV).is_err() {
            o.leader_election_id = None;
            assert!(matches!(
                lease_location(&o),
                Err(Error::LeaderElectionIdMissing)
            ));
        }
        if in_cluster_namespace().is_none() {
            o.leader_election_id = Some("x".into());
            o.leader_election_namespace = None;
            assert!(matches!(
                lease_location(&o),
                Err(Error::LeaderElectionNamespaceMissing)
            ));
        }
    }

    #[tokio::test]
    async fn an_operator_without_watches_is_refused() {
        let client = kube::Client::new(
            tower::service_fn(|_req: http::Request<kube::client::Body>| async {
                Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("no cluster"))
            }),
            "default",
        );
        let err = Operator::new(client)
            .run(std::future::pending())
            .await
            .expect_err("nothing to watch");
        assert!(matches!(err, Error::NothingToWatch), "{err}");
    }
}
