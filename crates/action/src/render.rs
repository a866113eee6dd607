//! Rendering a chart for an action, off the async runtime: with the capabilities the
//! options name, or the cluster's (discovered as Helm's install and upgrade do), and
//! with `lookup` against the live cluster when rendering for one.
//!
//! The chart is shared (`Arc`): a caller such as the operator loads it once and
//! renders it for every release, and a render only reads it, so the blocking thread
//! that renders takes another handle on it, never a copy.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chart::loader::Chart;
use chart::render::{render_chart, ReleaseInfo, RenderOptions, Rendered};
use chart::values::Values;
use kube::Client;

use crate::error::{Error, Result};
use crate::kube::discovery::DiscoveryCache;
use crate::kube::lookup::{cluster_lookup, LookupTrace};
use crate::options::ActionOptions;

/// Renders started by this process.
static RENDERS: AtomicU64 = AtomicU64::new(0);

/// How many renders this process has started: a cheap counter for benchmarks and
/// tests that check how often an action renders.
pub fn renders() -> u64 {
    RENDERS.load(Ordering::Relaxed)
}

/// Which revision a render is for (`.Release.Revision`, `.Release.IsUpgrade`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Revision {
    pub number: i64,
    pub is_upgrade: bool,
}

impl Revision {
    /// Revision `number` of an install.
    pub fn install(number: i64) -> Revision {
        Revision {
            number,
            is_upgrade: false,
        }
    }

    /// Revision `number` of an upgrade (or rollback).
    pub fn upgrade(number: i64) -> Revision {
        Revision {
            number,
            is_upgrade: true,
        }
    }
}

/// What templates see as `.Capabilities`.
struct Caps {
    kube_version: Option<String>,
    api_versions: Vec<String>,
    /// `api_versions` is the cluster's own set: no Helm defaults added.
    exact: bool,
}

impl Caps {
    /// The options' `kube_version`/`api_versions` over Helm's defaults.
    fn from_options(opts: &ActionOptions) -> Caps {
        Caps {
            kube_version: opts.kube_version.clone(),
            api_versions: opts.api_versions.clone().unwrap_or_default(),
            exact: false,
        }
    }
}

/// Renders a chart as the release `opts.name` at `revision`, with
/// `opts.kube_version`/`opts.api_versions` or Helm's default capabilities; no cluster
/// is asked and `lookup` finds nothing (`helm template`, `--dry-run=client`).
pub async fn render(
    chart: &Arc<Chart>,
    values: Values,
    opts: &ActionOptions,
    revision: Revision,
) -> Result<Rendered> {
    render_offline(Input::new(chart, None, values), opts, revision).await
}

/// [`render()`] of an [`Input`].
pub(crate) async fn render_offline(
    input: Input,
    opts: &ActionOptions,
    revision: Revision,
) -> Result<Rendered> {
    let caps = Caps::from_options(opts);
    let (rendered, _) = render_with(input, opts, caps, None, revision).await?;
    Ok(rendered)
}

/// What a release is rendered from.
#[derive(Clone)]
pub(crate) struct Input {
    /// The chart, shared with the caller and with every other release rendered from it.
    pub(crate) chart: Arc<Chart>,
    /// Default values in place of the chart's own (`--reuse-values`), the chart itself
    /// left as it is.
    pub(crate) chart_values: Option<Values>,
    /// The release's values.
    pub(crate) values: Values,
}

impl Input {
    pub(crate) fn new(chart: &Arc<Chart>, chart_values: Option<Values>, values: Values) -> Input {
        Input {
            chart: chart.clone(),
            chart_values,
            values,
        }
    }
}

/// Renders like Helm's install and upgrade: `lookup` sees the live cluster, and the
/// capabilities are the cluster's (through `discovery` when given) unless `opts` sets
/// `kube_version` or `api_versions`.
/// Also returns the digest of what the render's lookups returned (`None`: no lookup).
pub(crate) async fn render_in_cluster(
    client: &Client,
    discovery: &Arc<DiscoveryCache>,
    input: Input,
    opts: &ActionOptions,
    revision: Revision,
) -> Result<(Rendered, Option<String>)> {
    let lookup = Some((client.clone(), discovery.clone()));
    if opts.kube_version.is_some() || opts.api_versions.is_some() {
        let caps = Caps::from_options(opts);
        return render_with(input, opts, caps, lookup, revision).await;
    }
    let found = discovery
        .get(client)
        .await
        .map_err(|source| Error::Discovery {
            release: opts.name.clone(),
            source,
        })?;
    // Like Helm: the discovered set alone (the defaults only when discovery found none).
    let caps = Caps {
        exact: !found.api_versions.is_empty(),
        kube_version: Some(found.kube_version),
        api_versions: found.api_versions,
    };
    render_with(input, opts, caps, lookup, revision).await
}

async fn render_with(
    input: Input,
    opts: &ActionOptions,
    caps: Caps,
    lookup_client: Option<(Client, Arc<DiscoveryCache>)>,
    revision: Revision,
) -> Result<(Rendered, Option<String>)> {
    RENDERS.fetch_add(1, Ordering::Relaxed);
    let release = ReleaseInfo {
        name: opts.name.clone(),
        namespace: opts.namespace.clone(),
        revision: revision.number,
        is_upgrade: revision.is_upgrade,
    };
    // The template engine's values are not `Send`; render on a blocking thread.
    let handle = tokio::runtime::Handle::current();
    let trace = Arc::new(Mutex::new(LookupTrace::default()));
    let traced = trace.clone();
    let job = tokio::task::spawn_blocking(move || {
        let lookup = lookup_client.map(|(c, d)| cluster_lookup(c, d, handle, traced));
        let ropts = RenderOptions {
            release,
            kube_version: caps.kube_version,
            api_versions: caps.api_versions,
            api_versions_exact: caps.exact,
            check_kube_version: true,
            lookup,
            chart_values: input.chart_values,
            ..RenderOptions::default()
        };
        render_chart(&input.chart, input.values, &ropts)
    });
    let rendered = job
        .await
        .map_err(|e| Error::RenderAborted {
            release: opts.name.clone(),
            message: e.to_string(),
        })?
        .map_err(|source| Error::Render {
            release: opts.name.clone(),
            source: Box::new(source),
        })?;
    let lookups = trace.lock().unwrap_or_else(|e| e.into_inner()).digest();
    Ok((rendered, lookups))
}
