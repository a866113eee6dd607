//! CustomResourceDefinitions for tests: an open-schema CRD for a test kind, and installing
//! one and waiting until its resource is served.
//!
//! CRDs are cluster-scoped and shared: tests of one run (and runs side by side) use the
//! same test kinds at once, each in its own namespace. So installing leaves an existing
//! CRD of that name as it is, and teardown does not delete it; a test that needs a CRD of
//! its own gives it a name no other test uses and registers it with
//! [`crate::TestNamespace::delete_on_teardown`]. Every CRD installed here is labelled
//! [`CREATED_BY`], so `kubectl delete crd -l app.kubernetes.io/created-by=rudder-testkit`
//! removes what test runs leave on a cluster.

use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{json, Value};

use crate::{Cluster, Error, CREATED_BY};

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
            Err(e) => panic!("cannot install the test CRD: {e}"),
        }
    }
}

/// [`Cluster::install_crd`] with a client of the test's own, for helpers that have one.
pub async fn install_crd(client: &kube::Client, crd: &Value) -> ApiResource {
    match install(client.clone(), crd.clone()).await {
        Ok(r) => r,
        Err(e) => panic!("cannot install the test CRD: {e}"),
    }
}

async fn install(client: kube::Client, mut crd: Value) -> Result<ApiResource, Error> {
    let resource = served_resource(&crd)?;
    // Labelled so that what a run leaves is found: see the module docs.
    if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(CREATED_BY.0.into(), CREATED_BY.1.into());
        }
    }
    let name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &crd_resource());
    let obj: DynamicObject =
        serde_json::from_value(crd).map_err(|e| Error::Invalid(format!("CRD {name}: {e}")))?;
    match crds.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(Error::kube(&format!("create CRD {name}"), e)),
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

#[cfg(test)]
mod tests {
    use super::*;

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
