//! An aggregated API whose service is down (kube-apiserver lists its group in `/apis`
//! and answers its discovery with 503) must not stall an action: discovery skips that
//! group version after one request, without retries, renders and installs go on, and
//! a `lookup` or an object of one of its kinds fails with an error naming the API and
//! its APIService, without asking it again. The cluster is testkit's, behind its
//! unavailable-API proxy (which counts the requests), or with a real APIService whose
//! Service is missing registered on it (as on a real cluster).

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use action::{ActionConfig, DiscoveryCache, Error, Install, KindError, Upgrade};
use common::opts;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::Map;
use testkit::{Cluster, TestNamespace, UnavailableApi};

const GV: &str = "custom.metrics.k8s.io/v1beta1";

fn start() -> (TestNamespace, UnavailableApi, kube::Client) {
    let ns = Cluster::start().namespace("unavailable-api");
    let proxy = ns.unavailable_api(GV);
    let client = action::retry::client(proxy.config(ns.name())).expect("client");
    (ns, proxy, client)
}

fn chart(ns: &TestNamespace, name: &str, template: &str) -> Arc<chart::loader::Chart> {
    let meta = format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n");
    let dir: PathBuf = testkit::write_chart(
        ns.dir(),
        name,
        &[
            ("Chart.yaml", meta.as_str()),
            ("templates/t.yaml", template),
        ],
    );
    Arc::new(chart::loader::load(&dir).expect("chart loads"))
}

const ONE_CONFIGMAP: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  metrics: {{ .Capabilities.APIVersions.Has "custom.metrics.k8s.io/v1beta1" | quote }}
  metricKind: {{ .Capabilities.APIVersions.Has "custom.metrics.k8s.io/v1beta1/MetricValueList" | quote }}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_aggregated_api_is_skipped_at_once() {
    let (ns, proxy, client) = start();
    let caps = action::discover(&client).await.expect("partial discovery");
    assert!(caps.unavailable.iter().any(|v| v == GV), "{caps:?}");
    if !ns.cluster().is_external() {
        // A shared cluster may have other tests' unavailable APIs meanwhile.
        assert_eq!(caps.unavailable, [GV]);
    }
    assert!(caps.api_versions.iter().any(|v| v == GV));
    assert!(caps.api_versions.iter().any(|v| v == "v1/ConfigMap"));
    assert_eq!(proxy.requests(), 1, "one request, no retries");

    // A one-object chart installs; its render saw the group version, not its kinds.
    let cfg = ActionConfig::new(client.clone());
    Install::new(&cfg, opts(&ns, "pc"))
        .run(&chart(&ns, "pc", ONE_CONFIGMAP), Map::new())
        .await
        .expect("install despite the unavailable API");
    let cms: Api<ConfigMap> = Api::namespaced(ns.client(), ns.name());
    let data = cms
        .get("pc")
        .await
        .expect("installed")
        .data
        .unwrap_or_default();
    assert_eq!(data.get("metrics").map(String::as_str), Some("true"));
    assert_eq!(data.get("metricKind").map(String::as_str), Some("false"));
    assert_eq!(proxy.requests(), 2, "the install's render asked once");

    // A shared cache asks it once per refresh, not once per render.
    let shared = ActionConfig::new(client.clone())
        .with_discovery(Arc::new(DiscoveryCache::new(Duration::from_secs(3600))));
    for _ in 0..3 {
        Upgrade::new(&shared, opts(&ns, "pc"))
            .run(&chart(&ns, "pc", ONE_CONFIGMAP), Map::new())
            .await
            .expect("upgrade");
    }
    assert_eq!(proxy.requests(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_of_an_unavailable_api_fail_with_a_clear_error() {
    let (ns, proxy, client) = start();
    let cfg = ActionConfig::new(client.clone());

    // `lookup` of one of its kinds is an error, as in Helm, naming the cause.
    let lookup = r#"{{ $m := lookup "custom.metrics.k8s.io/v1beta1" "MetricValueList" "" "" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: looked
"#;
    let err = Install::new(&cfg, opts(&ns, "looked"))
        .run(&chart(&ns, "looked", lookup), Map::new())
        .await
        .expect_err("lookup of an unavailable kind");
    let text = release::api_error::chain(&err);
    assert!(
        text.contains("unable to get apiresource from unstructured"),
        "{text}"
    );
    assert!(
        text.contains("the server is currently unable to handle the request"),
        "{text}"
    );
    // Discovery and the lookup shared one failed request.
    assert_eq!(proxy.requests(), 1);

    // An object of one of its kinds: a typed error naming the API and its APIService;
    // nothing is written.
    let object =
        "apiVersion: custom.metrics.k8s.io/v1beta1\nkind: MetricValueList\nmetadata:\n  name: m\n";
    let err = Install::new(&cfg, opts(&ns, "metric"))
        .run(&chart(&ns, "metric", object), Map::new())
        .await
        .expect_err("object of an unavailable kind");
    match &err {
        Error::UnknownKind { source, .. } => {
            assert!(matches!(**source, KindError::Unavailable { .. }), "{err}")
        }
        other => panic!("expected UnknownKind, got {other}"),
    }
    let text = release::api_error::chain(&err);
    assert!(text.contains(GV), "{text}");
    assert!(text.contains("v1beta1.custom.metrics.k8s.io"), "{text}");
    assert!(common::record_secret(&ns.client(), "metric", 1)
        .await
        .is_none());
    assert_eq!(proxy.requests(), 2);
}

/// The same against a real APIService whose Service is missing (no proxy): the
/// embedded server and a real kube-apiserver list its group version and answer it with
/// 503, and an install goes on without it; an object of one of its kinds fails naming
/// the API and its APIService. The group is the test's own: the APIService is
/// cluster-wide while it exists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_unavailable_apiservice_is_skipped_at_once() {
    let ns = Cluster::start().namespace("unavailable-apiservice");
    let gv = format!("{}.metrics.rudder.dev/v1beta1", ns.name());
    let apiservice = ns.unavailable_apiservice(&gv);
    let mut config = ns.cluster().config().clone();
    config.default_namespace = ns.name().to_string();
    let client = action::retry::client(config).expect("client");

    let caps = action::discover(&client).await.expect("partial discovery");
    assert!(caps.unavailable.contains(&gv), "{caps:?}");
    assert!(caps.api_versions.contains(&gv));
    assert!(caps.api_versions.iter().any(|v| v == "v1/ConfigMap"));

    let template = ONE_CONFIGMAP.replace(GV, &gv);
    let cfg = ActionConfig::new(client.clone());
    Install::new(&cfg, opts(&ns, "pc"))
        .run(&chart(&ns, "pc", &template), Map::new())
        .await
        .expect("install despite the unavailable API");
    let cms: Api<ConfigMap> = Api::namespaced(ns.client(), ns.name());
    let data = cms
        .get("pc")
        .await
        .expect("installed")
        .data
        .unwrap_or_default();
    assert_eq!(data.get("metrics").map(String::as_str), Some("true"));
    assert_eq!(data.get("metricKind").map(String::as_str), Some("false"));

    let object = format!("apiVersion: {gv}\nkind: MetricValueList\nmetadata:\n  name: m\n");
    let err = Install::new(&cfg, opts(&ns, "metric"))
        .run(&chart(&ns, "metric", &object), Map::new())
        .await
        .expect_err("object of an unavailable kind");
    match &err {
        Error::UnknownKind { source, .. } => {
            assert!(matches!(**source, KindError::Unavailable { .. }), "{err}")
        }
        other => panic!("expected UnknownKind, got {other}"),
    }
    let text = release::api_error::chain(&err);
    assert!(text.contains(&gv), "{text}");
    assert!(text.contains(&format!("APIService {apiservice}")), "{text}");
    assert!(common::record_secret(&ns.client(), "metric", 1)
        .await
        .is_none());
}
