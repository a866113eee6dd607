//! A CR never takes over another chart's release: the release is named after the CR,
//! and Kubernetes lets CRs of different kinds (different charts) share a name, or
//! `helm install` may have used it first. As Go's `getReleaseName`, a release whose
//! records are of another chart is refused with `duplicate release name`, before the
//! finalizer goes on, so neither reconciling nor deleting the CR touches it.
//!
//! Which chart a release is of is read from the chart label on its records (rudder
//! writes it on every record); records without it (Helm's, older rudder's) have one
//! record decoded, and the next write labels them.

use release::RecordMeta;

use super::decide::{self, ReleaseChart};
use super::{ReconcileError, Run};

/// What the records say about whose release this is.
pub(super) enum Owner {
    /// The release is free or of this CR's chart.
    Ours,
    /// The release is another chart's: the error to report.
    Theirs(ReconcileError),
}

impl Run {
    /// Whether the release named after this CR is of the CR's chart.
    pub(super) async fn release_owner(
        &self,
        history: &[RecordMeta],
    ) -> Result<Owner, ReconcileError> {
        let ours = &self.ctx.chart.metadata.name;
        let theirs = match decide::release_chart(history) {
            ReleaseChart::Free => return Ok(Owner::Ours),
            ReleaseChart::Labelled(chart) => Some(chart),
            ReleaseChart::Unknown => self
                .ctx
                .actions
                .release_chart(&self.namespace, &self.name)
                .await
                .map_err(|e| self.storage_err(e))?,
        };
        match theirs {
            Some(chart) if chart == *ours => Ok(Owner::Ours),
            Some(chart) => Ok(Owner::Theirs(ReconcileError::DuplicateName {
                cr: self.cr_id.clone(),
                release: self.name.clone(),
                chart,
            })),
            None => Ok(Owner::Theirs(ReconcileError::NoChartMetadata {
                cr: self.cr_id.clone(),
                release: self.name.clone(),
            })),
        }
    }

    /// Refuses the reconcile when the release is another chart's (`Irreconcilable`).
    pub(super) async fn check_owner(
        &mut self,
        history: &[RecordMeta],
    ) -> Result<(), ReconcileError> {
        match self.release_owner(history).await? {
            Owner::Ours => Ok(()),
            Owner::Theirs(err) => {
                tracing::error!(cr = %self.cr_id, error = %release::api_error::Chain(&err), "Failed to get release manager");
                let msg = super::err_message(&err);
                Err(self.irreconcilable(msg, err).await)
            }
        }
    }
}
