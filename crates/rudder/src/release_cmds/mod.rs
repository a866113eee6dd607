//! Helm-compatible release commands: install, upgrade, rollback, uninstall, list,
//! history, status and get, against any cluster through kubeconfig. Flags, output and
//! error wording follow Helm's, so scripts written for `helm` work with `rudder`; the
//! records are Helm's, so both tools can act on the same releases.
//!
//! Unlike Helm, install/upgrade/rollback first recover a release left `pending-*` by
//! an interrupted action (when no live lock holds it), instead of refusing forever.
//!
//! This module is flags and printing only: what each command does is an `action` verb.

mod format;
mod get;
mod go_release;
mod list;
mod resources;

pub(crate) use list::ListArgs;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use action::{
    ActionConfig, ActionOptions, DryRun, Get, History, Install, Recover, ReleaseStatus,
    ReuseValues, Rollback, Uninstall, UninstallOptions, Upgrade,
};
use anyhow::{anyhow, bail, Context as _};
use chart::values::Values;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use release::record::{Release, Status};
use release::StorageDriver;
use serde_json::json;

use crate::template::{ChartSizeArgs, ValueArgs};

/// Where the cluster is and which namespace the release lives in.
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct KubeArgs {
    /// Namespace of the release (default: the kubeconfig context's, else `default`).
    #[arg(short = 'n', long, env = "HELM_NAMESPACE")]
    pub namespace: Option<String>,
    /// Path to the kubeconfig file.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Name of the kubeconfig context to use.
    #[arg(long, env = "HELM_KUBECONTEXT")]
    pub kube_context: Option<String>,
    /// The name rudder's writes carry: the field manager of its release record
    /// writes and its User-Agent (NAME/<version>). Objects are applied as "helm".
    #[arg(long, env = "RUDDER_FIELD_MANAGER", default_value = action::identity::DEFAULT_NAME,
          value_parser = crate::run::parse_field_manager)]
    pub field_manager: String,
    /// Helm's global `--debug`: accepted everywhere; `template` prints what it
    /// rendered before a render error.
    #[arg(long)]
    pub debug: bool,
}

/// Output formats of the read commands.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum OutputFormat {
    #[default]
    Table,
    Json,
    Yaml,
}

/// How install, upgrade and rollback wait: `--wait`, `--wait-for-jobs`, `--timeout`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct WaitFlags {
    /// Wait until all Pods, PVCs, Services and Deployments are ready (`--wait[=watcher|legacy]`), up to --timeout;
    /// `hookOnly` and `false` wait for hooks only.
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "watcher",
        value_parser = crate::helm_cli::parse_wait
    )]
    pub wait: Option<bool>,
    /// With --wait, also wait until all Jobs have completed.
    #[arg(long)]
    pub wait_for_jobs: bool,
    /// Time to wait for any individual Kubernetes operation (a Go duration: 5m0s, 90s).
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration)]
    pub timeout: Duration,
}

impl WaitFlags {
    /// Sets the options' waits; `also` waits for readiness even without `--wait`
    /// (what `--rollback-on-failure` implies).
    fn set(&self, o: &mut ActionOptions, also: bool) {
        o.timeout = self.timeout;
        o.wait = self.wait.unwrap_or(false) || self.wait_for_jobs || also;
        o.wait_for_jobs = self.wait_for_jobs;
    }
}

/// Flags shared by install and upgrade.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct ActionFlags {
    #[command(flatten)]
    pub waits: WaitFlags,
    /// Undo the action when it fails (deprecated name of --rollback-on-failure).
    #[arg(long)]
    pub atomic: bool,
    /// Undo the action when it fails; implies --wait.
    #[arg(long)]
    pub rollback_on_failure: bool,
    /// Revisions kept per release (0: no limit).
    #[arg(long, default_value_t = 10)]
    pub history_max: usize,
    /// Replace objects that cannot be patched (Helm 4's `--force-replace`).
    #[arg(long, alias = "force-replace")]
    pub force: bool,
    /// Accepted for Helm 4 scripts: rudder always applies server-side, as
    /// field manager `helm`, and takes conflicting fields over.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = ["true", "false", "auto"])]
    pub server_side: Option<String>,
    /// Accepted for Helm 4 scripts: rudder always takes conflicting fields over.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Adopt existing objects that belong to another release or to none.
    #[arg(long)]
    pub take_ownership: bool,
    /// Do not run the chart's hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// A custom description for the new revision.
    #[arg(long)]
    pub description: Option<String>,
    /// Labels added to the release record (key1=val1,key2=val2).
    #[arg(short = 'l', long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Render and print what would be applied, change nothing: `client`
    /// renders offline (no `lookup`, default capabilities), `server` lets
    /// `lookup` and capability discovery reach the cluster, `none` is a real
    /// run; the bare flag and booleans work as in Helm, with its warnings.
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::helm_cli::DRY_RUN_BARE
    )]
    pub dry_run: Option<String>,
    /// Kubernetes version for .Capabilities (e.g. v1.29.0).
    #[arg(long)]
    pub kube_version: Option<String>,
}

/// `install [NAME] CHART`.
#[derive(clap::Args, Debug)]
pub(crate) struct InstallArgs {
    /// `[NAME] CHART`: the release name (unless --generate-name), then the chart directory or .tgz.
    #[arg(value_name = "[NAME] [CHART]")]
    pub args: Vec<String>,
    /// Generate the release name (CHART-<unix seconds>).
    #[arg(short = 'g', long)]
    pub generate_name: bool,
    /// Name the release with this template (Sprig functions).
    #[arg(long)]
    pub name_template: Option<String>,
    /// Create the release namespace if it does not exist.
    #[arg(long)]
    pub create_namespace: bool,
    #[command(flatten)]
    pub values: ValueArgs,
    #[command(flatten)]
    pub action: ActionFlags,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format of the release status.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub chart_size: ChartSizeArgs,
}

/// `upgrade NAME CHART`.
#[derive(clap::Args, Debug)]
pub(crate) struct UpgradeArgs {
    /// Release name, then the chart directory or .tgz.
    #[arg(value_name = "[RELEASE] [CHART]")]
    pub args: Vec<String>,
    /// Install the release if it does not exist yet.
    #[arg(short = 'i', long)]
    pub install: bool,
    /// With --install, create the release namespace if it does not exist.
    #[arg(long)]
    pub create_namespace: bool,
    /// Merge the given values over the last release's values.
    #[arg(long)]
    pub reuse_values: bool,
    /// Use only the chart's defaults and the given values.
    #[arg(long)]
    pub reset_values: bool,
    /// Reset to the chart's defaults, then merge the last release's values and the given ones.
    #[arg(long)]
    pub reset_then_reuse_values: bool,
    #[command(flatten)]
    pub values: ValueArgs,
    #[command(flatten)]
    pub action: ActionFlags,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format of the release status.
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub chart_size: ChartSizeArgs,
}

/// `rollback NAME [REVISION]`.
#[derive(clap::Args, Debug)]
pub(crate) struct RollbackArgs {
    /// Release name, then the revision to roll back to (default: the previous one).
    #[arg(value_name = "<RELEASE> [REVISION]")]
    pub args: Vec<String>,
    #[command(flatten)]
    pub waits: WaitFlags,
    /// Do not run the chart's hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Replace objects that cannot be patched (Helm 4's `--force-replace`).
    #[arg(long, alias = "force-replace")]
    pub force: bool,
    /// Accepted for Helm 4 scripts: rudder always applies server-side.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
          value_parser = ["true", "false", "auto"])]
    pub server_side: Option<String>,
    /// Accepted for Helm 4 scripts: rudder always takes conflicting fields over.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Revisions kept per release (0: no limit).
    #[arg(long, default_value_t = 10)]
    pub history_max: usize,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `uninstall NAME...`.
#[derive(clap::Args, Debug)]
pub(crate) struct UninstallArgs {
    /// Release names.
    #[arg(value_name = "RELEASE_NAME")]
    pub names: Vec<String>,
    /// Keep the release history, marked uninstalled.
    #[arg(long)]
    pub keep_history: bool,
    /// Do not run the chart's hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Wait until the deleted objects are gone (`--wait[=watcher|legacy]`), up to --timeout;
    /// `hookOnly` and `false` wait for hooks only.
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "watcher",
        value_parser = crate::helm_cli::parse_wait
    )]
    pub wait: Option<bool>,
    /// Time to wait for any individual Kubernetes operation (a Go duration).
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// A custom description for the uninstalled revision.
    #[arg(long)]
    pub description: Option<String>,
    /// Succeed when the release does not exist.
    #[arg(long)]
    pub ignore_not_found: bool,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `history NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct HistoryArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Maximum number of revisions shown (the newest ones).
    #[arg(long, default_value_t = 256)]
    pub max: usize,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `status NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct StatusArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Show this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `get values NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct GetValuesArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Show the computed values (chart defaults merged with the user's).
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Read this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `get manifest|notes|hooks|all NAME`.
#[derive(clap::Args, Debug)]
pub(crate) struct GetTextArgs {
    /// Release name.
    #[arg(value_name = "RELEASE_NAME")]
    pub args: Vec<String>,
    /// Read this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `get ...`.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum GetCommand {
    /// Print the values of a release.
    Values(GetValuesArgs),
    /// Print the manifest of a release.
    Manifest(GetTextArgs),
    /// Print the notes of a release.
    Notes(GetTextArgs),
    /// Print the hooks of a release.
    Hooks(GetTextArgs),
    /// Print the chart and record metadata of a release.
    Metadata(get::GetMetadataArgs),
    /// Print everything about a release: status, values, hooks, manifest and notes.
    All(get::GetAllArgs),
}

/// The release a one-release command names (checked present by [`arity`]).
fn release_name(args: &[String]) -> &str {
    args.first().map(String::as_str).unwrap_or_default()
}

/// Helm's argument-count check for a release command, with its usage line.
fn arity(cmd: &ReleaseCommand) -> anyhow::Result<()> {
    use crate::helm_cli::Arity::{AtLeast, Exactly};
    let (args, arity, name, usage): (&[String], _, _, _) = match cmd {
        ReleaseCommand::Install(a) => (&a.args, AtLeast(1), "install", "[NAME] [CHART]"),
        ReleaseCommand::Upgrade(a) => (&a.args, Exactly(2), "upgrade", "[RELEASE] [CHART]"),
        ReleaseCommand::Rollback(a) => (&a.args, AtLeast(1), "rollback", "<RELEASE> [REVISION]"),
        ReleaseCommand::Uninstall(a) => (&a.names, AtLeast(1), "uninstall", "RELEASE_NAME [...]"),
        ReleaseCommand::List(_) => return Ok(()),
        ReleaseCommand::History(a) => (&a.args, Exactly(1), "history", "RELEASE_NAME"),
        ReleaseCommand::Status(a) => (&a.args, Exactly(1), "status", "RELEASE_NAME"),
        ReleaseCommand::Get(g) => {
            let (args, name): (&[String], _) = match g {
                GetCommand::Values(a) => (&a.args, "get values"),
                GetCommand::Manifest(a) => (&a.args, "get manifest"),
                GetCommand::Notes(a) => (&a.args, "get notes"),
                GetCommand::Hooks(a) => (&a.args, "get hooks"),
                GetCommand::Metadata(a) => (&a.args, "get metadata"),
                GetCommand::All(a) => (&a.args, "get all"),
            };
            (args, Exactly(1), name, "RELEASE_NAME")
        }
    };
    crate::helm_cli::check_arity(args, arity, name, &format!("{name} {usage} [flags]"))
}

/// The release commands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum ReleaseCommand {
    /// Install a chart as a new release.
    Install(Box<InstallArgs>),
    /// Upgrade a release to a new chart or new values.
    Upgrade(Box<UpgradeArgs>),
    /// Roll a release back to an earlier revision (as a new revision).
    Rollback(RollbackArgs),
    /// Uninstall releases: delete their objects and records.
    #[command(visible_aliases = ["un", "delete", "del"])]
    Uninstall(UninstallArgs),
    /// List releases.
    #[command(visible_alias = "ls")]
    List(ListArgs),
    /// Print the revisions of a release.
    #[command(visible_alias = "hist")]
    History(HistoryArgs),
    /// Show the status of a release.
    Status(StatusArgs),
    /// Read a release's values, manifest, notes, hooks or metadata.
    #[command(subcommand)]
    Get(GetCommand),
}

/// A failure worded the way Helm words it (`Error: ` is added by `main`).
fn helm_err(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::msg(msg.into())
}

/// Waits (`--wait`, hook Jobs, deletions, retried requests) say on stderr what they are
/// waiting for every few seconds, and warnings (an API group skipped by discovery) are
/// shown, as plain lines; stdout stays what Helm prints. `RUST_LOG` shows more.
fn init_progress_log() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "{}=info,{}=info",
            action::WAIT_LOG_TARGET,
            action::WARNING_LOG_TARGET
        ))
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .with_level(false)
        .try_init();
}

/// Runs a release command; returns the process exit code.
pub(crate) fn run(cmd: ReleaseCommand) -> anyhow::Result<i32> {
    arity(&cmd)?;
    init_progress_log();
    let rt = crate::runtime::deep_stack_runtime().context("starting the async runtime")?;
    rt.block_on(async move {
        let out = match cmd {
            ReleaseCommand::Install(a) => install(*a).await?,
            ReleaseCommand::Upgrade(a) => upgrade(*a).await?,
            ReleaseCommand::Rollback(a) => rollback(a).await?,
            ReleaseCommand::Uninstall(a) => uninstall(a).await?,
            ReleaseCommand::List(a) => list::list(a).await?,
            ReleaseCommand::History(a) => history(a).await?,
            ReleaseCommand::Status(a) => status(a).await?,
            ReleaseCommand::Get(GetCommand::Values(a)) => get_values(a).await?,
            ReleaseCommand::Get(GetCommand::Manifest(a)) => {
                let rel = get(&a.kube, release_name(&a.args), a.revision).await?;
                format!("{}\n", rel.manifest)
            }
            ReleaseCommand::Get(GetCommand::Hooks(a)) => get::hooks(a).await?,
            ReleaseCommand::Get(GetCommand::Metadata(a)) => get::metadata(a).await?,
            ReleaseCommand::Get(GetCommand::All(a)) => get::all(a).await?,
            ReleaseCommand::Get(GetCommand::Notes(a)) => {
                let rel = get(&a.kube, release_name(&a.args), a.revision).await?;
                let notes = rel.info.map(|i| i.notes).unwrap_or_default();
                if notes.is_empty() {
                    String::new()
                } else {
                    format!("NOTES:\n{notes}\n")
                }
            }
        };
        print!("{out}");
        Ok(0)
    })
}

// ---------------------------------------------------------------------------
// Cluster access

/// The actions' configuration for the kubeconfig/context asked for (records kept with
/// the driver `HELM_DRIVER` names), and the release namespace.
pub(crate) async fn connect(k: &KubeArgs) -> anyhow::Result<(ActionConfig, String)> {
    let (client, namespace) = client(k).await?;
    let driver = StorageDriver::from_env()?;
    Ok((ActionConfig::new(client).with_driver(driver), namespace))
}

/// A client for the kubeconfig/context asked for, and the release namespace.
pub(crate) async fn client(k: &KubeArgs) -> anyhow::Result<(Client, String)> {
    let opts = KubeConfigOptions {
        context: k.kube_context.clone(),
        cluster: None,
        user: None,
    };
    let mut config = match &k.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .with_context(|| format!("loading kubeconfig {}", path.display()))?
        }
        None if k.kube_context.is_some() => kube::Config::from_kubeconfig(&opts)
            .await
            .context("loading kubeconfig")?,
        None => kube::Config::infer()
            .await
            .context("finding a cluster: no kubeconfig (set --kubeconfig or KUBECONFIG) and not in a cluster")?,
    };
    let namespace = k
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| config.default_namespace.clone());
    let namespace = if namespace.is_empty() {
        "default".to_string()
    } else {
        namespace
    };
    action::identity::identify(&mut config, &k.field_manager)?;
    // rudder's bounded retries, not kube's (up to 15 per request, minutes in all).
    let client = action::retry::client(config).context("creating the Kubernetes client")?;
    Ok((client, namespace))
}

/// Actions keep records where Helm would (Secrets, or ConfigMaps with
/// `HELM_DRIVER=configmap`); the memory driver would lose them when the process exits.
fn check_write_driver(cfg: &ActionConfig) -> anyhow::Result<()> {
    match cfg.driver() {
        StorageDriver::Secret | StorageDriver::ConfigMap => Ok(()),
        other => bail!(
            "rudder keeps release records in the cluster (HELM_DRIVER secret or configmap), but HELM_DRIVER is {:?}, whose records would be lost when rudder exits; unset it or set it to secret or configmap",
            std::env::var("HELM_DRIVER").unwrap_or_else(|_| other.name().to_string())
        ),
    }
}

/// Helm's wording for a read of a release that does not exist.
fn not_found(e: action::Error) -> anyhow::Error {
    match e {
        action::Error::ReleaseNotFound { .. } => helm_err("release: not found"),
        other => anyhow!(other),
    }
}

/// The newest revision (or `revision`), with Helm's "release: not found".
async fn get(k: &KubeArgs, name: &str, revision: Option<i64>) -> anyhow::Result<Release> {
    let (cfg, ns) = connect(k).await?;
    Get::new(&cfg, ns)
        .run(name, revision)
        .await
        .map_err(not_found)
}

async fn ensure_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    if api
        .get_opt(ns)
        .await
        .with_context(|| format!("reading namespace {ns}"))?
        .is_some()
    {
        return Ok(());
    }
    let obj: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": {"name": ns}}
    }))?;
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(anyhow!(e).context(format!("creating namespace {ns}"))),
    }
}

// ---------------------------------------------------------------------------
// Flags

/// Parses a Go duration (`5m0s`, `1h30m`, `90s`, `1.5h`, `300ms`), as
/// Helm's `--timeout` flags do; negative durations are refused.
pub(crate) fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: &dyn std::fmt::Display| {
        format!("invalid duration {text:?} ({why}; examples: 5m0s, 90s, 1h30m)")
    };
    gostd::time::Duration::parse(text.trim())
        .map_err(|e| bad(&e))?
        .to_std()
        .ok_or_else(|| bad(&"negative"))
}

fn parse_labels(labels: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for l in labels.iter().filter(|l| !l.is_empty()) {
        let (k, v) = l
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid label {l:?}: expected key=value"))?;
        if release::driver::SYSTEM_LABELS.contains(&k) {
            bail!(
                "user supplied labels contains system reserved label name. System labels: {:?}",
                release::driver::SYSTEM_LABELS
            );
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

fn action_options(name: &str, ns: &str, a: &ActionFlags) -> anyhow::Result<ActionOptions> {
    let mut o = ActionOptions::new(name, ns);
    let undo = a.atomic || a.rollback_on_failure;
    o.take_ownership = a.take_ownership;
    a.waits.set(&mut o, undo);
    o.max_history = a.history_max;
    o.kube_version = a.kube_version.clone();
    o.disable_hooks = a.no_hooks;
    o.force = a.force;
    o.description = a.description.clone();
    o.rollback_on_failure = undo;
    o.labels = parse_labels(&a.labels)?;
    Ok(o)
}

/// Helm's `--dry-run` modes; `none` (like no flag) is a real run.
fn dry_run_mode(flags: &ActionFlags) -> anyhow::Result<Option<DryRun>> {
    use crate::helm_cli::{dry_run_strategy, DryRunFlag};
    let Some(value) = flags.dry_run.as_deref() else {
        return Ok(None);
    };
    Ok(match dry_run_strategy(value, false)? {
        DryRunFlag::None => None,
        DryRunFlag::Client => Some(DryRun::Client),
        DryRunFlag::Server => Some(DryRun::Server),
    })
}

/// Loads the chart at `path`, shared as the actions take it.
fn load_chart(path: &str, size: &ChartSizeArgs) -> anyhow::Result<Arc<chart::loader::Chart>> {
    if !Path::new(path).exists() {
        return Err(helm_err(format!("path {path:?} not found")));
    }
    chart::loader::load_with(Path::new(path), &size.budget())
        .map(Arc::new)
        .map_err(|e| helm_err(format!("loading chart {path}: {}", apierror::chain(&e))))
}

/// Prefixes an error with Helm's action word (`INSTALLATION FAILED: ...`).
fn failed(prefix: &str, e: anyhow::Error) -> anyhow::Error {
    helm_err(format!("{prefix}: {}", apierror::chain(&*e)))
}

/// Marks a pending record left by a dead action failed, so this action can proceed.
async fn recover(cfg: &ActionConfig, opts: &ActionOptions) -> anyhow::Result<()> {
    if let Some(rel) = Recover::new(cfg, opts.clone()).run().await? {
        eprintln!(
            "recovered release {:?}: revision {} had been left pending by an interrupted action; it is now marked {}",
            rel.name,
            rel.version,
            rel.status()
        );
    }
    Ok(())
}

fn status_output(rel: &Release, fmt: OutputFormat, dry_run: bool) -> anyhow::Result<String> {
    let mut shown = rel.clone();
    shown.chart = None;
    Ok(match fmt {
        OutputFormat::Table => format::status_text(&shown, dry_run),
        OutputFormat::Json => format::json(&shown),
        OutputFormat::Yaml => format::yaml(&serde_json::to_value(&shown)?)?,
    })
}

// ---------------------------------------------------------------------------
// Actions

async fn install(a: InstallArgs) -> anyhow::Result<String> {
    let dry_run = dry_run_mode(&a.action)?;
    let (name, chart_path) =
        install_name_and_chart(&a).map_err(|e| failed("INSTALLATION FAILED", e))?;
    let chart =
        load_chart(&chart_path, &a.chart_size).map_err(|e| failed("INSTALLATION FAILED", e))?;
    let values = a
        .values
        .merged()
        .map_err(|e| failed("INSTALLATION FAILED", e))?;
    let (cfg, ns) = connect(&a.kube).await?;
    let opts = action_options(&name, &ns, &a.action)?;
    let run = InstallRun {
        cfg: &cfg,
        opts,
        dry_run,
        create_namespace: a.create_namespace,
        output: a.output,
    };
    run.run(&chart, values)
        .await
        .map_err(|e| failed("INSTALLATION FAILED", e))
}

/// Helm's `NameAndChart` for `install`: the name given, made from
/// `--name-template`, or generated from the chart argument with `-g`
/// (`<base name up to its first dot>-<unix seconds>`).
fn install_name_and_chart(a: &InstallArgs) -> anyhow::Result<(String, String)> {
    match a.args.as_slice() {
        [_, _, rest @ ..] if !rest.is_empty() => bail!(
            "expected at most two arguments, unexpected arguments: {}",
            rest.join(", ")
        ),
        [name, chart] => {
            if a.generate_name {
                bail!("cannot set --generate-name and also specify a name");
            }
            if a.name_template.is_some() {
                bail!("cannot set --name-template and also specify a name");
            }
            Ok((name.clone(), chart.clone()))
        }
        [chart] => {
            if let Some(t) = a.name_template.as_deref().filter(|t| !t.is_empty()) {
                return Ok((crate::template::name_from_template(t)?, chart.clone()));
            }
            if !a.generate_name {
                bail!("must either provide a name or specify --generate-name");
            }
            let base = Path::new(chart)
                .file_name()
                .map(|b| b.to_string_lossy().into_owned())
                .filter(|b| !b.is_empty() && b != ".")
                .unwrap_or_else(|| "chart".into());
            let base = base.split('.').next().unwrap_or_default();
            let now = jiff::Timestamp::now().as_second();
            Ok((format!("{base}-{now}"), chart.clone()))
        }
        _ => bail!("expected [NAME] CHART"),
    }
}

/// An install as `install` and `upgrade --install` run it.
struct InstallRun<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
    dry_run: Option<DryRun>,
    create_namespace: bool,
    output: OutputFormat,
}

impl InstallRun<'_> {
    async fn run(
        &self,
        chart: &Arc<chart::loader::Chart>,
        values: Values,
    ) -> anyhow::Result<String> {
        let install = Install::new(self.cfg, self.opts.clone());
        if let Some(mode) = self.dry_run {
            let rel = install.dry_run(chart, values, mode).await?;
            return status_output(&rel, self.output, true);
        }
        check_write_driver(self.cfg)?;
        if self.create_namespace {
            ensure_namespace(self.cfg.client(), &self.opts.namespace).await?;
        }
        recover(self.cfg, &self.opts).await?;
        let rel = install.run(chart, values).await.map_err(|e| match e {
            action::Error::InUse { .. } => anyhow!("cannot re-use a name that is still in use"),
            other => anyhow!(other),
        })?;
        status_output(&rel, self.output, false)
    }
}

async fn upgrade(a: UpgradeArgs) -> anyhow::Result<String> {
    let dry_run = dry_run_mode(&a.action)?;
    let (name, chart_path) = (release_name(&a.args), a.args[1].as_str());
    let chart = load_chart(chart_path, &a.chart_size)?;
    let given = a.values.merged().map_err(|e| failed("UPGRADE FAILED", e))?;
    let (cfg, ns) = connect(&a.kube).await?;
    let opts = action_options(name, &ns, &a.action)?;
    let history = History::new(&cfg, ns.as_str())
        .meta(name)
        .await
        .with_context(|| format!("reading the history of release {:?}", name))?;
    let uninstalled = history
        .last()
        .is_some_and(|m| m.status == Status::Uninstalled);
    if a.install && (history.is_empty() || uninstalled) {
        let mut out = if a.output == OutputFormat::Table {
            format!("Release {:?} does not exist. Installing it now.\n", name)
        } else {
            String::new()
        };
        let run = InstallRun {
            cfg: &cfg,
            opts: opts.clone(),
            dry_run,
            create_namespace: a.create_namespace,
            output: a.output,
        };
        let shown = run
            .run(&chart, given)
            .await
            .map_err(|e| failed("UPGRADE FAILED", e))?;
        out.push_str(&shown);
        return Ok(out);
    }
    if history.is_empty() {
        return Err(helm_err(format!(
            "UPGRADE FAILED: {:?} has no deployed releases",
            name
        )));
    }
    let reuse = ReuseValues::from_flags(a.reset_values, a.reuse_values, a.reset_then_reuse_values);
    let up = Upgrade::new(&cfg, opts.clone()).reuse_values(reuse);
    if let Some(mode) = dry_run {
        let (rel, diff) = up
            .dry_run(&chart, given, mode)
            .await
            .map_err(|e| failed("UPGRADE FAILED", anyhow!(e)))?;
        let mut out = match (a.output, diff.changed) {
            (OutputFormat::Table, true) => format!(
                "Release {:?} would change (dry run; nothing was applied).\n",
                name
            ),
            (OutputFormat::Table, false) => format!(
                "Release {:?} is up to date: the upgrade would change nothing (dry run).\n",
                name
            ),
            _ => String::new(),
        };
        out.push_str(&status_output(&rel, a.output, true)?);
        return Ok(out);
    }
    check_write_driver(&cfg)?;
    recover(&cfg, &opts)
        .await
        .map_err(|e| failed("UPGRADE FAILED", e))?;
    let rel = up.run(&chart, given).await.map_err(|e| match e {
        action::Error::NotDeployed { release } => helm_err(format!(
            "UPGRADE FAILED: {release:?} has no deployed releases"
        )),
        other => failed("UPGRADE FAILED", anyhow!(other)),
    })?;
    let mut out = if a.output == OutputFormat::Table {
        format!("Release {:?} has been upgraded. Happy Helming!\n", name)
    } else {
        String::new()
    };
    out.push_str(&status_output(&rel, a.output, false)?);
    Ok(out)
}

async fn rollback(a: RollbackArgs) -> anyhow::Result<String> {
    let revision = match a.args.get(1) {
        Some(r) => r.parse::<i64>().map_err(|_| {
            anyhow!(
                "could not convert revision to a number: strconv.Atoi: parsing {}: invalid syntax",
                crate::helm_cli::go_quote(r)
            )
        })?,
        None => 0,
    };
    let (cfg, ns) = connect(&a.kube).await?;
    check_write_driver(&cfg)?;
    let mut opts = ActionOptions::new(release_name(&a.args), &ns);
    a.waits.set(&mut opts, false);
    opts.disable_hooks = a.no_hooks;
    opts.force = a.force;
    opts.max_history = a.history_max;
    recover(&cfg, &opts).await?;
    Rollback::new(&cfg, opts)
        .run(revision)
        .await
        .map_err(|e| match e {
            action::Error::NotDeployed { .. } => helm_err("release: not found"),
            action::Error::RevisionNotFound { version, .. } => {
                helm_err(format!("release has no {version} version"))
            }
            other => anyhow!(other),
        })?;
    Ok("Rollback was a success! Happy Helming!\n".into())
}

async fn uninstall(a: UninstallArgs) -> anyhow::Result<String> {
    let (cfg, ns) = connect(&a.kube).await?;
    check_write_driver(&cfg)?;
    let mut out = String::new();
    for name in &a.names {
        let mut opts = UninstallOptions::new(name, &ns);
        opts.keep_history = a.keep_history;
        opts.timeout = a.timeout;
        opts.disable_hooks = a.no_hooks;
        opts.wait = a.wait.unwrap_or(false);
        opts.description = a.description.clone();
        match Uninstall::new(&cfg, opts).run().await {
            Ok(_) => out.push_str(&format!("release {name:?} uninstalled\n")),
            Err(action::Error::NotDeployed { .. }) if a.ignore_not_found => {}
            Err(action::Error::NotDeployed { .. }) => {
                print!("{out}");
                return Err(helm_err(format!(
                    "uninstall: Release not loaded: {name}: release: not found"
                )));
            }
            Err(e) => {
                print!("{out}");
                return Err(anyhow!(e));
            }
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Reads

/// One revision as `helm history -o json` prints it, fields in Helm's order.
#[derive(serde::Serialize)]
struct HistoryRow {
    revision: i64,
    updated: String,
    status: String,
    chart: String,
    app_version: String,
    description: String,
}

async fn history(a: HistoryArgs) -> anyhow::Result<String> {
    let (cfg, ns) = connect(&a.kube).await?;
    let hist = History::new(&cfg, ns)
        .run(release_name(&a.args), a.max)
        .await
        .map_err(not_found)?;
    let items: Vec<HistoryRow> = hist
        .iter()
        .map(|r| {
            let info = r.info.clone().unwrap_or_default();
            HistoryRow {
                revision: r.version,
                updated: info.last_deployed.unwrap_or_default().to_string(),
                status: r.status().to_string(),
                chart: format::chart_name(r),
                app_version: format::app_version(r),
                description: info.description,
            }
        })
        .collect();
    Ok(match a.output {
        OutputFormat::Json => format::json(&items),
        OutputFormat::Yaml => format::yaml(&serde_json::to_value(&items)?)?,
        OutputFormat::Table => {
            let mut rows = vec![[
                "REVISION",
                "UPDATED",
                "STATUS",
                "CHART",
                "APP VERSION",
                "DESCRIPTION",
            ]
            .map(String::from)
            .to_vec()];
            for r in &hist {
                let info = r.info.clone().unwrap_or_default();
                rows.push(vec![
                    r.version.to_string(),
                    format::ansic(&info.last_deployed.unwrap_or_default()),
                    r.status().to_string(),
                    format::chart_name(r),
                    format::app_version(r),
                    info.description,
                ]);
            }
            format::table(&rows)
        }
    })
}

async fn status(a: StatusArgs) -> anyhow::Result<String> {
    let (cfg, ns) = connect(&a.kube).await?;
    let status = ReleaseStatus::new(&cfg, ns);
    let mut rel = status
        .run(release_name(&a.args), a.revision)
        .await
        .map_err(not_found)?;
    // As Helm does: the table output shows the server's tables, JSON and YAML
    // the objects themselves.
    let tables = matches!(a.output, OutputFormat::Table);
    let resources = status.resources(&rel, tables).await?;
    rel.info.get_or_insert_with(Default::default).resources = resources;
    status_output(&rel, a.output, false)
}

async fn get_values(a: GetValuesArgs) -> anyhow::Result<String> {
    let (cfg, ns) = connect(&a.kube).await?;
    let vals = Get::new(&cfg, ns)
        .values(release_name(&a.args), a.revision, a.all)
        .await
        .map_err(not_found)?;
    Ok(match a.output {
        OutputFormat::Json => format::json(&vals),
        OutputFormat::Yaml => format::yaml(&vals)?,
        OutputFormat::Table => {
            let head = if a.all {
                "COMPUTED VALUES:\n"
            } else {
                "USER-SUPPLIED VALUES:\n"
            };
            format!("{head}{}", format::yaml(&vals)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("5m0s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_go_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
        assert!(parse_go_duration("5").is_err());
        assert!(parse_go_duration("5x").is_err());
        assert!(parse_go_duration("").is_err());
        assert!(parse_go_duration("-1s").is_err());
    }

    #[test]
    fn labels_refuse_system_names() {
        let l = parse_labels(&["team=web".into(), "tier=1".into()]).expect("labels");
        assert_eq!(l.get("team").map(String::as_str), Some("web"));
        assert!(parse_labels(&["owner=me".into()]).is_err());
        assert!(parse_labels(&["novalue".into()]).is_err());
    }

    fn upgrade_args(flags: &[&str]) -> UpgradeArgs {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            a: UpgradeArgs,
        }
        let mut argv = vec!["t", "web", "./chart"];
        argv.extend_from_slice(flags);
        T::parse_from(argv).a
    }

    #[test]
    fn dry_run_flag_does_not_eat_the_next_argument() {
        let a = upgrade_args(&["--dry-run"]);
        assert_eq!(
            a.action.dry_run.as_deref(),
            Some(crate::helm_cli::DRY_RUN_BARE)
        );
        let a = upgrade_args(&["--dry-run=server", "--timeout", "90s"]);
        assert_eq!(a.action.dry_run.as_deref(), Some("server"));
        assert_eq!(a.action.waits.timeout, Duration::from_secs(90));
    }

    #[test]
    fn dry_run_modes_follow_helm() {
        let mode = |flags: &[&str]| dry_run_mode(&upgrade_args(flags).action).ok();
        assert_eq!(mode(&[]), Some(None));
        assert_eq!(mode(&["--dry-run=none"]), Some(None));
        assert_eq!(mode(&["--dry-run=false"]), Some(None));
        assert_eq!(mode(&["--dry-run"]), Some(Some(DryRun::Client)));
        assert_eq!(mode(&["--dry-run=true"]), Some(Some(DryRun::Client)));
        assert_eq!(mode(&["--dry-run=client"]), Some(Some(DryRun::Client)));
        assert_eq!(mode(&["--dry-run=server"]), Some(Some(DryRun::Server)));
        assert_eq!(mode(&["--dry-run=later"]), None);
    }
}
