//! Release state migration against the test cluster: Helm ConfigMap-driver
//! records and releases kept in a CR's status become verified Secrets; the old copies
//! go only after that; interrupted migrations resume; conflicts stop with nothing lost.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::Client;
use operator::MigrateError;
use release::driver::Driver;
use release::record::{Chart, Metadata, Release, Status};
use release::{make_key, ConfigMapDriver, SecretDriver, Storage};
use serde_json::{json, Value};
use testkit::{Cluster, TestNamespace};

/// A namespace of the test's own, and a client defaulting to it.
fn start() -> (TestNamespace, Client) {
    let ns = Cluster::builder()
        .simulate_readiness(false)
        .start()
        .namespace("migrate");
    let client = ns.client();
    (ns, client)
}

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/migrate")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// A CRD `Web` (with or without the status subresource) and its ApiResource. The two
/// variants are in groups of their own, so both can be served on one cluster; the CRDs
/// are shared by the tests and stay.
async fn install_crd(client: &Client, status_subresource: bool) -> ApiResource {
    let group = if status_subresource {
        "demo.rudder.dev"
    } else {
        "nostatus.demo.rudder.dev"
    };
    let mut version = json!({
        "name": "v1alpha1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
    });
    if status_subresource {
        version["subresources"] = json!({"status": {}});
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("webs.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "Web", "listKind": "WebList", "plural": "webs", "singular": "web"},
            "versions": [version]
        }
    });
    testkit::crd::install_crd(client, &crd).await
}

/// Creates CR `name` with `spec` and then sets its `status` (through the status
/// subresource when the CRD has one).
async fn create_cr(
    client: &Client,
    ar: &ApiResource,
    name: &str,
    spec: Value,
    status: Value,
    status_subresource: bool,
) -> DynamicObject {
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), client.default_namespace(), ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": ar.api_version,
        "kind": "Web",
        "metadata": {"name": name, "namespace": client.default_namespace()},
        "spec": spec,
    }))
    .expect("CR");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create CR");
    let patch = json!({ "status": status });
    if status_subresource {
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("set status")
    } else {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("set status")
    }
}

async fn get_cr(client: &Client, ar: &ApiResource, name: &str) -> DynamicObject {
    Api::<DynamicObject>::namespaced_with(client.clone(), client.default_namespace(), ar)
        .get(name)
        .await
        .expect("CR exists")
}

fn record(namespace: &str, name: &str, version: i64, status: Status) -> Release {
    let mut rel = Release {
        name: name.into(),
        version,
        namespace: namespace.into(),
        manifest: format!(
            "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-v{version}\ndata:\n  ratio: \"0.5 < 1 & 2\"\n"
        ),
        chart: Some(Chart {
            metadata: Some(Metadata {
                name: "web".into(),
                version: "0.1.0".into(),
                api_version: "v2".into(),
                ..Metadata::default()
            }),
            values: Some(json!({"replicas": 1}).as_object().cloned().unwrap_or_default()),
            ..Chart::default()
        }),
        ..Release::default()
    };
    rel.config = json!({"replicas": version, "ratio": 1.5e-7})
        .as_object()
        .cloned()
        .unwrap_or_default();
    rel.labels = BTreeMap::from([("team".to_string(), "blue".to_string())]);
    rel.set_status(status, format!("revision {version}"));
    rel
}

/// Writes revisions 1 (superseded) and 2 (deployed) with Helm's ConfigMap driver.
async fn write_configmap_records(client: &Client, name: &str) -> Vec<Release> {
    let cms = ConfigMapDriver::for_namespace(client.clone(), client.default_namespace());
    let mut out = Vec::new();
    for (v, st) in [(1, Status::Superseded), (2, Status::Deployed)] {
        let rel = record(client.default_namespace(), name, v, st);
        cms.create(&make_key(name, v), &rel)
            .await
            .expect("write ConfigMap record");
        // What Helm would read back from the ConfigMap.
        out.push(cms.get(&make_key(name, v)).await.expect("read back"));
    }
    out
}

async fn configmap_names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = Api::<ConfigMap>::default_namespaced(client.clone())
        .list(&Default::default())
        .await
        .expect("list ConfigMaps")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with("sh.helm.release.v1."))
        .collect();
    names.sort();
    names
}

async fn secret_rv(client: &Client, key: &str) -> Option<String> {
    Api::<Secret>::default_namespaced(client.clone())
        .get_opt(key)
        .await
        .expect("read Secret")
        .and_then(|s| s.metadata.resource_version)
}

/// A CR with an empty status, for the ConfigMap cases.
async fn plain_cr(client: &Client, name: &str) -> (ApiResource, DynamicObject) {
    let ar = install_crd(client, true).await;
    let cr = create_cr(client, &ar, name, json!({"replicas": 1}), json!({}), true).await;
    (ar, cr)
}

#[tokio::test]
async fn configmap_records_become_identical_secrets() {
    let (ns, client) = start();
    let (ar, cr) = plain_cr(&client, "web").await;
    let originals = write_configmap_records(&client, "web").await;

    let report = operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
        .await
        .expect("migrate");
    assert_eq!(report.copied, [1, 2]);
    assert_eq!(
        report.removed_configmaps,
        [make_key("web", 1), make_key("web", 2)]
    );
    assert!(
        configmap_names(&client).await.is_empty(),
        "ConfigMaps removed"
    );

    let secrets = SecretDriver::for_namespace(client.clone(), ns.name());
    for orig in &originals {
        let copy = secrets
            .get(&make_key("web", orig.version))
            .await
            .expect("Secret record");
        assert_eq!(&copy, orig, "revision {} identical", orig.version);
    }
    // Helm's layout: type, labels, and the history reads back through Storage.
    let s = Api::<Secret>::default_namespaced(client.clone())
        .get(&make_key("web", 2))
        .await
        .expect("Secret");
    assert_eq!(s.type_.as_deref(), Some("helm.sh/release.v1"));
    let labels = s.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("status").map(String::as_str), Some("deployed"));
    assert_eq!(labels.get("team").map(String::as_str), Some("blue"));
    let store = Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        ns.name(),
    )));
    let deployed = store.deployed("web").await.expect("deployed").expect("one");
    assert_eq!(deployed.version, 2);

    // Idempotent: nothing left to do, nothing rewritten.
    let rv = secret_rv(&client, &make_key("web", 1)).await;
    let again = operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
        .await
        .expect("second migrate");
    assert!(again.is_empty(), "{again:?}");
    assert_eq!(again.to_string(), "nothing to migrate");
    assert_eq!(secret_rv(&client, &make_key("web", 1)).await, rv);
}

#[tokio::test]
async fn interrupted_configmap_migration_resumes() {
    let (ns, client) = start();
    let (ar, cr) = plain_cr(&client, "web").await;
    let originals = write_configmap_records(&client, "web").await;

    // Crash after writing only revision 1's Secret (before anything was deleted).
    SecretDriver::for_namespace(client.clone(), ns.name())
        .create(&make_key("web", 1), &originals[0])
        .await
        .expect("partial copy");
    let rv1 = secret_rv(&client, &make_key("web", 1)).await;

    // Crash after the copy step, before the ConfigMaps were deleted.
    let step = operator::copy_configmap_records(&client, "web", ns.name())
        .await
        .expect("copy step");
    assert_eq!(step.copied, [2], "revision 1 was already there");
    assert_eq!(step.verified.len(), 2);
    assert_eq!(
        configmap_names(&client).await.len(),
        2,
        "nothing deleted yet"
    );

    let report = operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
        .await
        .expect("resume");
    assert!(report.copied.is_empty(), "{report:?}");
    assert_eq!(report.removed_configmaps.len(), 2);
    assert!(configmap_names(&client).await.is_empty());
    assert_eq!(
        secret_rv(&client, &make_key("web", 1)).await,
        rv1,
        "an identical Secret is never rewritten"
    );
    let secrets = SecretDriver::for_namespace(client.clone(), ns.name());
    for orig in &originals {
        assert_eq!(
            &secrets
                .get(&make_key("web", orig.version))
                .await
                .expect("Secret"),
            orig
        );
    }
}

#[tokio::test]
async fn conflicting_secret_stops_migration_and_deletes_nothing() {
    let (ns, client) = start();
    let (ar, cr) = plain_cr(&client, "web").await;
    write_configmap_records(&client, "web").await;
    let mut other = record(ns.name(), "web", 2, Status::Deployed);
    other.manifest = "---\n# something else\n".into();
    SecretDriver::for_namespace(client.clone(), ns.name())
        .create(&make_key("web", 2), &other)
        .await
        .expect("conflicting Secret");

    let err = operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
        .await
        .expect_err("conflict");
    assert!(
        matches!(err, MigrateError::Conflict { revision: 2, .. }),
        "{err:?}"
    );
    let msg = release::api_error::chain(&err);
    assert!(
        msg.contains(&format!("Secret {}/sh.helm.release.v1.web.v2", ns.name()))
            && msg.contains(&format!(
                "ConfigMap {}/sh.helm.release.v1.web.v2",
                ns.name()
            )),
        "{msg}"
    );
    assert_eq!(configmap_names(&client).await.len(), 2, "nothing deleted");
    let kept = SecretDriver::for_namespace(client.clone(), ns.name())
        .get(&make_key("web", 2))
        .await
        .expect("Secret kept");
    assert_eq!(kept, other, "never overwritten");
    // Still refused on the next call.
    assert!(
        operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
            .await
            .is_err()
    );
    assert_eq!(configmap_names(&client).await.len(), 2);
}

#[tokio::test]
async fn helm_v2_status_release_becomes_a_secret() {
    let (ns, client) = start();
    // Old operator-sdk CRDs often had no status subresource.
    let ar = install_crd(&client, false).await;
    let status = fixture("helm-v2-status-release.json");
    let cr = create_cr(
        &client,
        &ar,
        "example-web",
        json!({"greeting": "hi"}),
        status,
        false,
    )
    .await;

    let report = operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect("migrate");
    assert_eq!(report.from_status, [2]);
    assert!(report.status_cleared);

    let rel = SecretDriver::for_namespace(client.clone(), ns.name())
        .get(&make_key("example-web", 2))
        .await
        .expect("Secret record");
    assert_eq!(rel.name, "example-web");
    assert_eq!(rel.namespace, ns.name());
    assert_eq!(rel.status(), Status::Deployed);
    assert_eq!(
        rel.config,
        json!({"greeting": "hi", "replicas": 2})
            .as_object()
            .cloned()
            .unwrap_or_default()
    );
    assert!(rel.manifest.contains("name: example-web-cfg"));
    let chart = rel.chart.as_ref().expect("chart");
    let meta = chart.metadata.as_ref().expect("metadata");
    assert_eq!(
        (meta.name.as_str(), meta.version.as_str()),
        ("web", "0.2.0")
    );
    assert_eq!(chart.templates.len(), 2);
    assert_eq!(
        chart.values.as_ref().and_then(|v| v.get("greeting")),
        Some(&json!("hello"))
    );
    let info = rel.info.as_ref().expect("info");
    assert_eq!(info.notes, "1. Visit the service.");
    assert_eq!(
        info.first_deployed.map(|t| t.to_string()).as_deref(),
        Some("2018-12-04T09:00:00.123456789Z")
    );
    assert!(
        info.description
            .contains("example-web-2ux6bnp0qo2kpgr2ha9wadm1d"),
        "{}",
        info.description
    );
    assert_eq!(rel.hooks[0].events, ["pre-install", "pre-upgrade"]);
    assert_eq!(
        rel.hooks[0].delete_policies,
        ["before-hook-creation", "hook-succeeded"]
    );

    let after = get_cr(&client, &ar, "example-web").await;
    let status = after.data.get("status").expect("status kept");
    assert!(
        status.get("release").is_none(),
        "status.release removed: {status}"
    );
    assert_eq!(
        status["reason"], "UpdateSuccessful",
        "other status fields kept"
    );

    let again = operator::migrate(&client, &(&after).into(), &ar, "example-web", ns.name())
        .await
        .expect("second migrate");
    assert!(again.is_empty(), "{again:?}");
}

#[tokio::test]
async fn helm_v3_status_release_becomes_a_secret() {
    let (ns, client) = start();
    let ar = install_crd(&client, true).await;
    let status = fixture("helm-v3-status-release.json");
    let cr = create_cr(
        &client,
        &ar,
        "example-web",
        json!({"greeting": "hey"}),
        status.clone(),
        true,
    )
    .await;

    let report = operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect("migrate");
    assert_eq!(report.from_status, [1]);
    assert!(report.status_cleared);
    let rel = SecretDriver::for_namespace(client.clone(), ns.name())
        .get(&make_key("example-web", 1))
        .await
        .expect("Secret record");
    assert_eq!(rel.status(), Status::Deployed);
    assert_eq!(
        rel.manifest,
        status["release"]["manifest"].as_str().unwrap_or_default()
    );
    assert_eq!(rel.config["greeting"], "hey");
    assert_eq!(
        rel.info
            .as_ref()
            .and_then(|i| i.first_deployed)
            .map(|t| t.to_string())
            .as_deref(),
        Some("2021-03-04T05:06:07.123456789+01:00"),
        "timestamps kept with their offset"
    );

    let after = get_cr(&client, &ar, "example-web").await;
    let st = after.data.get("status").expect("status");
    assert!(st.get("release").is_none(), "{st}");
    assert_eq!(
        st["deployedRelease"], status["deployedRelease"],
        "deployedRelease untouched"
    );
    assert_eq!(
        st["conditions"], status["conditions"],
        "conditions untouched"
    );
}

#[tokio::test]
async fn release_inside_deployed_condition_is_migrated() {
    let (ns, client) = start();
    let ar = install_crd(&client, true).await;
    let status = fixture("helm-v2-condition-release.json");
    let cr = create_cr(&client, &ar, "example-web", json!({}), status.clone(), true).await;

    let report = operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect("migrate");
    assert_eq!(report.from_status, [2]);
    let after = get_cr(&client, &ar, "example-web").await;
    let conds = after.data["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(conds.len(), 2);
    assert!(conds[1].get("release").is_none(), "{conds:?}");
    assert_eq!(conds[1]["reason"], "UpdateSuccessful");
    assert_eq!(conds[0], status["conditions"][0]);
    SecretDriver::for_namespace(client.clone(), ns.name())
        .get(&make_key("example-web", 2))
        .await
        .expect("Secret record");
}

#[tokio::test]
async fn interrupted_status_migration_resumes() {
    let (ns, client) = start();
    let ar = install_crd(&client, true).await;
    let cr = create_cr(
        &client,
        &ar,
        "example-web",
        json!({}),
        fixture("helm-v2-status-release.json"),
        true,
    )
    .await;
    // Crash after writing the Secret, before the status was patched.
    let written =
        operator::write_status_records(&client, &(&cr).into(), &ar, "example-web", ns.name(), None)
            .await
            .expect("write step");
    assert_eq!(written.len(), 1);
    let key = make_key("example-web", 2);
    let rv = secret_rv(&client, &key).await;
    assert!(rv.is_some());
    assert!(get_cr(&client, &ar, "example-web").await.data["status"]
        .get("release")
        .is_some());

    let report = operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect("resume");
    assert!(report.status_cleared);
    assert_eq!(secret_rv(&client, &key).await, rv, "not rewritten");
    assert!(get_cr(&client, &ar, "example-web").await.data["status"]
        .get("release")
        .is_none());
}

#[tokio::test]
async fn status_release_conflicting_with_a_secret_is_kept() {
    let (ns, client) = start();
    let ar = install_crd(&client, true).await;
    let cr = create_cr(
        &client,
        &ar,
        "example-web",
        json!({}),
        fixture("helm-v3-status-release.json"),
        true,
    )
    .await;
    let other = record(ns.name(), "example-web", 1, Status::Deployed);
    SecretDriver::for_namespace(client.clone(), ns.name())
        .create(&make_key("example-web", 1), &other)
        .await
        .expect("existing Secret");

    let err = operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect_err("conflict");
    let msg = release::api_error::chain(&err);
    assert!(
        msg.contains(&format!(
            "Secret {}/sh.helm.release.v1.example-web.v1",
            ns.name()
        )) && msg.contains(&format!("status.release of Web {}/example-web", ns.name())),
        "{msg}"
    );
    let after = get_cr(&client, &ar, "example-web").await;
    assert!(after.data["status"].get("release").is_some(), "status kept");
    assert_eq!(
        SecretDriver::for_namespace(client.clone(), ns.name())
            .get(&make_key("example-web", 1))
            .await
            .expect("Secret"),
        other
    );
}

#[tokio::test]
async fn stale_status_release_below_newer_records_is_kept_as_history() {
    let (ns, client) = start();
    let ar = install_crd(&client, true).await;
    let cr = create_cr(
        &client,
        &ar,
        "example-web",
        json!({}),
        fixture("helm-v2-status-release.json"),
        true,
    )
    .await;
    let newer = record(ns.name(), "example-web", 3, Status::Deployed);
    SecretDriver::for_namespace(client.clone(), ns.name())
        .create(&make_key("example-web", 3), &newer)
        .await
        .expect("newer record");
    operator::migrate(&client, &(&cr).into(), &ar, "example-web", ns.name())
        .await
        .expect("migrate");
    let old = SecretDriver::for_namespace(client.clone(), ns.name())
        .get(&make_key("example-web", 2))
        .await
        .expect("legacy revision written");
    assert_eq!(old.status(), Status::Superseded);
    let store = Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        ns.name(),
    )));
    assert_eq!(
        store
            .deployed("example-web")
            .await
            .expect("deployed")
            .map(|r| r.version),
        Some(3)
    );
}

#[tokio::test]
async fn undecodable_configmap_record_is_left_in_place() {
    let (ns, client) = start();
    let (ar, cr) = plain_cr(&client, "web").await;
    let originals = write_configmap_records(&client, "web").await;
    let broken: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "name": make_key("web", 3),
            "labels": {"owner": "helm", "name": "web", "status": "deployed", "version": "3"}
        },
        "data": {"release": "not base64 at all!"}
    }))
    .expect("ConfigMap");
    Api::<ConfigMap>::default_namespaced(client.clone())
        .create(&PostParams::default(), &broken)
        .await
        .expect("create broken record");

    let report = operator::migrate(&client, &(&cr).into(), &ar, "web", ns.name())
        .await
        .expect("migrate the readable ones");
    assert_eq!(report.copied, [1, 2]);
    assert_eq!(report.undecodable_configmaps, [make_key("web", 3)]);
    assert_eq!(configmap_names(&client).await, [make_key("web", 3)], "kept");
    let secrets = SecretDriver::for_namespace(client.clone(), ns.name());
    assert_eq!(originals.len(), 2);
    assert!(matches!(
        secrets.get(&make_key("web", 3)).await,
        Err(release::Error::NotFound(_))
    ));
}
