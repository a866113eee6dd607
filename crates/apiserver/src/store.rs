//! The object store: every object of every kind as JSON under one
//! cluster-wide resourceVersion counter, a bounded event log for watches,
//! and a pluggable durable backend (memory or redb).

use crate::error::ApiError;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
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
    pub(crate) object: Value,
    pub(crate) old: Option<Value>,
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
    objects: BTreeMap<String, Value>,
    log: VecDeque<Arc<Event>>,
    /// Watches may start from any rv >= this.
    log_floor: u64,
    log_bytes: usize,
    backend: Box<dyn Backend>,
}

pub(crate) struct Store {
    inner: Mutex<Inner>,
    events: broadcast::Sender<Arc<Event>>,
    log_cap: usize,
    /// Woken after deletions so garbage collection can run.
    pub(crate) gc_wake: Notify,
}

pub(crate) const LOG_CAP: usize = 20_000;
/// The event log also stays under this many bytes of (serialized) objects.
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
                objects: objs.into_iter().collect(),
                log: VecDeque::new(),
                log_floor: rv,
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
        self.lock().objects.get(key).cloned()
    }

    /// Objects whose key starts with `prefix` and sorts after `after`.
    pub(crate) fn list(&self, prefix: &str, after: Option<&str>) -> (Vec<Value>, u64) {
        let g = self.lock();
        let start = match after {
            Some(a) if a.starts_with(prefix) => std::ops::Bound::Excluded(a.to_string()),
            _ => std::ops::Bound::Included(prefix.to_string()),
        };
        let items = g
            .objects
            .range((start, std::ops::Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v.clone())
            .collect();
        (items, g.rv)
    }

    /// Keys (with values) under a prefix, for cleanup passes.
    pub(crate) fn entries(&self, prefix: &str) -> Vec<(String, Value)> {
        let g = self.lock();
        g.objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
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
        match f(old.as_ref())? {
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
                g.objects.insert(key.to_string(), obj.clone());
                let kind = if old.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                self.publish(&mut g, kind, key, obj.clone(), old);
                Ok(obj)
            }
            Mutation::Delete => {
                let Some(mut prev) = old else {
                    return Err(ApiError::internal("delete of a missing object"));
                };
                let rv = g.rv + 1;
                g.backend
                    .write(rv, key, None)
                    .map_err(|e| ApiError::internal(format!("storage write failed: {e}")))?;
                g.rv = rv;
                g.objects.remove(key);
                if let Some(m) = prev.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("resourceVersion".into(), Value::String(rv.to_string()));
                }
                self.publish(&mut g, EventType::Deleted, key, prev.clone(), None);
                self.gc_wake.notify_one();
                Ok(prev)
            }
        }
    }

    fn publish(
        &self,
        g: &mut Inner,
        kind: EventType,
        key: &str,
        object: Value,
        old: Option<Value>,
    ) {
        let size = |v: &Value| crate::body::to_string(v).len();
        let bytes = size(&object) + old.as_ref().map(size).unwrap_or(0);
        let ev = Arc::new(Event {
            rv: g.rv,
            kind,
            key: key.to_string(),
            object,
            old,
            bytes,
        });
        g.log.push_back(ev.clone());
        g.log_bytes += bytes;
        while g.log.len() > self.log_cap || (g.log_bytes > LOG_BYTES && g.log.len() > 1) {
            if let Some(e) = g.log.pop_front() {
                g.log_floor = e.rv;
                g.log_bytes = g.log_bytes.saturating_sub(e.bytes);
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(ev);
    }

    /// Starts a watch after `from_rv`: the backlog plus a live receiver,
    /// taken under one lock so no event is missed or duplicated.
    pub(crate) fn watch_from(&self, from_rv: u64) -> Result<WatchStart, u64> {
        let g = self.lock();
        if from_rv < g.log_floor {
            return Err(g.log_floor);
        }
        let backlog = g.log.iter().filter(|e| e.rv > from_rv).cloned().collect();
        Ok((backlog, self.events.subscribe()))
    }

    /// Snapshot of a prefix plus a live receiver from that snapshot on.
    pub(crate) fn snapshot_and_watch(
        &self,
        prefix: &str,
    ) -> (Vec<Value>, u64, broadcast::Receiver<Arc<Event>>) {
        let g = self.lock();
        let items = g
            .objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v.clone())
            .collect();
        (items, g.rv, self.events.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rv_and_events() {
        let s = Store::new(Box::new(MemoryBackend)).unwrap();
        let (_, mut rx) = s.watch_from(0).unwrap();
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
        assert!(s.watch_from(1).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
