//! What an install or upgrade is waiting for, in the CR's status while it waits: a hook
//! Job that has not completed, or objects not yet ready under `wait`, would otherwise
//! hold a reconcile for minutes with nothing to show but log lines. Each line the
//! action's waits report (the same line they log, at most every 5 s) becomes
//! `Deployed=False/AwaitingReadiness` with that line as the message, the rudder
//! extension the readiness mode already uses for "deployed, waiting for workloads".
//! Waits that end within their first report interval write nothing, and once the
//! action returns `Deployed` is put back as it was, so the step's own report (success
//! or failure) decides the final conditions exactly as without a wait. The same writes
//! carry the line as `Reconciling`'s message.

use std::future::Future;
use std::time::{Duration, Instant};

use action::{ActionOptions, WaitReport};
use tokio::sync::mpsc;

use super::Run;
use crate::status::{self as st, Standing};

/// How long a wait goes unreported in the status: short waits (a hook Job the cluster
/// completes at once) cost no status writes.
const QUIET: Duration = Duration::from_secs(5);

/// The lines an action's waits report, in order.
pub(super) struct WaitLines(mpsc::UnboundedReceiver<String>);

/// Makes `opts`' waits report to the returned lines as well as to the log.
pub(super) fn report_waits(opts: &mut ActionOptions) -> WaitLines {
    let (tx, rx) = mpsc::unbounded_channel();
    opts.wait_report = WaitReport::new(move |line| {
        // The receiver goes only when the action has returned.
        let _ = tx.send(line.to_string());
    });
    WaitLines(rx)
}

impl Run {
    /// Runs `action`, showing what its waits report in `Deployed` while it runs.
    pub(super) async fn while_waiting<T>(
        &mut self,
        lines: WaitLines,
        action: impl Future<Output = T>,
    ) -> T {
        let WaitLines(mut lines) = lines;
        let start = Instant::now();
        let before = self
            .status
            .conditions
            .iter()
            .position(|c| c.type_ == st::DEPLOYED);
        let before = before.map(|i| (i, self.status.conditions[i].clone()));
        let mut shown = false;
        tokio::pin!(action);
        let out = loop {
            tokio::select! {
                biased;
                out = &mut action => break out,
                Some(line) = lines.recv() => {
                    if start.elapsed() < QUIET {
                        continue;
                    }
                    tracing::info!(cr = %self.cr_id, "{line}");
                    self.status
                        .set(st::DEPLOYED, st::FALSE, st::AWAITING_READINESS, line.clone());
                    let reason = self
                        .status
                        .condition(st::RECONCILING)
                        .filter(|c| c.status == st::TRUE)
                        .map_or(st::AWAITING_READINESS.to_string(), |c| c.reason.clone());
                    self.status.stand(Standing::Progressing, &reason, line);
                    shown = true;
                    // The step's own report retries the write; a missed progress line
                    // only shows later.
                    if let Err(e) = self.write_status().await {
                        tracing::warn!(cr = %self.cr_id, error = %release::api_error::Chain(&e), "could not show wait progress in the status");
                    }
                }
            }
        };
        if shown {
            self.status.remove(st::DEPLOYED);
            if let Some((i, condition)) = before {
                let i = i.min(self.status.conditions.len());
                self.status.conditions.insert(i, condition);
            }
        }
        out
    }
}
