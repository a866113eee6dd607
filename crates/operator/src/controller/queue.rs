//! The work queue's metrics (`workqueue_depth`, `workqueue_adds_total`,
//! `workqueue_queue_duration_seconds`) for a controller whose queue is kube-runtime's
//! scheduler.
//!
//! kube-runtime runs at most `concurrency` reconciles at once and keeps what else is
//! due in its scheduler, which it does not count for us. (Letting every due CR start
//! and wait for a worker inside the reconcile instead made the runner poll all of
//! them on each wake-up: at 10,000 CRs queued, that polling was most of the
//! operator's CPU.) So a CR is counted as queued from the moment something asks for
//! its reconcile — a watch event that passed the filter, a trigger (dependent
//! watches, record watches, the shard follower, a chart reload) — until its reconcile
//! starts; the scheduler merges requests for one CR, and so does this count. A
//! reconcile requeued after a delay was not visible while it waited and counts as
//! added when it starts.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use runtime::metrics::Metrics;

use crate::drift::CrKey;

pub(super) struct Queue {
    metrics: Metrics,
    controller: String,
    /// CRs due for a reconcile that has not started, and since when.
    waiting: Mutex<HashMap<CrKey, Instant>>,
}

impl Queue {
    pub(super) fn new(metrics: Metrics, controller: String) -> Queue {
        Queue {
            metrics,
            controller,
            waiting: Mutex::new(HashMap::new()),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<CrKey, Instant>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Something asked for `cr`'s reconcile.
    pub(super) fn added(&self, cr: CrKey) {
        let mut waiting = self.waiting();
        if let std::collections::hash_map::Entry::Vacant(e) = waiting.entry(cr) {
            e.insert(Instant::now());
            self.metrics.queue_add(&self.controller);
        }
    }

    /// `cr`'s reconcile starts.
    pub(super) fn started(&self, cr: &CrKey) {
        let since = self.waiting().remove(cr);
        match since {
            Some(since) => self.metrics.queue_get(&self.controller, since.elapsed()),
            None => {
                self.metrics.queue_add(&self.controller);
                self.metrics.queue_get(&self.controller, Duration::ZERO);
            }
        }
    }

    /// `cr` left the queue without a reconcile (gone, not this replica's, shutdown).
    pub(super) fn dropped(&self, cr: &CrKey) {
        if self.waiting().remove(cr).is_some() {
            self.metrics.queue_dropped(&self.controller);
        }
    }
}
