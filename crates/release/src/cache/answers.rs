//! The server's answers to our own recent record writes, whole (data included), so a
//! read that follows a write of the same object needs no GET. The case it exists for:
//! an action takes the release lock with a PATCH of the newest record, whose answer
//! is that record as stored, and then decodes the same record; a GET there was one
//! request of every upgrade, rollback and uninstall.
//!
//! An answer is only served while the cache's metadata of the object still shows the
//! answer's resourceVersion (checked by the caller), so it is exactly as fresh as the
//! metadata reads the cache serves; any change by someone else that the watch
//! delivered makes it a miss. Bounded by count and bytes, oldest out first: a read
//! that misses reads from the API server as before.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::ObjectKey;
use crate::driver::objects::RawObject;

/// At most this many answers are kept…
const MAX_ANSWERS: usize = 256;
/// …holding at most this many bytes of data between them.
const MAX_BYTES: usize = 8 * 1024 * 1024;

struct Answer {
    resource_version: Box<str>,
    object: Arc<RawObject>,
    bytes: usize,
}

/// Recent answers, by object.
#[derive(Default)]
pub(super) struct Answers {
    by_key: HashMap<ObjectKey, Answer>,
    /// Keys in the order their answers arrived (a key may appear more than once; only
    /// its newest answer is in `by_key`).
    order: VecDeque<(ObjectKey, Box<str>)>,
    bytes: usize,
}

fn data_bytes(o: &RawObject) -> usize {
    o.data.iter().map(|(k, v)| k.len() + v.len()).sum()
}

impl Answers {
    /// Keeps `object`, the server's answer to a write of `key`.
    pub(super) fn keep(&mut self, key: ObjectKey, object: RawObject) {
        let Some(rv) = object.resource_version.as_deref() else {
            return;
        };
        let bytes = data_bytes(&object);
        if bytes > MAX_BYTES {
            self.forget(&key);
            return;
        }
        let rv: Box<str> = rv.into();
        self.forget(&key);
        self.order.push_back((key.clone(), rv.clone()));
        self.bytes += bytes;
        self.by_key.insert(
            key,
            Answer {
                resource_version: rv,
                object: Arc::new(object),
                bytes,
            },
        );
        while self.by_key.len() > MAX_ANSWERS || self.bytes > MAX_BYTES {
            let Some((key, rv)) = self.order.pop_front() else {
                break;
            };
            if self
                .by_key
                .get(&key)
                .is_some_and(|a| a.resource_version == rv)
            {
                self.forget(&key);
            }
        }
        // Keys whose newer answer replaced them leave stale order entries behind;
        // drop them once they outnumber the live ones.
        if self.order.len() > 2 * MAX_ANSWERS {
            let live = &self.by_key;
            self.order
                .retain(|(k, rv)| live.get(k).is_some_and(|a| a.resource_version == *rv));
        }
    }

    /// Drops what is kept of `key`.
    pub(super) fn forget(&mut self, key: &ObjectKey) {
        if let Some(a) = self.by_key.remove(key) {
            self.bytes -= a.bytes;
        }
    }

    /// The answer kept for `key` if it is of `resource_version`.
    pub(super) fn at(&self, key: &ObjectKey, resource_version: &str) -> Option<Arc<RawObject>> {
        self.by_key
            .get(key)
            .filter(|a| &*a.resource_version == resource_version)
            .map(|a| a.object.clone())
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_key.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, rv: &str, size: usize) -> RawObject {
        RawObject {
            name: name.into(),
            resource_version: Some(rv.into()),
            data: [("release".to_string(), vec![b'x'; size])].into(),
            ..RawObject::default()
        }
    }

    fn key(name: &str) -> ObjectKey {
        ("ns".into(), name.into())
    }

    #[test]
    fn an_answer_is_served_only_at_its_version() {
        let mut a = Answers::default();
        a.keep(key("r.v1"), object("r.v1", "5", 10));
        assert!(a.at(&key("r.v1"), "5").is_some());
        assert!(a.at(&key("r.v1"), "6").is_none());
        a.keep(key("r.v1"), object("r.v1", "7", 10));
        assert!(a.at(&key("r.v1"), "5").is_none());
        assert_eq!(
            a.at(&key("r.v1"), "7").map(|o| o.name.clone()),
            Some("r.v1".into())
        );
    }

    #[test]
    fn the_oldest_answers_go_first_when_full() {
        let mut a = Answers::default();
        for i in 0..MAX_ANSWERS + 10 {
            a.keep(key(&format!("r{i}.v1")), object("x", "1", 1));
        }
        assert_eq!(a.len(), MAX_ANSWERS);
        assert!(a.at(&key("r0.v1"), "1").is_none());
        assert!(a
            .at(&key(&format!("r{}.v1", MAX_ANSWERS + 9)), "1")
            .is_some());
        let mut a = Answers::default();
        a.keep(key("big1"), object("big1", "1", MAX_BYTES / 2));
        a.keep(key("big2"), object("big2", "1", MAX_BYTES / 2));
        a.keep(key("big3"), object("big3", "1", MAX_BYTES / 2));
        assert!(a.at(&key("big1"), "1").is_none());
        assert!(a.at(&key("big3"), "1").is_some());
        assert!(a.bytes <= MAX_BYTES);
        a.keep(key("huge"), object("huge", "1", MAX_BYTES + 1));
        assert!(a.at(&key("huge"), "1").is_none());
    }

    #[test]
    fn replaced_answers_do_not_pile_up_in_the_order() {
        let mut a = Answers::default();
        for i in 0..10 * MAX_ANSWERS {
            a.keep(key("r.v1"), object("r.v1", &i.to_string(), 1));
        }
        assert_eq!(a.len(), 1);
        assert!(a.order.len() <= 2 * MAX_ANSWERS + 1);
    }
}
