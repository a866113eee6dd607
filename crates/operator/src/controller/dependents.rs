//! Dependent watches: metadata-only watches of the kinds a release deployed, so a
//! deleted or edited object brings its CR back to the reconciler at once instead of
//! at the next reconcile period.
//!
//! No object is cached: each watched object leaves only a fingerprint of the metadata
//! that changes when someone other than a status writer touches it, plus the CR it
//! maps to (so a deletion missed while the watch was down is still noticed on relist).
//! As in the Go helm-operator, creations are ignored (the reconciler made them),
//! status-only updates are ignored, and deletions always trigger.
//!
//! Every trigger is also reported to the watch's [`DriftTracker`], with when each
//! kind's watches listed, so a periodic reconcile can tell that nothing of a release
//! moved and leave it alone.
//!
//! Kinds resolve through the watch's discovery cache (the one its renders use): a kind
//! of an unavailable API (an aggregated one whose service is down) is not watched and
//! costs no request until the cache refreshes that API; its CRs rely on the reconcile
//! period meanwhile.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::future::{BoxFuture, Shared};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use tokio::task::JoinSet;

use crate::cr::CustomResource;
use crate::drift::{self, DriftTracker};

/// The label Helm (and rudder's apply) sets on every release object.
const MANAGED_BY_SELECTOR: &str = "app.kubernetes.io/managed-by=Helm";
/// The Go helm-operator's annotations naming the CR of an object it could not own by
/// an owner reference (cluster-scoped or in another namespace).
pub(super) const PRIMARY_RESOURCE_ANNOTATION: &str = "operator-sdk/primary-resource";
pub(super) const PRIMARY_RESOURCE_TYPE_ANNOTATION: &str = "operator-sdk/primary-resource-type";
const RELEASE_NAME_ANNOTATION: &str = "meta.helm.sh/release-name";
const RELEASE_NAMESPACE_ANNOTATION: &str = "meta.helm.sh/release-namespace";
/// Events for one CR arriving within this window cause one reconcile.
const DEBOUNCE: Duration = Duration::from_millis(500);

/// Where triggers go: the CR kind's controllers, one for all namespaces or one per
/// watched namespace.
#[derive(Clone)]
pub(crate) struct Router {
    all: Option<UnboundedSender<ObjectRef<CustomResource>>>,
    by_namespace: HashMap<String, UnboundedSender<ObjectRef<CustomResource>>>,
}

impl Router {
    pub(crate) fn all(tx: UnboundedSender<ObjectRef<CustomResource>>) -> Router {
        Router {
            all: Some(tx),
            by_namespace: HashMap::new(),
        }
    }

    pub(crate) fn per_namespace(
        senders: HashMap<String, UnboundedSender<ObjectRef<CustomResource>>>,
    ) -> Router {
        Router {
            all: None,
            by_namespace: senders,
        }
    }

    pub(super) fn send(&self, cr: ObjectRef<CustomResource>) {
        let tx = match (&self.all, &cr.namespace) {
            (Some(tx), _) => Some(tx),
            (None, Some(ns)) => self.by_namespace.get(ns),
            (None, None) => None,
        };
        // A closed channel means the controller is shutting down: nothing to do.
        if let Some(tx) = tx {
            let _ = tx.unbounded_send(cr);
        }
    }
}

/// Where the dependent objects of one CR kind may live.
#[derive(Debug, Clone)]
pub(crate) struct DependentScope {
    /// Namespaces to watch namespaced kinds in; empty: all namespaces.
    pub namespaces: Vec<String>,
}

impl DependentScope {
    /// The namespaces to watch: the operator's watched namespaces plus the ones the
    /// watch allows releases to write to (`"*"`, or no namespace restriction: all).
    pub(crate) fn new(watch_namespaces: &[String], allowed_namespaces: &[String]) -> Self {
        if watch_namespaces.is_empty() || allowed_namespaces.iter().any(|n| n == "*") {
            return DependentScope {
                namespaces: Vec::new(),
            };
        }
        let mut namespaces = watch_namespaces.to_vec();
        for ns in allowed_namespaces {
            if !namespaces.contains(ns) {
                namespaces.push(ns.clone());
            }
        }
        DependentScope { namespaces }
    }
}

/// The dependent watches of one CR kind; started lazily, one per kind a release uses.
pub(crate) struct DependentWatches {
    client: Client,
    owner: ApiResource,
    scope: DependentScope,
    router: Router,
    drift: Arc<DriftTracker>,
    stop: Shared<BoxFuture<'static, ()>>,
    started: Mutex<HashSet<GroupVersionKind>>,
    tasks: Mutex<JoinSet<()>>,
    /// The watch's discovery cache once shared (a cache of its own until then).
    discovery: std::sync::OnceLock<Arc<action::DiscoveryCache>>,
}

impl DependentWatches {
    pub(crate) fn new(
        client: Client,
        owner: ApiResource,
        scope: DependentScope,
        router: Router,
        drift: Arc<DriftTracker>,
        stop: Shared<BoxFuture<'static, ()>>,
    ) -> DependentWatches {
        DependentWatches {
            client,
            owner,
            scope,
            router,
            drift,
            stop,
            started: Mutex::new(HashSet::new()),
            tasks: Mutex::new(JoinSet::new()),
            discovery: std::sync::OnceLock::new(),
        }
    }

    /// Resolves kinds through `discovery` (the watch's, shared with its renders); to be
    /// called before the first kind is watched.
    pub(crate) fn share_discovery(&self, discovery: Arc<action::DiscoveryCache>) {
        let _ = self.discovery.set(discovery);
    }

    /// Starts watching every kind of `kinds` not watched yet.
    pub(crate) fn ensure(self: &Arc<Self>, kinds: &[GroupVersionKind]) {
        let new: Vec<GroupVersionKind> = {
            let Ok(mut started) = self.started.lock() else {
                return;
            };
            kinds
                .iter()
                .filter(|gvk| started.insert((*gvk).clone()))
                .cloned()
                .collect()
        };
        if new.is_empty() {
            return;
        }
        let Ok(mut tasks) = self.tasks.lock() else {
            return;
        };
        for gvk in new {
            let this = Arc::clone(self);
            tasks.spawn(async move { this.start(gvk).await });
        }
    }

    async fn start(self: Arc<Self>, gvk: GroupVersionKind) {
        let api_version = if gvk.group.is_empty() {
            gvk.version.clone()
        } else {
            format!("{}/{}", gvk.group, gvk.version)
        };
        let discovery = self
            .discovery
            .get_or_init(|| Arc::new(action::DiscoveryCache::new(crate::reconcile::DISCOVERY_TTL)));
        let resolved = discovery
            .resolve(&self.client, &api_version, &gvk.kind)
            .await;
        let (resource, namespaced) = match resolved {
            Ok(found) => found,
            Err(e) => {
                // An unavailable API was warned about once, by the discovery cache.
                if matches!(e, action::KindError::Unavailable { .. }) {
                    tracing::debug!(kind = %gvk_text(&gvk), owner = %self.owner.kind,
                        "not watching objects of this kind for drift ({e})");
                } else {
                    tracing::warn!(
                        kind = %gvk_text(&gvk),
                        owner = %self.owner.kind,
                        "cannot watch objects of this kind for drift ({e}); \
                         relying on the reconcile period for them"
                    );
                }
                self.drift.not_watching(&gvk);
                // Forget it so the next reconcile that deploys this kind tries again.
                if let Ok(mut started) = self.started.lock() {
                    started.remove(&gvk);
                }
                return;
            }
        };
        let apis: Vec<Api<PartialObjectMeta<DynamicObject>>> =
            if !namespaced || self.scope.namespaces.is_empty() {
                vec![Api::all_with(self.client.clone(), &resource)]
            } else {
                self.scope
                    .namespaces
                    .iter()
                    .map(|ns| Api::namespaced_with(self.client.clone(), ns, &resource))
                    .collect()
            };
        tracing::debug!(kind = %gvk_text(&gvk), owner = %self.owner.kind, "watching dependent objects");
        let mut set = JoinSet::new();
        self.drift.watching(&gvk, apis.len());
        for (slot, api) in apis.into_iter().enumerate() {
            let forwarder = Forwarder::new(self.owner.clone(), self.router.clone()).tracked(
                Arc::clone(&self.drift),
                gvk.clone(),
                slot,
            );
            let stop = self.stop.clone();
            set.spawn(forwarder.run(api, stop));
        }
        while set.join_next().await.is_some() {}
    }
}

fn gvk_text(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        format!("{}/{}", gvk.version, gvk.kind)
    } else {
        format!("{}/{}, Kind={}", gvk.group, gvk.version, gvk.kind)
    }
}

/// What is remembered of one dependent object.
struct Seen {
    fingerprint: u64,
    owners: Vec<ObjectRef<CustomResource>>,
}

/// Turns one watch's events into reconcile triggers for the owning CRs.
pub(crate) struct Forwarder {
    owner: ApiResource,
    router: Router,
    seen: HashMap<String, Seen>,
    /// Inside a (re)list: the uids listed so far; `None` outside.
    listing: Option<HashSet<String>>,
    /// The first list only records what exists: the CRs were just reconciled.
    first_list_done: bool,
    pending: HashSet<ObjectRef<CustomResource>>,
    /// Where drift and this watch's coverage are reported: the tracker, the kind
    /// watched and this watch's slot among the kind's watches.
    drift: Arc<DriftTracker>,
    kind: GroupVersionKind,
    slot: usize,
}

impl Forwarder {
    pub(crate) fn new(owner: ApiResource, router: Router) -> Forwarder {
        Forwarder {
            owner,
            router,
            seen: HashMap::new(),
            listing: None,
            first_list_done: false,
            pending: HashSet::new(),
            drift: Arc::new(DriftTracker::new()),
            kind: GroupVersionKind::gvk("", "", ""),
            slot: 0,
        }
    }

    /// Reports to `drift` as watch `slot` of `kind`.
    pub(crate) fn tracked(
        mut self,
        drift: Arc<DriftTracker>,
        kind: GroupVersionKind,
        slot: usize,
    ) -> Forwarder {
        self.drift = drift;
        self.kind = kind;
        self.slot = slot;
        self
    }

    async fn run(
        mut self,
        api: Api<PartialObjectMeta<DynamicObject>>,
        stop: Shared<BoxFuture<'static, ()>>,
    ) {
        let config = watcher::Config::default().labels(MANAGED_BY_SELECTOR);
        let mut events = std::pin::pin!(watcher::watcher(api, config).default_backoff());
        let mut stop = std::pin::pin!(stop);
        let mut flush_at: Option<tokio::time::Instant> = None;
        loop {
            // The window opens with the first pending trigger and is not extended by
            // later ones, so a steady stream of events cannot hold triggers back.
            if self.pending.is_empty() {
                flush_at = None;
            } else if flush_at.is_none() {
                flush_at = Some(tokio::time::Instant::now() + DEBOUNCE);
            }
            tokio::select! {
                _ = &mut stop => {
                    self.drift.unsynced(&self.kind, self.slot);
                    return;
                }
                _ = tokio::time::sleep_until(flush_at.unwrap_or_else(tokio::time::Instant::now)), if flush_at.is_some() => {
                    self.flush();
                    flush_at = None;
                }
                event = events.next() => match event {
                    None => {
                        self.drift.unsynced(&self.kind, self.slot);
                        return;
                    }
                    Some(Ok(event)) => self.handle(event),
                    Some(Err(e)) => {
                        self.drift.unsynced(&self.kind, self.slot);
                        tracing::warn!(owner = %self.owner.kind, "dependent watch failed, retrying: {e}");
                    }
                },
            }
        }
    }

    fn flush(&mut self) {
        for cr in self.pending.drain() {
            let key = (cr.namespace.clone().unwrap_or_default(), cr.name.clone());
            self.drift.drifted(&key);
            self.router.send(cr);
        }
    }

    /// Whether this event of an object of `owners` (at `version`; `None`: deleted)
    /// is a write of the reconciler's own coming back.
    fn own(
        &self,
        owners: &[ObjectRef<CustomResource>],
        meta: &ObjectMeta,
        version: Option<&str>,
    ) -> bool {
        let crs: Vec<(String, String)> = owners
            .iter()
            .map(|o| (o.namespace.clone().unwrap_or_default(), o.name.clone()))
            .collect();
        let object = (
            self.kind.group.as_str(),
            self.kind.kind.as_str(),
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        );
        self.drift.own_event(&crs, object, version)
    }

    fn trigger(&mut self, owners: &[ObjectRef<CustomResource>]) {
        self.pending.extend(owners.iter().cloned());
    }

    /// Handles one watch event; returns nothing, queues triggers.
    pub(crate) fn handle(&mut self, event: Event<PartialObjectMeta<DynamicObject>>) {
        match event {
            Event::Init => self.listing = Some(HashSet::new()),
            Event::InitApply(obj) => {
                let Some(uid) = obj.metadata.uid.clone() else {
                    return;
                };
                if let Some(listed) = &mut self.listing {
                    listed.insert(uid.clone());
                }
                let owners = owners_of(&obj.metadata, &self.owner);
                if owners.is_empty() {
                    self.seen.remove(&uid);
                    return;
                }
                let fingerprint = fingerprint(&obj.metadata);
                let changed = self
                    .seen
                    .get(&uid)
                    .is_none_or(|s| s.fingerprint != fingerprint);
                if self.first_list_done && changed {
                    self.trigger(&owners);
                }
                self.seen.insert(
                    uid,
                    Seen {
                        fingerprint,
                        owners,
                    },
                );
            }
            Event::InitDone => {
                let listed = self.listing.take().unwrap_or_default();
                // Objects gone while the watch was down: their CRs need a repair.
                let gone: Vec<String> = self
                    .seen
                    .keys()
                    .filter(|uid| !listed.contains(*uid))
                    .cloned()
                    .collect();
                for uid in gone {
                    if let Some(s) = self.seen.remove(&uid) {
                        if self.first_list_done {
                            self.trigger(&s.owners);
                        }
                    }
                }
                self.first_list_done = true;
                self.drift.synced(&self.kind, self.slot, drift::now_ms());
            }
            Event::Apply(obj) => {
                let Some(uid) = obj.metadata.uid.clone() else {
                    return;
                };
                let owners = owners_of(&obj.metadata, &self.owner);
                if owners.is_empty() {
                    self.seen.remove(&uid);
                    return;
                }
                let fingerprint = fingerprint(&obj.metadata);
                let previous = self.seen.insert(
                    uid,
                    Seen {
                        fingerprint,
                        owners: owners.clone(),
                    },
                );
                // A new object was created by the reconciler itself; a known one
                // changed only if its fingerprint did, and not by our own apply.
                let own = self.own(
                    &owners,
                    &obj.metadata,
                    obj.metadata.resource_version.as_deref(),
                );
                if !own && previous.is_some_and(|p| p.fingerprint != fingerprint) {
                    self.trigger(&owners);
                }
            }
            Event::Delete(obj) => {
                let mut owners = owners_of(&obj.metadata, &self.owner);
                if let Some(uid) = &obj.metadata.uid {
                    if let Some(s) = self.seen.remove(uid) {
                        for o in s.owners {
                            if !owners.contains(&o) {
                                owners.push(o);
                            }
                        }
                    }
                }
                // Deleted by an upgrade that dropped it: no drift.
                if !self.own(&owners, &obj.metadata, None) {
                    self.trigger(&owners);
                }
            }
        }
    }

    #[cfg(test)]
    fn take_pending(&mut self) -> Vec<ObjectRef<CustomResource>> {
        let mut out: Vec<_> = self.pending.drain().collect();
        out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }
}

fn group_of(api_version: &str) -> &str {
    api_version.split_once('/').map(|(g, _)| g).unwrap_or("")
}

/// The CRs (of kind `owner`) an object belongs to: by owner reference, else by the Go
/// helm-operator's primary-resource annotations, else by Helm's release annotations
/// (the release is named after its CR).
pub(crate) fn owners_of(meta: &ObjectMeta, owner: &ApiResource) -> Vec<ObjectRef<CustomResource>> {
    let cr = |ns: Option<&str>, name: &str| {
        let r = ObjectRef::new_with(name, owner.clone());
        match ns {
            Some(ns) => r.within(ns),
            None => r,
        }
    };
    let mut out = Vec::new();
    if let Some(ns) = meta.namespace.as_deref() {
        for r in meta.owner_references.iter().flatten() {
            if r.kind == owner.kind && group_of(&r.api_version) == owner.group {
                out.push(cr(Some(ns), &r.name));
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    let annotations = meta.annotations.as_ref();
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    if let (Some(primary), Some(kind)) = (
        annotation(PRIMARY_RESOURCE_ANNOTATION),
        annotation(PRIMARY_RESOURCE_TYPE_ANNOTATION),
    ) {
        // The type is `Kind.group` (just `Kind` for the core group).
        let (k, g) = kind.split_once('.').unwrap_or((kind, ""));
        if k == owner.kind && g == owner.group {
            if let Some((ns, name)) = primary.split_once('/') {
                out.push(cr(Some(ns), name));
            }
        }
        return out;
    }
    if let (Some(name), Some(ns)) = (
        annotation(RELEASE_NAME_ANNOTATION),
        annotation(RELEASE_NAMESPACE_ANNOTATION),
    ) {
        out.push(cr(Some(ns), name));
    }
    out
}

/// A hash of the metadata that changes when an object's desired state is touched, and
/// not when only its status is written: the generation (bumped by spec changes), labels,
/// annotations, owners, finalizers, deletion, and the field managers that did not write
/// the status subresource. Kinds without a generation and without managed fields fall
/// back to the resource version: every change counts.
pub(crate) fn fingerprint(meta: &ObjectMeta) -> u64 {
    let mut h = DefaultHasher::new();
    meta.generation.hash(&mut h);
    meta.labels.hash(&mut h);
    meta.annotations.hash(&mut h);
    for r in meta.owner_references.iter().flatten() {
        r.uid.hash(&mut h);
        r.controller.hash(&mut h);
    }
    meta.finalizers.hash(&mut h);
    meta.deletion_timestamp.is_some().hash(&mut h);
    let mut spec_managers = 0usize;
    for m in meta.managed_fields.iter().flatten() {
        if m.subresource.as_deref().is_some_and(|s| !s.is_empty()) {
            continue;
        }
        spec_managers += 1;
        m.manager.hash(&mut h);
        m.operation.hash(&mut h);
        m.api_version.hash(&mut h);
        m.time.as_ref().map(|t| t.0.to_string()).hash(&mut h);
        m.fields_v1.as_ref().map(|f| f.0.to_string()).hash(&mut h);
    }
    if meta.generation.is_none() && spec_managers == 0 {
        meta.resource_version.hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference};
    use std::collections::BTreeMap;

    fn owner() -> ApiResource {
        ApiResource::from_gvk(&GroupVersionKind::gvk(
            "demo.rudder.dev",
            "v1alpha1",
            "Hello",
        ))
    }

    fn obj(uid: &str, generation: i64) -> PartialObjectMeta<DynamicObject> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(format!("obj-{uid}")),
                namespace: Some("ns".into()),
                uid: Some(uid.into()),
                generation: Some(generation),
                resource_version: Some(format!("{generation}")),
                owner_references: Some(vec![OwnerReference {
                    api_version: "demo.rudder.dev/v1alpha1".into(),
                    kind: "Hello".into(),
                    name: "cr".into(),
                    uid: "cr-uid".into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            _phantom: Default::default(),
        }
    }

    fn forwarder() -> Forwarder {
        let (tx, _rx) = futures::channel::mpsc::unbounded();
        Forwarder::new(owner(), Router::all(tx))
    }

    fn names(refs: Vec<ObjectRef<CustomResource>>) -> Vec<String> {
        refs.into_iter()
            .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
            .collect()
    }

    #[test]
    fn owner_reference_maps_to_cr() {
        let o = obj("a", 1);
        assert_eq!(names(owners_of(&o.metadata, &owner())), ["ns/cr"]);
        let other = ApiResource::from_gvk(&GroupVersionKind::gvk("other.dev", "v1", "Hello"));
        assert!(owners_of(&o.metadata, &other).is_empty());
    }

    #[test]
    fn primary_resource_annotations_map_to_cr() {
        let meta = ObjectMeta {
            name: Some("role".into()),
            annotations: Some(BTreeMap::from([
                (PRIMARY_RESOURCE_ANNOTATION.into(), "team-a/web".into()),
                (
                    PRIMARY_RESOURCE_TYPE_ANNOTATION.into(),
                    "Hello.demo.rudder.dev".into(),
                ),
            ])),
            ..Default::default()
        };
        assert_eq!(names(owners_of(&meta, &owner())), ["team-a/web"]);
        let mut wrong = meta.clone();
        wrong.annotations.as_mut().unwrap().insert(
            PRIMARY_RESOURCE_TYPE_ANNOTATION.into(),
            "Other.demo.rudder.dev".into(),
        );
        assert!(owners_of(&wrong, &owner()).is_empty());
    }

    #[test]
    fn helm_release_annotations_are_the_fallback() {
        let meta = ObjectMeta {
            name: Some("cm".into()),
            namespace: Some("ns".into()),
            annotations: Some(BTreeMap::from([
                (RELEASE_NAME_ANNOTATION.into(), "web".into()),
                (RELEASE_NAMESPACE_ANNOTATION.into(), "ns".into()),
            ])),
            ..Default::default()
        };
        assert_eq!(names(owners_of(&meta, &owner())), ["ns/web"]);
    }

    #[test]
    fn status_only_updates_do_not_change_the_fingerprint() {
        let mut o = obj("a", 1);
        let status_writer = ManagedFieldsEntry {
            manager: Some("kube-controller-manager".into()),
            operation: Some("Update".into()),
            subresource: Some("status".into()),
            ..Default::default()
        };
        o.metadata.managed_fields = Some(vec![status_writer.clone()]);
        let before = fingerprint(&o.metadata);
        o.metadata.resource_version = Some("99".into());
        let mut later = status_writer;
        later.time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-01-01T00:00:00Z".parse().unwrap(),
        ));
        o.metadata.managed_fields = Some(vec![later]);
        assert_eq!(before, fingerprint(&o.metadata));
        o.metadata.generation = Some(2);
        assert_ne!(before, fingerprint(&o.metadata));
    }

    #[test]
    fn without_generation_or_managers_every_change_counts() {
        let mut o = obj("a", 1);
        o.metadata.generation = None;
        let before = fingerprint(&o.metadata);
        o.metadata.resource_version = Some("2".into());
        assert_ne!(before, fingerprint(&o.metadata));
    }

    #[test]
    fn creations_and_status_updates_are_ignored_deletions_trigger() {
        let mut f = forwarder();
        f.handle(Event::Init);
        f.handle(Event::InitApply(obj("a", 1)));
        f.handle(Event::InitDone);
        assert!(
            f.take_pending().is_empty(),
            "the first list triggers nothing"
        );

        f.handle(Event::Apply(obj("b", 1)));
        assert!(f.take_pending().is_empty(), "creations are ignored");

        let mut same = obj("a", 1);
        same.metadata.resource_version = Some("7".into());
        f.handle(Event::Apply(same));
        assert!(f.take_pending().is_empty(), "status-only update ignored");

        f.handle(Event::Apply(obj("a", 2)));
        assert_eq!(names(f.take_pending()), ["ns/cr"], "spec change triggers");

        f.handle(Event::Delete(obj("b", 1)));
        assert_eq!(names(f.take_pending()), ["ns/cr"], "deletion triggers");
    }

    #[test]
    fn relist_notices_deletions_and_changes_missed_while_down() {
        let mut f = forwarder();
        f.handle(Event::Init);
        f.handle(Event::InitApply(obj("a", 1)));
        f.handle(Event::InitApply(obj("b", 1)));
        f.handle(Event::InitDone);
        // The watch restarts; "b" vanished meanwhile.
        f.handle(Event::Init);
        f.handle(Event::InitApply(obj("a", 1)));
        f.handle(Event::InitDone);
        assert_eq!(names(f.take_pending()), ["ns/cr"]);
        assert!(!f.seen.contains_key("b"));
        // Nothing changed: a relist triggers nothing.
        f.handle(Event::Init);
        f.handle(Event::InitApply(obj("a", 1)));
        f.handle(Event::InitDone);
        assert!(f.take_pending().is_empty());
    }

    #[test]
    fn scope_includes_allowed_namespaces() {
        let s = DependentScope::new(&["a".into()], &["b".into()]);
        assert_eq!(s.namespaces, ["a", "b"]);
        assert!(DependentScope::new(&[], &["b".into()])
            .namespaces
            .is_empty());
        assert!(DependentScope::new(&["a".into()], &["*".into()])
            .namespaces
            .is_empty());
    }
}
