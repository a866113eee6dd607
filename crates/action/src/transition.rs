//! The change of a release's objects that upgrade and rollback share: CRDs, the
//! pre-hooks, the apply of the new objects, the deletion of what they dropped, the
//! wait, the post-hooks. Both verbs record revisions around it; only the hook events
//! ([`Steps`]) differ.

use release::record::Release;

use crate::error::Result;
use crate::kube::{wait, KubeClient, Object};
use crate::lock::Held;
use crate::options::ActionOptions;
use crate::plan::{self, Plan};

/// The hook events around a change of the release's objects.
#[derive(Clone, Copy)]
pub(crate) struct Steps {
    pub(crate) pre: &'static str,
    pub(crate) post: &'static str,
}

impl Steps {
    pub(crate) const UPGRADE: Steps = Steps {
        pre: "pre-upgrade",
        post: "post-upgrade",
    };
    pub(crate) const ROLLBACK: Steps = Steps {
        pre: "pre-rollback",
        post: "post-rollback",
    };
}

/// The cluster changes of upgrade and rollback: from the `old` objects to the plan's.
pub(crate) struct Change<'c> {
    pub(crate) kube: &'c KubeClient,
    pub(crate) opts: &'c ActionOptions,
    pub(crate) plan: &'c Plan,
    pub(crate) old: &'c [Object],
    pub(crate) steps: Steps,
}

impl Change<'_> {
    pub(crate) async fn run(&self, rel: &mut Release, held: &Held) -> Result<()> {
        let (kube, opts, plan) = (self.kube, self.opts, self.plan);
        let owner = opts.owner();
        let (t, no_hooks) = (opts.timeout, opts.disable_hooks);
        plan::install_crds(kube, &owner, &plan.crds, t).await?;
        plan::run_hooks(kube, &owner, rel, &plan.hooks, self.steps.pre, no_hooks, t).await?;
        let known = plan::Known::Release(self.old);
        plan::apply_all(kube, opts, &plan.objects, &mut Vec::new(), known).await?;
        plan::delete_stale(kube, &owner, self.old, &plan.objects).await?;
        if opts.waits() {
            wait::wait_ready(kube, &owner, &plan.objects, opts.wait_for_jobs, t).await?;
        }
        plan::run_hooks(kube, &owner, rel, &plan.hooks, self.steps.post, no_hooks, t).await?;
        held.check()
    }
}
