//! `helm status`: a revision of a release as the status output shows it (without its
//! chart, which the status never prints).

use release::record::Release;

use crate::config::ActionConfig;
use crate::error::Result;
use crate::get::Get;

/// The `status` verb.
pub struct ReleaseStatus<'a> {
    get: Get<'a>,
}

impl<'a> ReleaseStatus<'a> {
    pub fn new(cfg: &'a ActionConfig, namespace: impl Into<String>) -> ReleaseStatus<'a> {
        ReleaseStatus {
            get: Get::new(cfg, namespace),
        }
    }

    /// Revision `revision` of `name` (the newest when `None`), its chart left out.
    pub async fn run(&self, name: &str, revision: Option<i64>) -> Result<Release> {
        let mut rel = self.get.run(name, revision).await?;
        rel.chart = None;
        Ok(rel)
    }
}
