//! The `rudder template` pipeline: one render of one chart by a process
//! that has the machine to itself, its work spread over two cores. The
//! result, errors included, is what the plain way gives
//! ([`crate::loader::load_with`], then [`crate::render::render_templates`],
//! then [`crate::manifest::sort_manifests`]); only the time differs.
//!
//! The steps, in the order [`template`] runs them:
//!
//! 1. `load`: this thread reads the chart while another parses each
//!    template and values file as it is read; each `values.schema.json`
//!    compiles on a thread of its own, waited for only at validation.
//! 2. staging ([`crate::render`]): the user's values coalesced and every
//!    chart's objects built, while the other thread still parses.
//! 3. `render`: the templates run from both ends on two threads, with the
//!    outcome of one thread running them in Helm's order.
//! 4. `sort`: the rendered files split into hooks and manifests on the
//!    other core as they come out.
//!
//! `threads` keeps the helper threads every step hands its jobs to.
//!
//! An operator, which runs many renders at once, uses none of this: a
//! thread per render would only add a start and a join to each.

mod load;
pub(crate) mod render;
pub(crate) mod sort;
pub(crate) mod threads;

use std::path::Path;

use crate::loader::{Budget, LoadError};
use crate::manifest::{ManifestError, Sorted, INSTALL_ORDER};
use crate::render::{stage_on_two_threads, RenderChartError, RenderOptions, RenderedFiles};
use crate::values::Values;

/// What a one-shot render gives.
#[derive(Debug)]
pub struct Output {
    /// Every template's output, the CRDs, the values the templates saw.
    pub files: RenderedFiles,
    /// The output split into hooks and manifests, each in install order,
    /// when asked for.
    pub sorted: Option<Sorted>,
}

/// Why a one-shot render failed, by the step that failed; `E` is the
/// caller's error for the user's values.
#[derive(Debug)]
pub enum Error<E> {
    /// The chart did not load.
    Load(LoadError),
    /// The user's values could not be had.
    Values(E),
    /// The chart did not render.
    Render(RenderChartError),
    /// The output did not split into manifests (bad YAML); the rendered
    /// files, which a caller may still show (`helm template --debug`).
    Split {
        error: ManifestError,
        files: Box<RenderedFiles>,
    },
}

impl<E: std::fmt::Display> std::fmt::Display for Error<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Load(e) => e.fmt(f),
            Error::Values(e) => e.fmt(f),
            Error::Render(e) => e.fmt(f),
            Error::Split { error, .. } => error.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Load(e) => e.source(),
            Error::Values(e) => e.source(),
            Error::Render(e) => e.source(),
            Error::Split { error, .. } => error.source(),
        }
    }
}

/// Renders the chart at `path` (a directory or archive) as `helm template`
/// does, with the user's values `user_values` gives (asked for once the
/// chart is read, while its templates are parsed), and, if `split`, splits
/// the output into hooks and manifests. Errors come in the plain order:
/// loading, then the user's values, then preparing and rendering the
/// chart, then splitting.
pub fn template<E>(
    path: &Path,
    budget: &Budget,
    user_values: impl FnOnce() -> Result<Values, E>,
    opts: &RenderOptions,
    split: bool,
) -> Result<Output, Error<E>> {
    let loading = load::load(path, budget).map_err(Error::Load)?;
    let values = user_values();
    let staged = loading
        .finish_with(|chart| {
            let values = values.map_err(Error::Values)?;
            stage_on_two_threads(&chart, values, opts).map_err(Error::Render)
        })
        .map_err(Error::Load)??;
    // JSON output prints the files whole: nothing to split.
    let mut sorter = split.then(sort::Sorter::new);
    let files = staged
        .render_feeding(&mut |path, text| {
            if let Some(sorter) = sorter.as_mut() {
                sorter.feed(path, text);
            }
        })
        .map_err(Error::Render)?;
    let sorted = match sorter.map(|s| s.finish(INSTALL_ORDER)) {
        Some(Ok(sorted)) => Some(sorted),
        Some(Err(error)) => {
            return Err(Error::Split {
                error,
                files: Box::new(files),
            })
        }
        None => None,
    };
    Ok(Output { files, sorted })
}
