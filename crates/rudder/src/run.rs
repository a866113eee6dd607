//! `rudder run`: the operator, with the Go helm-operator's flags (same spellings,
//! defaults and `WATCH_NAMESPACE`), so its Deployment manifests work unchanged.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context as _};
use clap::ArgAction;
use operator::logging::{LogFormat, TimeEncoding, ZapFormat};
use operator::{
    default_max_concurrent_reconciles, split_namespaces, Metrics, MetricsCerts, MetricsServing,
    Options, RestClientMetricsLayer, Sharding, StatusManifest,
};

/// Flags of `rudder run`.
#[derive(clap::Args, Debug)]
pub(crate) struct RunArgs {
    /// Path to the watches file to use.
    #[arg(long, default_value = "./watches.yaml")]
    watches_file: PathBuf,

    /// Default reconcile period for controllers (Go duration: 1m, 30s, 1h30m; 0: only on changes).
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    reconcile_period: Duration,

    /// Longest an unchanged release whose objects no dependent watch saw change goes
    /// without a full re-apply (Go duration; 0: re-apply on every reconcile, as the Go
    /// helm-operator does).
    #[arg(long, default_value = "10h0m0s", value_parser = parse_duration)]
    reapply_period: Duration,

    /// Release records kept per custom resource, counting the newest (a watch's
    /// maxHistory wins; 0 keeps all). Superseded and failed records go first; the
    /// deployed one is always kept.
    #[arg(long, default_value_t = release::storage::DEFAULT_MAX_HISTORY)]
    max_history: usize,

    /// What status.deployedRelease.manifest of each CR shows (a watch's statusManifest
    /// wins): "redacted" (default: every Secret's data and stringData values replaced
    /// by "<redacted>", keys kept), "full" (the Go helm-operator's: the manifest as
    /// recorded, Secrets included) or "none" (no manifest).
    #[arg(long, default_value = "redacted", value_parser = parse_status_manifest)]
    status_manifest: StatusManifest,

    /// The name the operator's writes carry: the field manager of its finalizer,
    /// status, release record and Event writes, and its User-Agent
    /// (NAME/<version>). Objects of releases are applied as field manager "helm".
    #[arg(long, env = "RUDDER_FIELD_MANAGER", default_value = action::identity::DEFAULT_NAME,
          value_parser = parse_field_manager)]
    field_manager: String,

    /// Maximum number of concurrent reconciles for controllers.
    #[arg(long, default_value_t = default_max_concurrent_reconciles(),
          value_parser = parse_concurrency)]
    max_concurrent_reconciles: usize,

    /// The address the metric endpoint binds to ("0" disables it).
    #[arg(long, default_value = ":8080")]
    metrics_bind_address: String,

    /// Deprecated: use --metrics-bind-address.
    #[arg(long, hide = true, conflicts_with = "metrics_bind_address")]
    metrics_addr: Option<String>,

    /// The address the probe endpoint binds to ("0" disables it).
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,

    /// Enable leader election for controller manager. Enabling this will ensure there is
    /// only one active controller manager.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    leader_elect: bool,

    /// Deprecated: use --leader-elect.
    #[arg(long, hide = true, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_missing_value = "true", conflicts_with = "leader_elect")]
    enable_leader_election: Option<bool>,

    /// Name of the Lease that is used for holding the leader lock (default: $OPERATOR_NAME).
    #[arg(long)]
    leader_election_id: Option<String>,

    /// Namespace in which to create the leader election Lease (required if running
    /// locally with leader election enabled).
    #[arg(long)]
    leader_election_namespace: Option<String>,

    /// Split the custom resources among the operator's replicas: "auto" (each live
    /// replica reconciles its share; membership through one Lease per replica in
    /// --leader-election-namespace, grouped by --leader-election-id; leader election is
    /// then not used) or "off" (default).
    #[arg(long, default_value = "off", value_parser = parse_sharding)]
    shards: Sharding,

    /// Silences the override-value for OverrideValuesInUse events.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    suppress_override_values: bool,

    /// Enables HTTP/2 on the metrics server (accepted; the server speaks HTTP/1.1,
    /// which is what the Go operator serves without this flag).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    enable_http2: bool,

    /// Enables secure serving of the metrics endpoint (HTTPS).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    metrics_secure: bool,

    /// Enables protection of the metrics endpoint with RBAC-based authn/authz
    /// (TokenReview and SubjectAccessReview, as controller-runtime's
    /// filters.WithAuthenticationAndAuthorization).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    metrics_require_rbac: bool,

    /// The directory that contains the metrics server certificate (default: a
    /// self-signed certificate, unless <tmp>/k8s-metrics-server/serving-certs holds one).
    #[arg(long)]
    metrics_cert_path: Option<PathBuf>,

    /// The name of the metrics server certificate file.
    #[arg(long, default_value = "tls.crt")]
    metrics_cert_name: String,

    /// The name of the metrics server key file.
    #[arg(long, default_value = "tls.key")]
    metrics_cert_key: String,

    /// Deprecated in the Go operator: a controller-runtime ComponentConfig file (not
    /// supported; pass flags instead).
    #[arg(long, hide = true)]
    config: Option<PathBuf>,

    /// Namespaces to watch, comma-separated (default: all namespaces).
    #[arg(
        long,
        env = "WATCH_NAMESPACE",
        default_value = "",
        hide_default_value = true
    )]
    watch_namespace: String,

    /// Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,

    /// Development mode: human-readable logs at debug level.
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true")]
    zap_devel: bool,

    /// Log encoding: json or console.
    #[arg(long, value_parser = ["json", "console"])]
    zap_encoder: Option<String>,

    /// Log level: debug, info, warn, error, panic, or an integer verbosity > 0 (1 is debug).
    #[arg(long, alias = "zap-level")]
    zap_log_level: Option<String>,

    /// Zap Level at and above which stacktraces are captured (one of 'info', 'error',
    /// 'panic'); accepted, rudder writes no Go stack traces.
    #[arg(long, value_parser = ["info", "error", "panic"])]
    zap_stacktrace_level: Option<String>,

    /// Zap time encoding (one of 'epoch', 'millis', 'nano', 'iso8601', 'rfc3339' or
    /// 'rfc3339nano'; default rfc3339).
    #[arg(long)]
    zap_time_encoding: Option<String>,

    /// Accepted for compatibility; logs are not sampled.
    #[arg(long, hide = true)]
    zap_sample: Option<String>,
}

/// A non-negative Go duration (`30s`, `1m30s`, `1.5h`, a bare `0`), as
/// `time.ParseDuration` reads it.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = gostd::time::Duration::parse(s).map_err(|e| {
        format!("invalid duration {s:?} ({e}): use a Go duration like \"30s\", \"1m30s\" or \"2h\"")
    })?;
    d.to_std()
        .ok_or_else(|| format!("duration {s:?} must not be negative"))
}

/// A name for `--field-manager`, refused early when Kubernetes would not keep it.
pub(crate) fn parse_field_manager(s: &str) -> Result<String, String> {
    action::identity::validate_name(s)
        .map(|()| s.to_string())
        .map_err(|e| e.to_string())
}

fn parse_sharding(s: &str) -> Result<Sharding, String> {
    s.parse()
}

fn parse_status_manifest(s: &str) -> Result<StatusManifest, String> {
    s.parse()
}

fn parse_concurrency(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a whole number of at least 1")),
    }
}

/// The log level and format the zap flags ask for: zap's defaults are JSON at info,
/// `--zap-devel` switches to console lines at debug; explicit flags win.
fn log_settings(args: &RunArgs) -> anyhow::Result<(String, LogFormat)> {
    let format = match args.zap_encoder.as_deref() {
        Some(enc) => enc.parse::<LogFormat>()?,
        None if args.zap_devel => LogFormat::Console,
        None => LogFormat::Json,
    };
    let default_level = if args.zap_devel { "debug" } else { "info" };
    let level = args
        .zap_log_level
        .clone()
        .unwrap_or_else(|| default_level.to_string());
    // Refuse a bad level before anything starts.
    operator::logging::level_filter(&level)?;
    Ok((level, format))
}

/// The operator's options from the flags; refuses what rudder cannot honour.
fn options(args: &RunArgs) -> anyhow::Result<Options> {
    if args.config.is_some() {
        bail!(
            "--config (controller-runtime ComponentConfig) is not supported; pass the settings as flags"
        );
    }
    if args.metrics_require_rbac && !args.metrics_secure {
        bail!("--metrics-secure flag is required when --metrics-require-rbac is present");
    }
    let defaults = MetricsCerts::default();
    let certs = MetricsCerts {
        dir: args.metrics_cert_path.clone().unwrap_or(defaults.dir),
        cert_name: args.metrics_cert_name.clone(),
        key_name: args.metrics_cert_key.clone(),
    };
    Ok(Options {
        watches_file: args.watches_file.clone(),
        reconcile_period: args.reconcile_period,
        reapply_period: args.reapply_period,
        max_concurrent_reconciles: args.max_concurrent_reconciles,
        metrics_bind_address: args
            .metrics_addr
            .clone()
            .unwrap_or_else(|| args.metrics_bind_address.clone()),
        metrics_serving: MetricsServing {
            secure: args.metrics_secure,
            require_rbac: args.metrics_require_rbac,
            certs,
        },
        health_probe_bind_address: args.health_probe_bind_address.clone(),
        leader_elect: args.leader_elect || args.enable_leader_election.unwrap_or(false),
        leader_election_id: args.leader_election_id.clone().filter(|s| !s.is_empty()),
        leader_election_namespace: args
            .leader_election_namespace
            .clone()
            .filter(|s| !s.is_empty()),
        watch_namespaces: split_namespaces(&args.watch_namespace),
        suppress_override_values: args.suppress_override_values,
        shards: args.shards,
        max_history: args.max_history,
        status_manifest: args.status_manifest,
        ..Options::default()
    })
}

/// The operator's client, every request of which `rest_client_requests_total` counts
/// (each attempt of a retried one too, as client-go counts them) and says it comes
/// from `name` (see `action::identity`), retried by rudder's bounded policy rather than
/// kube's default one.
async fn client(
    kubeconfig: Option<&PathBuf>,
    metrics: &Metrics,
    name: &str,
) -> anyhow::Result<kube::Client> {
    let mut config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .with_context(|| format!("cannot use kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer().await.context(
            "cannot find cluster credentials: set --kubeconfig or KUBECONFIG, or run in a pod",
        )?,
    };
    action::identity::identify(&mut config, name)?;
    let layer = RestClientMetricsLayer::new(
        metrics.clone(),
        RestClientMetricsLayer::host_of(&config.cluster_url),
    );
    let builder =
        action::retry::client_builder(config).context("cannot create the Kubernetes client")?;
    Ok(action::retry::with_retries(
        builder.with_layer(&layer).build(),
    ))
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<()> {
    let (level, format) = log_settings(&args)?;
    let time = match args.zap_time_encoding.as_deref() {
        Some(t) => t.parse::<TimeEncoding>()?,
        None => TimeEncoding::default(),
    };
    operator::logging::init_with(
        &level,
        ZapFormat {
            encoder: format,
            time,
        },
    )?;
    let options = options(&args)?;
    if args.enable_http2 {
        tracing::debug!("--enable-http2 is accepted; the metrics server speaks HTTP/1.1");
    }
    tracing::info!(
        target: "cmd",
        { "Rust Version" = env!("CARGO_PKG_RUST_VERSION"), "GOOS" = std::env::consts::OS,
          "GOARCH" = std::env::consts::ARCH, "helm-operator" = env!("CARGO_PKG_VERSION"),
          commit = option_env!("RUDDER_GIT_COMMIT").unwrap_or("unknown") },
        "Version"
    );
    if options.watch_namespaces.is_empty() {
        tracing::info!(target: "cmd", "Watching all namespaces");
    } else {
        tracing::info!(target: "cmd", namespaces = ?options.watch_namespaces, "Watching namespaces");
    }
    let runtime = crate::runtime::deep_stack_runtime().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let metrics = operator::new_metrics();
        let client = client(args.kubeconfig.as_ref(), &metrics, &args.field_manager).await?;
        operator::Operator::from_options(client, options)?
            .with_metrics(metrics)
            .run(operator::shutdown_signal())
            .await?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RunArgs,
    }

    fn parse(args: &[&str]) -> Result<RunArgs, clap::Error> {
        let mut argv = vec!["run"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(|c| c.args)
    }

    #[test]
    fn go_defaults() {
        let a = parse(&[]).unwrap();
        let o = options(&a).unwrap();
        assert_eq!(o.watches_file, PathBuf::from("./watches.yaml"));
        assert_eq!(o.reconcile_period, Duration::from_secs(60));
        assert_eq!(o.reapply_period, operator::DEFAULT_REAPPLY_PERIOD);
        assert_eq!(o.metrics_bind_address, ":8080");
        assert_eq!(o.health_probe_bind_address, ":8081");
        assert!(!o.leader_elect);
        assert_eq!(o.shards, Sharding::Off);
        assert_eq!(
            o.max_concurrent_reconciles,
            default_max_concurrent_reconciles()
        );
        assert_eq!(
            log_settings(&a).unwrap(),
            ("info".to_string(), LogFormat::Json)
        );
    }

    #[test]
    fn history_limit_and_writer_name() {
        let a = parse(&[]).unwrap();
        assert_eq!(options(&a).unwrap().max_history, 10, "Helm's --history-max");
        if std::env::var_os("RUDDER_FIELD_MANAGER").is_none() {
            assert_eq!(a.field_manager, "rudder");
        }
        let a = parse(&["--max-history=1", "--field-manager=my-operator"]).unwrap();
        assert_eq!(options(&a).unwrap().max_history, 1);
        assert_eq!(a.field_manager, "my-operator");
        assert_eq!(
            options(&parse(&["--max-history", "0"]).unwrap())
                .unwrap()
                .max_history,
            0
        );
        for bad in [&["--max-history=-1"][..], &["--field-manager=a/b"]] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let e = parse(&["--field-manager", "two words"]).expect_err("refused");
        assert!(e.to_string().contains("cannot name the writes"), "{e}");
    }

    #[test]
    fn status_manifest_flag() {
        let mode = |flags: &[&str]| options(&parse(flags).unwrap()).unwrap().status_manifest;
        assert_eq!(
            mode(&[]),
            StatusManifest::Redacted,
            "Secrets stay out by default"
        );
        assert_eq!(mode(&["--status-manifest=full"]), StatusManifest::Full);
        assert_eq!(mode(&["--status-manifest", "none"]), StatusManifest::None);
        let e = parse(&["--status-manifest=secret"]).expect_err("refused");
        assert!(e.to_string().contains("use full, redacted or none"), "{e}");
    }

    #[test]
    fn shards_flag() {
        let o = options(&parse(&["--shards=auto"]).unwrap()).unwrap();
        assert_eq!(o.shards, Sharding::Auto);
        let o = options(&parse(&["--shards", "off"]).unwrap()).unwrap();
        assert_eq!(o.shards, Sharding::Off);
        let e = parse(&["--shards=3"]).expect_err("refused").to_string();
        assert!(e.contains("use auto or off"), "{e}");
    }

    #[test]
    fn go_flag_spellings() {
        let a = parse(&[
            "--watches-file=/opt/helm/watches.yaml",
            "--reconcile-period=90s",
            "--reapply-period=30m",
            "--max-concurrent-reconciles=3",
            "--metrics-bind-address=127.0.0.1:8080",
            "--health-probe-bind-address=:9090",
            "--leader-elect",
            "--leader-election-id=my-operator",
            "--leader-election-namespace=ops",
            "--zap-devel",
            "--zap-log-level=2",
        ])
        .unwrap();
        let o = options(&a).unwrap();
        assert_eq!(o.watches_file, PathBuf::from("/opt/helm/watches.yaml"));
        assert_eq!(o.reconcile_period, Duration::from_secs(90));
        assert_eq!(o.reapply_period, Duration::from_secs(1800));
        assert_eq!(o.max_concurrent_reconciles, 3);
        assert_eq!(o.metrics_bind_address, "127.0.0.1:8080");
        assert_eq!(o.health_probe_bind_address, ":9090");
        assert!(o.leader_elect);
        assert_eq!(o.leader_election_id.as_deref(), Some("my-operator"));
        assert_eq!(o.leader_election_namespace.as_deref(), Some("ops"));
        assert_eq!(
            log_settings(&a).unwrap(),
            ("2".to_string(), LogFormat::Console)
        );
    }

    #[test]
    fn bool_flags_take_go_forms() {
        assert!(
            !options(&parse(&["--leader-elect=false"]).unwrap())
                .unwrap()
                .leader_elect
        );
        assert!(
            options(&parse(&["--leader-elect=true"]).unwrap())
                .unwrap()
                .leader_elect
        );
        assert!(
            options(&parse(&["--enable-leader-election"]).unwrap())
                .unwrap()
                .leader_elect
        );
        assert!(parse(&["--leader-elect", "--enable-leader-election"]).is_err());
    }

    #[test]
    fn deprecated_metrics_addr() {
        let o = options(&parse(&["--metrics-addr=:7000"]).unwrap()).unwrap();
        assert_eq!(o.metrics_bind_address, ":7000");
        assert!(parse(&["--metrics-addr=:7000", "--metrics-bind-address=:7001"]).is_err());
    }

    #[test]
    fn the_current_scaffolds_metrics_flags() {
        let o = options(
            &parse(&[
                "--metrics-require-rbac",
                "--metrics-secure",
                "--metrics-bind-address=:8443",
                "--leader-elect",
                "--leader-election-id=memcached-operator",
                "--health-probe-bind-address=:8081",
            ])
            .unwrap(),
        )
        .unwrap();
        assert!(o.metrics_serving.secure && o.metrics_serving.require_rbac);
        assert_eq!(o.metrics_bind_address, ":8443");
        assert_eq!(o.metrics_serving.certs, MetricsCerts::default());
        let o = options(
            &parse(&[
                "--metrics-secure",
                "--metrics-cert-path=/certs",
                "--metrics-cert-name=cert.pem",
                "--metrics-cert-key=key.pem",
            ])
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            o.metrics_serving.certs,
            MetricsCerts {
                dir: PathBuf::from("/certs"),
                cert_name: "cert.pem".into(),
                key_name: "key.pem".into(),
            }
        );
        // Go's check, with Go's text.
        let e = options(&parse(&["--metrics-require-rbac"]).unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--metrics-secure flag is required when --metrics-require-rbac is present"
        );
        // The kube-rbac-proxy era's arguments.
        let o = options(
            &parse(&[
                "--health-probe-bind-address=:8081",
                "--metrics-bind-address=127.0.0.1:8080",
                "--leader-elect",
                "--leader-election-id=memcached-operator",
            ])
            .unwrap(),
        )
        .unwrap();
        assert!(!o.metrics_serving.secure);
        assert_eq!(o.metrics_bind_address, "127.0.0.1:8080");
    }

    #[test]
    fn zap_flags() {
        assert!(parse(&["--zap-stacktrace-level=error", "--zap-time-encoding=epoch"]).is_ok());
        assert!(parse(&["--zap-stacktrace-level=loud"]).is_err());
        assert!(parse(&["--zap-encoder=xml"]).is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["--reconcile-period=soon"]).is_err());
        assert!(parse(&["--max-concurrent-reconciles=0"]).is_err());
        let a = parse(&["--zap-log-level=loud"]).unwrap();
        assert!(log_settings(&a).is_err());
    }

    #[test]
    fn watch_namespace_flag_splits() {
        let o = options(&parse(&["--watch-namespace=a, b"]).unwrap()).unwrap();
        assert_eq!(o.watch_namespaces, ["a", "b"]);
    }
}
