//! The object store: every object of every kind as JSON under one
//! cluster-wide resourceVersion counter, a bounded event log per resource
//! for watches (as kube-apiserver keeps a watch cache per resource, so
//! churn in one kind never expires another kind's watches), and a pluggable
//! durable backend (memory or redb).

use crate::error::ApiError;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{broadcast, Notify};

/// Where committed state goes; a write returns only after it is durable.
pub(crate) trait Backend: Send {
    /// Returns the last resourceVersion and every stored object.
    fn load(&mut self) -> Result<(u64, Vec<(String, Value)>), String>;
    /// Stores (or, with `None`, removes) one object and the new counter.
    fn write(&mut self, rv: u64, key: &str, obj: Option<&Value>) -> Result<(), String>;
}

/// Keeps nothing: state lives only in the in-memory index.
pub(crate) struct MemoryBackend;

impl Backend for MemoryBackend {
    fn load(&mut self) -> Result<(u64, Vec<(String, Value)>), String> {
        Ok((0, Vec::new()))
    }
    fn write(&mut self, _rv: u64, _key: &str, _obj: Option<&Value>) -> Result<(), String> {
        Ok(())
    }
}

const OBJECTS: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("objects");
const META: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("meta");

/// Durable backend: one redb transaction committed per write.
pub(crate) struct RedbBackend {
    db: redb::Database,
}

impl RedbBackend {
    pub(crate) fn open(dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let db = redb::Database::create(dir.join("state.redb")).map_err(|e| e.to_string())?;
        Ok(RedbBackend { db })
    }
}

impl Backend for RedbBackend {
    fn load(&mut self) -> Result<(u64, Vec<(String, Value)>), String> {
        use redb::{ReadableDatabase, ReadableTable};
        // Creating the tables first makes a fresh database readable.
        let w = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            w.open_table(OBJECTS).map_err(|e| e.to_string())?;
            w.open_table(META).map_err(|e| e.to_string())?;
        }
        w.commit().map_err(|e| e.to_string())?;
        let r = self.db.begin_read().map_err(|e| e.to_string())?;
        let meta = r.open_table(META).map_err(|e| e.to_string())?;
        let rv = meta
            .get("rv")
            .map_err(|e| e.to_string())?
            .map(|g| g.value())
            .unwrap_or(0);
        let objs = r.open_table(OBJECTS).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for item in objs.iter().map_err(|e| e.to_string())? {
            let (k, v) = item.map_err(|e| e.to_string())?;
            let obj: Value = crate::body::json(v.value())
                .map_err(|e| format!("corrupt object {}: {e}", k.value()))?;
            out.push((k.value().to_string(), obj));
        }
        Ok((rv, out))
    }

    fn write(&mut self, rv: u64, key: &str, obj: Option<&Value>) -> Result<(), String> {
        let w = self.db.begin_write().map_err(|e| e.to_string())?;
        {
            let mut objs = w.open_table(OBJECTS).map_err(|e| e.to_string())?;
            match obj {
                Some(o) => {
                    let bytes = crate::body::to_string(o);
                    objs.insert(key, bytes.as_bytes())
                        .map_err(|e| e.to_string())?;
                }
                None => {
                    objs.remove(key).map_err(|e| e.to_string())?;
                }
            }
            let mut meta = w.open_table(META).map_err(|e| e.to_string())?;
            meta.insert("rv", rv).map_err(|e| e.to_string())?;
        }
        w.commit().map_err(|e| e.to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {}

/// One committed change, as watches see it.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) rv: u64,
    pub(crate) kind: EventType,
    pub(crate) key: String,
    /// Shared with the store (and with later events' `old`), so the log
    /// costs a pointer per event for objects that are still current.
    pub(crate) object: Arc<Value>,
    pub(crate) old: Option<Arc<Value>>,
    /// Approximate memory held by this event.
    pub(crate) bytes: usize,
}

impl Event {
    /// `group/plural/` prefix of the key.
    pub(crate) fn in_prefix(&self, prefix: &str) -> bool {
        self.key.starts_with(prefix)
    }
}

/// What a transaction decided to do with one key.
pub(crate) enum Mutation {
    Put(Value),
    Delete,
    /// Leave the object as it is and answer with this value.
    Keep(Value),
}

struct Inner {
    rv: u64,
    /// Shared so that lists, watches and the event log hand out pointers
    /// instead of deep copies; a write replaces the whole `Arc`.
    objects: BTreeMap<String, Arc<Value>>,
    /// Per resource (`group/plural/`), its recent events.
    logs: HashMap<String, ResourceLog>,
    /// Watches of a resource with no log yet may start from any rv >= this.
    start_rv: u64,
    log_bytes: usize,
    backend: Box<dyn Backend>,
}

/// The recent events of one resource.
struct ResourceLog {
    events: VecDeque<Arc<Event>>,
    /// Watches of this resource may start from any rv >= this.
    floor: u64,
    bytes: usize,
}

impl ResourceLog {
    /// Drops the oldest event; returns the bytes it counted.
    fn drop_oldest(&mut self) -> usize {
        match self.events.pop_front() {
            Some(e) => {
                self.floor = e.rv;
                self.bytes = self.bytes.saturating_sub(e.bytes);
                e.bytes
            }
            None => 0,
        }
    }
}

/// The `group/plural/` a key belongs to (keys are `group/plural/namespace/name`).
fn resource_of(key: &str) -> &str {
    let mut slashes = key.match_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(end)) => &key[..=end],
        _ => key,
    }
}

pub(crate) struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
    log_cap: usize,
    /// Woken after deletions so garbage collection can run.
    pub(crate) gc_wake: Notify,
}

/// Events kept per resource.
pub(crate) const LOG_CAP: usize = 20_000;
/// The event logs together also stay under this many bytes of (serialized)
/// objects; the largest resource log gives way first.
pub(crate) const LOG_BYTES: usize = 256 * 1024 * 1024;

/// The backlog after a resourceVersion plus a live receiver.
pub(crate) type WatchStart = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

impl Store {
    pub(crate) fn new(mut backend: Box<dyn Backend>) -> Result<Self, String> {
        let (rv, objs) = backend.load()?;
        let (tx, _) = broadcast::channel(8192);
        Ok(Store {
            inner: Mutex::new(Inner {
                rv,
                objects: objs.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
                logs: HashMap::new(),
                start_rv: rv,
                log_bytes: 0,
                backend,
            }),
            events: tx,
            log_cap: LOG_CAP,
            gc_wake: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    pub(crate) fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    pub(crate) fn get(&self, key: &str) -> Option<Value> {
        let found = self.lock().objects.get(key).cloned();
        found.map(Arc::unwrap_or_clone)
    }

    /// Objects whose key starts with `prefix` and sorts after `after`. The
    /// lock is held only to copy pointers; callers filter and copy what
    /// matches outside it.
    pub(crate) fn list(&self, prefix: &str, after: Option<&str>) -> (Vec<Arc<Value>>, u64) {
        let g = self.lock();
        let start = match after {
            Some(a) if a.starts_with(prefix) => std::ops::Bound::Excluded(a.to_string()),
            _ => std::ops::Bound::Included(prefix.to_string()),
        };
        let items = g
            .objects
            .range((start, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| Arc::clone(v))
            .collect();
        (items, g.rv)
    }

    /// How many objects each resource holds, as `plural` or `plural.group`
    /// (keys are `group/plural/namespace/name`).
    pub(crate) fn object_counts(&self) -> BTreeMap<String, u64> {
        let g = self.lock();
        let mut counts = BTreeMap::new();
        for key in g.objects.keys() {
            let mut parts = key.splitn(3, '/');
            let (Some(group), Some(plural)) = (parts.next(), parts.next()) else {
                continue;
            };
            let resource = if group.is_empty() {
                plural.to_string()
            } else {
                format!("{plural}.{group}")
            };
            *counts.entry(resource).or_insert(0) += 1;
        }
        counts
    }

    /// Keys (with values) under a prefix, for cleanup passes.
    pub(crate) fn entries(&self, prefix: &str) -> Vec<(String, Arc<Value>)> {
        let g = self.lock();
        g.objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// Runs `f` on the current value of `key` atomically and commits what it
    /// decides. Put values get their resourceVersion set here.
    pub(crate) fn transact<F>(&self, key: &str, f: F) -> Result<Value, ApiError>
    where
        F: FnOnce(Option<&Value>) -> Result<Mutation, ApiError>,
    {
        let mut g = self.lock();
        let old = g.objects.get(key).cloned();
        match f(old.as_deref())? {
            Mutation::Keep(v) => Ok(v),
            Mutation::Put(mut obj) => {
                let rv = g.rv + 1;
                if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("resourceVersion".into(), Value::String(rv.to_string()));
                }
                g.backend
                    .write(rv, key, Some(&obj))
                    .map_err(|e| ApiError::internal(format!("storage write failed: {e}")))?;
                g.rv = rv;
                let obj = Arc::new(obj);
                g.objects.insert(key.to_string(), Arc::clone(&obj));
                let kind = if old.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                self.publish(&mut g, kind, key, Arc::clone(&obj), old);
                Ok((*obj).clone())
            }
            Mutation::Delete => {
                let Some(prev) = old else {
                    return Err(ApiError::internal("delete of a missing object"));
                };
                let mut prev = Arc::unwrap_or_clone(prev);
                let rv = g.rv + 1;
                g.backend
                    .write(rv, key, None)
                    .map_err(|e| ApiError::internal(format!("storage write failed: {e}")))?;
                g.rv = rv;
                g.objects.remove(key);
                if let Some(m) = prev.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("resourceVersion".into(), Value::String(rv.to_string()));
                }
                let prev = Arc::new(prev);
                self.publish(&mut g, EventType::Deleted, key, Arc::clone(&prev), None);
                self.gc_wake.notify_one();
                Ok(Arc::unwrap_or_clone(prev))
            }
        }
    }

    fn publish(
        &self,
        g: &mut Inner,
        kind: EventType,
        key: &str,
        object: Arc<Value>,
        old: Option<Arc<Value>>,
    ) {
        // Only the new version is counted: `old` is the version an earlier
        // event carried (or the store still holds), so the log holds at most
        // about twice what it counts.
        let bytes = approx_size(&object);
        let ev = Arc::new(Event {
            rv: g.rv,
            kind,
            key: key.to_string(),
            object,
            old,
            bytes,
        });
        let start_rv = g.start_rv;
        let log = g
            .logs
            .entry(resource_of(key).to_string())
            .or_insert_with(|| ResourceLog {
                events: VecDeque::new(),
                floor: start_rv,
                bytes: 0,
            });
        log.events.push_back(Arc::clone(&ev));
        log.bytes += bytes;
        if log.events.len() > self.log_cap {
            let dropped = log.drop_oldest();
            g.log_bytes = g.log_bytes.saturating_sub(dropped);
        }
        g.log_bytes += bytes;
        while g.log_bytes > LOG_BYTES {
            let Some(largest) = g
                .logs
                .values_mut()
                .filter(|l| l.events.len() > 1)
                .max_by_key(|l| l.bytes)
            else {
                break;
            };
            let dropped = largest.drop_oldest();
            g.log_bytes = g.log_bytes.saturating_sub(dropped);
        }
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(ev);
    }

    /// Starts a watch of the resource `prefix` belongs to after `from_rv`:
    /// the backlog plus a live receiver, taken under one lock so no event is
    /// missed or duplicated. `Err` gives the oldest rv still served.
    pub(crate) fn watch_from(&self, prefix: &str, from_rv: u64) -> Result<WatchStart, u64> {
        let g = self.lock();
        let (floor, events) = match g.logs.get(resource_of(prefix)) {
            Some(log) => (log.floor, Some(&log.events)),
            None => (g.start_rv, None),
        };
        if from_rv < floor {
            return Err(floor);
        }
        let backlog = events
            .into_iter()
            .flatten()
            .filter(|e| e.rv > from_rv)
            .cloned()
            .collect();
        Ok((backlog, self.events.subscribe()))
    }

    /// Snapshot of a prefix plus a live receiver from that snapshot on.
    pub(crate) fn snapshot_and_watch(
        &self,
        prefix: &str,
    ) -> (Vec<Arc<Value>>, u64, broadcast::Receiver<Arc<Event>>) {
        let g = self.lock();
        let items = g
            .objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| Arc::clone(v))
            .collect();
        (items, g.rv, self.events.subscribe())
    }
}

/// Roughly the bytes a value's JSON takes, without serializing it (this
/// runs on every write, under the store lock).
fn approx_size(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(a) => 2 + a.iter().map(|x| approx_size(x) + 1).sum::<usize>(),
        Value::Object(m) => {
            2 + m
                .iter()
                .map(|(k, x)| k.len() + 4 + approx_size(x))
                .sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rv_and_events() {
        let s = Store::new(Box::new(MemoryBackend)).unwrap();
        let (_, mut rx) = s.watch_from("/configmaps/", 0).unwrap();
        let o = s
            .transact("/configmaps/ns/a", |_| {
                Ok(Mutation::Put(json!({"metadata": {}})))
            })
            .unwrap();
        assert_eq!(o["metadata"]["resourceVersion"], "1");
        s.transact("/configmaps/ns/a", |_| Ok(Mutation::Delete))
            .unwrap();
        assert_eq!(rx.try_recv().unwrap().kind, EventType::Added);
        assert_eq!(rx.try_recv().unwrap().kind, EventType::Deleted);
        assert_eq!(s.current_rv(), 2);
    }

    #[test]
    fn churn_in_one_resource_expires_only_its_own_watches() {
        let mut s = Store::new(Box::new(MemoryBackend)).unwrap();
        s.log_cap = 3;
        s.transact("/configmaps/ns/a", |_| {
            Ok(Mutation::Put(json!({"metadata": {}})))
        })
        .unwrap();
        for i in 0..10 {
            s.transact("apps/deployments/ns/d", |_| {
                Ok(Mutation::Put(json!({"metadata": {}, "i": i})))
            })
            .unwrap();
        }
        let (backlog, _) = s.watch_from("/configmaps/ns/", 0).unwrap();
        assert_eq!(backlog.len(), 1);
        assert_eq!(s.watch_from("apps/deployments/", 1).err(), Some(8));
        let (backlog, _) = s.watch_from("apps/deployments/ns/", 8).unwrap();
        assert_eq!(
            backlog.iter().map(|e| e.rv).collect::<Vec<_>>(),
            [9, 10, 11]
        );
        // A resource with no events yet serves watches from the start.
        assert!(s.watch_from("/secrets/", 0).is_ok());
    }

    #[test]
    fn lists_and_events_share_the_stored_object() {
        let s = Store::new(Box::new(MemoryBackend)).unwrap();
        let big = "x".repeat(64 * 1024);
        s.transact("/secrets/ns/a", |_| {
            Ok(Mutation::Put(
                json!({"metadata": {}, "data": {"release": big}}),
            ))
        })
        .unwrap();
        let (listed, _) = s.list("/secrets/", None);
        let (backlog, _) = s.watch_from("/secrets/", 0).unwrap();
        // One copy of the object, however many lists and events refer to it.
        assert!(Arc::ptr_eq(&listed[0], &backlog[0].object));
        let (snapshot, _, _) = s.snapshot_and_watch("/secrets/ns/");
        assert!(Arc::ptr_eq(&listed[0], &snapshot[0]));
        // The next version's event carries the previous one as `old`.
        s.transact("/secrets/ns/a", |cur| {
            let mut next = cur.cloned().unwrap();
            next["data"]["other"] = json!("y");
            Ok(Mutation::Put(next))
        })
        .unwrap();
        let (backlog, _) = s.watch_from("/secrets/", 1).unwrap();
        let old = backlog[0].old.as_ref().unwrap();
        assert!(Arc::ptr_eq(&listed[0], old));
        assert_eq!(backlog[0].object["data"]["other"], "y");
    }

    #[test]
    fn approx_size_tracks_serialized_size() {
        let v = json!({"metadata": {"name": "a", "labels": {"k": "v"}}, "data": ["x".repeat(1000), 1, null]});
        let exact = crate::body::to_string(&v).len();
        let approx = approx_size(&v);
        assert!(
            approx >= exact / 2 && approx <= exact * 2,
            "{approx} vs {exact}"
        );
    }

    #[test]
    fn redb_persists() {
        let dir = std::env::temp_dir().join(format!(
            "rudder-apiserver-test-{}",
            crate::meta::random_u64()
        ));
        {
            let s = Store::new(Box::new(RedbBackend::open(&dir).unwrap())).unwrap();
            s.transact("/configmaps/ns/a", |_| {
                Ok(Mutation::Put(json!({"metadata": {}})))
            })
            .unwrap();
            s.transact("/configmaps/ns/b", |_| {
                Ok(Mutation::Put(json!({"metadata": {}})))
            })
            .unwrap();
            s.transact("/configmaps/ns/b", |_| Ok(Mutation::Delete))
                .unwrap();
        }
        let s = Store::new(Box::new(RedbBackend::open(&dir).unwrap())).unwrap();
        assert_eq!(s.current_rv(), 3);
        assert!(s.get("/configmaps/ns/a").is_some());
        assert!(s.get("/configmaps/ns/b").is_none());
        assert!(s.watch_from("/configmaps/", 1).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
