//! Charts that call `lookup` render from the cluster too, which the inputs digest
//! cannot see. For them, a reconcile with unchanged inputs (the periodic one, or one
//! a dependent object triggered) renders against the live cluster without writing
//! anything and compares the digest of what the lookups returned with the one the
//! deployed record carries (`rudder.dev/lookups-digest`). A looked-up object whose
//! content changed upgrades the release once, but only when that render also differs
//! from the deployed release (manifest, hooks or notes): a chart that looks up what
//! it created itself (Bitnami's generated passwords, kept through `lookup` of their
//! own Secret) renders the same after its install, and then the new lookups digest is
//! only written onto the deployed record's labels (one write of that record, the one
//! the repair makes anyway when a label is missing, and no new revision). Kept on the
//! record rather than in memory, it survives restarts and other replicas read it, so
//! the comparison is not made again. Otherwise the release is repaired as usual.
//!
//! Only the lookups' results count as a reason to compare, never the rest of the
//! render, so a chart that also generates random values does not upgrade in a loop;
//! volatile metadata and `status` of looked-up objects are left out for the same
//! reason. A record without the label gets it (rendered against the cluster as it
//! was, so no upgrade), and a failed upgrade of the same inputs backs off like any
//! other.

use chart::values::Values;
use release::record::Release;
use release::RecordMeta;

use super::decide::{self, Lookups};
use super::labels::LOOKUPS_LABEL;
use super::{unix_now, Attempt, ReconcileError, Run};

impl Run {
    /// Repairs, or upgrades when a looked-up object changed.
    pub(super) async fn refresh_lookups(
        &mut self,
        values: Values,
        digest: &str,
        history: &[RecordMeta],
    ) -> Result<Release, ReconcileError> {
        let opts = self.action_options(digest, 1);
        let diff = std::sync::Arc::clone(&self.ctx.actions)
            .diff_upgrade(&self.ctx.chart, values.clone(), opts)
            .await;
        let diff = match diff {
            Ok(d) => d,
            Err(source) => return Err(self.candidate_failed(source).await),
        };
        let rendered_changed = diff.changed || diff.notes_changed;
        let now_lookups = diff.lookups.as_deref();
        match decide::lookups(history, digest, now_lookups, rendered_changed, unix_now()) {
            Lookups::Repair { stamp } => {
                let mut labels = self.chart_labels();
                if let Some(l) = stamp {
                    labels.insert(LOOKUPS_LABEL.to_string(), l);
                }
                self.repair(digest, labels).await
            }
            Lookups::Upgrade { attempt, deployed } => {
                tracing::info!(cr = %self.cr_id, release = %self.name, "an object the chart looks up changed; upgrading");
                self.upgrade(Attempt::new(values, digest, attempt), &deployed)
                    .await
            }
        }
    }
}
