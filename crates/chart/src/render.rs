//! The whole rendering pipeline Helm runs for `helm template` and
//! `helm install`: prepare the chart (dependencies, values, schema), build
//! each chart's built-in objects (`.Values`, `.Chart`, `.Release`,
//! `.Capabilities`, `.Files`, `.Subcharts`), render, and split the output
//! into notes, hooks and the sorted release manifest.
//!
//! A render only reads the chart it is given: Helm's dependency processing,
//! which edits the chart in place, works on a view of it here (see
//! `dependencies`), and what the release needs of the chart's files is
//! shared with the chart rather than copied. A chart loaded once can be
//! rendered for any number of releases, on any number of threads.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

use gotmpl::{MapKind, MapRef, Value};

use crate::dependencies::ChartView;
use crate::engine::{Engine, LookupFn, RenderError, Renderable};
use crate::loader::{Chart, File};
use crate::manifest::{self, Hook, Manifest, ManifestError, INSTALL_ORDER};
use crate::objects::{Capabilities, Files, KubeVersion};
use crate::schema;
use crate::values::prepare::{self, PrepareError, PrepareOptions, PreparedChart, ProcessedChart};
use crate::values::Values;

/// The release a chart is rendered for (`.Release`).
#[derive(Debug, Clone)]
pub struct ReleaseInfo {
    pub name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_upgrade: bool,
}

impl Default for ReleaseInfo {
    fn default() -> Self {
        ReleaseInfo {
            name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_upgrade: false,
        }
    }
}

/// Everything besides the chart and values that shapes a render.
#[derive(Clone, Default)]
pub struct RenderOptions {
    pub release: ReleaseInfo,
    /// `--kube-version`; Helm's default (v1.36.0) when `None`.
    pub kube_version: Option<String>,
    /// `--api-versions` added to the defaults.
    pub api_versions: Vec<String>,
    /// `api_versions` is the cluster's discovered set: use it alone, without Helm's
    /// defaults (as Helm does for install and upgrade against a cluster).
    pub api_versions_exact: bool,
    /// Check the chart's `kubeVersion` constraint (as `helm template`/`install` do).
    pub check_kube_version: bool,
    /// Answers `lookup`; without it `lookup` returns an empty map.
    pub lookup: Option<LookupFn>,
    /// Validate values against `values.schema.json`.
    pub skip_schema_validation: bool,
    /// Default values for the root chart in place of its `values.yaml`
    /// (Helm's `--reuse-values` renders with the last release's), the
    /// chart itself left as it is.
    pub chart_values: Option<Values>,
}

/// Why a chart could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderChartError {
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("invalid kube version {0:?}: expected a version such as v1.29.0")]
    KubeVersion(String),
    #[error(
        "chart requires kubeVersion: {constraint} which is incompatible with Kubernetes {version}"
    )]
    KubeVersionConstraint { constraint: String, version: String },
}

/// A finished render.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The engine's output per template, as `helm-oracle render` prints it
    /// (every non-partial template, including empty files and NOTES.txt).
    pub files: BTreeMap<String, String>,
    /// CRDs from `crds/` folders of the chart and enabled subcharts, by
    /// full name: the chart's files, shared with it ([`File::text`]).
    pub crds: Vec<(String, File)>,
    /// The root chart's NOTES.txt output, if any.
    pub notes: Option<String>,
    /// Hooks, sorted by weight then kind.
    pub hooks: Vec<Hook>,
    /// The release manifest documents, in install order.
    pub manifests: Vec<Manifest>,
    /// The merged values the templates saw (`.Values`).
    pub values: Values,
    /// Helm's coalescing warnings.
    pub warnings: Vec<String>,
    /// The root chart as dependency processing left it for this render.
    pub chart: ProcessedChart,
}

impl Rendered {
    /// The release manifest as Helm stores it (`---\n# Source: ...`).
    pub fn manifest_text(&self) -> String {
        manifest::manifest_text(&self.manifests)
    }
}

fn release_value(r: &ReleaseInfo) -> Value {
    let mut m = gotmpl::Map::new();
    m.insert("Name".into(), Value::str(&r.name));
    m.insert("Namespace".into(), Value::str(&r.namespace));
    m.insert("Revision".into(), Value::int(r.revision));
    m.insert("IsInstall".into(), Value::Bool(!r.is_upgrade));
    m.insert("IsUpgrade".into(), Value::Bool(r.is_upgrade));
    m.insert("Service".into(), Value::str("Helm"));
    Value::map(m)
}

/// Follows `path` through nested maps, returning the same shared map.
fn nested_map(root: &MapRef, path: &[String]) -> Option<MapRef> {
    let mut cur = root.clone();
    for p in path {
        match cur.get(p) {
            Some(Value::Map(m)) => cur = m,
            _ => return None,
        }
    }
    Some(cur)
}

/// Builds the per-chart contexts and the list of templates to render.
fn renderables(p: &PreparedChart, release: &ReleaseInfo, caps: Value) -> Vec<Renderable> {
    let root_values = Value::map_from_json(&p.values).retyped(MapKind::Named("common.Values"));
    let release = release_value(release);
    // Contexts are built children first, so `.Subcharts` can hold them.
    let mut contexts: Vec<Option<MapRef>> = vec![None; p.charts.len()];
    for idx in (0..p.charts.len()).rev() {
        let scope = &p.charts[idx];
        let values = if scope.is_root {
            root_values.clone()
        } else {
            nested_map(&root_values, &scope.values_path)
                .map(|m| m.retyped(MapKind::Named("common.Values")))
                .unwrap_or_else(|| {
                    MapRef::with_kind(Default::default(), MapKind::Named("common.Values"))
                })
        };
        let mut subcharts = gotmpl::Map::new();
        for (name, child) in &scope.subcharts {
            if let Some(Some(c)) = contexts.get(*child) {
                subcharts.insert(name.clone(), Value::Map(c.clone()));
            }
        }
        let files = Files::of(&scope.files);
        let mut ctx = gotmpl::Map::new();
        ctx.insert("Chart".into(), scope.metadata.template_value(scope.is_root));
        ctx.insert("Files".into(), Value::object(files));
        ctx.insert("Release".into(), release.clone());
        ctx.insert("Capabilities".into(), caps.clone());
        ctx.insert("Values".into(), Value::Map(values));
        ctx.insert("Subcharts".into(), Value::map(subcharts));
        contexts[idx] = Some(MapRef::with_kind(ctx, MapKind::Named("common.Values")));
    }
    p.templates
        .iter()
        .filter_map(|t| {
            let vals = contexts.get(t.chart).cloned().flatten()?;
            Some(Renderable {
                name: t.name.clone(),
                text: t.data.clone(),
                vals,
                base_path: t.base_path.clone(),
            })
        })
        .collect()
}

/// The engine's output for a chart, before it is split into manifests.
#[derive(Debug, Clone)]
pub struct RenderedFiles {
    /// The root chart's name.
    pub chart_name: String,
    /// Output per template, as `helm-oracle render` prints it (every
    /// non-partial template, including empty files and NOTES.txt).
    pub files: BTreeMap<String, String>,
    /// CRDs from `crds/` folders of the chart and enabled subcharts, by
    /// full name: the chart's files, shared with it ([`File::text`]).
    pub crds: Vec<(String, File)>,
    /// The merged values the templates saw (`.Values`).
    pub values: Values,
    /// Helm's coalescing warnings.
    pub warnings: Vec<String>,
    /// The root chart as dependency processing left it for this render.
    pub chart: ProcessedChart,
}

/// Prepares and renders a loaded chart: what Helm's engine returns.
pub fn render_templates(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
) -> Result<RenderedFiles, RenderChartError> {
    render_templates_feeding(chart, user_values, opts, &mut |_, _| {})
}

/// [`render_templates`], handing each template's output to `feed` (path,
/// text) as soon as it is out, so that the caller can work on it while
/// the other templates run (as [`crate::oneshot`] does).
pub fn render_templates_feeding(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
    feed: &mut dyn FnMut(&str, &str),
) -> Result<RenderedFiles, RenderChartError> {
    stage(chart, user_values, opts)?.render_feeding(feed)
}

/// Template text (the chart's and its subcharts', partials included)
/// below which a render runs on one thread even when asked for two: the
/// other thread's start and its own copy of the chart's objects take
/// longer than it would save.
const TWO_THREADS_MIN_BYTES: usize = 48 << 10;

/// A chart ready to have its templates run: checked against the Kubernetes
/// version, its values coalesced (and validated, unless a schema is still
/// compiling beside), and every chart's built-in objects built. Staging
/// needs none of the templates parsed, so a one-shot render stages while
/// its templates are still being parsed on another core (see
/// [`crate::oneshot`]).
pub(crate) struct StagedRender {
    prepared: Arc<PreparedChart>,
    tpls: Vec<Renderable>,
    validate_after: bool,
    lookup: Option<LookupFn>,
    /// What another thread needs to build the same objects for itself.
    beside: Option<(ReleaseInfo, Capabilities)>,
}

/// The first half of [`render_templates`]: everything up to running the
/// templates, with the same errors in the same order.
pub(crate) fn stage(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
) -> Result<StagedRender, RenderChartError> {
    stage_with(chart, user_values, opts, false)
}

/// [`stage`] for a render that runs its templates on two threads where
/// the machine has the cores and the chart is large enough to gain (see
/// [`crate::oneshot`]): for one-shot renders, where the render is all
/// the process does.
pub(crate) fn stage_on_two_threads(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
) -> Result<StagedRender, RenderChartError> {
    stage_with(chart, user_values, opts, true)
}

fn stage_with(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
    two_threads: bool,
) -> Result<StagedRender, RenderChartError> {
    let kube = match &opts.kube_version {
        Some(v) => KubeVersion::parse(v).ok_or_else(|| RenderChartError::KubeVersion(v.clone()))?,
        None => KubeVersion::default(),
    };
    if opts.check_kube_version {
        prepare::check_kube_version(&chart.metadata, &kube.version).map_err(|_| {
            RenderChartError::KubeVersionConstraint {
                constraint: chart.metadata.kube_version.clone(),
                version: kube.version.clone(),
            }
        })?;
    }
    // While a schema is still compiling beside (see
    // `schema::compile_beside`), values are validated once the templates
    // are rendered rather than before, as Helm does. The outcome is Helm's
    // either way: values that do not meet a schema fail with the schema's
    // error, whatever the render gave.
    let mut view = ChartView::new(chart);
    if let Some(values) = &opts.chart_values {
        // A copy of its own: the release records these as the chart's
        // values (`PreparedChart::chart_values`).
        view.values = Cow::Owned(values.clone());
    }
    let prepared = prepare::prepare_view(
        view,
        user_values,
        PrepareOptions {
            validate_schema: false,
            ..PrepareOptions::default()
        },
    )?;
    let validate_after = !opts.skip_schema_validation && schema::compiling_beside();
    if !opts.skip_schema_validation && !validate_after {
        validate(&prepared)?;
    }
    let caps = if opts.api_versions_exact {
        Capabilities::exact(kube, opts.api_versions.clone())
    } else {
        Capabilities::new(kube, &opts.api_versions)
    };
    let template_bytes: usize = prepared.templates.iter().map(|t| t.data.len()).sum();
    let beside = (two_threads
        && opts.lookup.is_none()
        && template_bytes >= TWO_THREADS_MIN_BYTES
        && crate::oneshot::threads::cores() > 1)
        .then(|| (opts.release.clone(), caps.clone()));
    let caps = Value::Object(Rc::new(caps));
    let tpls = renderables(&prepared, &opts.release, caps);
    Ok(StagedRender {
        prepared: Arc::new(prepared),
        tpls,
        validate_after,
        lookup: opts.lookup.clone(),
        beside,
    })
}

fn validate(p: &PreparedChart) -> Result<(), PrepareError> {
    schema::validate_against_schema(&p.charts, &p.values).map_err(PrepareError::from)
}

impl StagedRender {
    /// The second half of [`render_templates_feeding`]: runs the templates.
    pub(crate) fn render_feeding(
        self,
        feed: &mut dyn FnMut(&str, &str),
    ) -> Result<RenderedFiles, RenderChartError> {
        let StagedRender {
            prepared,
            tpls,
            validate_after,
            lookup,
            beside,
        } = self;
        let mut engine = Engine::new();
        if let Some(l) = lookup {
            engine = engine.with_lookup(l);
        }
        let files = match beside {
            Some((release, caps)) => {
                let theirs = prepared.clone();
                let (kube, versions) = caps.into_parts();
                crate::oneshot::render::render_on_two_threads(&engine, &tpls, feed, move || {
                    let caps = Value::Object(Rc::new(Capabilities::exact(kube, versions)));
                    renderables(&theirs, &release, caps)
                })
            }
            None => engine.render_feeding(&tpls, feed),
        };
        if validate_after {
            validate(&prepared)?;
        }
        let files = files?;
        // The other thread, joined, has let go of its share.
        let prepared = Arc::try_unwrap(prepared).unwrap_or_else(|shared| (*shared).clone());
        // The root's scope (there always is one) holds its processed metadata.
        let metadata = prepared
            .charts
            .into_iter()
            .next()
            .map(|root| root.metadata)
            .unwrap_or_default();
        Ok(RenderedFiles {
            chart_name: metadata.name.clone(),
            crds: prepared.crds,
            files,
            values: prepared.values,
            warnings: prepared.warnings,
            chart: ProcessedChart {
                metadata,
                values: prepared.chart_values,
            },
        })
    }
}

/// Renders a loaded chart with the user's merged values and sorts the
/// output into notes, hooks and manifests, as `helm install` does.
pub fn render_chart(
    chart: &Chart,
    user_values: Values,
    opts: &RenderOptions,
) -> Result<Rendered, RenderChartError> {
    let r = render_templates(chart, user_values, opts)?;
    let notes = r
        .files
        .get(&format!("{}/templates/NOTES.txt", r.chart_name))
        .cloned();
    let sorted = manifest::sort_manifests(&r.files, INSTALL_ORDER)?;
    Ok(Rendered {
        crds: r.crds,
        files: r.files,
        notes,
        hooks: sorted.hooks,
        manifests: sorted.manifests,
        values: r.values,
        warnings: r.warnings,
        chart: r.chart,
    })
}
