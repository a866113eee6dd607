//! The operator's process: the runtime's [`Manager`] set up from the Go
//! helm-operator's flags (metrics and health probe servers, leader election or
//! sharding, the shutdown timeout) with one Helm controller per watch
//! ([`crate::controller`]). Start here: [`Operator`].
//!
//! With `--shards=auto` every replica reconciles its share of the CRs
//! ([`runtime::shard`]); leader election is then not used, so it cannot hold the
//! other replicas back.

use std::future::Future;
use std::sync::Arc;

use chart::loader::Chart;
use kube::Client;
use runtime::leader::in_cluster_namespace;
use runtime::metrics::{parse_bind_address, Metrics};
use runtime::{shutdown_signal, LeaseLocation, Manager, ShardSettings};

use crate::controller::{self, WatchRun};
use crate::metrics::new_metrics;
use crate::options::{Sharding, OPERATOR_NAME_ENV};
use crate::watches::{self, Watch};
use crate::{Error, Options, Result};

/// The operator as a library: the watches and their charts given in code, no files on
/// disk. `rudder run` builds one from `--watches-file` ([`Operator::from_options`]).
///
/// ```no_run
/// # async fn example(client: kube::Client, watch: operator::Watch,
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
            metrics: new_metrics(),
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
            metrics: new_metrics(),
            shard_settings: None,
        })
    }

    /// Reports into `metrics` (for example the registry whose
    /// [`RestClientMetricsLayer`](runtime::metrics::RestClientMetricsLayer) counts the
    /// client's requests; [`new_metrics`] makes one).
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

/// [`run`], until `shutdown` resolves: [`Operator::run`] of `options.watches_file`.
pub async fn run_with_shutdown(
    client: Client,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    Operator::from_options(client, options)?.run(shutdown).await
}

/// The manager: the runtime's, with the flags' servers, leadership or sharding, and
/// one controller per watch.
async fn manage(
    client: Client,
    options: Options,
    prepared: Vec<Prepared>,
    metrics: Metrics,
    sharding: Option<ShardSettings>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let options = Arc::new(options);
    let bind = |flag: &'static str, address: &str| {
        parse_bind_address(address).map_err(|source| Error::BindAddress { flag, source })
    };
    let metrics_addr = bind("--metrics-bind-address", &options.metrics_bind_address)?;
    let health_addr = bind(
        "--health-probe-bind-address",
        &options.health_probe_bind_address,
    )?;
    let mut manager =
        Manager::new(client.clone(), metrics.clone()).shutdown_timeout(options.shutdown_timeout);
    if let Some(addr) = metrics_addr {
        manager = manager.metrics_server(
            addr,
            options.metrics_bind_address.clone(),
            options.metrics_serving.clone(),
        );
    }
    if let Some(addr) = health_addr {
        manager = manager.health_probes(addr);
    }
    match sharding {
        Some(settings) => {
            if options.leader_elect {
                tracing::info!(
                    "--leader-elect is not used with --shards=auto: every replica reconciles its share"
                );
            }
            let gvks = prepared.iter().map(|p| p.watch.gvk_string()).collect();
            manager = manager.sharding(settings, gvks);
        }
        None if options.leader_elect => {
            manager = manager.leader_election(lease_location(&options)?);
        }
        None => {}
    }
    // One set of release record watches for every watched kind.
    let records = controller::RecordWatches::new();
    for Prepared {
        watch,
        chart,
        reload,
    } in prepared
    {
        let (client, options, metrics) = (client.clone(), Arc::clone(&options), metrics.clone());
        let records = Arc::clone(&records);
        manager = manager.add_controller(move |controller| {
            controller::run_watch(WatchRun {
                client,
                watch,
                chart,
                reload,
                options,
                metrics,
                records,
                manager: controller,
            })
        });
    }
    Ok(manager.run(shutdown).await?)
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
