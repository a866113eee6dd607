//! Keeps each release's history within the watch's limit (`--max-history`,
//! `maxHistory`) as the operator reconciles, as the Go operator's `Sync` clears
//! records on every reconcile, but keeping the deployed revision and the newest ones
//! up to the limit where Go keeps only the deployed one.
//!
//! Every new revision already prunes before it is written (Helm's rule, in
//! `release::Storage::create`); this catches what that cannot: records written by
//! others past the limit (`helm upgrade --history-max 0`), a limit lowered since,
//! and a limit of 1, which lets the record an upgrade superseded go only once the
//! upgrade is done. It costs nothing while the history is within the limit: the
//! labels the reconcile read anyway say so.

use release::RecordMeta;

use super::Run;

impl Run {
    /// `history` (read by the labels, oldest first) after deleting the records past
    /// the limit, when there are any. A release another action holds is left for a
    /// later reconcile; a failed delete is logged and the history used as read.
    pub(super) async fn prune_history(&self, history: Vec<RecordMeta>) -> Vec<RecordMeta> {
        let max = self.ctx.max_history;
        let now = jiff::Timestamp::now();
        if max == 0 || release::storage::prunable(&history, max, now).is_empty() {
            return history;
        }
        match self
            .ctx
            .actions
            .prune(&self.namespace, &self.name, max)
            .await
        {
            Ok(deleted) => {
                if !deleted.is_empty() {
                    tracing::debug!(cr = %self.cr_id, release = %self.name, ?deleted, max_history = max,
                        "pruned the release history");
                }
                history
                    .into_iter()
                    .filter(|m| !deleted.contains(&m.version))
                    .collect()
            }
            Err(action::Error::Locked { .. }) => history,
            Err(e) => {
                tracing::warn!(cr = %self.cr_id, release = %self.name, max_history = max,
                    "cannot prune the release history: {}", release::api_error::Chain(&e));
                history
            }
        }
    }
}
