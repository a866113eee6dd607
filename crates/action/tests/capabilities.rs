//! `.Capabilities` during install and upgrade against the embedded API server: the
//! cluster's version and served APIs (CRDs included) are discovered as Helm does, an
//! explicit `kube_version`/`api_versions` skips discovery, a discovery failure is a
//! typed error that writes nothing, and a chart's `kubeVersion` constraint is checked
//! against the cluster's version.

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use action::Error;
use common::{diff_upgrade, faulty_client, install, opts, record_secret, start, storage, upgrade};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::Client;
use serde_json::{json, Map};
use testkit::TestNamespace;

const CAPS_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
data:
  version: {{ .Capabilities.KubeVersion.Version | quote }}
  gitVersion: {{ .Capabilities.KubeVersion.GitVersion | quote }}
  apps: {{ .Capabilities.APIVersions.Has "apps/v1" | quote }}
  deployment: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  core: {{ .Capabilities.APIVersions.Has "v1/Pod" | quote }}
  crdGroupVersion: {{ .Capabilities.APIVersions.Has (printf "%s/v1" .Values.crdGroup) | quote }}
  crdKind: {{ .Capabilities.APIVersions.Has (printf "%s/v1/Gadget" .Values.crdGroup) | quote }}
  missing: {{ .Capabilities.APIVersions.Has "nope.example.com/v1" | quote }}
  defaultOnly: {{ .Capabilities.APIVersions.Has "apps/v1beta1" | quote }}
  modern: {{ semverCompare ">=1.21-0" .Capabilities.KubeVersion.GitVersion | quote }}
"#;

/// The group of the test's own Gadget CRD: named after its namespace, so no other test
/// (nor another run on the same cluster) sees it.
fn crd_group(ns: &TestNamespace) -> String {
    format!("{}.capstest.rudder.dev", ns.name())
}

fn write_chart(ns: &TestNamespace, name: &str, kube_version: Option<&str>) -> PathBuf {
    let mut meta = format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n");
    if let Some(k) = kube_version {
        meta.push_str(&format!("kubeVersion: {k:?}\n"));
    }
    let values = format!("crdGroup: {}\n", crd_group(ns));
    testkit::write_chart(
        ns.dir(),
        name,
        &[
            ("Chart.yaml", &meta),
            ("values.yaml", &values),
            ("templates/caps.yaml", CAPS_TEMPLATE),
        ],
    )
}

/// Creates the test's Gadget CRD (deleted at teardown) and waits until discovery
/// serves it.
async fn create_crd(ns: &TestNamespace, client: &Client) {
    let group = crd_group(ns);
    let name = format!("gadgets.{group}");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .expect("CRD object");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("create CRD");
    ns.delete_on_teardown(testkit::crd::crd_resource(), &name);
    for _ in 0..100 {
        if client
            .list_api_group_resources(&format!("{group}/v1"))
            .await
            .is_ok_and(|l| l.resources.iter().any(|r| r.kind == "Gadget"))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the CRD never became served");
}

async fn caps_data(client: &Client, release: &str) -> std::collections::BTreeMap<String, String> {
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    cms.get(&format!("{release}-caps"))
        .await
        .expect("capabilities ConfigMap")
        .data
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_and_upgrade_see_the_clusters_capabilities() {
    let (ns, client) = start();
    let chart = write_chart(&ns, "caps", None);
    create_crd(&ns, &client).await;
    let server_version = client
        .apiserver_version()
        .await
        .expect("server version")
        .git_version;

    // The discovery itself, as Helm lists it.
    let found = action::discover(&client).await.expect("discovery");
    assert_eq!(found.kube_version, server_version);
    for entry in [
        "v1",
        "v1/Pod",
        "v1/ConfigMap",
        "apps/v1",
        "apps/v1/Deployment",
        &format!("{}/v1", crd_group(&ns)),
        &format!("{}/v1/Gadget", crd_group(&ns)),
    ] {
        assert!(
            found.api_versions.iter().any(|v| v == entry),
            "{entry} missing from {:?}",
            found.api_versions
        );
    }
    assert!(
        !found.api_versions.iter().any(|v| v.contains("/status")),
        "subresource names leaked: {:?}",
        found.api_versions
    );

    let load = || Arc::new(chart::loader::load(&chart).expect("chart loads"));
    install(&client, &load(), Map::new(), &opts(&ns, "caps"))
        .await
        .expect("install");
    let data = caps_data(&client, "caps").await;
    assert_eq!(
        data.get("version").map(String::as_str),
        Some(server_version.as_str())
    );
    assert_eq!(
        data.get("gitVersion").map(String::as_str),
        Some(server_version.as_str())
    );
    for (key, want) in [
        ("apps", "true"),
        ("deployment", "true"),
        ("core", "true"),
        ("crdGroupVersion", "true"),
        ("crdKind", "true"),
        ("missing", "false"),
        // In Helm's defaults but not served: the discovered set is used alone, as Helm does.
        ("defaultOnly", "false"),
        ("modern", "true"),
    ] {
        assert_eq!(
            data.get(key).map(String::as_str),
            Some(want),
            "{key}: {data:?}"
        );
    }

    // An explicit override wins over the cluster (like `--kube-version`/`--api-versions`).
    let mut explicit = opts(&ns, "caps");
    explicit.kube_version = Some("v1.20.0".into());
    explicit.api_versions = Some(vec!["nope.example.com/v1".into()]);
    upgrade(&client, &load(), Map::new(), &explicit)
        .await
        .expect("upgrade with explicit capabilities");
    let data = caps_data(&client, "caps").await;
    assert_eq!(data.get("version").map(String::as_str), Some("v1.20.0"));
    assert_eq!(data.get("missing").map(String::as_str), Some("true"));
    assert_eq!(data.get("crdKind").map(String::as_str), Some("false"));
    assert_eq!(data.get("modern").map(String::as_str), Some("false"));

    // Back to discovery: the CRD's kind is seen again; diff_upgrade renders the same.
    upgrade(&client, &load(), Map::new(), &opts(&ns, "caps"))
        .await
        .expect("upgrade");
    let data = caps_data(&client, "caps").await;
    assert_eq!(data.get("crdKind").map(String::as_str), Some("true"));
    let diff = diff_upgrade(&client, &load(), Map::new(), &opts(&ns, "caps"))
        .await
        .expect("diff");
    assert!(!diff.changed, "{}", diff.new_manifest);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_kube_version_constraint_is_checked_against_the_cluster() {
    let (ns, client) = start();
    let chart = write_chart(&ns, "future", Some(">=99.0.0"));
    let server_version = client
        .apiserver_version()
        .await
        .expect("server version")
        .git_version;
    let c = Arc::new(chart::loader::load(&chart).expect("chart loads"));
    let err = install(&client, &c, Map::new(), &opts(&ns, "future"))
        .await
        .expect_err("refused");
    assert!(matches!(err, Error::Render { .. }), "{err}");
    let want = format!(
        "chart requires kubeVersion: >=99.0.0 which is incompatible with Kubernetes {server_version}"
    );
    assert!(release::api_error::chain(&err).contains(&want), "{err}");
    assert!(record_secret(&client, "future", 1).await.is_none());

    // A constraint the cluster satisfies installs.
    let ok = write_chart(&ns, "present", Some(">=1.20.0-0"));
    let c = Arc::new(chart::loader::load(&ok).expect("chart loads"));
    install(&client, &c, Map::new(), &opts(&ns, "present"))
        .await
        .expect("install");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_failures() {
    let (ns, client) = start();
    let chart = write_chart(&ns, "caps", None);
    let load = || Arc::new(chart::loader::load(&chart).expect("chart loads"));

    // No server version: a typed error naming the cause, and nothing is written.
    let no_version = faulty_client(
        client.clone(),
        Arc::new(|m: &http::Method, p: &str| {
            (m == http::Method::GET && p == "/version").then(|| (503, "version is down".into()))
        }),
    );
    let err = install(&no_version, &load(), Map::new(), &opts(&ns, "down"))
        .await
        .expect_err("discovery fails");
    assert!(matches!(err, Error::Discovery { .. }), "{err}");
    assert!(
        release::api_error::chain(&err).contains("could not get server version"),
        "{err}"
    );
    assert!(record_secret(&client, "down", 1).await.is_none());
    assert!(storage(&client)
        .history("down")
        .await
        .expect("history")
        .is_empty());

    // Explicit capabilities need no discovery.
    let mut explicit = opts(&ns, "down");
    explicit.api_versions = Some(Vec::new());
    install(&no_version, &load(), Map::new(), &explicit)
        .await
        .expect("install without discovery");
    let data = caps_data(&client, "down").await;
    assert_eq!(data.get("version").map(String::as_str), Some("v1.36.0"));

    // A group version whose resources cannot be listed (an orphaned aggregated API) is
    // skipped like Helm does: its group/version stays, its kinds are missing.
    let broken_group = faulty_client(
        client.clone(),
        Arc::new(|m: &http::Method, p: &str| {
            (m == http::Method::GET && p == "/apis/batch/v1").then(|| {
                (
                    503,
                    "the server is currently unable to handle the request".into(),
                )
            })
        }),
    );
    let found = action::discover(&broken_group)
        .await
        .expect("partial discovery");
    assert!(found.api_versions.iter().any(|v| v == "batch/v1"));
    assert!(!found.api_versions.iter().any(|v| v == "batch/v1/Job"));
    assert!(found.api_versions.iter().any(|v| v == "apps/v1/Deployment"));
    install(&broken_group, &load(), Map::new(), &opts(&ns, "partial"))
        .await
        .expect("install despite a broken group");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_cache_is_reused_until_it_expires_or_is_invalidated() {
    let (ns, client) = start();
    let chart = write_chart(&ns, "cached", None);
    let load = || Arc::new(chart::loader::load(&chart).expect("chart loads"));
    let cache = Arc::new(action::DiscoveryCache::new(Duration::from_secs(3600)));
    let cached = opts(&ns, "cached");
    let shared = action::ActionConfig::new(client.clone()).with_discovery(cache.clone());
    let crd_kind_seen = || async { caps_data(&client, "cached").await.get("crdKind").cloned() };

    action::Install::new(&shared, cached.clone())
        .run(&load(), Map::new())
        .await
        .expect("install");
    assert_eq!(crd_kind_seen().await.as_deref(), Some("false"));
    create_crd(&ns, &client).await;
    // Within the TTL the remembered discovery is used: the new CRD is not seen.
    let up = action::Upgrade::new(&shared, cached.clone());
    up.run(&load(), Map::new()).await.expect("upgrade");
    assert_eq!(crd_kind_seen().await.as_deref(), Some("false"));
    cache.invalidate().await;
    up.run(&load(), Map::new())
        .await
        .expect("upgrade after invalidate");
    assert_eq!(crd_kind_seen().await.as_deref(), Some("true"));

    // An expired cache discovers again.
    let expired = action::DiscoveryCache::new(Duration::ZERO);
    let first = expired.get(&client).await.expect("discovery");
    assert!(first
        .api_versions
        .iter()
        .any(|v| *v == format!("{}/v1/Gadget", crd_group(&ns))));
}
