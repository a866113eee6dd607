//! The kit against a cluster (the embedded server, or `RUDDER_TEST_KUBECONFIG`'s):
//! namespaces come and go with their tests, kubeconfigs default to them, CRDs are
//! served once installed, and the readiness helper settles workloads.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use testkit::{crd, eventually, Cluster};

const SETTLE: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_namespace_is_the_tests_own_and_goes_with_it() {
    let cluster = Cluster::start();
    let ns = cluster.namespace("kit-ns");
    let name = ns.name().to_string();
    let client = ns.client();
    assert_eq!(client.default_namespace(), name);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "probe"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();

    // The namespace's kubeconfig defaults to it.
    if let Some(kubectl) = ns.kubectl() {
        let out = kubectl.ok(&["get", "configmap", "probe", "-o", "name"]);
        assert_eq!(out.trim(), "configmap/probe");
    }

    ns.teardown();
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    assert!(
        namespaces.get_opt(&name).await.unwrap().is_none(),
        "teardown waits until the namespace is gone"
    );
}

#[tokio::test]
async fn teardown_releases_finalizers_no_controller_is_left_to_run() {
    let cluster = Cluster::start();
    let resource = cluster.install_crd(&crd::open_crd("kit.rudder.dev", "v1", "Held"));
    let ns = cluster.namespace("kit-held");
    let name = ns.name().to_string();
    let held: Api<DynamicObject> = Api::namespaced_with(ns.client(), &name, &resource);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kit.rudder.dev/v1", "kind": "Held",
        "metadata": {"name": "h", "finalizers": ["kit.rudder.dev/never"]},
        "spec": {},
    }))
    .unwrap();
    held.create(&PostParams::default(), &obj).await.unwrap();
    drop(ns);
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    assert!(namespaces.get_opt(&name).await.unwrap().is_none());
}

#[tokio::test]
async fn installing_a_crd_twice_serves_it_once() {
    let cluster = Cluster::start();
    let crd = crd::open_crd("kit.rudder.dev", "v1", "Twice");
    let first = cluster.install_crd(&crd);
    let second = cluster.install_crd(&crd);
    assert_eq!(first.plural, second.plural);
    let ns = cluster.namespace("kit-crd");
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client(), ns.name(), &first);
    assert!(api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .is_empty());
}

/// The helper that stands in for a kubelet, run against the embedded server with the
/// server's own simulation off.
#[tokio::test]
async fn the_readiness_helper_settles_workloads_jobs_and_claims() {
    let cluster = Cluster::builder().readiness_helper().start();
    if cluster.is_external() {
        testkit::skip!("the helper runs by itself on external clusters; this test drives it on the embedded server");
    }
    let ns = cluster.namespace("kit-ready");
    let client = ns.client();
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let pvcs: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
    let dep = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    }))
    .unwrap();
    deps.create(&PostParams::default(), &dep).await.unwrap();
    let job = serde_json::from_value(json!({
        "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
                 "containers": [{"name": "once", "image": "busybox"}]}}},
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let pvc = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .unwrap();
    pvcs.create(&PostParams::default(), &pvc).await.unwrap();

    eventually(SETTLE, || async {
        let d = deps.get("web").await.ok()?;
        let s = d.status?;
        (s.available_replicas == Some(2) && s.observed_generation == d.metadata.generation)
            .then_some(())
    })
    .await;
    eventually(SETTLE, || async {
        let j = jobs.get("once").await.ok()?;
        j.status?
            .conditions?
            .iter()
            .any(|c| c.type_ == "Complete" && c.status == "True")
            .then_some(())
    })
    .await;
    eventually(SETTLE, || async {
        let p = pvcs.get("data").await.ok()?;
        (p.status?.phase.as_deref() == Some("Bound")).then_some(())
    })
    .await;
}

#[test]
fn a_cluster_works_from_a_synchronous_test() {
    let cluster = Cluster::start();
    let ns = cluster.namespace("kit-sync");
    let Some(kubectl) = ns.kubectl() else {
        return;
    };
    kubectl.apply_yaml("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sync}\ndata: {a: b}\n");
    let cm = kubectl.get(&["configmap", "sync"]).expect("exists");
    assert_eq!(cm["metadata"]["namespace"], ns.name());
    assert!(kubectl.get(&["configmap", "absent"]).is_none());
}

/// A chart's cluster-scoped objects (an APIService, a ClusterRole) are Helm-annotated
/// with their release's namespace: teardown deletes them even when the test never
/// uninstalled the release, and removes the operator's finalizer no operator is left
/// to run.
#[tokio::test]
async fn teardown_deletes_what_releases_left_and_operator_finalizers() {
    let cluster = Cluster::start();
    let resource = cluster.install_crd(&crd::open_crd("kit.rudder.dev", "v1", "Released"));
    let ns = cluster.namespace("kit-release");
    let name = ns.name().to_string();
    let client = ns.client();
    let helm = |kind: &str, api: &str, object: &str, extra: serde_json::Value| {
        let mut v = json!({
            "apiVersion": api, "kind": kind,
            "metadata": {"name": object,
                "labels": {"app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "r",
                                "meta.helm.sh/release-namespace": name}},
        });
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        serde_json::from_value::<DynamicObject>(v).expect("object")
    };
    let role_name = format!("{name}-reader");
    let roles: Api<DynamicObject> = Api::all_with(client.clone(), &role_resource());
    roles
        .create(
            &PostParams::default(),
            &helm(
                "ClusterRole",
                "rbac.authorization.k8s.io/v1",
                &role_name,
                json!({"rules": []}),
            ),
        )
        .await
        .expect("create ClusterRole");
    let group = format!("{name}.metrics.rudder.dev");
    let apiservice = format!("v1beta1.{group}");
    let apiservices: Api<DynamicObject> = Api::all_with(client.clone(), &apiservice_resource());
    let spec = json!({"spec": {"group": group, "version": "v1beta1", "groupPriorityMinimum": 100,
        "versionPriority": 100, "service": {"name": "adapter", "namespace": name, "port": 443}}});
    apiservices
        .create(
            &PostParams::default(),
            &helm("APIService", "apiregistration.k8s.io/v1", &apiservice, spec),
        )
        .await
        .expect("create APIService");
    // Someone else's ClusterRole stays.
    let other_name = format!("{name}-other");
    let mut other = helm(
        "ClusterRole",
        "rbac.authorization.k8s.io/v1",
        &other_name,
        json!({"rules": []}),
    );
    if let Some(a) = other.metadata.annotations.as_mut() {
        a.insert("meta.helm.sh/release-namespace".into(), "elsewhere".into());
    }
    roles
        .create(&PostParams::default(), &other)
        .await
        .expect("create the other ClusterRole");
    let held: Api<DynamicObject> = Api::namespaced_with(client.clone(), &name, &resource);
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kit.rudder.dev/v1", "kind": "Released",
        "metadata": {"name": "cr", "finalizers": [testkit::OPERATOR_FINALIZERS[0]]},
        "spec": {},
    }))
    .unwrap();
    held.create(&PostParams::default(), &cr).await.unwrap();

    drop(ns);
    let admin = cluster.client();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    assert!(namespaces.get_opt(&name).await.unwrap().is_none());
    let roles: Api<DynamicObject> = Api::all_with(admin.clone(), &role_resource());
    assert!(roles.get_opt(&role_name).await.unwrap().is_none());
    let apiservices: Api<DynamicObject> = Api::all_with(admin, &apiservice_resource());
    assert!(apiservices.get_opt(&apiservice).await.unwrap().is_none());
    assert!(roles.get_opt(&other_name).await.unwrap().is_some());
    roles
        .delete(&other_name, &Default::default())
        .await
        .expect("clean up the other ClusterRole");
}

fn role_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        "clusterroles",
    )
}

fn apiservice_resource() -> kube::api::ApiResource {
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("apiregistration.k8s.io", "v1", "APIService"),
        "apiservices",
    )
}

/// The unavailable-API proxy lists the group and answers it as kube-apiserver does for
/// an APIService whose service is down, and passes everything else on.
#[tokio::test]
async fn the_unavailable_api_proxy_answers_as_kube_apiserver_does() {
    let cluster = Cluster::start();
    let ns = cluster.namespace("kit-unavailable");
    let proxy = ns.unavailable_api("custom.metrics.k8s.io/v1beta1");
    let mut config = proxy.config(ns.name());
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let groups = client.list_api_groups().await.expect("/apis");
    assert!(groups
        .groups
        .iter()
        .any(|g| g.name == "custom.metrics.k8s.io"
            && g.versions
                .iter()
                .any(|v| v.group_version == "custom.metrics.k8s.io/v1beta1")));
    assert!(groups.groups.iter().any(|g| g.name == "apps"));
    let err = client
        .list_api_group_resources("custom.metrics.k8s.io/v1beta1")
        .await
        .expect_err("unavailable");
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 503);
            assert_eq!(s.message.trim(), testkit::UNAVAILABLE_BODY.trim());
        }
        other => panic!("expected a 503, got {other}"),
    }
    assert_eq!(proxy.requests(), 1);
    assert_eq!(proxy.requests_for("/apis/custom.metrics.k8s.io/v1beta1"), 1);
    assert_eq!(proxy.apiservice(), "v1beta1.custom.metrics.k8s.io");
    let cms: Api<ConfigMap> = Api::default_namespaced(client);
    assert!(cms
        .list(&Default::default())
        .await
        .expect("passed on")
        .items
        .is_empty());
}

/// A real APIService whose Service is missing: the cluster lists its group, answers its
/// discovery with 503 and says `ServiceNotFound`; teardown deletes it before the
/// namespace, which could not finish while it exists.
#[tokio::test]
async fn an_unavailable_apiservice_is_served_as_down_and_removed_at_teardown() {
    let cluster = Cluster::start();
    let ns = cluster.namespace("kit-apiservice");
    let name = ns.name().to_string();
    let group = format!("{name}.metrics.rudder.dev");
    let apiservice = ns.unavailable_apiservice(&format!("{group}/v1beta1"));
    assert_eq!(apiservice, format!("v1beta1.{group}"));

    let mut config = cluster.config().clone();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let groups = client.list_api_groups().await.expect("/apis");
    assert!(groups.groups.iter().any(|g| g.name == group));
    match client
        .list_api_group_resources(&format!("{group}/v1beta1"))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 503);
            assert_eq!(s.message.trim(), testkit::UNAVAILABLE_BODY.trim());
        }
        other => panic!("expected a 503, got {other:?}"),
    }
    let apiservices: Api<DynamicObject> = Api::all_with(client.clone(), &apiservice_resource());
    let stored = apiservices.get(&apiservice).await.expect("registered");
    let available = stored.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .cloned()
        .expect("an Available condition");
    assert_eq!(available["status"], "False");
    assert_eq!(available["reason"], "ServiceNotFound");
    assert_eq!(
        available["message"],
        format!("service/unavailable-api in \"{name}\" is not present")
    );
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap_or_default()
            .get(testkit::CREATED_BY.0),
        Some(&testkit::CREATED_BY.1.to_string())
    );

    drop(ns);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(&name).await.unwrap().is_none());
    assert!(apiservices.get_opt(&apiservice).await.unwrap().is_none());
}

/// Set for the child process of `an_overrunning_test_is_reported_and_cleaned_up`.
const OVERRUN_CHILD_ENV: &str = "TESTKIT_OVERRUN_CHILD";

/// A test that hangs past its deadline; run (as a child process) only by
/// `an_overrunning_test_is_reported_and_cleaned_up`.
#[tokio::test]
#[ignore = "hangs on purpose: run in a child process by an_overrunning_test_is_reported_and_cleaned_up"]
async fn overrunning_child() {
    if std::env::var_os(OVERRUN_CHILD_ENV).is_none() {
        testkit::skip!(
            "only meaningful as the child of an_overrunning_test_is_reported_and_cleaned_up"
        );
    }
    let cluster = Cluster::builder().deadline(Duration::from_secs(2)).start();
    let ns = cluster.namespace("kit-overrun");
    println!("NAMESPACE {}", ns.name());
    eventually(Duration::from_secs(3600), || async { false }).await;
}

/// A test past its deadline is reported with what it waited for, its namespace is
/// deleted (on an external cluster: the embedded server goes with the process) and
/// the process exits instead of hanging the run.
#[test]
fn an_overrunning_test_is_reported_and_cleaned_up() {
    let exe = std::env::current_exe().expect("the test binary");
    let child = std::process::Command::new(exe)
        .args(["--exact", "overrunning_child", "--ignored", "--nocapture"])
        .env(OVERRUN_CHILD_ENV, "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the child");
    let out = String::from_utf8_lossy(&child.stdout);
    let err = String::from_utf8_lossy(&child.stderr);
    assert_eq!(
        child.status.code(),
        Some(101),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(
        err.contains("test overrunning_child did not finish within its deadline of 2s"),
        "{err}"
    );
    assert!(
        err.contains("waiting for the check at crates/testkit/tests/kit.rs"),
        "{err}"
    );
    let name = out
        .lines()
        .find_map(|l| l.strip_prefix("NAMESPACE "))
        .expect("the child's namespace")
        .trim()
        .to_string();
    let cluster = Cluster::start();
    if cluster.is_external() {
        assert!(err.contains(&format!("deleted namespace {name}")), "{err}");
        let config = cluster.config().clone();
        let gone = cluster.block_on(async move {
            let client = kube::Client::try_from(config).expect("client");
            Api::<Namespace>::all(client).get_opt(&name).await
        });
        assert!(gone.expect("read namespace").is_none());
    }
}
