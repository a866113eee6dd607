//! One Event resource behind two APIs: `events.k8s.io/v1` and core `v1`
//! Events are stored once, in the core shape (under the core key), and
//! converted on the way in and out, as the real API server does. This lets
//! an operator record events with the new API while `kubectl get events`
//! and `kubectl describe` read them through the old one.

use serde_json::{json, Map, Value};

pub(crate) use apitypes::registry::is_events_api;

fn mv(from: &mut Map<String, Value>, to: &mut Map<String, Value>, a: &str, b: &str) {
    if let Some(v) = from.remove(a) {
        to.insert(b.to_string(), v);
    }
}

/// Fields spelled the same in both Event APIs.
const SAME_FIELDS: [&str; 9] = [
    "kind",
    "metadata",
    "eventTime",
    "series",
    "reason",
    "action",
    "type",
    "related",
    "reportingInstance",
];

/// `(events.k8s.io/v1 name, core v1 name)` of fields that are only renamed.
const RENAMED_FIELDS: [(&str, &str); 5] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedCount", "count"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
];

/// `events.k8s.io/v1` shape to core `v1` shape. Works on partial objects
/// (patches, apply configurations): only fields present are converted.
pub(crate) fn to_core(obj: Value) -> Value {
    let Value::Object(mut src) = obj else {
        return obj;
    };
    let mut out = Map::new();
    if src.contains_key("apiVersion") {
        src.remove("apiVersion");
        out.insert("apiVersion".into(), json!("v1"));
    }
    for k in SAME_FIELDS {
        mv(&mut src, &mut out, k, k);
    }
    for (events, core) in RENAMED_FIELDS {
        mv(&mut src, &mut out, events, core);
    }
    let controller = src.remove("reportingController");
    let source = src.remove("deprecatedSource");
    if let Some(c) = &controller {
        out.insert("reportingComponent".into(), c.clone());
    }
    match (source, controller) {
        (Some(s), _) => {
            out.insert("source".into(), s);
        }
        // Older readers (and `kubectl describe`'s FROM) look at source.
        (None, Some(c)) => {
            out.insert("source".into(), json!({"component": c}));
        }
        (None, None) => {}
    }
    // Anything unknown is kept rather than silently dropped.
    for (k, v) in src {
        out.entry(k).or_insert(v);
    }
    Value::Object(out)
}

/// Core `v1` shape to `events.k8s.io/v1` shape.
pub(crate) fn from_core(obj: Value) -> Value {
    let Value::Object(mut src) = obj else {
        return obj;
    };
    let mut out = Map::new();
    if src.remove("apiVersion").is_some() {
        out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    }
    for k in SAME_FIELDS {
        mv(&mut src, &mut out, k, k);
    }
    for (events, core) in RENAMED_FIELDS {
        mv(&mut src, &mut out, core, events);
    }
    mv(
        &mut src,
        &mut out,
        "reportingComponent",
        "reportingController",
    );
    if let Some(s) = src.remove("source") {
        if !out.contains_key("reportingController") {
            if let Some(c) = s.get("component").filter(|c| c.is_string()) {
                out.insert("reportingController".into(), c.clone());
            }
        }
        out.insert("deprecatedSource".into(), s);
    }
    for (k, v) in src {
        out.entry(k).or_insert(v);
    }
    Value::Object(out)
}

/// Renames `events.k8s.io` field-selector keys to the stored core fields.
pub(crate) fn core_field(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("regarding.") {
        return format!("involvedObject.{rest}");
    }
    match key {
        "reportingController" => "reportingComponent".into(),
        "deprecatedSource" => "source.component".into(),
        other => core_only_field(other),
    }
}

/// Core Event selector keys that name a nested field.
pub(crate) fn core_only_field(key: &str) -> String {
    match key {
        "source" => "source.component".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let ev = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "ns"},
            "regarding": {"kind": "Hello", "name": "h", "namespace": "ns", "uid": "u1"},
            "note": "installed", "reason": "Installed", "type": "Normal", "action": "Reconcile",
            "reportingController": "rudder", "reportingInstance": "rudder-0",
            "eventTime": "2024-01-01T00:00:00.000000Z", "deprecatedCount": 2,
            "series": {"count": 2, "lastObservedTime": "2024-01-01T00:01:00.000000Z"}});
        let core = to_core(ev.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["uid"], "u1");
        assert_eq!(core["message"], "installed");
        assert_eq!(core["source"]["component"], "rudder");
        assert_eq!(core["reportingComponent"], "rudder");
        assert_eq!(core["count"], 2);
        let back = from_core(core);
        for k in [
            "regarding",
            "note",
            "reason",
            "type",
            "action",
            "reportingController",
            "reportingInstance",
            "eventTime",
            "deprecatedCount",
            "series",
        ] {
            assert_eq!(back[k], ev[k], "{k}");
        }
        assert_eq!(core_field("regarding.name"), "involvedObject.name");
        assert_eq!(core_only_field("source"), "source.component");
    }
}
