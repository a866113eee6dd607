//! `rudder template`: renders a chart locally exactly as `helm template`
//! does, as YAML with `# Source:` headers or as the oracle's JSON shape.

use std::path::{Path, PathBuf};

use chart::render::{ReleaseInfo, RenderOptions};
use chart::values::strvals::ValueOptions;

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
    #[arg(required = true, num_args = 1..=2)]
    pub args: Vec<String>,
    /// Release name (default `release-name`).
    #[arg(long)]
    pub name: Option<String>,
    /// Release namespace.
    #[arg(short = 'n', long, default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub values: ValueArgs,
    /// Kubernetes version for .Capabilities (e.g. v1.29.0).
    #[arg(long)]
    pub kube_version: Option<String>,
    /// Extra API group/versions for .Capabilities.APIVersions.
    #[arg(short = 'a', long = "api-versions")]
    pub api_versions: Vec<String>,
    /// Include the chart's crds/ in the output.
    #[arg(long)]
    pub include_crds: bool,
    /// Render as an upgrade (.Release.IsUpgrade).
    #[arg(long)]
    pub is_upgrade: bool,
    /// .Release.Revision.
    #[arg(long, default_value_t = 1)]
    pub revision: i64,
    /// Only show manifests rendered from these templates (e.g. templates/svc.yaml).
    #[arg(short = 's', long = "show-only")]
    pub show_only: Vec<String>,
    /// Do not render hooks.
    #[arg(long)]
    pub no_hooks: bool,
    /// Skip values.schema.json validation.
    #[arg(long)]
    pub skip_schema_validation: bool,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "yaml")]
    pub output: Output,
    #[command(flatten)]
    pub chart_size: ChartSizeArgs,
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
    fn new(result: &anyhow::Result<chart::oneshot::Output>, include_crds: bool) -> Self {
        match result {
            Ok(r) => {
                let mut manifests = r.files.files.clone();
                if include_crds {
                    manifests.extend(r.files.crds.iter().map(|(n, t)| (n.clone(), t.clone())));
                }
                JsonOutput {
                    manifests,
                    error: None,
                }
            }
            Err(e) => JsonOutput {
                manifests: Default::default(),
                error: Some(format!("{e:#}")),
            },
        }
    }
}

fn show_only_matches(chart: &str, source: &str, patterns: &[String]) -> bool {
    patterns.is_empty()
        || patterns.iter().any(|p| {
            let full = format!("{chart}/{}", p.trim_start_matches("./"));
            source == full || source == p
        })
}

/// Runs `rudder template`; returns the process exit code. The work runs on
/// a deep stack, so values and output nested as deep as Helm accepts never
/// overflow it.
pub(crate) fn run(args: TemplateArgs) -> anyhow::Result<i32> {
    gocodec::depth::on_deep_stack(move || run_here(args))
}

fn run_here(args: TemplateArgs) -> anyhow::Result<i32> {
    let (name, chart_path) = match args.args.as_slice() {
        [chart] => (
            args.name.clone().unwrap_or_else(|| "release-name".into()),
            chart.clone(),
        ),
        [name, chart] => (name.clone(), chart.clone()),
        _ => anyhow::bail!("expected [NAME] CHART"),
    };
    let opts = RenderOptions {
        release: ReleaseInfo {
            name,
            namespace: args.namespace.clone(),
            revision: args.revision,
            is_upgrade: args.is_upgrade,
        },
        kube_version: args.kube_version.clone(),
        api_versions: args.api_versions.clone(),
        check_kube_version: true,
        skip_schema_validation: args.skip_schema_validation,
        ..RenderOptions::default()
    };
    // JSON output prints the files unsplit.
    let split = args.output != Output::Json;
    let result = render(
        &chart_path,
        &args.values,
        &opts,
        &args.chart_size.budget(),
        split,
    );
    if args.output == Output::Json {
        let json = JsonOutput::new(&result, args.include_crds);
        println!("{}", serde_json::to_string_pretty(&json)?);
        exit_now(if result.is_ok() { 0 } else { 1 });
    }
    let chart::oneshot::Output { files: r, sorted } = result?;
    let rendered_chart = r.chart_name.clone();
    // Split, as the output is YAML.
    let sorted = sorted.unwrap_or_default();
    let mut out = String::new();
    if args.include_crds {
        for (n, t) in &r.crds {
            out.push_str(&format!("---\n# Source: {n}\n{t}\n"));
        }
    }
    for m in &sorted.manifests {
        if show_only_matches(&rendered_chart, &m.source, &args.show_only) {
            out.push_str(&format!("---\n# Source: {}\n{}\n", m.source, m.content));
        }
    }
    if !args.no_hooks {
        for h in &sorted.hooks {
            if show_only_matches(&rendered_chart, &h.path, &args.show_only) {
                out.push_str(&format!("---\n# Source: {}\n{}\n", h.path, h.manifest));
            }
        }
    }
    if !args.show_only.is_empty() && out.is_empty() {
        anyhow::bail!(
            "could not find template {} in chart",
            args.show_only.join(", ")
        );
    }
    print!("{out}");
    exit_now(0)
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

/// Renders the chart through `chart::oneshot`'s pipeline (two cores),
/// with the CLI's wording for each step's failure.
fn render(
    chart_path: &str,
    values: &ValueArgs,
    opts: &RenderOptions,
    budget: &chart::loader::Budget,
    split: bool,
) -> anyhow::Result<chart::oneshot::Output> {
    use chart::oneshot::Error;
    let path = Path::new(chart_path);
    chart::oneshot::template(path, budget, || values.merged(), opts, split).map_err(|e| match e {
        Error::Load(e) => anyhow::Error::new(e).context(format!("loading chart {chart_path}")),
        Error::Values(e) => e,
        Error::Render(e) => e.into(),
        Error::Split(e) => anyhow::Error::new(e).context("splitting the rendered manifests"),
    })
}
