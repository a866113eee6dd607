//! The controllers a cluster runs beside its API server (kube-controller-
//! manager's): garbage collection and namespace cleanup ([`gc`]), the
//! ServiceAccount token controller ([`tokens`]), and with
//! `simulate_readiness` the simulated status of workloads ([`readiness`])
//! and the Deployment → ReplicaSet → Pod controllers ([`workloads`]);
//! kube-aggregator's availability controller of APIServices
//! ([`apiservices`]); and kube-apiserver's establishing controller of CRDs
//! ([`crds`]).
//!
//! Like kube-controller-manager's, they are clients of the API, not part
//! of its write path: each follows the store's change stream ([`Changes`],
//! an informer's list and watch) and writes back through the object layer
//! like any client, so the write path knows none of them. Their effects
//! are therefore asynchronous, as on a real cluster, and come within
//! milliseconds of the write that causes them.

mod apiservices;
mod crds;
mod gc;
mod readiness;
mod tokens;
mod workloads;

use crate::storage::{Event, Keyed};
use crate::App;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinSet;

/// The running controllers.
pub(crate) struct Controllers(JoinSet<()>);

impl Controllers {
    /// Waits until every controller has ended (they end when the server
    /// shuts down), so that none still holds the server's state, and its
    /// storage, when `Server::stop` returns.
    pub(crate) async fn join(mut self) {
        while self.0.join_next().await.is_some() {}
    }
}

/// Starts the controllers on the current runtime. Each subscribes here,
/// before this returns, so no write after it escapes them.
pub(crate) fn start(app: &Arc<App>) -> Controllers {
    let mut set = JoinSet::new();
    set.spawn(gc::run(app.clone(), Changes::new(app)));
    set.spawn(tokens::run(app.clone(), Changes::new(app)));
    set.spawn(apiservices::run(app.clone(), Changes::new(app)));
    set.spawn(crds::run(app.clone(), Changes::new(app)));
    if app.simulate_readiness {
        set.spawn(readiness::run(app.clone(), Changes::new(app)));
        set.spawn(workloads::run(app.clone(), Changes::new(app)));
    }
    Controllers(set)
}

/// What a controller sees of the store.
enum Change {
    /// One committed mutation.
    Event(Arc<Event>),
    /// Every object with its key: first when the controller starts, and
    /// again when it fell behind the stream and missed changes.
    Listed(Keyed),
}

/// One controller's subscription to the store, as a client-go informer
/// lists and then watches. The stream holds a bounded backlog; a
/// controller that falls further behind lists everything again instead of
/// missing a change.
struct Changes {
    app: Arc<App>,
    rx: broadcast::Receiver<Arc<Event>>,
    shutdown: watch::Receiver<bool>,
    listed: Option<Keyed>,
}

impl Changes {
    fn new(app: &Arc<App>) -> Changes {
        let (listed, rx) = app.store.list_and_watch("");
        Changes {
            app: app.clone(),
            rx,
            shutdown: app.shutdown.clone(),
            listed: Some(listed),
        }
    }

    /// The next change; `None` once the server shuts down.
    async fn next(&mut self) -> Option<Change> {
        if let Some(listed) = self.listed.take() {
            return Some(Change::Listed(listed));
        }
        tokio::select! {
            ev = self.rx.recv() => match ev {
                Ok(ev) => Some(Change::Event(ev)),
                Err(RecvError::Lagged(_)) => {
                    let (listed, rx) = self.app.store.list_and_watch("");
                    self.rx = rx;
                    Some(Change::Listed(listed))
                }
                Err(RecvError::Closed) => None,
            },
            _ = self.shutdown.changed() => None,
        }
    }

    /// Waits `d`; `false` when the server shuts down meanwhile (the
    /// controller then ends).
    async fn idle(&mut self, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = self.shutdown.changed() => false,
        }
    }

    /// Drops the changes already waiting, for a controller about to look at
    /// the whole store anyway.
    fn skip_waiting(&mut self) {
        self.listed = None;
        loop {
            match self.rx.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }
}

/// The `group/plural` of a storage key (`group/plural/namespace/name`).
fn resource_of(key: &str) -> Option<(&str, &str)> {
    let mut it = key.splitn(3, '/');
    Some((it.next()?, it.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemoryBackend, Mutation};
    use crate::Authorization;
    use serde_json::json;

    fn put(app: &App, key: &str) {
        app.store
            .transact(key, |_| Ok(Mutation::Put(json!({"metadata": {}}))))
            .unwrap();
    }

    #[tokio::test]
    async fn a_controller_lists_then_follows_and_lists_again_when_behind() {
        let (stop, shutdown) = watch::channel(false);
        let app = App::new(
            Box::new(MemoryBackend),
            false,
            shutdown,
            Authorization::AlwaysAllow,
            None,
        )
        .unwrap();
        let mut changes = Changes::new(&app);
        // The four namespaces every server starts with.
        let Some(Change::Listed(first)) = changes.next().await else {
            panic!("a controller starts with a list");
        };
        assert_eq!(first.len(), 4);
        put(&app, "/configmaps/ns/a");
        let Some(Change::Event(ev)) = changes.next().await else {
            panic!("then it follows the stream");
        };
        assert_eq!(ev.key, "/configmaps/ns/a");
        // More writes than the stream holds: the controller lists again
        // rather than miss any, and follows the stream from there.
        for i in 0..10_000 {
            put(&app, &format!("/configmaps/ns/c{i}"));
        }
        let Some(Change::Listed(all)) = changes.next().await else {
            panic!("a controller that fell behind lists again");
        };
        assert_eq!(all.len(), 4 + 1 + 10_000);
        put(&app, "/configmaps/ns/late");
        let Some(Change::Event(ev)) = changes.next().await else {
            panic!("and follows the stream after the list");
        };
        assert_eq!(ev.key, "/configmaps/ns/late");
        stop.send(true).unwrap();
        assert!(changes.next().await.is_none(), "shutdown ends the stream");
    }
}
