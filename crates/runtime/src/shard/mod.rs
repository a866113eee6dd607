//! Sharding (`rudder run --shards=auto`): the replicas of one operator split the
//! objects of every watch among themselves, with no one assigning shards.
//!
//! - `membership`: each replica keeps a Lease of its own in the operator's
//!   namespace, renewed like the leader Lease, and lists the group's Leases; a
//!   replica is a member while its Lease is fresh (on the reader's clock).
//! - [`assign`]: an object belongs to the member the rendezvous hash of its
//!   `namespace/name` picks among the members watching its kind.
//! - [`handoff`]: an object changes hands only after every live member acked the new
//!   member list, each having finished its reconciles of the objects it lost.
//!
//! A controller asks [`Shards::claim`] before each reconcile and holds the claim
//! until the reconcile ends; [`follow()`] queues the objects it gains. The
//! [`Manager`](crate::Manager) keeps the membership. The argument for why two
//! replicas never reconcile one object at once is in docs/operator.md ("Sharding").

pub mod assign;
mod follow;
pub mod handoff;
pub(crate) mod membership;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

pub use follow::follow;
use handoff::{Handoff, View};

/// How a replica's Lease is kept: client-go's leader election timings, which the
/// hand-off relies on (a replica that cannot renew within the renew deadline stops,
/// before the others can see its Lease expire).
#[derive(Debug, Clone)]
pub struct ShardSettings {
    /// The operator's namespace, where the member Leases live.
    pub namespace: String,
    /// Replicas with the same group split the CRs (default: the leader election id).
    pub group: String,
    /// This replica's identity (`<hostname>_<uuid>`, as leader election's).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl ShardSettings {
    /// Lease 15 s, renew deadline 10 s, retry every 2 s (controller-runtime's).
    pub fn new(namespace: impl Into<String>, group: impl Into<String>) -> ShardSettings {
        ShardSettings {
            namespace: namespace.into(),
            group: group.into(),
            identity: crate::leader::default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("invalid sharding settings: {0}")]
    Config(String),
    #[error(
        "sharding membership lost: could not renew Lease {namespace}/{name} within {deadline:?} \
         ({last_error}); exiting so no other replica's CRs are touched"
    )]
    Lost {
        namespace: String,
        name: String,
        deadline: Duration,
        last_error: String,
    },
}

/// An object as the shards see it: its watch and `namespace/name`.
type Key = (String, String);

/// This replica's share, shared by the membership loop and the controllers.
pub struct Shards {
    state: Mutex<State>,
    changes: watch::Sender<u64>,
}

struct State {
    handoff: Handoff,
    /// Objects being reconciled now, and how many reconciles of each (normally one).
    in_flight: HashMap<Key, usize>,
}

impl Shards {
    pub(crate) fn new(identity: &str) -> Arc<Shards> {
        Arc::new(Shards {
            state: Mutex::new(State {
                handoff: Handoff::new(identity),
                in_flight: HashMap::new(),
            }),
            changes: watch::channel(0).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn identity(&self) -> String {
        self.lock().handoff.me().to_string()
    }

    /// Whether `namespace/name` of `watch` is ours to reconcile now.
    pub fn owns(&self, watch: &str, namespace: &str, name: &str) -> bool {
        self.lock()
            .handoff
            .owns(watch, &assign::cr_key(namespace, name))
    }

    /// Claims the object for one reconcile if it is ours; the claim ends when dropped.
    pub fn claim(self: &Arc<Self>, watch: &str, namespace: &str, name: &str) -> Option<Claim> {
        let key = (watch.to_string(), assign::cr_key(namespace, name));
        let mut state = self.lock();
        if !state.handoff.owns(&key.0, &key.1) {
            return None;
        }
        *state.in_flight.entry(key.clone()).or_default() += 1;
        Some(Claim {
            shards: Arc::clone(self),
            key,
            started: SystemTime::now(),
        })
    }

    /// Members watching `watch` in the current view.
    pub(crate) fn members_of(&self, watch: &str) -> usize {
        self.lock().handoff.members_of(watch)
    }

    /// Bumps each time what we own may have grown: queue the objects now ours.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Applies one read of the live members.
    fn observe(&self, members: &[handoff::Member]) {
        let grew = self.lock().handoff.observe(members);
        if grew {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// The view to ack next, if our in-flight reconciles allow it; marked as possibly
    /// published from here on.
    fn ack_to_publish(&self) -> Option<View> {
        let mut state = self.lock();
        let State {
            handoff, in_flight, ..
        } = &mut *state;
        let view = handoff
            .ack_ready(in_flight.keys().map(|(w, k)| (w.as_str(), k.as_str())))?
            .clone();
        handoff.publishing(&view);
        Some(view)
    }

    fn published(&self, view: &View) {
        self.lock().handoff.published(view);
    }

    fn stand_down(&self) {
        self.lock().handoff.stand_down();
    }

    /// Whether any reconcile is still running (waited for before leaving).
    fn busy(&self) -> bool {
        !self.lock().in_flight.is_empty()
    }
}

/// One reconcile of an object we own. Dropping it ends the claim and logs the
/// witness line (target `rudder::shard`, debug) that tests use to check no object
/// ran on two replicas at once.
pub struct Claim {
    shards: Arc<Shards>,
    key: Key,
    started: SystemTime,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let me = {
            let mut state = self.shards.lock();
            if let Some(n) = state.in_flight.get_mut(&self.key) {
                *n -= 1;
                if *n == 0 {
                    state.in_flight.remove(&self.key);
                }
            }
            state.handoff.me().to_string()
        };
        let micros = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
        tracing::debug!(
            target: "rudder::shard",
            kind = %self.key.0,
            cr = %self.key.1,
            replica = %me,
            start_us = micros(self.started) as u64,
            end_us = micros(SystemTime::now()) as u64,
            "shard reconcile"
        );
    }
}
