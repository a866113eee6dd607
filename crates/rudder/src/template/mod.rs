//! `rudder template`: renders a chart locally exactly as `helm template`
//! does — Helm 4.2's text, flags, errors and exit codes — or as the
//! oracle's JSON shape.

use std::path::{Path, PathBuf};

use chart::render::{ReleaseInfo, RenderChartError, RenderOptions};
use chart::values::strvals::ValueOptions;

use crate::helm_cli::{check_arity, dry_run_strategy, split_csv, Arity, DryRunFlag};

mod layout;

/// Value flags shared by every command that takes values (`-f`, `--set`…).
#[derive(clap::Args, Debug, Clone, Default)]
pub(crate) struct ValueArgs {
    /// Values files (YAML), merged in order; later files win.
    #[arg(short = 'f', long = "values")]
    pub values: Vec<PathBuf>,
    /// Set values on the command line (a.b=c,x[0]=y); numbers become int64.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Set STRING values on the command line.
    #[arg(long = "set-string")]
    pub set_string: Vec<String>,
    /// Set JSON values on the command line (a.b={"x":1}).
    #[arg(long = "set-json")]
    pub set_json: Vec<String>,
    /// Set values from files (key=path).
    #[arg(long = "set-file")]
    pub set_file: Vec<String>,
    /// Set a literal STRING value (no escaping or splitting).
    #[arg(long = "set-literal")]
    pub set_literal: Vec<String>,
}

impl ValueArgs {
    /// Merges every value source in Helm's order.
    pub(crate) fn merged(&self) -> anyhow::Result<chart::values::Values> {
        let files = chart::values::read_values_files(&self.values).map_err(anyhow::Error::msg)?;
        let opts = ValueOptions {
            value_files: vec![files],
            json_values: self.set_json.clone(),
            values: self.set.clone(),
            string_values: self.set_string.clone(),
            file_values: self.set_file.clone(),
            literal_values: self.set_literal.clone(),
        };
        let read = |p: &str| -> Result<serde_json::Value, String> {
            std::fs::read_to_string(p)
                .map(serde_json::Value::String)
                .map_err(|e| format!("{p}: {e}"))
        };
        opts.merge(&read).map_err(|e| anyhow::anyhow!("{e}"))
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    Yaml,
    Json,
}

#[derive(clap::Args, Debug)]
pub(crate) struct TemplateArgs {
    /// `[NAME] CHART`: an optional release name, then the chart directory or .tgz.
    #[arg(value_name = "[NAME] [CHART]")]
    pub args: Vec<String>,
    /// Release name (rudder's own; Helm takes it as the first argument).
    #[arg(long, hide = true)]
    pub name: Option<String>,
    #[command(flatten)]
    pub kube: crate::release_cmds::KubeArgs,
    #[command(flatten)]
    pub values: ValueArgs,
    /// Kubernetes version for .Capabilities (e.g. v1.29.0).
    #[arg(long)]
    pub kube_version: Option<String>,
    /// Extra API group/versions for .Capabilities.APIVersions (repeat the
    /// flag or separate them with commas).
    #[arg(short = 'a', long = "api-versions")]
    pub api_versions: Vec<String>,
    /// Include the chart's crds/ in the output.
    #[arg(long)]
    pub include_crds: bool,
    /// Leave the chart's test hooks out of the output.
    #[arg(long)]
    pub skip_tests: bool,
    /// Render as an upgrade (.Release.IsUpgrade).
    #[arg(long)]
    pub is_upgrade: bool,
    /// .Release.Revision.
    #[arg(long, default_value_t = 1)]
    pub revision: i64,
    /// Only show manifests rendered from these templates (paths or globs,
    /// e.g. templates/svc.yaml, templates/*.yaml), in the order given.
    #[arg(short = 's', long = "show-only")]
    pub show_only: Vec<String>,
    /// Do not render hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Skip values.schema.json validation.
    #[arg(long)]
    pub skip_schema_validation: bool,
    /// Name the release with this template (Sprig functions, e.g.
    /// '{{ randAlpha 6 | lower }}') instead of `release-name`.
    #[arg(long)]
    pub name_template: Option<String>,
    /// Accepted as Helm accepts it: `template` names an unnamed release
    /// `release-name` all the same.
    #[arg(short = 'g', long)]
    pub generate_name: bool,
    /// `client` (default) renders offline; `server` asks the cluster for
    /// `lookup` and the capabilities, as Helm does.
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = crate::helm_cli::DRY_RUN_BARE
    )]
    pub dry_run: Option<String>,
    /// Deprecated: `--dry-run=server`.
    #[arg(long)]
    pub validate: bool,
    /// Show `v1` Secrets as a comment instead of their data.
    #[arg(long)]
    pub hide_secret: bool,
    /// Output format: `yaml` (Helm's text) or `json` (rudder's own: every
    /// rendered file by path, as the Helm oracle prints it).
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    pub output: Output,
    #[command(flatten)]
    pub chart_size: ChartSizeArgs,
    #[command(flatten)]
    pub ignored: InstallOnlyArgs,
}

impl TemplateArgs {
    /// Whether a hook with these events is printed (`--no-hooks`, `--skip-tests`).
    fn shows_hook(&self, events: &[String]) -> bool {
        if self.no_hooks {
            return false;
        }
        !(self.skip_tests && layout::is_test_hook(events))
    }
}

/// `helm install` flags that `helm template` accepts and a local render
/// has no use for: accepted, so that one set of flags serves both.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Accepted for `helm install` compatibility (no effect)")]
pub(crate) struct InstallOnlyArgs {
    #[arg(long)]
    create_namespace: bool,
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "watcher",
        value_parser = crate::helm_cli::parse_wait
    )]
    wait: Option<bool>,
    #[arg(long)]
    wait_for_jobs: bool,
    #[arg(long, value_parser = crate::release_cmds::parse_go_duration)]
    timeout: Option<std::time::Duration>,
    #[arg(long)]
    atomic: bool,
    #[arg(long)]
    rollback_on_failure: bool,
    #[arg(long)]
    force: bool,
    #[arg(long)]
    force_replace: bool,
    #[arg(long)]
    force_conflicts: bool,
    #[arg(long)]
    replace: bool,
    #[arg(long)]
    description: Option<String>,
    #[arg(short = 'l', long)]
    labels: Vec<String>,
    #[arg(long)]
    take_ownership: bool,
    #[arg(long)]
    skip_crds: bool,
    #[arg(long)]
    disable_openapi_validation: bool,
    #[arg(long)]
    render_subchart_notes: bool,
    #[arg(long)]
    hide_notes: bool,
    #[arg(long)]
    devel: bool,
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    server_side: Option<String>,
}

/// How large a chart may be once read (Helm's loader limits).
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct ChartSizeArgs {
    /// Most bytes a chart archive may decompress to, all files together.
    #[arg(long, value_name = "BYTES", default_value_t = chart::loader::Budget::DEFAULT_MAX_CHART_SIZE)]
    pub max_chart_size: u64,
    /// Most bytes any one file of a chart may have (decompressed).
    #[arg(long, value_name = "BYTES", default_value_t = chart::loader::Budget::DEFAULT_MAX_FILE_SIZE)]
    pub max_file_size: u64,
}

impl ChartSizeArgs {
    /// The loader budget these flags ask for.
    pub(crate) fn budget(&self) -> chart::loader::Budget {
        chart::loader::Budget {
            max_chart_size: self.max_chart_size,
            max_file_size: self.max_file_size,
        }
    }
}

/// `-o json`: every rendered file by its source path (CRDs too with `--include-crds`) and
/// the error, if rendering failed. The shape `helm-oracle render` prints, so the two can
/// be compared file by file.
#[derive(serde::Serialize)]
struct JsonOutput {
    manifests: std::collections::BTreeMap<String, String>,
    error: Option<String>,
}

impl JsonOutput {
    fn new(result: &anyhow::Result<chart::render::RenderedFiles>, include_crds: bool) -> Self {
        match result {
            Ok(r) => {
                let mut manifests = r.files.clone();
                if include_crds {
                    manifests.extend(r.crds.iter().map(|(n, f)| (n.clone(), f.text().into())));
                }
                JsonOutput {
                    manifests,
                    error: None,
                }
            }
            Err(e) => JsonOutput {
                manifests: Default::default(),
                error: Some(apierror::chain(&**e)),
            },
        }
    }
}

/// Runs `rudder template`; returns the process exit code. The work runs on
/// a deep stack, so values and output nested as deep as Helm accepts never
/// overflow it.
pub(crate) fn run(args: TemplateArgs) -> anyhow::Result<i32> {
    gocodec::depth::on_deep_stack(move || run_here(args))
}

/// Where `--dry-run`/`--validate` send the render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Offline,
    Cluster,
}

fn run_here(args: TemplateArgs) -> anyhow::Result<i32> {
    check_arity(
        &args.args,
        Arity::AtLeast(1),
        "template",
        "template [NAME] [CHART] [flags]",
    )?;
    let mode = mode(&args)?;
    let (name, chart_path) = name_and_chart(&args)?;
    let namespace = namespace(&args.kube);
    if args.output == Output::Json {
        return run_json(&args, name, namespace, &chart_path);
    }
    let (text, failure) = match mode {
        Mode::Offline => render_offline(&args, name, namespace, &chart_path)?,
        Mode::Cluster => (
            render_in_cluster(&args, name, namespace, &chart_path)?,
            None,
        ),
    };
    print_template(&args, &text, failure)?;
    exit_now(0)
}

/// What `--dry-run` and `--validate` ask for.
fn mode(args: &TemplateArgs) -> anyhow::Result<Mode> {
    if args.validate && args.dry_run.is_some() {
        anyhow::bail!(
            "if any flags in the group [validate dry-run] are set none of the others can be; [dry-run validate] were all set"
        );
    }
    if args.validate {
        crate::helm_cli::deprecated_flag("validate", "use '--dry-run=server' instead");
        return Ok(Mode::Cluster);
    }
    let value = args.dry_run.as_deref().unwrap_or("client");
    Ok(match dry_run_strategy(value, true)? {
        DryRunFlag::Server => Mode::Cluster,
        _ => Mode::Offline,
    })
}

/// Helm's `NameAndChart` for `template`, whose release is `release-name`
/// unless named.
fn name_and_chart(args: &TemplateArgs) -> anyhow::Result<(String, String)> {
    match args.args.as_slice() {
        [name, chart] => {
            if args.generate_name {
                anyhow::bail!("cannot set --generate-name and also specify a name");
            }
            if args.name_template.is_some() {
                anyhow::bail!("cannot set --name-template and also specify a name");
            }
            Ok((name.clone(), chart.clone()))
        }
        [chart] => {
            let name = match (&args.name_template, &args.name) {
                (Some(t), _) if !t.is_empty() => name_from_template(t)?,
                (_, Some(n)) => n.clone(),
                _ => "release-name".to_string(),
            };
            Ok((name, chart.clone()))
        }
        [_, _, rest @ ..] => anyhow::bail!(
            "expected at most two arguments, unexpected arguments: {}",
            rest.join(", ")
        ),
        [] => anyhow::bail!("expected [NAME] CHART"),
    }
}

/// Helm's `TemplateName`: the template run with Sprig's functions and
/// nothing as `.`.
pub(crate) fn name_from_template(text: &str) -> anyhow::Result<String> {
    let mut set = gotmpl::Templates::new(std::rc::Rc::new(sprig::funcmap()));
    set.parse("name-template", text)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    std::rc::Rc::new(set)
        .execute("name-template", &gotmpl::Value::Invalid)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

/// The release namespace as Helm's `settings.Namespace()` finds it: the
/// flag or `HELM_NAMESPACE`, else the kubeconfig context's, else `default`.
fn namespace(kube: &crate::release_cmds::KubeArgs) -> String {
    if let Some(ns) = kube.namespace.as_ref().filter(|n| !n.is_empty()) {
        return ns.clone();
    }
    let config = match &kube.kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path).ok(),
        None => kube::config::Kubeconfig::read().ok(),
    };
    config
        .and_then(|c| {
            let context = kube
                .kube_context
                .clone()
                .or_else(|| c.current_context.clone())?;
            c.contexts
                .into_iter()
                .find(|n| n.name == context)?
                .context?
                .namespace
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

fn render_options(
    args: &TemplateArgs,
    name: String,
    namespace: String,
) -> anyhow::Result<RenderOptions> {
    Ok(RenderOptions {
        release: ReleaseInfo {
            name,
            namespace,
            revision: args.revision,
            is_upgrade: args.is_upgrade,
        },
        kube_version: args.kube_version.clone(),
        api_versions: split_csv(&args.api_versions)?,
        check_kube_version: true,
        skip_schema_validation: args.skip_schema_validation,
        ..RenderOptions::default()
    })
}

/// `-o json`: every rendered file, or the error, in the oracle's shape.
fn run_json(
    args: &TemplateArgs,
    name: String,
    namespace: String,
    chart_path: &str,
) -> anyhow::Result<i32> {
    let opts = render_options(args, name, namespace)?;
    // JSON output prints the files unsplit.
    let result = render(
        chart_path,
        &args.values,
        &opts,
        &args.chart_size.budget(),
        false,
    )
    .map(|out| out.files)
    .map_err(Failure::into_error);
    let json = JsonOutput::new(&result, args.include_crds);
    println!("{}", serde_json::to_string_pretty(&json)?);
    exit_now(if result.is_ok() { 0 } else { 1 })
}

/// A render that failed once Helm had a release to show (`--debug` prints
/// what it holds): the error, and the manifest text rendered so far.
struct Failed {
    error: anyhow::Error,
    manifest: String,
}

/// Renders offline: `helm template`'s text, or the failure Helm reports
/// with what it had rendered.
fn render_offline(
    args: &TemplateArgs,
    name: String,
    namespace: String,
    chart_path: &str,
) -> anyhow::Result<(String, Option<Failed>)> {
    action::validate_release_name(&name)?;
    let opts = render_options(args, name, namespace)?;
    let rendered = render(
        chart_path,
        &args.values,
        &opts,
        &args.chart_size.budget(),
        true,
    );
    let (r, sorted) = match rendered {
        Ok(chart::oneshot::Output { files, sorted }) => (files, sorted.unwrap_or_default()),
        Err(Failure::Before(e)) => return Err(e),
        Err(Failure::Render(e)) => {
            let failed = Failed {
                error: e,
                manifest: String::new(),
            };
            return Ok((String::new(), Some(failed)));
        }
        Err(Failure::Split { error, files }) => {
            let failed = Failed {
                error,
                manifest: layout::unparsed_manifest(&files.files),
            };
            return Ok((String::new(), Some(failed)));
        }
    };
    let crds: &[(String, chart::loader::File)] = if args.include_crds { &r.crds } else { &[] };
    let manifest = layout::release_manifest(crds, &sorted.manifests, args.hide_secret);
    let hooks = sorted
        .hooks
        .iter()
        .filter(|h| args.shows_hook(&h.events))
        .map(|h| (h.path.as_str(), h.manifest.as_str()));
    Ok((layout::template_text(&manifest, hooks), None))
}

/// `--dry-run=server`: the chart rendered as an install would render it
/// against the cluster (`lookup`, the cluster's version and APIs), nothing
/// written.
fn render_in_cluster(
    args: &TemplateArgs,
    name: String,
    namespace: String,
    chart_path: &str,
) -> anyhow::Result<String> {
    let chart = chart::loader::load_with(Path::new(chart_path), &args.chart_size.budget())?;
    let chart = std::sync::Arc::new(chart);
    let values = args.values.merged()?;
    let rt = crate::runtime::deep_stack_runtime()?;
    let mut kube = args.kube.clone();
    kube.namespace = Some(namespace.clone());
    let rel = rt.block_on(async move {
        let (cfg, _) = crate::release_cmds::connect(&kube).await?;
        let mut opts = action::ActionOptions::new(&name, &namespace);
        opts.disable_hooks = args.no_hooks;
        let rel = action::Install::new(&cfg, opts)
            .dry_run(&chart, values, action::DryRun::Server)
            .await?;
        anyhow::Ok(rel)
    })?;
    let hooks = rel
        .hooks
        .iter()
        .filter(|h| args.shows_hook(&h.events))
        .map(|h| (h.path.as_str(), h.manifest.as_str()));
    Ok(layout::template_text(&rel.manifest, hooks))
}

/// Prints `text` (or, for `--show-only`, the documents asked for) as Helm's
/// `template` command does, and reports a failed render the way Helm does:
/// with `--debug`, after printing what was rendered; without, with Helm's
/// hint to use it.
fn print_template(args: &TemplateArgs, text: &str, failure: Option<Failed>) -> anyhow::Result<()> {
    let (text, error) = match failure {
        None => (text.to_string(), None),
        Some(f) if !args.kube.debug => {
            return Err(anyhow::anyhow!(
                "{}\n\nUse --debug flag to render out invalid YAML",
                apierror::chain(&*f.error)
            ))
        }
        Some(f) => (layout::template_text(&f.manifest, []), Some(f.error)),
    };
    let shown = if args.show_only.is_empty() {
        text
    } else {
        match layout::show_only(&text, &args.show_only) {
            Ok(picked) => picked,
            Err(missing) => {
                return Err(error.unwrap_or_else(|| {
                    anyhow::anyhow!("could not find template {missing} in chart")
                }))
            }
        }
    };
    print!("{shown}");
    match error {
        Some(e) => {
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
            Err(e)
        }
        None => Ok(()),
    }
}

/// Ends the process once the output is out. A one-shot render leaves the
/// parsed chart, its values and the per-thread caches behind; freeing them
/// piece by piece at exit (thread-local destructors included) was a tenth
/// of the whole run, and the operating system takes the memory back at once.
#[allow(unsafe_code)] // `_exit`
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process without running destructors or
    // atexit handlers; standard output and error were flushed above and
    // nothing else is buffered or pending.
    unsafe { libc::_exit(code) }
}

/// Why a render failed, as Helm tells the two apart: before it had a
/// release (loading, values, schema), or while rendering it (templates,
/// the chart's `kubeVersion`), where `--debug` has something to show; or
/// when the output did not split into manifests, where `--debug` shows the
/// rendered files unsplit.
enum Failure {
    Before(anyhow::Error),
    Render(anyhow::Error),
    Split {
        error: anyhow::Error,
        files: Box<chart::render::RenderedFiles>,
    },
}

impl Failure {
    fn into_error(self) -> anyhow::Error {
        match self {
            Failure::Before(e) | Failure::Render(e) | Failure::Split { error: e, .. } => e,
        }
    }

    fn of(e: RenderChartError) -> Failure {
        match e {
            RenderChartError::Render(_)
            | RenderChartError::Manifest(_)
            | RenderChartError::KubeVersionConstraint { .. } => Failure::Render(e.into()),
            RenderChartError::Prepare(_) | RenderChartError::KubeVersion(_) => {
                Failure::Before(e.into())
            }
        }
    }
}

/// Renders the chart through `chart::oneshot`'s pipeline (two cores) and,
/// if `split`, splits the output into hooks and manifests; errors come in
/// the plain order (loading, the user's values, preparing, rendering,
/// splitting).
fn render(
    chart_path: &str,
    values: &ValueArgs,
    opts: &RenderOptions,
    budget: &chart::loader::Budget,
    split: bool,
) -> Result<chart::oneshot::Output, Failure> {
    use chart::oneshot::Error;
    if !Path::new(chart_path).exists() {
        return Err(Failure::Before(anyhow::anyhow!(
            "path {} not found",
            crate::helm_cli::go_quote(chart_path)
        )));
    }
    let path = Path::new(chart_path);
    chart::oneshot::template(path, budget, || values.merged(), opts, split).map_err(|e| match e {
        Error::Load(e) => Failure::Before(e.into()),
        Error::Values(e) => Failure::Before(e),
        Error::Render(e) => Failure::of(e),
        Error::Split { error, files } => Failure::Split {
            error: error.into(),
            files,
        },
    })
}
