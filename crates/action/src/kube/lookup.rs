//! Helm's `lookup` template function against a live cluster, as `helm install` and
//! `helm upgrade` run it: a found object, a list, or an empty map when the object (or
//! the kind within a served group version) does not exist.

use std::rc::Rc;

use chart::engine::LookupFn;
use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams};
use kube::discovery::{self, Scope};
use kube::Client;
use serde_json::{json, Map, Value};
use tokio::runtime::Handle;

/// A `lookup` for a render running on a blocking thread of `handle`'s runtime.
pub fn cluster_lookup(client: Client, handle: Handle) -> LookupFn {
    Rc::new(move |api_version, kind, namespace, name| {
        handle.block_on(lookup(&client, api_version, kind, namespace, name))
    })
}

fn empty() -> Value {
    Value::Object(Map::new())
}

async fn lookup(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Value, String> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = match discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        // A served group version without that kind: Helm's request finds nothing.
        Err(kube::Error::Discovery(_)) => return Ok(empty()),
        Err(e) => {
            return Err(format!(
                "unable to get apiresource from unstructured: {api_version}, Kind={kind}: {e}"
            ))
        }
    };
    let api: Api<DynamicObject> = if caps.scope == Scope::Namespaced && !namespace.is_empty() {
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
