//! Adoption: when a release's records are gone (deleted by accident, lost with a backup
//! restore) but its objects still run, write a fresh record over the live objects
//! instead of installing anew. A fresh install would run install hooks again and, on
//! any failure, might leave the workload in doubt; adoption keeps every object (same
//! UIDs: server-side apply patches in place), runs no hooks and deletes nothing.
//!
//! [`crate::Install::run_or_adopt`] adopts from the install's own render; [`Adopt`]
//! adopts or writes nothing.

use std::sync::Arc;

use chart::loader::Chart;
use chart::values::Values;
use release::record::Release;

use crate::config::ActionConfig;
use crate::error::{Error, Result};
use crate::install::Install;
use crate::options::ActionOptions;
use crate::ownership::{live_objects, Adoption, LiveObjects};
use crate::plan;
use crate::render::{Input, Revision};

/// The `adopt` verb (rudder's own; Helm has none).
pub struct Adopt<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> Adopt<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> Adopt<'a> {
        Adopt { cfg, opts }
    }

    /// For a release without records: when live objects carry its ownership, records a
    /// new release over them without hooks and returns the record; otherwise (no such
    /// objects, or the release has records) writes nothing and returns `None`. Objects
    /// of another release are refused by the ownership check ([`Error::Adopt`]);
    /// nothing is ever deleted, also not on failure.
    pub async fn run(&self, chart: &Arc<Chart>, values: Values) -> Result<Option<Release>> {
        let install = Install::new(self.cfg, self.opts.clone());
        let installed = install.locked(chart, values, Adoption::Only).await?;
        Ok(installed.map(|i| i.release))
    }

    /// Renders the release and reads every manifest object (not hooks, not CRDs) from
    /// the cluster, sorting the existing ones by ownership. Writes nothing.
    pub async fn live_objects(&self, chart: &Arc<Chart>, values: Values) -> Result<LiveObjects> {
        let opts = &self.opts;
        let input = Input::new(chart, None, values);
        let (rendered, _) = self
            .cfg
            .render_in_cluster(input, opts, Revision::install(1))
            .await?;
        let kube = self.cfg.kube();
        let owner = opts.owner();
        let mut objects = Vec::new();
        for (source, doc) in plan::rendered_docs(&rendered) {
            match kube.prepare(&owner, &source, &doc).await {
                Ok(Some(o)) => objects.push(o),
                Ok(None) => {}
                // A kind the cluster does not serve has no live objects.
                Err(Error::UnknownKind { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(live_objects(&kube, &owner, &objects).await?.0)
    }
}
