//! Helm's `lookup` template function against a live cluster, as `helm install` and
//! `helm upgrade` run it: a found object, a list, or an empty map when the object (or
//! the kind within a served group version) does not exist.
//!
//! Every call is also noted in a [`LookupTrace`]: a digest of what the templates were
//! given, so a caller can tell later whether a looked-up object changed without
//! comparing whole renders (which differ anyway for charts with random output).

use std::rc::Rc;
use std::sync::{Arc, Mutex};

use chart::engine::LookupFn;
use kube::api::{Api, DynamicObject, ListParams};
use kube::Client;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use tokio::runtime::Handle;

use super::discovery::{DiscoveryCache, KindError};

/// What a render's lookups returned, hashed in call order.
#[derive(Default)]
pub(crate) struct LookupTrace {
    hasher: Sha256,
    calls: usize,
}

/// Metadata the API server changes without the object changing for a template.
const VOLATILE_METADATA: [&str; 6] = [
    "resourceVersion",
    "managedFields",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

impl LookupTrace {
    fn record(&mut self, args: [&str; 4], result: &Result<Value, String>) {
        self.calls += 1;
        for a in args {
            self.hasher.update((a.len() as u64).to_be_bytes());
            self.hasher.update(a.as_bytes());
        }
        let text = match result {
            Ok(v) => stable(v).to_string(),
            Err(e) => format!("error: {e}"),
        };
        self.hasher.update((text.len() as u64).to_be_bytes());
        self.hasher.update(text.as_bytes());
    }

    /// The digest (32 hex characters, a valid label value), or `None` when the render
    /// made no lookup.
    pub(crate) fn digest(&self) -> Option<String> {
        if self.calls == 0 {
            return None;
        }
        let hex: String = self
            .hasher
            .clone()
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(hex[..32].to_string())
    }
}

/// A looked-up object or list without what changes on its own (resource versions,
/// managed fields, status): a Deployment's status moving must not look like a change.
fn stable(v: &Value) -> Value {
    let mut v = v.clone();
    let strip = |o: &mut Value| {
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in VOLATILE_METADATA {
                m.remove(k);
            }
        }
        if let Some(m) = o.as_object_mut() {
            m.remove("status");
        }
    };
    strip(&mut v);
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip);
    }
    // serde_json's maps are sorted, so this text is canonical.
    v
}

/// A `lookup` for a render running on a blocking thread of `handle`'s runtime, its
/// kinds resolved through `discovery`, noting every call in `trace`.
pub(crate) fn cluster_lookup(
    client: Client,
    discovery: Arc<DiscoveryCache>,
    handle: Handle,
    trace: Arc<Mutex<LookupTrace>>,
) -> LookupFn {
    Rc::new(move |api_version, kind, namespace, name| {
        let result = handle.block_on(lookup(
            &client,
            &discovery,
            api_version,
            kind,
            namespace,
            name,
        ));
        trace
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .record([api_version, kind, namespace, name], &result);
        result
    })
}

fn empty() -> Value {
    Value::Object(Map::new())
}

async fn lookup(
    client: &Client,
    discovery: &DiscoveryCache,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Value, String> {
    let unresolved = |why: &str| {
        format!("unable to get apiresource from unstructured: {api_version}, Kind={kind}: {why}")
    };
    let (resource, namespaced) = match discovery.resolve(client, api_version, kind).await {
        Ok(found) => found,
        // A served group version without that kind: Helm's request finds nothing.
        Err(KindError::MissingKind { .. }) => return Ok(empty()),
        // Helm asks the group version's discovery, whose 404 is its error.
        Err(KindError::NotServed { .. }) => {
            return Err(unresolved(
                "the server could not find the requested resource",
            ))
        }
        // The group version's discovery failed (remembered, not asked again per call).
        Err(KindError::Unavailable { reason, .. }) => return Err(unresolved(&reason)),
    };
    let api: Api<DynamicObject> = if namespaced && !namespace.is_empty() {
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    if !name.is_empty() {
        return match api.get_opt(name).await {
            Ok(Some(obj)) => to_json(&obj),
            Ok(None) => Ok(empty()),
            Err(e) => Err(format!(
                "lookup {api_version} {kind} {namespace}/{name}: {e}"
            )),
        };
    }
    match api.list(&ListParams::default()).await {
        Ok(list) => {
            let mut items = Vec::with_capacity(list.items.len());
            for mut obj in list.items {
                // List items come without their type; Helm's unstructured list has it.
                obj.types = Some(kube::api::TypeMeta {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                });
                items.push(to_json(&obj)?);
            }
            Ok(json!({
                "apiVersion": api_version,
                "kind": format!("{kind}List"),
                "metadata": {"resourceVersion": list.metadata.resource_version.unwrap_or_default()},
                "items": items,
            }))
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(empty()),
        Err(e) => Err(format!("lookup {api_version} {kind} in {namespace:?}: {e}")),
    }
}

fn to_json(obj: &DynamicObject) -> Result<Value, String> {
    serde_json::to_value(obj).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_ignores_what_changes_on_its_own() {
        let digest = |v: Value| {
            let mut t = LookupTrace::default();
            t.record(["v1", "ConfigMap", "ns", "src"], &Ok(v));
            t.digest()
        };
        let a = digest(
            json!({"metadata": {"name": "src", "resourceVersion": "1"}, "data": {"v": "1"}}),
        );
        let b = digest(json!({"metadata": {"name": "src", "resourceVersion": "2",
            "managedFields": []}, "data": {"v": "1"}, "status": {"x": 1}}));
        let c = digest(json!({"metadata": {"name": "src"}, "data": {"v": "2"}}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.as_ref().map(String::len), Some(32));
        assert_eq!(LookupTrace::default().digest(), None);
    }
}
