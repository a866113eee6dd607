//! One stored object as the store keeps it: its serialized JSON plus a
//! small index of the metadata that selectors, garbage collection and the
//! simulated controllers read on every object. A parsed `serde_json::Value`
//! costs about ten times its JSON (every small map, such as each level of
//! `managedFields`' `fieldsV1`, is a whole B-tree node), so the full object
//! is parsed only when a reader needs it.

use serde_json::Value;

/// One `metadata.ownerReferences` entry, as far as the index needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub(crate) uid: Box<str>,
    pub(crate) controller: bool,
}

/// An object's JSON and its indexed metadata.
#[derive(Debug)]
pub(crate) struct Stored {
    json: Box<str>,
    name: Box<str>,
    namespace: Box<str>,
    uid: Box<str>,
    /// Sorted by key (the JSON's own order), string values only, as label
    /// selectors read them.
    labels: Box<[(Box<str>, Box<str>)]>,
    owners: Box<[OwnerRef]>,
    finalizers: Box<[Box<str>]>,
    deleting: bool,
}

fn str_at<'a>(meta: Option<&'a Value>, field: &str) -> &'a str {
    meta.and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Stored {
    /// Serializes `obj` and indexes its metadata.
    pub(crate) fn new(obj: &Value) -> Stored {
        let json = crate::storage::json::to_string(obj);
        let meta = obj.get("metadata");
        let labels = meta
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(|l| {
                l.iter()
                    .filter_map(|(k, v)| Some((k.as_str().into(), v.as_str()?.into())))
                    .collect()
            })
            .unwrap_or_default();
        let owners = meta
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| {
                        Some(OwnerRef {
                            uid: r.get("uid")?.as_str()?.into(),
                            controller: r.get("controller").and_then(Value::as_bool) == Some(true),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let finalizers = apitypes::strings(meta.and_then(|m| m.get("finalizers")))
            .into_iter()
            .map(String::into_boxed_str)
            .collect();
        Stored {
            name: str_at(meta, "name").into(),
            namespace: str_at(meta, "namespace").into(),
            uid: str_at(meta, "uid").into(),
            labels,
            owners,
            finalizers,
            deleting: meta
                .and_then(|m| m.get("deletionTimestamp"))
                .is_some_and(|v| !v.is_null()),
            json: json.into_boxed_str(),
        }
    }

    /// The full object, parsed from its JSON.
    pub(crate) fn value(&self) -> Value {
        // The text was serialized from a `Value`, so it parses back to the
        // same value; a failure would be a bug here, not bad input.
        crate::storage::json::stored_json(self.json.as_bytes()).unwrap_or_else(|e| {
            tracing::error!(
                "stored object {}/{} does not parse: {e}",
                self.namespace,
                self.name
            );
            Value::Null
        })
    }

    /// The serialized object.
    pub(crate) fn json(&self) -> &str {
        &self.json
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn namespace(&self) -> &str {
        &self.namespace
    }

    pub(crate) fn uid(&self) -> &str {
        &self.uid
    }

    /// The string value of label `key`.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|i| self.labels[i].1.as_ref())
    }

    pub(crate) fn owners(&self) -> &[OwnerRef] {
        &self.owners
    }

    pub(crate) fn finalizers(&self) -> impl Iterator<Item = &str> {
        self.finalizers.iter().map(AsRef::as_ref)
    }

    /// `metadata.deletionTimestamp` is set.
    pub(crate) fn deleting(&self) -> bool {
        self.deleting
    }

    /// The bytes this object holds in memory (its JSON, its index and the
    /// struct itself).
    pub(crate) fn footprint(&self) -> usize {
        std::mem::size_of::<Stored>()
            + self.json.len()
            + self.name.len()
            + self.namespace.len()
            + self.uid.len()
            + self
                .labels
                .iter()
                .map(|(k, v)| std::mem::size_of::<(Box<str>, Box<str>)>() + k.len() + v.len())
                .sum::<usize>()
            + self
                .owners
                .iter()
                .map(|o| std::mem::size_of::<OwnerRef>() + o.uid.len())
                .sum::<usize>()
            + self
                .finalizers
                .iter()
                .map(|f| std::mem::size_of::<Box<str>>() + f.len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indexes_the_metadata_readers_use() {
        let v = json!({"metadata": {
            "name": "a", "namespace": "ns", "uid": "u1",
            "labels": {"b": "2", "a": "1", "n": 3},
            "ownerReferences": [{"uid": "o1", "controller": true}, {"uid": "o2"}, {"name": "no-uid"}],
            "finalizers": ["orphan", 7],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        }, "spec": {"x": 1.5}});
        let s = Stored::new(&v);
        assert_eq!((s.name(), s.namespace(), s.uid()), ("a", "ns", "u1"));
        assert_eq!(
            (s.label("a"), s.label("b"), s.label("n"), s.label("c")),
            (Some("1"), Some("2"), None, None)
        );
        assert_eq!(
            s.owners(),
            [
                OwnerRef {
                    uid: "o1".into(),
                    controller: true
                },
                OwnerRef {
                    uid: "o2".into(),
                    controller: false
                }
            ]
        );
        assert_eq!(s.finalizers().collect::<Vec<_>>(), ["orphan"]);
        assert!(s.deleting());
        assert_eq!(s.value(), v);
        assert_eq!(s.json(), crate::storage::json::to_string(&v));
        let bare = Stored::new(&json!({"metadata": {"deletionTimestamp": null}}));
        assert!(!bare.deleting() && bare.name().is_empty() && bare.owners().is_empty());
    }

    #[test]
    fn values_survive_the_round_trip_exactly() {
        let v = json!({"f": [0.1, 1e300, -0.0, 1.0, 123_456_789.123_456_79, 5e-324],
            "i": [u64::MAX, i64::MIN], "s": "\u{1}\"\\é\u{2028}😀"});
        let s = Stored::new(&v);
        assert_eq!(s.value(), v);
        assert_eq!(crate::storage::json::to_string(&s.value()), s.json());
    }
}
