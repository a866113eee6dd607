//! A shared, metadata-only view of the release records of one kind (Secrets or
//! ConfigMaps), kept by one watch per namespace (or one for all namespaces) of the
//! objects labelled `owner=helm` (records) or `owner=rudder` (chunks of large ones).
//! A process that reconciles many releases reads their history here instead of
//! listing each release's records on every reconcile: a label-selected LIST is no
//! index look-up for kube-apiserver, it reads every Secret of the namespace (tens of
//! KiB each) and filters them, so one per reconcile made an idle operator the API
//! server's biggest cost. Only labels, the `rudder.dev/*` annotations (the release
//! lock, the chunked-storage marker), the resourceVersion and finalizers are kept;
//! a record's content is fetched (one GET) only when an action decodes it, unless
//! the server's answer to our own last write of it is still its newest version
//! ([`RecordCache::answer`]).
//!
//! # Consistent with our own writes
//!
//! A cache may lag the server; a reconcile must never act on a view older than its
//! own last write (an action that wrote revision 2 and then read "newest: 1" would put
//! its lock on the wrong record). So every record write made through a backend that
//! uses this cache is announced ([`RecordCache::write_started`]), and its answer (the
//! object as the server stored it, or "gone") is put into the cache at once: a read
//! after a write sees that write without waiting for the watch. Until the watch
//! delivers that very version, its events for the object are older than what the
//! cache holds and only count as others' changes. A read of release `R`
//! ([`RecordCache::fresh`]) waits while a write of `R`'s objects is in flight (a few
//! milliseconds), or until the watch's first list; after the cache's wait (5 s) it
//! gives up, and the caller reads from the API server directly (as it does when the
//! watch cannot list: RBAC). Versions are compared for equality only, never
//! ordered, as Kubernetes asks.
//!
//! Writes of others (the `helm` CLI, another replica, a user deleting a Secret) are
//! reported through [`RecordCache::on_change`], so an operator can reconcile the
//! release at once instead of at its next period. Events the cache cannot tell apart
//! from its own writes while one is in flight are reported when the write returns.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::driver::objects::RawObject;
use crate::driver::{labels_match, parse_key};

mod answers;

/// How long a read waits for the watch to deliver our own writes (or to list for the
/// first time) before it reads from the API server instead.
pub const FRESH_WAIT: Duration = Duration::from_secs(5);

/// The label selector of the watches: release records and the chunks of large ones.
pub const SELECTOR: &str = "owner in (helm,rudder)";

/// Annotations kept in the cache: those rudder reads on records.
const KEPT_ANNOTATIONS: &str = "rudder.dev/";

/// A record (or chunk) changed or went, and not by a write made through this cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordChange {
    pub namespace: String,
    /// The release (the record's `name` label).
    pub release: String,
    /// `(apiVersion, kind)` of the object's controller owner, if it has one (the
    /// operator's records are owned by their CR).
    pub owner: Option<(String, String)>,
    /// The object was deleted.
    pub deleted: bool,
}

type ChangeHook = Box<dyn Fn(RecordChange) + Send + Sync>;

/// The caches a process keeps: of Secret records (Helm's default driver) and of
/// ConfigMap records (Helm's `configmap` driver; the operator looks there for records
/// to migrate). Either may be absent: reads of that kind go to the API server.
#[derive(Debug, Clone, Default)]
pub struct RecordCaches {
    pub secrets: Option<std::sync::Arc<RecordCache>>,
    pub configmaps: Option<std::sync::Arc<RecordCache>>,
}

impl RecordCaches {
    /// Empty caches of both kinds, to be filled by [`watch`]es.
    pub fn new() -> RecordCaches {
        RecordCaches {
            secrets: Some(std::sync::Arc::new(RecordCache::new("Secret"))),
            configmaps: Some(std::sync::Arc::new(RecordCache::new("ConfigMap"))),
        }
    }
}

/// The metadata of the records of one kind, across the namespaces it watches.
pub struct RecordCache {
    kind: &'static str,
    state: Mutex<State>,
    changed: tokio::sync::Notify,
    on_change: OnceLock<ChangeHook>,
    wait: Duration,
}

impl std::fmt::Debug for RecordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordCache")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// One per watch: all namespaces (`None`) or one namespace.
    scopes: Vec<Scope>,
    namespaces: HashMap<Box<str>, Namespace>,
    /// Our writes not yet seen come back, by (namespace, object name).
    pending: HashMap<ObjectKey, Pending>,
    /// Bumped at the start of every (re)list, to tell writes made before it.
    epoch: u64,
    /// The server's whole answers to our latest writes.
    answers: answers::Answers,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not listed yet: readers wait (a while) for it.
    Syncing,
    Ready,
    /// The watch failed before its first list (e.g. RBAC): readers go to the server.
    Unavailable,
}

struct Scope {
    namespace: Option<Box<str>>,
    phase: Phase,
    /// Inside a (re)list: what it listed so far, and the epoch it started in.
    relist: Option<(u64, Listed)>,
}

/// Records a (re)list delivered so far, with their namespaces.
type Listed = Vec<(Box<str>, Entry)>;

/// An object's namespace and name.
type ObjectKey = (Box<str>, Box<str>);

impl Scope {
    fn covers(&self, ns: &str) -> bool {
        self.namespace.as_deref().is_none_or(|n| n == ns)
    }
}

/// The records of one namespace, by release (their `name` label).
#[derive(Default)]
struct Namespace {
    releases: HashMap<Box<str>, Vec<Entry>>,
}

/// What is kept of one object: a few hundred bytes.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    name: Box<str>,
    release: Box<str>,
    resource_version: Box<str>,
    /// Labels and the kept annotations, as JSON `[labels, annotations]`: one
    /// allocation instead of one per key and value.
    meta: Box<str>,
    finalizers: Box<[Box<str>]>,
}

impl Entry {
    fn of(meta: &ObjectMeta) -> Option<Entry> {
        let name = meta.name.as_deref()?;
        let labels = meta.labels.clone().unwrap_or_default();
        let annotations: BTreeMap<&String, &String> = meta
            .annotations
            .iter()
            .flatten()
            .filter(|(k, _)| k.starts_with(KEPT_ANNOTATIONS))
            .collect();
        let release = labels
            .get("name")
            .cloned()
            .or_else(|| parse_key(name).map(|(n, _)| n.to_string()))
            .unwrap_or_default();
        Some(Entry {
            name: name.into(),
            release: release.into(),
            resource_version: meta.resource_version.clone().unwrap_or_default().into(),
            meta: serde_json::to_string(&(&labels, &annotations))
                .unwrap_or_default()
                .into(),
            finalizers: meta
                .finalizers
                .iter()
                .flatten()
                .map(|f| f.as_str().into())
                .collect(),
        })
    }

    fn labels_and_annotations(&self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        serde_json::from_str(&self.meta).unwrap_or_default()
    }

    fn raw(&self) -> RawObject {
        let (labels, annotations) = self.labels_and_annotations();
        RawObject {
            name: self.name.to_string(),
            labels,
            annotations,
            resource_version: Some(self.resource_version.to_string()),
            finalizers: self.finalizers.iter().map(|f| f.to_string()).collect(),
            ..RawObject::default()
        }
    }
}

/// What we expect the watch to deliver for an object we wrote: the object as we
/// stored it, or its deletion.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Stored(Entry),
    Gone,
}

impl Expect {
    /// Whether an event of `version` (`None`: a deletion) is this write coming back.
    fn is(&self, version: Option<&str>) -> bool {
        match (self, version) {
            (Expect::Stored(e), Some(v)) => &*e.resource_version == v,
            (Expect::Gone, None) => true,
            _ => false,
        }
    }
}

#[derive(Debug, Default)]
struct Pending {
    release: Box<str>,
    /// Writes sent and not answered yet.
    in_flight: u32,
    /// Versions delivered while a write was in flight (ours, or someone else's).
    seen: Vec<Option<Box<str>>>,
    /// Answered writes the watch has not delivered yet.
    awaited: Vec<Expect>,
    /// The epoch the newest write started in.
    epoch: u64,
}

impl Pending {
    fn settled(&self) -> bool {
        self.in_flight == 0 && self.awaited.is_empty()
    }
}

/// How a write made through the cache ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// The server stored the object as this metadata says (its answer).
    Stored(Box<ObjectMeta>),
    /// The object is gone.
    Gone,
    /// The write failed: nothing to wait for.
    Failed,
}

/// A write announced to the cache; ends as [`Written::Failed`] if dropped unfinished.
pub struct WriteGuard<'a> {
    cache: &'a RecordCache,
    key: Option<ObjectKey>,
}

impl WriteGuard<'_> {
    /// The server answered the write.
    pub fn done(mut self, outcome: Written) {
        if let Some(key) = self.key.take() {
            self.cache.write_done(key, outcome);
        }
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.cache.write_done(key, Written::Failed);
        }
    }
}

/// One event of a watch, as the cache takes it (the shape of kube's watcher events,
/// with only the metadata).
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// A (re)list starts.
    Init,
    /// An object of the list.
    InitApply(ObjectMeta),
    /// The list is complete.
    InitDone,
    Apply(ObjectMeta),
    Delete(ObjectMeta),
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn controller_owner(meta: &ObjectMeta) -> Option<(String, String)> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| (o.api_version.clone(), o.kind.clone()))
}

impl RecordCache {
    /// An empty cache of `kind` (`Secret` or `ConfigMap`, as messages name it), with
    /// no watch yet: every read goes to the API server until one is added.
    pub fn new(kind: &'static str) -> RecordCache {
        RecordCache {
            kind,
            state: Mutex::default(),
            changed: tokio::sync::Notify::new(),
            on_change: OnceLock::new(),
            wait: FRESH_WAIT,
        }
    }

    /// Waits at most `wait` for the watch before reading from the API server.
    pub fn with_wait(mut self, wait: Duration) -> RecordCache {
        self.wait = wait;
        self
    }

    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Where changes made by others are reported (set once).
    pub fn on_change(&self, hook: impl Fn(RecordChange) + Send + Sync + 'static) {
        let _ = self.on_change.set(Box::new(hook));
    }

    fn report(&self, change: RecordChange) {
        if let Some(hook) = self.on_change.get() {
            hook(change);
        }
    }

    /// Registers a watch of `namespace` (`None`: all namespaces) and returns its
    /// index for [`RecordCache::observe`] and [`RecordCache::failed`].
    pub fn add_scope(&self, namespace: Option<&str>) -> usize {
        let mut st = lock(&self.state);
        st.scopes.push(Scope {
            namespace: namespace.map(Into::into),
            phase: Phase::Syncing,
            relist: None,
        });
        st.scopes.len() - 1
    }

    /// The watch of `scope` failed. Before its first list that makes readers go to
    /// the API server rather than wait; afterwards the cache keeps serving what it
    /// has (the watch resumes, or relists, and our own writes are still awaited).
    pub fn failed(&self, scope: usize) {
        let mut st = lock(&self.state);
        if let Some(s) = st.scopes.get_mut(scope) {
            if s.phase == Phase::Syncing {
                s.phase = Phase::Unavailable;
            }
            s.relist = None;
        }
        drop(st);
        self.changed.notify_waiters();
    }

    /// Takes one event of the watch of `scope`.
    pub fn observe(&self, scope: usize, event: WatchEvent) {
        let mut changes = Vec::new();
        {
            let mut st = lock(&self.state);
            match event {
                WatchEvent::Init => {
                    st.epoch += 1;
                    let epoch = st.epoch;
                    if let Some(s) = st.scopes.get_mut(scope) {
                        s.relist = Some((epoch, Vec::new()));
                    }
                }
                WatchEvent::InitApply(meta) => {
                    let ns = meta.namespace.clone().unwrap_or_default();
                    if let (Some(s), Some(entry)) = (st.scopes.get_mut(scope), Entry::of(&meta)) {
                        if let Some((_, listed)) = s.relist.as_mut() {
                            listed.push((ns.into(), entry));
                        }
                    }
                }
                WatchEvent::InitDone => self.relisted(&mut st, scope, &mut changes),
                WatchEvent::Apply(meta) => {
                    if let Some(entry) = Entry::of(&meta) {
                        let ns: Box<str> = meta.namespace.clone().unwrap_or_default().into();
                        let version = Some(entry.resource_version.clone());
                        let (own, newer) = own_event(&mut st, &ns, &entry.name, version);
                        let release = entry.release.to_string();
                        if !newer {
                            upsert(&mut st, &ns, entry);
                        }
                        if !own {
                            changes.push(RecordChange {
                                namespace: ns.to_string(),
                                release,
                                owner: controller_owner(&meta),
                                deleted: false,
                            });
                        }
                    }
                }
                WatchEvent::Delete(meta) => {
                    if let Some(entry) = Entry::of(&meta) {
                        let ns: Box<str> = meta.namespace.clone().unwrap_or_default().into();
                        let (own, newer) = own_event(&mut st, &ns, &entry.name, None);
                        if !newer {
                            remove(&mut st, &ns, &entry.release, &entry.name);
                        }
                        if !own {
                            changes.push(RecordChange {
                                namespace: ns.to_string(),
                                release: entry.release.to_string(),
                                owner: controller_owner(&meta),
                                deleted: true,
                            });
                        }
                    }
                }
            }
        }
        self.changed.notify_waiters();
        for change in changes {
            self.report(change);
        }
    }

    /// A (re)list of `scope` completed: its namespaces now hold exactly what it listed.
    fn relisted(&self, st: &mut State, scope: usize, changes: &mut Vec<RecordChange>) {
        let Some(s) = st.scopes.get_mut(scope) else {
            return;
        };
        let Some((epoch, listed)) = s.relist.take() else {
            return;
        };
        // A first list only records what exists; a relist after a gap reports what
        // changed meanwhile (a Secret deleted while the watch was down).
        let report = s.phase == Phase::Ready;
        s.phase = Phase::Ready;
        let scope_ns = s.namespace.clone();
        let mut fresh: HashMap<Box<str>, Namespace> = HashMap::new();
        for (ns, entry) in listed {
            fresh
                .entry(ns)
                .or_default()
                .releases
                .entry(entry.release.clone())
                .or_default()
                .push(entry);
        }
        let old: Vec<Box<str>> = st
            .namespaces
            .keys()
            .filter(|ns| scope_ns.as_deref().is_none_or(|s| s == &***ns))
            .cloned()
            .collect();
        let mut before: HashMap<Box<str>, Namespace> = HashMap::new();
        for ns in old {
            if let Some(n) = st.namespaces.remove(&ns) {
                before.insert(ns, n);
            }
        }
        if report {
            diff(&before, &fresh, changes);
        }
        // The list is newer than every write answered before it started: those are
        // delivered. Later ones are delivered when the list already shows them, and
        // otherwise newer than it: the cache keeps showing them.
        let mut newer: Vec<(Box<str>, Box<str>, Expect)> = Vec::new();
        st.pending.retain(|(ns, name), p| {
            if scope_ns.as_deref().is_some_and(|s| s != &**ns) {
                return true;
            }
            let now = fresh
                .get(ns)
                .and_then(|n| n.releases.get(&p.release))
                .and_then(|es| es.iter().find(|e| e.name == *name))
                .map(|e| e.resource_version.clone());
            p.awaited
                .retain(|expect| p.epoch >= epoch && !expect.is(now.as_deref()));
            if let Some(last) = p.awaited.last() {
                newer.push((ns.clone(), name.clone(), last.clone()));
            }
            if p.in_flight == 0 {
                p.seen.clear();
            }
            !p.settled()
        });
        st.namespaces.extend(fresh);
        for (ns, name, expect) in newer {
            match expect {
                Expect::Stored(entry) => upsert(st, &ns, entry),
                Expect::Gone => {
                    if let Some(release) = find_release(st, &ns, &name) {
                        remove(st, &ns, &release, &name);
                    }
                }
            }
        }
    }

    /// A write of object `name` (of release `release`, when known) in `namespace`
    /// is about to be sent.
    pub fn write_started(
        &self,
        namespace: &str,
        name: &str,
        release: Option<&str>,
    ) -> WriteGuard<'_> {
        let mut st = lock(&self.state);
        let release: Box<str> = match release {
            Some(r) => r.into(),
            None => find_release(&st, namespace, name).unwrap_or_default(),
        };
        let epoch = st.epoch;
        let p = st
            .pending
            .entry((namespace.into(), name.into()))
            .or_default();
        p.release = release;
        p.in_flight += 1;
        p.epoch = epoch;
        WriteGuard {
            cache: self,
            key: Some((namespace.into(), name.into())),
        }
    }

    fn write_done(&self, key: ObjectKey, outcome: Written) {
        let mut foreign = Vec::new();
        {
            let mut st = lock(&self.state);
            let expect = match outcome {
                Written::Stored(meta) => Entry::of(&meta).map(Expect::Stored),
                Written::Gone => Some(Expect::Gone),
                Written::Failed => None,
            };
            let Some(p) = st.pending.get_mut(&key) else {
                return;
            };
            p.in_flight = p.in_flight.saturating_sub(1);
            let mut show = None;
            if let Some(expect) = expect {
                if let Some(i) = p.seen.iter().position(|s| expect.is(s.as_deref())) {
                    // Delivered while the write was in flight: the cache has it, or
                    // something newer.
                    p.seen.remove(i);
                } else {
                    // Shown at once; the watch's events of the object until it
                    // delivers this are older.
                    show = Some(expect.clone());
                    p.awaited.push(expect);
                }
            }
            if p.in_flight == 0 {
                // What else arrived meanwhile was someone else's.
                if !p.seen.is_empty() {
                    foreign.push((p.release.to_string(), p.seen.iter().any(Option::is_none)));
                }
                p.seen.clear();
            }
            let release = p.release.clone();
            if p.settled() {
                st.pending.remove(&key);
            }
            match show {
                Some(Expect::Stored(entry)) => upsert(&mut st, &key.0, entry),
                Some(Expect::Gone) => remove(&mut st, &key.0, &release, &key.1),
                None => {}
            }
        }
        self.changed.notify_waiters();
        for (release, deleted) in foreign {
            self.report(RecordChange {
                namespace: key.0.to_string(),
                release,
                owner: None,
                deleted,
            });
        }
    }

    /// Whether reads of `release` (every release when `None`) in `namespace` can be
    /// served from the cache: waits until the watch has listed and has delivered every
    /// write of ours to its objects. `false` after [`RecordCache::with_wait`]'s time,
    /// or at once when no watch covers the namespace or the watch cannot run: the
    /// caller then reads from the API server.
    pub async fn fresh(&self, namespace: &str, release: Option<&str>) -> bool {
        let started = tokio::time::Instant::now();
        let deadline = started + self.wait;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.check(namespace, release) {
                Check::Fresh => {
                    let waited = started.elapsed();
                    if waited > Duration::from_millis(100) {
                        tracing::debug!(
                            kind = self.kind,
                            namespace,
                            release,
                            waited_ms = waited.as_millis() as u64,
                            "waited for the watch of release records to deliver our writes"
                        );
                    }
                    return true;
                }
                Check::Uncovered => return false,
                Check::Behind => {}
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                if let Some(release) = release {
                    self.give_up(namespace, release);
                }
                return false;
            }
        }
    }

    fn check(&self, namespace: &str, release: Option<&str>) -> Check {
        let st = lock(&self.state);
        let Some(scope) = st.scopes.iter().find(|s| s.covers(namespace)) else {
            return Check::Uncovered;
        };
        match scope.phase {
            Phase::Unavailable => return Check::Uncovered,
            Phase::Syncing => return Check::Behind,
            Phase::Ready => {}
        }
        let behind = st.pending.iter().any(|((ns, _), p)| {
            &**ns == namespace && release.is_none_or(|r| &*p.release == r) && p.in_flight > 0
        });
        if behind {
            Check::Behind
        } else {
            Check::Fresh
        }
    }

    /// A write of `release` stayed in flight for the whole wait (or the watch never
    /// listed): the caller reads from the API server, which is authoritative.
    fn give_up(&self, namespace: &str, release: &str) {
        let st = lock(&self.state);
        let writes: u32 = st
            .pending
            .iter()
            .filter(|((ns, _), p)| &**ns == namespace && &*p.release == release)
            .map(|(_, p)| p.in_flight)
            .sum();
        tracing::warn!(
            kind = self.kind,
            namespace,
            release,
            writes_in_flight = writes,
            "the cache of release records is not ready; reading them from the API server"
        );
    }

    /// The cached objects of `namespace` whose labels match `selector` (metadata
    /// only). Call after [`RecordCache::fresh`] said yes.
    pub fn list(&self, namespace: &str, selector: &BTreeMap<String, String>) -> Vec<RawObject> {
        let st = lock(&self.state);
        let Some(ns) = st.namespaces.get(namespace) else {
            return Vec::new();
        };
        let entries: Box<dyn Iterator<Item = &Entry>> = match selector.get("name") {
            Some(release) => Box::new(ns.releases.get(release.as_str()).into_iter().flatten()),
            None => Box::new(ns.releases.values().flatten()),
        };
        entries
            .map(Entry::raw)
            .filter(|o| labels_match(selector, &o.labels))
            .collect()
    }

    /// The cached object `name` of `namespace` (metadata only), `None` when there is
    /// none. Call after [`RecordCache::fresh`] said yes.
    pub fn get(&self, namespace: &str, name: &str) -> Option<RawObject> {
        let st = lock(&self.state);
        find_entry(&st, namespace, name).map(Entry::raw)
    }

    /// Keeps `object`, the server's whole answer to a write of ours in `namespace`, so
    /// that [`RecordCache::answer`] can serve the next read of it without a GET.
    pub fn keep_answer(&self, namespace: &str, object: RawObject) {
        let key = (namespace.into(), object.name.as_str().into());
        lock(&self.state).answers.keep(key, object);
    }

    /// The whole object `name` of `namespace` as the server answered our last write of
    /// it, if the cache's metadata still shows that very version (nobody changed it
    /// since, as far as the watch has told). Call after [`RecordCache::fresh`] said yes.
    pub fn answer(&self, namespace: &str, name: &str) -> Option<RawObject> {
        let st = lock(&self.state);
        let entry = find_entry(&st, namespace, name)?;
        let key = (namespace.into(), name.into());
        st.answers
            .at(&key, &entry.resource_version)
            .map(|o| RawObject::clone(&o))
    }

    /// How many objects the cache holds (for metrics and tests).
    pub fn len(&self) -> usize {
        let st = lock(&self.state);
        st.namespaces
            .values()
            .map(|n| n.releases.values().map(Vec::len).sum::<usize>())
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

enum Check {
    Fresh,
    Behind,
    Uncovered,
}

/// Whether an event of object `name` is one of our writes coming back (`version`
/// `None`: a deletion), settling what it matches; and whether the cache holds a
/// newer state of the object than the event (a write of ours not delivered yet), so
/// the event must not replace it.
fn own_event(st: &mut State, ns: &str, name: &str, version: Option<Box<str>>) -> (bool, bool) {
    let key: ObjectKey = (ns.into(), name.into());
    let Some(p) = st.pending.get_mut(&key) else {
        return (false, false);
    };
    let own = if let Some(i) = p.awaited.iter().position(|e| e.is(version.as_deref())) {
        // Events come in order: what was awaited before it is delivered too.
        p.awaited.drain(..=i);
        true
    } else if p.in_flight > 0 && p.awaited.is_empty() {
        // Ours or not: the write's answer tells.
        p.seen.push(version);
        true
    } else {
        false
    };
    let newer = !p.awaited.is_empty();
    if p.settled() {
        st.pending.remove(&key);
    }
    (own, newer)
}

fn find_release(st: &State, ns: &str, name: &str) -> Option<Box<str>> {
    if let Some((release, _)) = parse_key(name) {
        return Some(release.into());
    }
    let n = st.namespaces.get(ns)?;
    n.releases
        .values()
        .flatten()
        .find(|e| &*e.name == name)
        .map(|e| e.release.clone())
}

fn find_entry<'a>(st: &'a State, ns: &str, name: &str) -> Option<&'a Entry> {
    let n = st.namespaces.get(ns)?;
    if let Some((release, _)) = parse_key(name) {
        if let Some(e) = n
            .releases
            .get(release)
            .and_then(|es| es.iter().find(|e| &*e.name == name))
        {
            return Some(e);
        }
    }
    n.releases.values().flatten().find(|e| &*e.name == name)
}

fn upsert(st: &mut State, ns: &str, entry: Entry) {
    let n = st.namespaces.entry(ns.into()).or_default();
    // A record whose `name` label changed moves to its new release.
    let old_release = n
        .releases
        .iter()
        .find(|(_, es)| es.iter().any(|e| e.name == entry.name))
        .map(|(r, _)| r.clone());
    if let Some(r) = old_release {
        if r != entry.release {
            remove(st, ns, &r, &entry.name);
        }
    }
    let n = st.namespaces.entry(ns.into()).or_default();
    let es = n.releases.entry(entry.release.clone()).or_default();
    match es.iter_mut().find(|e| e.name == entry.name) {
        Some(e) => *e = entry,
        None => es.push(entry),
    }
}

fn remove(st: &mut State, ns: &str, release: &str, name: &str) {
    let Some(n) = st.namespaces.get_mut(ns) else {
        return;
    };
    if let Some(es) = n.releases.get_mut(release) {
        es.retain(|e| &*e.name != name);
        if es.is_empty() {
            n.releases.remove(release);
        }
    }
}

/// What changed between two snapshots of the same namespaces.
fn diff(
    before: &HashMap<Box<str>, Namespace>,
    after: &HashMap<Box<str>, Namespace>,
    changes: &mut Vec<RecordChange>,
) {
    let versions = |m: &HashMap<Box<str>, Namespace>| {
        let mut out: HashMap<ObjectKey, (Box<str>, Box<str>)> = HashMap::new();
        for (ns, n) in m {
            for e in n.releases.values().flatten() {
                out.insert(
                    (ns.clone(), e.name.clone()),
                    (e.release.clone(), e.resource_version.clone()),
                );
            }
        }
        out
    };
    let (b, a) = (versions(before), versions(after));
    let mut seen = std::collections::HashSet::new();
    for (key, (release, version)) in &b {
        let change = match a.get(key) {
            None => Some(true),
            Some((_, v)) if v != version => Some(false),
            Some(_) => None,
        };
        if let Some(deleted) = change {
            if seen.insert((key.0.clone(), release.clone(), deleted)) {
                changes.push(RecordChange {
                    namespace: key.0.to_string(),
                    release: release.to_string(),
                    owner: None,
                    deleted,
                });
            }
        }
    }
    for (key, (release, _)) in &a {
        if !b.contains_key(key) && seen.insert((key.0.clone(), release.clone(), false)) {
            changes.push(RecordChange {
                namespace: key.0.to_string(),
                release: release.to_string(),
                owner: None,
                deleted: false,
            });
        }
    }
}

/// Keeps `cache` filled from one metadata-only watch of `K` (Secrets or ConfigMaps)
/// labelled [`SELECTOR`] in `namespace` (`None`: all namespaces), until the returned
/// future is dropped. The watch retries with kube's default backoff; while it cannot
/// list (RBAC), readers go to the API server.
pub async fn watch<K>(
    cache: std::sync::Arc<RecordCache>,
    client: kube::Client,
    namespace: Option<String>,
) where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    use futures::StreamExt;
    use kube::core::PartialObjectMeta;
    use kube::runtime::{watcher, WatchStreamExt};

    let scope = cache.add_scope(namespace.as_deref());
    let api: kube::Api<PartialObjectMeta<K>> = match &namespace {
        Some(ns) => kube::Api::namespaced(client, ns),
        None => kube::Api::all(client),
    };
    let config = watcher::Config::default().labels(SELECTOR);
    let mut events = std::pin::pin!(watcher::watcher(api, config).default_backoff());
    // Said once per run of failures (a watch RBAC refuses fails every retry).
    let mut warned = false;
    let scope_name = namespace.as_deref().unwrap_or("(all namespaces)");
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(watcher::Event::Init) => WatchEvent::Init,
            Ok(watcher::Event::InitApply(o)) => WatchEvent::InitApply(o.metadata),
            Ok(watcher::Event::InitDone) => {
                warned = false;
                WatchEvent::InitDone
            }
            Ok(watcher::Event::Apply(o)) => WatchEvent::Apply(o.metadata),
            Ok(watcher::Event::Delete(o)) => WatchEvent::Delete(o.metadata),
            Err(e) if !warned => {
                warned = true;
                tracing::warn!(kind = cache.kind, namespace = scope_name,
                    "cannot watch release records (retrying; until it lists, their labels are read from the API server per reconcile): {}",
                    e);
                cache.failed(scope);
                continue;
            }
            Err(e) => {
                tracing::debug!(
                    kind = cache.kind,
                    namespace = scope_name,
                    "watching release records failed again: {e}"
                );
                cache.failed(scope);
                continue;
            }
        };
        cache.observe(scope, event);
    }
}

#[cfg(test)]
mod tests;
