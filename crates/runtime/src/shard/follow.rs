//! Keeps one watch's controller in step with this replica's share: queues the
//! objects it gained (they were skipped while someone else owned them) and reports
//! the share as metrics. It looks whenever the settled view changes, and every few
//! seconds (objects are created and deleted between view changes).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::Shards;
use crate::metrics::Metrics;

/// How often the share is counted without a view change.
const RECOUNT: Duration = Duration::from_secs(5);

/// Follows the share of the watch `gvk` (as [`super::ShardSettings`]'s members name
/// their watches): `stores` are the watch's caches, and `triggers` (one per store)
/// queue an object for a reconcile. Runs until the caller drops it.
pub async fn follow<K>(
    shards: Arc<Shards>,
    gvk: String,
    resource: K::DynamicType,
    stores: Vec<Store<K>>,
    triggers: Vec<mpsc::UnboundedSender<ObjectRef<K>>>,
    metrics: Metrics,
) where
    K: Resource + Clone + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash,
{
    let mut changes = shards.changes();
    let mut owned: HashSet<(String, String)> = HashSet::new();
    loop {
        let mut now_owned = HashSet::with_capacity(owned.len());
        let mut queued = 0usize;
        for (store, trigger) in stores.iter().zip(&triggers) {
            for object in store.state() {
                let key = (object.namespace().unwrap_or_default(), object.name_any());
                if !shards.owns(&gvk, &key.0, &key.1) {
                    continue;
                }
                if !owned.contains(&key) {
                    let target = ObjectRef::from_obj_with(&*object, resource.clone());
                    if trigger.unbounded_send(target).is_ok() {
                        queued += 1;
                    }
                }
                now_owned.insert(key);
            }
        }
        if queued > 0 {
            tracing::info!(target: "rudder::shard", kind = %gvk, gained = queued,
                owned = now_owned.len(), "reconciling the custom resources this replica gained");
        }
        owned = now_owned;
        metrics.set_shard_share(&gvk, owned.len(), shards.members_of(&gvk));
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(RECOUNT) => {}
        }
    }
}
