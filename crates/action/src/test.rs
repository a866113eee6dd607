//! `helm test`: run the `test` hooks (and the legacy `test-success` ones) of the
//! newest revision, transformed, and record each one's execution in that revision. A
//! failing test hook fails the call after its execution was recorded.

use release::record::Release;

use crate::config::ActionConfig;
use crate::error::Result;
use crate::kube::hooks;
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::plan;
use crate::store;

/// The `test` verb.
pub struct ReleaseTest<'a> {
    cfg: &'a ActionConfig,
    opts: ActionOptions,
}

impl<'a> ReleaseTest<'a> {
    pub fn new(cfg: &'a ActionConfig, opts: ActionOptions) -> ReleaseTest<'a> {
        ReleaseTest { cfg, opts }
    }

    /// Runs the tests; returns the revision with their executions.
    pub async fn run(&self) -> Result<Release> {
        let opts = &self.opts;
        self.cfg
            .with_lock(&opts.namespace, &opts.name, |held| self.test_locked(held))
            .await
    }

    async fn test_locked(&self, held: Held) -> Result<Release> {
        let opts = &self.opts;
        let store = self.cfg.release_storage(opts, &held);
        let name = &opts.name;
        store::recover_leftover(&store, name, &held).await?;
        let mut rel = store::current(&store, name).await?;
        let kube = self.cfg.kube();
        let owner = opts.owner();
        let objects = plan::prepare_hooks(&kube, &owner, &rel.hooks, Some(opts)).await?;
        let mut result = Ok(());
        for event in ["test", "test-success"] {
            if result.is_ok() {
                result =
                    hooks::run(&kube, &owner, &mut rel.hooks, &objects, event, opts.timeout).await;
            }
        }
        held.check()?;
        store::save(&store, &rel).await?;
        result.map(|()| rel)
    }
}
