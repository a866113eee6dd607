//! CustomResourceDefinitions for tests: an open-schema CRD for a test kind, and installing
//! one and waiting until its resource is served.
//!
//! CRDs are cluster-scoped and shared: tests of one run (and runs side by side) use the
//! same test kinds at once, each in its own namespace. So installing leaves an existing
//! CRD of that name as it is; a test that needs a CRD of its own gives it a name no other
//! test uses and registers it with [`crate::TestNamespace::delete_on_teardown`]. Every
//! CRD installed here is labelled [`CREATED_BY`].
//!
//! On an external cluster a shared CRD is deleted by the last process using it: each
//! test process notes itself on the CRDs it uses (an annotation under
//! `users.testkit.rudder.dev/`) when it installs them, takes its note off when its last
//! cluster is dropped, and deletes a CRD the kit created once no live process is noted
//! on it (notes of dead processes of the same host are pruned). The deletion is guarded
//! by the resourceVersion the decision was made on, so a process that notes itself
//! meanwhile keeps the CRD. What a killed run leaves is found with
//! `kubectl get crd -l app.kubernetes.io/created-by=rudder-testkit`. On the embedded
//! server, which goes with its test, none of this is needed.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, Preconditions,
};
use serde_json::{json, Value};

use crate::cluster::{Inner, KUBECONFIG_ENV};
use crate::{Cluster, Error, CREATED_BY};

/// The annotation prefix of the processes using a shared CRD on an external cluster.
const USER_PREFIX: &str = "users.testkit.rudder.dev/";

/// The CRDs this process noted itself on.
static USED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// How long a new CRD may take to be served.
const SERVED: Duration = Duration::from_secs(60);

/// The `ApiResource` of CustomResourceDefinitions themselves.
pub fn crd_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
    )
}

/// A namespaced CRD for `kind` in `group`/`version` with any spec and a status
/// subresource; the plural is the lower-cased kind plus `s`.
pub fn open_crd(group: &str, version: &str, kind: &str) -> Value {
    let singular = kind.to_ascii_lowercase();
    let plural = format!("{singular}s");
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    })
}

/// The resource a CRD serves (its storage version).
pub(crate) fn served_resource(crd: &Value) -> Result<ApiResource, Error> {
    let spec = &crd["spec"];
    let text = |v: &Value, what: &str| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| Error::Invalid(format!("the CRD has no {what}")))
    };
    let group = text(&spec["group"], "spec.group")?;
    let kind = text(&spec["names"]["kind"], "spec.names.kind")?;
    let plural = text(&spec["names"]["plural"], "spec.names.plural")?;
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .or(versions.first())
        .map(|v| text(&v["name"], "version name"))
        .ok_or_else(|| Error::Invalid("the CRD has no versions".into()))??;
    Ok(ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&group, &version, &kind),
        &plural,
    ))
}

impl Cluster {
    /// Creates `crd` unless a CRD of that name exists, then waits until its resource is
    /// served; returns that resource. Works from sync and async tests.
    pub fn install_crd(&self, crd: &Value) -> ApiResource {
        let client = self.inner.client.clone();
        let crd = crd.clone();
        match self
            .inner
            .worker
            .run(async move { install(client, crd).await })
        {
            Ok(r) => r,
            Err(e) => panic!("cannot install the test CRD: {}", apierror::Chain(&e)),
        }
    }
}

/// [`Cluster::install_crd`] with a client of the test's own, for helpers that have one.
pub async fn install_crd(client: &kube::Client, crd: &Value) -> ApiResource {
    match install(client.clone(), crd.clone()).await {
        Ok(r) => r,
        Err(e) => panic!("cannot install the test CRD: {}", apierror::Chain(&e)),
    }
}

/// Whether the run uses an external cluster, whose CRDs outlive each test.
fn shared_cluster() -> bool {
    std::env::var_os(KUBECONFIG_ENV).is_some_and(|v| !v.is_empty())
}

/// This process's note: its annotation key and value (`host/pid`).
fn process_user() -> (String, String) {
    let host = hostname();
    let mut h = DefaultHasher::new();
    host.hash(&mut h);
    let pid = std::process::id();
    (
        format!("{USER_PREFIX}{pid}-{:08x}", h.finish() as u32),
        format!("{host}/{pid}"),
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Whether a note's process is known to be gone (same host, no such pid).
fn dead(note: &str) -> bool {
    let Some((host, pid)) = note.rsplit_once('/') else {
        return false;
    };
    host == hostname() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

async fn install(client: kube::Client, mut crd: Value) -> Result<ApiResource, Error> {
    let resource = served_resource(&crd)?;
    let shared = shared_cluster();
    let (user, note) = process_user();
    // Labelled so that what a run leaves is found: see the module docs.
    if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(CREATED_BY.0.into(), CREATED_BY.1.into());
        }
        if shared {
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(user.clone(), note.clone().into());
            }
        }
    }
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let obj: DynamicObject =
        serde_json::from_value(crd).map_err(|e| Error::Invalid(format!("CRD {name}: {e}")))?;
    let start = Instant::now();
    loop {
        match crds.create(&PostParams::default(), &obj).await {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(Error::kube(&format!("create CRD {name}"), e)),
        }
        let existing = crds
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube(&format!("read CRD {name}"), e))?;
        let Some(existing) = existing else { continue };
        if existing.metadata.deletion_timestamp.is_none() {
            let kits = existing
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CREATED_BY.0))
                .is_some_and(|v| v == CREATED_BY.1);
            // Someone else's CRD (installed with the cluster) is used as it is.
            if !shared || !kits {
                break;
            }
            let patch = Patch::Merge(json!({"metadata": {"annotations": {&user: &note}}}));
            crds.patch(&name, &PatchParams::default(), &patch)
                .await
                .map_err(|e| Error::kube(&format!("note this run on CRD {name}"), e))?;
            // Noted in time unless its last user was deleting it meanwhile.
            let still = crds
                .get_opt(&name)
                .await
                .map_err(|e| Error::kube(&format!("read CRD {name}"), e))?;
            if still.is_some_and(|c| c.metadata.deletion_timestamp.is_none()) {
                break;
            }
        }
        // Being deleted by its last user: wait until it is gone, then create it anew.
        if start.elapsed() > SERVED {
            return Err(Error::Timeout(format!(
                "CRD {name} was still being deleted after {SERVED:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if shared {
        USED.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.clone());
    }
    let served: Api<DynamicObject> = Api::all_with(client, &resource);
    let start = Instant::now();
    loop {
        let established = crds
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube(&format!("read CRD {name}"), e))?
            .is_some_and(|c| {
                c.data["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                })
            });
        if established && served.list(&ListParams::default().limit(1)).await.is_ok() {
            return Ok(resource);
        }
        if start.elapsed() > SERVED {
            return Err(Error::Timeout(format!(
                "CRD {name} was not served after {SERVED:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Takes this process's note off the CRDs it used and deletes those the kit created
/// that no live process uses any more (see the module docs). Called when the process's
/// last cluster is dropped.
pub(crate) fn release_users(inner: &Inner) {
    let names = std::mem::take(&mut *USED.lock().unwrap_or_else(|e| e.into_inner()));
    if names.is_empty() || !inner.is_external() {
        return;
    }
    let client = inner.client.clone();
    inner
        .worker
        .run(async move { release_all(&client, names).await });
}

/// [`release_users`] on the caller's runtime, with a client of its own (the deadline
/// watchdog's, which cannot count on the kit's runtime).
pub(crate) async fn release_used(client: &kube::Client) {
    let names = std::mem::take(&mut *USED.lock().unwrap_or_else(|e| e.into_inner()));
    release_all(client, names).await;
}

async fn release_all(client: &kube::Client, names: BTreeSet<String>) {
    for name in names {
        if let Err(e) = release(client, &name).await {
            eprintln!("testkit: {}", apierror::Chain(&e));
        }
    }
}

async fn release(client: &kube::Client, name: &str) -> Result<(), Error> {
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let (user, _) = process_user();
    for _ in 0..5 {
        let Some(crd) = crds
            .get_opt(name)
            .await
            .map_err(|e| Error::kube(&format!("read CRD {name}"), e))?
        else {
            return Ok(());
        };
        let annotations = crd.metadata.annotations.clone().unwrap_or_default();
        let mut gone: Vec<&String> = annotations
            .iter()
            .filter(|(k, v)| k.starts_with(USER_PREFIX) && (**k == user || dead(v)))
            .map(|(k, _)| k)
            .collect();
        gone.sort();
        let users = annotations
            .keys()
            .filter(|k| k.starts_with(USER_PREFIX))
            .count()
            - gone.len();
        let mut rv = crd.metadata.resource_version.clone();
        if !gone.is_empty() {
            let notes: serde_json::Map<String, Value> =
                gone.iter().map(|k| ((*k).clone(), Value::Null)).collect();
            let patch = Patch::Merge(json!({"metadata": {
                "annotations": notes,
                "resourceVersion": rv,
            }}));
            match crds.patch(name, &PatchParams::default(), &patch).await {
                Ok(patched) => rv = patched.metadata.resource_version,
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(Error::kube(&format!("take this run off CRD {name}"), e)),
            }
        }
        let kits = crd
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CREATED_BY.0))
            .is_some_and(|v| v == CREATED_BY.1);
        if users > 0 || !kits || crd.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: rv,
                uid: None,
            }),
            ..DeleteParams::background()
        };
        match crds.delete(name, &params).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
            // Someone noted themselves meanwhile: look again.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(Error::kube(&format!("delete CRD {name}"), e)),
        }
    }
    Err(Error::Timeout(format!(
        "CRD {name} kept changing while this run let it go"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_notes_itself_with_a_valid_annotation() {
        let (key, note) = process_user();
        let name = key.strip_prefix(USER_PREFIX).expect("prefix");
        assert!(name.len() <= 63 && !name.is_empty(), "{key}");
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        assert!(!dead(&note), "this process is alive: {note}");
        assert!(dead(&format!("{}/4294967295", hostname())));
        assert!(!dead("another-host/1"));
    }

    #[test]
    fn an_open_crd_serves_its_kind() {
        let crd = open_crd("test.rudder.dev", "v1", "Demo");
        assert_eq!(crd["metadata"]["name"], "demos.test.rudder.dev");
        let r = served_resource(&crd).expect("resource");
        assert_eq!(
            (
                r.group.as_str(),
                r.version.as_str(),
                r.kind.as_str(),
                r.plural.as_str()
            ),
            ("test.rudder.dev", "v1", "Demo", "demos")
        );
    }
}
