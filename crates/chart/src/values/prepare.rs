//! Ties loading, dependency processing, coalescing and schema validation
//! together into what the renderer needs, in the order Helm's install action
//! runs them: `CheckDependencies`, `ProcessDependenciesWithMerge`, then
//! `ToRenderValuesWithSchemaValidation` (coalesce + validate), then the
//! engine's walk over the chart tree (`recAllTpls`).
//!
//! The chart is only read. A [`PreparedChart`] owns what one release
//! needs of it (it outlives the borrow, and a render may hand it to
//! another thread), but shares the chart's file contents rather than
//! copying them: what it copies are names and metadata.

use std::borrow::Cow;
use std::sync::Arc;

use crate::chartfile::Metadata;
use crate::dependencies::{self, ChartView, DependencyError};
use crate::loader::{Chart, File};
use crate::schema::{self, SchemaError};
use crate::values::Values;
use crate::values::{self, Warnings};
use serde_json::Value as Json;

/// Why a chart cannot be rendered with the given values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    #[error(transparent)]
    Dependencies(#[from] DependencyError),
    #[error(transparent)]
    Values(#[from] values::ValuesError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// One chart of the processed tree (the root first, then subcharts depth
/// first, each chart's subcharts in `charts/` order).
#[derive(Debug, Clone)]
pub struct ChartScope {
    /// The metadata templates see as `.Chart` (an aliased subchart carries
    /// its alias as `name`); the engine builds it with `Metadata::template_value`
    /// and `is_root`.
    pub metadata: Metadata,
    pub is_root: bool,
    /// `<root>` or `<root>/charts/<sub>/charts/<subsub>` (Helm's
    /// `ChartFullPath`, aliases applied).
    pub full_path: String,
    /// Where this chart's `.Values` lives inside the top-level values: empty
    /// for the root, `["sub"]`, `["sub", "subsub"]`... The renderer must take
    /// `.Values` of a subchart as the *same* map object as that nested table
    /// of the root's `.Values` (Helm shares it), or an empty map when the
    /// path does not lead to a table.
    pub values_path: Vec<String>,
    /// The chart's files other than templates (`.Files`).
    pub files: Vec<File>,
    /// The chart's `values.schema.json`, if it has one.
    pub schema: Option<Arc<[u8]>>,
    /// Index of the parent chart in [`PreparedChart::charts`].
    pub parent: Option<usize>,
    /// Indices of the direct subcharts, keyed by name (for `.Subcharts`).
    pub subcharts: Vec<(String, usize)>,
    /// Library chart: its templates are only sources of `define`s.
    pub is_library: bool,
}

/// A template to parse and (unless it is a partial) render.
#[derive(Debug, Clone)]
pub struct PreparedTemplate {
    /// Full name: `<root>/templates/x.yaml`,
    /// `<root>/charts/<sub>/templates/y.yaml` (`.Template.Name`).
    pub name: String,
    /// `<chart full path>/templates` (`.Template.BasePath`).
    pub base_path: String,
    pub data: Arc<[u8]>,
    /// Index of the owning chart in [`PreparedChart::charts`].
    pub chart: usize,
}

/// Everything the renderer needs for one release.
#[derive(Debug, Clone)]
pub struct PreparedChart {
    /// The top-level `.Values`: user values coalesced with every chart's
    /// defaults, subchart values under their names, globals copied down.
    /// Numbers that Helm has as float64 are whatever the YAML/JSON sources
    /// gave; `--set` integers are JSON integers (int64 in Helm).
    pub values: Values,
    /// All charts of the tree after dependency processing (disabled
    /// subcharts left out, aliases applied), the root at index 0.
    pub charts: Vec<ChartScope>,
    /// Templates of every enabled chart, in Helm's walk order. Helm skips
    /// a library chart's templates unless their base name starts with `_`;
    /// those are already left out here.
    pub templates: Vec<PreparedTemplate>,
    /// CRD files (`crds/`) of the chart and its enabled subcharts, with full
    /// names (`<root>/crds/x.yaml`, `<root>/charts/<sub>/crds/y.yaml`).
    pub crds: Vec<(String, File)>,
    /// Helm's coalescing warnings (its `log.Printf` lines), without repeats.
    pub warnings: Vec<String>,
    /// The root chart's default values when they are not its
    /// `values.yaml`: rewritten by dependency processing (the subcharts'
    /// and imported values merged in, as Helm leaves them in the chart it
    /// records) or given in its place
    /// ([`crate::render::RenderOptions::chart_values`]).
    pub chart_values: Option<Values>,
}

/// What a release record keeps of the root chart once dependency
/// processing ran for the release: Helm's processing edits the chart in
/// place, and its record stores the edited chart.
#[derive(Debug, Clone, Default)]
pub struct ProcessedChart {
    /// `Chart.yaml` as processed: disabled dependencies dropped, aliases
    /// as names, import-values spelled out, `enabled` set.
    pub metadata: Metadata,
    /// See [`PreparedChart::chart_values`]; `None`: the chart's own.
    pub values: Option<Values>,
}

impl PreparedChart {
    /// The scoped values of a chart, copied out of [`PreparedChart::values`]
    /// (an empty table when its path does not lead to a table).
    pub fn scoped_values(&self, chart: usize) -> Values {
        let mut cur = &self.values;
        for part in self
            .charts
            .get(chart)
            .map(|c| c.values_path.as_slice())
            .unwrap_or(&[])
        {
            match cur.get(part) {
                Some(Json::Object(m)) => cur = m,
                _ => return Values::new(),
            }
        }
        cur.clone()
    }
}

/// Options of [`prepare`].
#[derive(Debug, Clone, Copy)]
pub struct PrepareOptions {
    /// Fail when a dependency of `Chart.yaml` is missing from `charts/`
    /// (Helm's `CheckDependencies`, which `helm install` runs).
    pub check_dependencies: bool,
    /// Validate against `values.schema.json` (Helm's default).
    pub validate_schema: bool,
    /// Use `ProcessDependenciesWithMerge` (what `helm install`/`upgrade`
    /// run, and what the oracle's results agree with) rather than
    /// `ProcessDependencies` (which drops every null of the rewritten
    /// defaults).
    pub merge_import_values: bool,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        PrepareOptions {
            check_dependencies: true,
            validate_schema: true,
            merge_import_values: true,
        }
    }
}

/// Prepares a chart for rendering with the user's (already merged) values,
/// with the default options.
pub fn prepare(chart: &Chart, user_values: Values) -> Result<PreparedChart, PrepareError> {
    prepare_with(chart, user_values, PrepareOptions::default())
}

/// Prepares a chart for rendering: checks and processes dependencies,
/// coalesces values, validates schemas, and lists the templates to render.
pub fn prepare_with(
    chart: &Chart,
    user_values: Values,
    opts: PrepareOptions,
) -> Result<PreparedChart, PrepareError> {
    prepare_view(ChartView::new(chart), user_values, opts)
}

/// [`prepare_with`] for a view of a chart, which may carry default values
/// of its own in place of the chart's.
pub(crate) fn prepare_view(
    mut view: ChartView<'_>,
    user_values: Values,
    opts: PrepareOptions,
) -> Result<PreparedChart, PrepareError> {
    let mut warn = Warnings::default();
    if opts.check_dependencies {
        dependencies::check_dependencies(view.chart)?;
    }
    dependencies::process_dependencies(
        &mut view,
        &user_values,
        opts.merge_import_values,
        &mut warn,
    )?;
    let values = values::coalesce_values(&view, &user_values, &mut warn)?;
    let mut out = PreparedChart {
        values,
        charts: Vec::new(),
        templates: Vec::new(),
        crds: Vec::new(),
        warnings: Vec::new(),
        chart_values: None,
    };
    walk(&view, None, Vec::new(), view.name().to_string(), &mut out);
    if opts.validate_schema {
        schema::validate_against_schema(&out.charts, &out.values)?;
    }
    out.warnings = warn.0;
    out.chart_values = match view.values {
        Cow::Owned(values) => Some(values),
        Cow::Borrowed(_) => None,
    };
    Ok(out)
}

/// Lists chart `c` (at `full_path`) and, depth first, its subcharts in
/// `out`: their scopes and CRDs in that order, their templates children
/// first. Returns the index of `c`'s scope.
fn walk(
    c: &ChartView<'_>,
    parent: Option<usize>,
    values_path: Vec<String>,
    full_path: String,
    out: &mut PreparedChart,
) -> usize {
    let idx = out.charts.len();
    for f in c.chart.crds() {
        out.crds
            .push((format!("{full_path}/{}", f.name), f.clone()));
    }
    out.charts.push(ChartScope {
        metadata: Metadata::clone(&c.metadata),
        is_root: parent.is_none(),
        full_path: full_path.clone(),
        values_path: values_path.clone(),
        files: c.chart.files.clone(),
        schema: c.chart.schema.clone(),
        parent,
        subcharts: Vec::new(),
        is_library: c.is_library(),
    });
    let mut subs = Vec::new();
    for d in &c.dependencies {
        let mut p = values_path.clone();
        p.push(d.name().to_string());
        let child = walk(d, Some(idx), p, subchart_path(&full_path, d.name()), out);
        subs.push((d.name().to_string(), child));
    }
    out.charts[idx].subcharts = subs;
    let base_path = format!("{full_path}/templates");
    for (name, t) in rendered_templates(c.chart, &full_path) {
        out.templates.push(PreparedTemplate {
            name,
            base_path: base_path.clone(),
            data: t.data.clone(),
            chart: idx,
        });
    }
    idx
}

/// The path a subchart named `sub` has its templates named under:
/// `<parent>/charts/<sub>`.
pub(crate) fn subchart_path(parent: &str, sub: &str) -> String {
    format!("{parent}/charts/{sub}")
}

/// Whether a render parses template `name` (`templates/x.yaml`) of a chart:
/// a library chart's templates other than partials are never rendered.
pub(crate) fn renders_template(library: bool, name: &str) -> bool {
    !library || name.rsplit('/').next().unwrap_or_default().starts_with('_')
}

/// The name a render gives template `name` (`templates/x.yaml`) of the
/// chart at `chart_path`.
pub(crate) fn template_name(chart_path: &str, name: &str) -> String {
    format!("{chart_path}/{name}")
}

/// The templates of chart `c` (at `full_path`) that a render parses (see
/// [`renders_template`]), each with the name it gives them
/// ([`template_name`]).
pub(crate) fn rendered_templates<'a>(
    c: &'a Chart,
    full_path: &'a str,
) -> impl Iterator<Item = (String, &'a File)> + 'a {
    c.templates
        .iter()
        .filter(|t| renders_template(c.is_library(), &t.name))
        .map(move |t| (template_name(full_path, &t.name), t))
}

/// Helm's `kubeVersion` check of `helm install`: the cluster version must
/// satisfy the chart's `kubeVersion` constraint (when it has one).
pub fn check_kube_version(md: &Metadata, kube_version: &str) -> Result<(), String> {
    if md.kube_version.is_empty() {
        return Ok(());
    }
    match sprig::constraint_matches(&md.kube_version, kube_version) {
        Ok(true) => Ok(()),
        _ => Err(format!(
            "chart requires kubeVersion: {} which is incompatible with Kubernetes {}",
            md.kube_version, kube_version
        )),
    }
}
