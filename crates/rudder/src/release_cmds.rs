//! Helm-compatible release commands: install, upgrade, rollback, uninstall, list,
//! history, status and get, against any cluster through kubeconfig. Flags, output and
//! error wording follow Helm's, so scripts written for `helm` work with `rudder`; the
//! records are Helm's, so both tools can act on the same releases.
//!
//! Unlike Helm, install/upgrade/rollback first recover a release left `pending-*` by
//! an interrupted action (when no live lock holds it), instead of refusing forever.

mod format;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use action::{ActionOptions, UninstallOptions};
use chart::loader::Values;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use release::record::{Release, Status};
use release::{ConfigMapDriver, MemoryDriver, SecretDriver, Storage};
use serde_json::{json, Value};

use crate::template::ValueArgs;

/// Where the cluster is and which namespace the release lives in.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct KubeArgs {
    /// Namespace of the release (default: the kubeconfig context's, else `default`).
    #[arg(short = 'n', long, env = "HELM_NAMESPACE")]
    pub namespace: Option<String>,
    /// Path to the kubeconfig file.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Name of the kubeconfig context to use.
    #[arg(long, env = "HELM_KUBECONTEXT")]
    pub kube_context: Option<String>,
}

/// Output formats of the read commands.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Table,
    Json,
    Yaml,
}

/// Flags shared by install and upgrade.
#[derive(clap::Args, Debug, Clone)]
pub struct ActionFlags {
    /// Wait until all Pods, PVCs, Services and Deployments are ready, up to --timeout.
    #[arg(long)]
    pub wait: bool,
    /// With --wait, also wait until all Jobs have completed.
    #[arg(long)]
    pub wait_for_jobs: bool,
    /// Time to wait for any individual Kubernetes operation (a Go duration: 5m0s, 90s).
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// Undo the action when it fails (deprecated name of --rollback-on-failure).
    #[arg(long)]
    pub atomic: bool,
    /// Undo the action when it fails; implies --wait.
    #[arg(long)]
    pub rollback_on_failure: bool,
    /// Revisions kept per release (0: no limit).
    #[arg(long, default_value_t = 10)]
    pub history_max: usize,
    /// Replace objects that cannot be patched.
    #[arg(long)]
    pub force: bool,
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
    #[arg(long, value_delimiter = ',')]
    pub labels: Vec<String>,
    /// Render and print what would be applied, change nothing: `client`
    /// renders offline (no `lookup`, default capabilities), `server` lets
    /// `lookup` and capability discovery reach the cluster.
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "client",
        value_parser = ["client", "server", "none"]
    )]
    pub dry_run: Option<String>,
    /// Kubernetes version for .Capabilities (e.g. v1.29.0).
    #[arg(long)]
    pub kube_version: Option<String>,
}

/// `install [NAME] CHART`.
#[derive(clap::Args, Debug)]
pub struct InstallArgs {
    /// `[NAME] CHART`: the release name (unless --generate-name), then the chart directory or .tgz.
    #[arg(required = true, num_args = 1..=2, value_name = "[NAME] CHART")]
    pub args: Vec<String>,
    /// Generate the release name (CHART-<unix seconds>).
    #[arg(short = 'g', long)]
    pub generate_name: bool,
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
}

/// `upgrade NAME CHART`.
#[derive(clap::Args, Debug)]
pub struct UpgradeArgs {
    /// Release name.
    pub name: String,
    /// Chart directory or .tgz.
    pub chart: String,
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
}

/// `rollback NAME [REVISION]`.
#[derive(clap::Args, Debug)]
pub struct RollbackArgs {
    /// Release name.
    pub name: String,
    /// Revision to roll back to (default: the previous one).
    pub revision: Option<i64>,
    /// Wait until the release's objects are ready, up to --timeout.
    #[arg(long)]
    pub wait: bool,
    /// With --wait, also wait until all Jobs have completed.
    #[arg(long)]
    pub wait_for_jobs: bool,
    /// Time to wait for any individual Kubernetes operation (a Go duration).
    #[arg(long, default_value = "5m0s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// Do not run the chart's hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Replace objects that cannot be patched.
    #[arg(long)]
    pub force: bool,
    /// Revisions kept per release (0: no limit).
    #[arg(long, default_value_t = 10)]
    pub history_max: usize,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `uninstall NAME...`.
#[derive(clap::Args, Debug)]
pub struct UninstallArgs {
    /// Release names.
    #[arg(required = true)]
    pub names: Vec<String>,
    /// Keep the release history, marked uninstalled.
    #[arg(long)]
    pub keep_history: bool,
    /// Do not run the chart's hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Wait until the deleted objects are gone, up to --timeout.
    #[arg(long)]
    pub wait: bool,
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

/// `list`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Show releases of every status.
    #[arg(short = 'a', long)]
    pub all: bool,
    /// List releases across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Print release names only.
    #[arg(short = 'q', long)]
    pub short: bool,
    /// Show deployed releases (the default, with --failed).
    #[arg(long)]
    pub deployed: bool,
    /// Show failed releases.
    #[arg(long)]
    pub failed: bool,
    /// Show pending releases.
    #[arg(long)]
    pub pending: bool,
    /// Show superseded releases.
    #[arg(long)]
    pub superseded: bool,
    /// Show uninstalled releases (kept with --keep-history).
    #[arg(long)]
    pub uninstalled: bool,
    /// Show releases being uninstalled.
    #[arg(long)]
    pub uninstalling: bool,
    /// Do not print the header line.
    #[arg(long)]
    pub no_headers: bool,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `history NAME`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// Release name.
    pub name: String,
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
pub struct StatusArgs {
    /// Release name.
    pub name: String,
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
pub struct GetValuesArgs {
    /// Release name.
    pub name: String,
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

/// `get manifest NAME` / `get notes NAME`.
#[derive(clap::Args, Debug)]
pub struct GetTextArgs {
    /// Release name.
    pub name: String,
    /// Read this revision instead of the newest.
    #[arg(long)]
    pub revision: Option<i64>,
    #[command(flatten)]
    pub kube: KubeArgs,
}

/// `get ...`.
#[derive(clap::Subcommand, Debug)]
pub enum GetCommand {
    /// Print the values of a release.
    Values(GetValuesArgs),
    /// Print the manifest of a release.
    Manifest(GetTextArgs),
    /// Print the notes of a release.
    Notes(GetTextArgs),
}

/// The release commands.
#[derive(clap::Subcommand, Debug)]
pub enum ReleaseCommand {
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
    /// Read a release's values, manifest or notes.
    #[command(subcommand)]
    Get(GetCommand),
}

/// A failure worded the way Helm words it (`Error: ` is added by `main`).
fn helm_err(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::msg(msg.into())
}

/// Runs a release command; returns the process exit code.
pub fn run(cmd: ReleaseCommand) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    rt.block_on(async move {
        let out = match cmd {
            ReleaseCommand::Install(a) => install(*a).await?,
            ReleaseCommand::Upgrade(a) => upgrade(*a).await?,
            ReleaseCommand::Rollback(a) => rollback(a).await?,
            ReleaseCommand::Uninstall(a) => uninstall(a).await?,
            ReleaseCommand::List(a) => list(a).await?,
            ReleaseCommand::History(a) => history(a).await?,
            ReleaseCommand::Status(a) => status(a).await?,
            ReleaseCommand::Get(GetCommand::Values(a)) => get_values(a).await?,
            ReleaseCommand::Get(GetCommand::Manifest(a)) => {
                let rel = read_release(&a.kube, &a.name, a.revision).await?;
                format!("{}\n", rel.manifest)
            }
            ReleaseCommand::Get(GetCommand::Notes(a)) => {
                let rel = read_release(&a.kube, &a.name, a.revision).await?;
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

/// A client for the kubeconfig/context asked for, and the release namespace.
async fn connect(k: &KubeArgs) -> anyhow::Result<(Client, String)> {
    let opts = KubeConfigOptions {
        context: k.kube_context.clone(),
        cluster: None,
        user: None,
    };
    let config = match &k.kubeconfig {
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
    let client = Client::try_from(config).context("creating the Kubernetes client")?;
    Ok((client, namespace))
}

/// The storage read commands use, chosen like Helm by `HELM_DRIVER`.
fn read_storage(client: &Client, namespace: &str) -> anyhow::Result<Storage> {
    let driver = std::env::var("HELM_DRIVER").unwrap_or_default();
    let driver: Arc<dyn release::Driver> = match driver.to_ascii_lowercase().as_str() {
        "" | "secret" | "secrets" => {
            Arc::new(SecretDriver::for_namespace(client.clone(), namespace))
        }
        "configmap" | "configmaps" => {
            Arc::new(ConfigMapDriver::for_namespace(client.clone(), namespace))
        }
        "memory" => Arc::new(MemoryDriver::new()),
        other => bail!("unknown driver {other:?} (HELM_DRIVER: use secret, configmap or memory)"),
    };
    Ok(Storage::new(driver))
}

/// Actions write Helm's default Secret records only.
fn check_write_driver() -> anyhow::Result<()> {
    let driver = std::env::var("HELM_DRIVER").unwrap_or_default();
    match driver.to_ascii_lowercase().as_str() {
        "" | "secret" | "secrets" => Ok(()),
        other => bail!(
            "rudder writes release records with the secret driver only, but HELM_DRIVER is {other:?}; unset it or set it to secret"
        ),
    }
}

/// The newest revision (or `revision`), with Helm's "release: not found".
async fn read_release(k: &KubeArgs, name: &str, revision: Option<i64>) -> anyhow::Result<Release> {
    let (client, ns) = connect(k).await?;
    let store = read_storage(&client, &ns)?;
    match revision.filter(|r| *r > 0) {
        Some(v) => match store.get(name, v).await {
            Ok(r) => Ok(r),
            Err(e) if e.is_not_found() => Err(helm_err("release: not found")),
            Err(e) => Err(anyhow!(e).context(format!("reading release {name:?}"))),
        },
        None => store
            .last(name)
            .await
            .with_context(|| format!("reading release {name:?}"))?
            .ok_or_else(|| helm_err("release: not found")),
    }
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

/// Parses a Go duration (`5m0s`, `1h30m`, `90s`, `1.5h`, `300ms`).
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?} (examples: 5m0s, 90s, 1h30m)");
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return Err(bad());
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += n * secs;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
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
    o.timeout = a.timeout;
    o.max_history = a.history_max;
    o.kube_version = a.kube_version.clone();
    o.disable_hooks = a.no_hooks;
    o.force = a.force;
    o.description = a.description.clone();
    o.wait = a.wait || a.wait_for_jobs || undo;
    o.wait_for_jobs = a.wait_for_jobs;
    o.rollback_on_failure = undo;
    o.labels = parse_labels(&a.labels)?;
    Ok(o)
}

fn load_chart(path: &str) -> anyhow::Result<chart::loader::Chart> {
    if !Path::new(path).exists() {
        return Err(helm_err(format!("path {path:?} not found")));
    }
    chart::loader::load(Path::new(path)).map_err(|e| helm_err(format!("loading chart {path}: {e}")))
}

/// Prefixes an error with Helm's action word (`INSTALLATION FAILED: ...`).
fn failed(prefix: &str, e: anyhow::Error) -> anyhow::Error {
    helm_err(format!("{prefix}: {e:#}"))
}

/// Marks a pending record left by a dead action failed, so this action can proceed.
async fn recover(client: &Client, opts: &ActionOptions) -> anyhow::Result<()> {
    if let Some(rel) = action::recover_pending(client.clone(), opts).await? {
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
        OutputFormat::Json => format::json(&serde_json::to_value(&shown)?),
        OutputFormat::Yaml => format::yaml(&serde_json::to_value(&shown)?)?,
    })
}

// ---------------------------------------------------------------------------
// Actions

async fn install(a: InstallArgs) -> anyhow::Result<String> {
    let chart_path;
    let name;
    match (a.args.as_slice(), a.generate_name) {
        ([chart], true) => {
            chart_path = chart.clone();
            name = None;
        }
        ([n, chart], false) => {
            chart_path = chart.clone();
            name = Some(n.clone());
        }
        ([_], false) => {
            return Err(failed(
                "INSTALLATION FAILED",
                anyhow!("must either provide a name or specify --generate-name"),
            ))
        }
        _ => {
            return Err(failed(
                "INSTALLATION FAILED",
                anyhow!("expected at most one argument with --generate-name"),
            ))
        }
    }
    let chart = load_chart(&chart_path).map_err(|e| failed("INSTALLATION FAILED", e))?;
    let name = name.unwrap_or_else(|| {
        format!(
            "{}-{}",
            chart.metadata.name,
            jiff::Timestamp::now().as_second()
        )
    });
    let values = a
        .values
        .merged()
        .map_err(|e| failed("INSTALLATION FAILED", e))?;
    let (client, ns) = connect(&a.kube).await?;
    let opts = action_options(&name, &ns, &a.action)?;
    run_install(
        &client,
        chart,
        values,
        &opts,
        &a.action,
        a.create_namespace,
        a.output,
    )
    .await
    .map_err(|e| failed("INSTALLATION FAILED", e))
}

async fn run_install(
    client: &Client,
    chart: chart::loader::Chart,
    values: Values,
    opts: &ActionOptions,
    flags: &ActionFlags,
    create_namespace: bool,
    output: OutputFormat,
) -> anyhow::Result<String> {
    if let Some(mode) = dry_run_mode(flags) {
        let client = (mode == DryRun::Server).then_some(client);
        let rel = dry_run_release(
            client,
            chart,
            values,
            opts,
            1,
            false,
            Status::PendingInstall,
        )
        .await?;
        return status_output(&rel, output, true);
    }
    check_write_driver()?;
    if create_namespace {
        ensure_namespace(client, &opts.namespace).await?;
    }
    recover(client, opts).await?;
    let rel = action::install(client.clone(), chart, values, opts)
        .await
        .map_err(|e| match e {
            action::Error::InUse { .. } => anyhow!("cannot re-use a name that is still in use"),
            other => anyhow!(other),
        })?;
    status_output(&rel, output, false)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DryRun {
    Client,
    Server,
}

/// Helm's `--dry-run` modes; `none` (like no flag) is a real run.
fn dry_run_mode(flags: &ActionFlags) -> Option<DryRun> {
    match flags.dry_run.as_deref() {
        None | Some("none") => None,
        Some("server") => Some(DryRun::Server),
        Some(_) => Some(DryRun::Client),
    }
}

/// The record an action would write, for `--dry-run`. With a `client`
/// (server mode) the render sees the cluster, as the real action's does.
async fn dry_run_release(
    client: Option<&Client>,
    chart: chart::loader::Chart,
    values: Values,
    opts: &ActionOptions,
    version: i64,
    is_upgrade: bool,
    status: Status,
) -> anyhow::Result<Release> {
    let chart_rec = action::record::chart_record(&chart);
    let rendered = match client {
        Some(c) => {
            action::render_in_cluster(c, chart, values.clone(), opts, version, is_upgrade).await?
        }
        None => action::render(chart, values.clone(), opts, version, is_upgrade).await?,
    };
    Ok(action::record::new_release(
        &opts.name,
        &opts.namespace,
        version,
        chart_rec,
        values,
        rendered.manifest_text(),
        rendered
            .hooks
            .iter()
            .map(action::record::hook_record)
            .collect(),
        rendered.notes.clone(),
        status,
        "Dry run complete",
    ))
}

/// Helm's rules for which values an upgrade uses.
fn upgrade_values(a: &UpgradeArgs, given: Values, current: Option<&Release>) -> Values {
    let Some(current) = current else {
        return given;
    };
    let mut warn = chart::values::Warnings(Vec::new());
    if a.reset_values {
        return given;
    }
    if a.reuse_values || a.reset_then_reuse_values {
        let mut vals = given;
        chart::values::coalesce_tables(&mut vals, current.config.clone(), &mut warn);
        return vals;
    }
    if given.is_empty() && !current.config.is_empty() {
        return current.config.clone();
    }
    given
}

/// With `--reuse-values` (and not `--reset-values`), Helm renders the new
/// chart with the *old* release's coalesced values as the chart's defaults:
/// the last chart's `values.yaml` with the last user values over it. New
/// defaults of the new chart version are therefore not seen, which is why
/// Helm added `--reset-then-reuse-values`.
fn reused_chart_defaults(a: &UpgradeArgs, current: Option<&Release>) -> Option<Values> {
    if !a.reuse_values || a.reset_values {
        return None;
    }
    let current = current?;
    let old_defaults = current.chart.as_ref()?.values.clone().unwrap_or_default();
    let mut vals = current.config.clone();
    let mut warn = chart::values::Warnings(Vec::new());
    chart::values::coalesce_tables(&mut vals, old_defaults, &mut warn);
    Some(vals)
}

async fn upgrade(a: UpgradeArgs) -> anyhow::Result<String> {
    let chart = load_chart(&a.chart)?;
    let given = a.values.merged().map_err(|e| failed("UPGRADE FAILED", e))?;
    let (client, ns) = connect(&a.kube).await?;
    let opts = action_options(&a.name, &ns, &a.action)?;
    let store = Storage::new(Arc::new(SecretDriver::for_namespace(client.clone(), &ns)));
    let history = store
        .history_meta(&a.name)
        .await
        .with_context(|| format!("reading the history of release {:?}", a.name))?;
    let uninstalled = history
        .last()
        .is_some_and(|m| m.status == Status::Uninstalled);
    if a.install && (history.is_empty() || uninstalled) {
        let mut out = if a.output == OutputFormat::Table {
            format!("Release {:?} does not exist. Installing it now.\n", a.name)
        } else {
            String::new()
        };
        let shown = run_install(
            &client,
            chart,
            given,
            &opts,
            &a.action,
            a.create_namespace,
            a.output,
        )
        .await
        .map_err(|e| failed("UPGRADE FAILED", e))?;
        out.push_str(&shown);
        return Ok(out);
    }
    if history.is_empty() {
        return Err(helm_err(format!(
            "UPGRADE FAILED: {:?} has no deployed releases",
            a.name
        )));
    }
    let current = match store.deployed(&a.name).await {
        Ok(Some(r)) => Some(r),
        _ => store.last(&a.name).await.ok().flatten(),
    };
    let values = upgrade_values(&a, given, current.as_ref());
    let mut chart = chart;
    if let Some(defaults) = reused_chart_defaults(&a, current.as_ref()) {
        chart.values = defaults;
    }
    if let Some(mode) = dry_run_mode(&a.action) {
        let next = history.last().map_or(1, |m| m.version + 1);
        let rel = dry_run_release(
            (mode == DryRun::Server).then_some(&client),
            chart.clone(),
            values.clone(),
            &opts,
            next,
            true,
            Status::PendingUpgrade,
        )
        .await
        .map_err(|e| failed("UPGRADE FAILED", e))?;
        let diff = action::diff_upgrade(client.clone(), chart, values, &opts)
            .await
            .map_err(|e| failed("UPGRADE FAILED", anyhow!(e)))?;
        let mut out = if a.output == OutputFormat::Table {
            if diff.changed {
                format!(
                    "Release {:?} would change (dry run; nothing was applied).\n",
                    a.name
                )
            } else {
                format!(
                    "Release {:?} is up to date: the upgrade would change nothing (dry run).\n",
                    a.name
                )
            }
        } else {
            String::new()
        };
        out.push_str(&status_output(&rel, a.output, true)?);
        return Ok(out);
    }
    check_write_driver()?;
    recover(&client, &opts)
        .await
        .map_err(|e| failed("UPGRADE FAILED", e))?;
    let rel = action::upgrade(client.clone(), chart, values, &opts)
        .await
        .map_err(|e| match e {
            action::Error::NotDeployed { release } => helm_err(format!(
                "UPGRADE FAILED: {release:?} has no deployed releases"
            )),
            other => failed("UPGRADE FAILED", anyhow!(other)),
        })?;
    let mut out = if a.output == OutputFormat::Table {
        format!("Release {:?} has been upgraded. Happy Helming!\n", a.name)
    } else {
        String::new()
    };
    out.push_str(&status_output(&rel, a.output, false)?);
    Ok(out)
}

async fn rollback(a: RollbackArgs) -> anyhow::Result<String> {
    let (client, ns) = connect(&a.kube).await?;
    check_write_driver()?;
    let mut opts = ActionOptions::new(&a.name, &ns);
    opts.timeout = a.timeout;
    opts.wait = a.wait || a.wait_for_jobs;
    opts.wait_for_jobs = a.wait_for_jobs;
    opts.disable_hooks = a.no_hooks;
    opts.force = a.force;
    opts.max_history = a.history_max;
    recover(&client, &opts).await?;
    action::rollback(client, a.revision.unwrap_or(0), &opts)
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
    let (client, ns) = connect(&a.kube).await?;
    check_write_driver()?;
    let mut out = String::new();
    for name in &a.names {
        let mut opts = UninstallOptions::new(name, &ns);
        opts.keep_history = a.keep_history;
        opts.timeout = a.timeout;
        opts.disable_hooks = a.no_hooks;
        opts.wait = a.wait;
        opts.description = a.description.clone();
        match action::uninstall(client.clone(), &opts).await {
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

async fn list(a: ListArgs) -> anyhow::Result<String> {
    let (client, ns) = connect(&a.kube).await?;
    let namespaces = if a.all_namespaces {
        let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::all(client.clone());
        let lp = ListParams::default().labels("owner=helm");
        let mut set: Vec<String> = match std::env::var("HELM_DRIVER")
            .unwrap_or_default()
            .to_ascii_lowercase()
            .as_str()
        {
            "configmap" | "configmaps" => {
                let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::all(client.clone());
                cms.list_metadata(&lp)
                    .await
                    .context("listing release ConfigMaps")?
                    .items
                    .into_iter()
                    .filter_map(|m| m.metadata.namespace)
                    .collect()
            }
            _ => secrets
                .list_metadata(&lp)
                .await
                .context("listing release Secrets")?
                .items
                .into_iter()
                .filter_map(|m| m.metadata.namespace)
                .collect(),
        };
        set.sort();
        set.dedup();
        set
    } else {
        vec![ns]
    };
    let any_state =
        a.deployed || a.failed || a.pending || a.superseded || a.uninstalled || a.uninstalling;
    let wanted = |s: &Status| -> bool {
        if a.all {
            return true;
        }
        if !any_state {
            return matches!(s, Status::Deployed | Status::Failed);
        }
        (a.deployed && *s == Status::Deployed)
            || (a.failed && *s == Status::Failed)
            || (a.pending && s.is_pending())
            || (a.superseded && *s == Status::Superseded)
            || (a.uninstalled && *s == Status::Uninstalled)
            || (a.uninstalling && *s == Status::Uninstalling)
    };
    let mut releases: Vec<Release> = Vec::new();
    for ns in &namespaces {
        let store = read_storage(&client, ns)?;
        let all = store
            .list_releases()
            .await
            .with_context(|| format!("listing releases in namespace {ns}"))?;
        // Like Helm: the newest revision of each release, then the state filter.
        let mut latest: BTreeMap<String, Release> = BTreeMap::new();
        for r in all {
            match latest.get(&r.name) {
                Some(cur) if cur.version >= r.version => {}
                _ => {
                    latest.insert(r.name.clone(), r);
                }
            }
        }
        releases.extend(latest.into_values().filter(|r| wanted(&r.status())));
    }
    releases.sort_by(|x, y| x.name.cmp(&y.name).then(x.namespace.cmp(&y.namespace)));
    if a.short {
        let names: Vec<Value> = releases.iter().map(|r| json!(r.name)).collect();
        return Ok(match a.output {
            OutputFormat::Table => names
                .iter()
                .map(|n| format!("{}\n", n.as_str().unwrap_or_default()))
                .collect(),
            OutputFormat::Json => format::json(&Value::Array(names)),
            OutputFormat::Yaml => format::yaml(&Value::Array(names))?,
        });
    }
    let elements: Vec<Value> = releases
        .iter()
        .map(|r| {
            let updated = r
                .info
                .as_ref()
                .and_then(|i| i.last_deployed.as_ref())
                .filter(|t| !t.is_zero())
                .map(format::go_time)
                .unwrap_or_else(|| "-".into());
            json!({
                "name": r.name,
                "namespace": r.namespace,
                "revision": r.version.to_string(),
                "updated": updated,
                "status": r.status().to_string(),
                "chart": format::chart_name(r),
                "app_version": format::app_version(r),
            })
        })
        .collect();
    Ok(match a.output {
        OutputFormat::Json => format::json(&Value::Array(elements)),
        OutputFormat::Yaml => format::yaml(&Value::Array(elements))?,
        OutputFormat::Table => {
            let mut rows = Vec::new();
            if !a.no_headers {
                rows.push(
                    [
                        "NAME",
                        "NAMESPACE",
                        "REVISION",
                        "UPDATED",
                        "STATUS",
                        "CHART",
                        "APP VERSION",
                    ]
                    .map(String::from)
                    .to_vec(),
                );
            }
            for e in &elements {
                rows.push(
                    [
                        "name",
                        "namespace",
                        "revision",
                        "updated",
                        "status",
                        "chart",
                        "app_version",
                    ]
                    .iter()
                    .map(|k| e[*k].as_str().unwrap_or_default().to_string())
                    .collect(),
                );
            }
            format::table(&rows)
        }
    })
}

async fn history(a: HistoryArgs) -> anyhow::Result<String> {
    let (client, ns) = connect(&a.kube).await?;
    let store = read_storage(&client, &ns)?;
    let mut hist = store
        .history(&a.name)
        .await
        .with_context(|| format!("reading the history of release {:?}", a.name))?;
    if hist.is_empty() {
        return Err(helm_err("release: not found"));
    }
    if hist.len() > a.max {
        hist.drain(..hist.len() - a.max);
    }
    let items: Vec<Value> = hist
        .iter()
        .map(|r| {
            let info = r.info.clone().unwrap_or_default();
            let updated = info.last_deployed.unwrap_or_default();
            json!({
                "revision": r.version,
                "updated": updated.to_string(),
                "status": r.status().to_string(),
                "chart": format::chart_name(r),
                "app_version": format::app_version(r),
                "description": info.description,
            })
        })
        .collect();
    Ok(match a.output {
        OutputFormat::Json => format::json(&Value::Array(items)),
        OutputFormat::Yaml => format::yaml(&Value::Array(items))?,
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
    let rel = read_release(&a.kube, &a.name, a.revision).await?;
    status_output(&rel, a.output, false)
}

async fn get_values(a: GetValuesArgs) -> anyhow::Result<String> {
    let rel = read_release(&a.kube, &a.name, a.revision).await?;
    let vals = if a.all {
        let mut vals = rel.config.clone();
        let defaults = rel
            .chart
            .as_ref()
            .and_then(|c| c.values.clone())
            .unwrap_or_default();
        let mut warn = chart::values::Warnings(Vec::new());
        chart::values::coalesce_tables(&mut vals, defaults, &mut warn);
        Value::Object(vals)
    } else if rel.config.is_empty() {
        // Helm's record leaves empty values out, so Helm prints a nil map.
        Value::Null
    } else {
        Value::Object(rel.config.clone())
    };
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
    fn upgrade_values_follow_helm() {
        let cur = Release {
            config: json!({"a": 1, "b": {"c": 2}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Release::default()
        };
        let given: Values = json!({"b": {"d": 3}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        // No values given: the last release's are reused.
        assert_eq!(
            upgrade_values(&upgrade_args(&[]), Values::new(), Some(&cur)),
            cur.config
        );
        // Values given: only those.
        assert_eq!(
            upgrade_values(&upgrade_args(&[]), given.clone(), Some(&cur)),
            given
        );
        // --reuse-values merges the given ones over the last ones.
        let merged = upgrade_values(
            &upgrade_args(&["--reuse-values"]),
            given.clone(),
            Some(&cur),
        );
        assert_eq!(
            Value::Object(merged),
            json!({"a": 1, "b": {"c": 2, "d": 3}})
        );
        // --reset-values drops the last ones even when nothing is given.
        assert!(upgrade_values(
            &upgrade_args(&["--reset-values"]),
            Values::new(),
            Some(&cur)
        )
        .is_empty());
    }

    #[test]
    fn reuse_values_renders_with_the_last_releases_defaults() {
        let obj = |v: Value| v.as_object().cloned().unwrap_or_default();
        let cur = Release {
            config: obj(json!({"replicas": 3})),
            chart: Some(release::record::Chart {
                values: Some(obj(json!({"replicas": 1, "image": "web:1"}))),
                ..Default::default()
            }),
            ..Release::default()
        };
        let defaults = reused_chart_defaults(&upgrade_args(&["--reuse-values"]), Some(&cur));
        assert_eq!(
            defaults.map(Value::Object),
            Some(json!({"replicas": 3, "image": "web:1"}))
        );
        // The new chart's own defaults are used otherwise.
        for flags in [
            &[][..],
            &["--reset-then-reuse-values"][..],
            &["--reuse-values", "--reset-values"][..],
        ] {
            assert_eq!(
                reused_chart_defaults(&upgrade_args(flags), Some(&cur)),
                None
            );
        }
    }

    #[test]
    fn dry_run_flag_does_not_eat_the_next_argument() {
        let a = upgrade_args(&["--dry-run"]);
        assert_eq!(a.action.dry_run.as_deref(), Some("client"));
        let a = upgrade_args(&["--dry-run=server", "--timeout", "90s"]);
        assert_eq!(a.action.dry_run.as_deref(), Some("server"));
        assert_eq!(a.action.timeout, Duration::from_secs(90));
    }

    #[test]
    fn dry_run_modes_follow_helm() {
        let mode = |flags: &[&str]| dry_run_mode(&upgrade_args(flags).action);
        assert_eq!(mode(&[]), None);
        assert_eq!(mode(&["--dry-run=none"]), None);
        assert_eq!(mode(&["--dry-run"]), Some(DryRun::Client));
        assert_eq!(mode(&["--dry-run=client"]), Some(DryRun::Client));
        assert_eq!(mode(&["--dry-run=server"]), Some(DryRun::Server));
        use clap::Parser;
        #[derive(clap::Parser)]
        struct T {
            #[command(flatten)]
            a: UpgradeArgs,
        }
        assert!(T::try_parse_from(["t", "web", "./chart", "--dry-run=later"]).is_err());
    }
}
