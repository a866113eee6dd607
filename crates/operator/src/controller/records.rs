//! The operator's watches of release records: one metadata-only watch of the
//! `owner=helm` (and chunk) Secrets per watched namespace, or one for all namespaces,
//! and one of the ConfigMaps Helm's `configmap` driver leaves (what the migration
//! looks for), shared by every watched kind. They fill the [`RecordCaches`] every
//! reconcile reads release histories, locks and the migration check from (see
//! `release::cache`: a reconcile waits for its own writes to come back, so it never
//! acts on an older view), so reconciling costs no LIST, and an idle CR no request.
//!
//! A record changed or deleted by someone else (`helm upgrade`, a user deleting the
//! release Secret) brings its CR back to the reconciler at once: a deleted Secret is
//! re-adopted within seconds rather than at the next reconcile period.

use std::sync::{Arc, Mutex, Weak};

use futures::future::{BoxFuture, Shared};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::ApiResource;
use kube::runtime::reflector::ObjectRef;
use kube::Client;
use release::cache::{RecordCache, RecordCaches, RecordChange};

use super::dependents::Router;

/// One watched kind: where changes of its releases' records go.
struct Route {
    resource: ApiResource,
    router: Router,
}

/// The record watches of one operator process.
pub(crate) struct RecordWatches {
    caches: RecordCaches,
    routes: Mutex<Vec<Route>>,
    started: Mutex<bool>,
}

impl RecordWatches {
    pub(crate) fn new() -> Arc<RecordWatches> {
        let this = Arc::new(RecordWatches {
            caches: RecordCaches::new(),
            routes: Mutex::new(Vec::new()),
            started: Mutex::new(false),
        });
        for cache in this.caches() {
            let weak: Weak<RecordWatches> = Arc::downgrade(&this);
            cache.on_change(move |change| {
                if let Some(this) = weak.upgrade() {
                    this.changed(&change);
                }
            });
        }
        this
    }

    fn caches(&self) -> impl Iterator<Item = &Arc<RecordCache>> {
        self.caches
            .secrets
            .iter()
            .chain(self.caches.configmaps.iter())
    }

    /// The caches, for the reconcilers' storage.
    pub(crate) fn record_caches(&self) -> RecordCaches {
        self.caches.clone()
    }

    /// Sends changes of records of `resource`'s CRs (owned by such a CR, or owned by
    /// nobody: `helm` writes records without owners) to `router`.
    pub(crate) fn route(&self, resource: &ApiResource, router: Router) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Route {
                resource: resource.clone(),
                router,
            });
    }

    /// Starts the watches, once: of `namespaces`, or of all namespaces when empty;
    /// they end with `stop`.
    pub(crate) fn start(
        &self,
        client: &Client,
        namespaces: &[String],
        stop: Shared<BoxFuture<'static, ()>>,
    ) {
        {
            let mut started = self.started.lock().unwrap_or_else(|e| e.into_inner());
            if *started {
                return;
            }
            *started = true;
        }
        let scopes: Vec<Option<String>> = if namespaces.is_empty() {
            vec![None]
        } else {
            namespaces.iter().cloned().map(Some).collect()
        };
        for scope in scopes {
            if let Some(cache) = &self.caches.secrets {
                let watch =
                    release::cache::watch::<Secret>(cache.clone(), client.clone(), scope.clone());
                spawn_until(watch, stop.clone());
            }
            if let Some(cache) = &self.caches.configmaps {
                let watch = release::cache::watch::<ConfigMap>(
                    cache.clone(),
                    client.clone(),
                    scope.clone(),
                );
                spawn_until(watch, stop.clone());
            }
        }
    }

    /// Someone else changed or deleted a record: reconcile the CR it belongs to.
    fn changed(&self, change: &RecordChange) {
        if change.release.is_empty() {
            return;
        }
        let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        for route in routes.iter() {
            if let Some((api_version, kind)) = &change.owner {
                let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                if *kind != route.resource.kind || group != route.resource.group {
                    continue;
                }
            }
            tracing::debug!(namespace = %change.namespace, release = %change.release,
                deleted = change.deleted, kind = %route.resource.kind,
                "a release record changed outside this process; reconciling its custom resource");
            let cr = ObjectRef::new_with(&change.release, route.resource.clone())
                .within(&change.namespace);
            route.router.send(cr);
        }
    }
}

fn spawn_until(
    work: impl std::future::Future<Output = ()> + Send + 'static,
    stop: Shared<BoxFuture<'static, ()>>,
) {
    tokio::spawn(async move {
        tokio::select! {
            _ = stop => {}
            _ = work => {}
        }
    });
}
