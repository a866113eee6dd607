//! Aggregated APIs as kube-apiserver serves them: an APIService whose
//! Service is missing or has no ready endpoints is listed in `/apis`, its
//! group answers 200, its group version and everything under it answer 503
//! `service unavailable`, its status says why with kube-aggregator's
//! reasons and messages, and a namespace being deleted waits for its
//! discovery with kube-controller-manager's conditions. kubectl (when on
//! PATH) sees it as it sees a real cluster's broken metrics API.

mod support;

use apiserver::{Authorization, Config, Server};
use serde_json::{json, Value};
use std::future::Future;
use std::process::Command;
use support::{json as req, refused, send, send_with, start, Reply};

const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const NAME: &str = "v1beta1.custom.metrics.k8s.io";
const GROUP: &str = "/apis/custom.metrics.k8s.io";
const GROUP_VERSION: &str = "/apis/custom.metrics.k8s.io/v1beta1";

fn apiservice(service: Value) -> Value {
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": NAME},
        "spec": {"group": "custom.metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100,
            "insecureSkipTLSVerify": service.is_object(), "service": service}})
}

async fn get(server: &Server, path: &str) -> Reply {
    send(server, "GET", path, None, b"").await
}

/// The `Available` condition of the APIService.
async fn available(server: &Server) -> Value {
    let r = get(server, &format!("{APISERVICES}/{NAME}")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    r.body["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Polls `f` until it gives a value (5 s at most).
async fn wait_for<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..200 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Waits until the `Available` condition has `reason` and returns it.
async fn wait_reason(server: &Server, reason: &str) -> Value {
    wait_for(&format!("Available reason {reason}"), || async move {
        Some(available(server).await).filter(|c| c["reason"] == reason)
    })
    .await
}

#[track_caller]
fn assert_unavailable(r: &Reply) {
    assert_eq!(r.code, 503, "{}", r.text);
    assert_eq!(r.text, "service unavailable\n");
    assert_eq!(r.header("content-type"), ["text/plain; charset=utf-8"]);
    assert_eq!(r.header("x-content-type-options"), ["nosniff"]);
    assert!(r.header("retry-after").is_empty());
}

#[tokio::test]
async fn an_apiservice_without_its_service_is_listed_and_answers_503() {
    let server = start().await;
    // Status is the availability controller's: what a create sends is dropped.
    let mut body = apiservice(json!({"name": "adapter", "namespace": "default"}));
    body["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
    let r = req(&server, "POST", APISERVICES, &body).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["spec"]["service"]["port"], 443, "defaulted");
    assert!(r.body.get("status").is_none(), "{}", r.body);

    let c = wait_reason(&server, "ServiceNotFound").await;
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        "service/adapter in \"default\" is not present"
    );
    assert!(c["lastTransitionTime"].is_string());

    let gv = json!({"groupVersion": "custom.metrics.k8s.io/v1beta1", "version": "v1beta1"});
    let group = json!({"name": "custom.metrics.k8s.io", "versions": [gv], "preferredVersion": gv});
    let r = get(&server, "/apis").await;
    assert_eq!(r.code, 200);
    let groups = r.body["groups"].as_array().expect("groups");
    assert_eq!(
        groups.last(),
        Some(&group),
        "listed after the served groups"
    );
    assert_eq!(
        groups
            .iter()
            .filter(|g| g["name"] == "custom.metrics.k8s.io")
            .count(),
        1
    );
    let r = get(&server, GROUP).await;
    assert_eq!(r.code, 200);
    let mut doc = group.clone();
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    assert_eq!(r.body, doc);

    assert_unavailable(&get(&server, GROUP_VERSION).await);
    assert_unavailable(&get(&server, &format!("{GROUP_VERSION}/")).await);
    assert_unavailable(
        &get(
            &server,
            &format!("{GROUP_VERSION}/namespaces/default/pods/*/http_requests"),
        )
        .await,
    );
    assert_unavailable(&get(&server, &format!("{GROUP_VERSION}/watch/things?watch=true")).await);
    let r = req(
        &server,
        "POST",
        &format!("{GROUP_VERSION}/namespaces/default/things"),
        &json!({"metadata": {"name": "t"}}),
    )
    .await;
    assert_unavailable(&r);

    // Gone with its APIService.
    let r = send(
        &server,
        "DELETE",
        &format!("{APISERVICES}/{NAME}"),
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = get(&server, "/apis").await;
    assert!(!r.text.contains("custom.metrics.k8s.io"), "{}", r.text);
    refused(
        &get(&server, GROUP).await,
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    refused(
        &get(&server, GROUP_VERSION).await,
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
}

#[tokio::test]
async fn availability_follows_the_service_and_its_endpoint_slices() {
    let server = start().await;
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "adapter"},
        "spec": {"selector": {"app": "adapter"},
            "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}});
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/default/services",
        &service,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let cluster_ip = r.body["spec"]["clusterIP"]
        .as_str()
        .expect("clusterIP")
        .to_string();
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &apiservice(json!({"name": "adapter", "namespace": "default"})),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);

    // No EndpointSlice at all (nothing here runs their controller).
    let first = wait_reason(&server, "EndpointsNotFound").await;
    assert_eq!(
        first["message"],
        "cannot find endpointslices for service/adapter in \"default\""
    );
    let since = first["lastTransitionTime"].clone();

    // An empty slice: what a real cluster shows while no Pod is ready.
    const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let slice = |endpoints: Value| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "adapter-x1", "labels": {"kubernetes.io/service-name": "adapter"}},
            "addressType": "IPv4", "endpoints": endpoints,
            "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]})
    };
    let r = req(&server, "POST", SLICES, &slice(json!([]))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let c = wait_reason(&server, "MissingEndpoints").await;
    assert_eq!(
        c["message"],
        "endpointslices for service/adapter in \"default\" have no addresses with port name \"https\""
    );
    assert_eq!(c["lastTransitionTime"], since, "still False: no transition");

    // An endpoint that is not ready is no address either.
    let unready = json!([{"addresses": ["10.244.0.7"], "conditions": {"ready": false}}]);
    let r = req(
        &server,
        "PUT",
        &format!("{SLICES}/adapter-x1"),
        &slice(unready),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    // A ready one passes the checks; the discovery check cannot.
    let ready = json!([{"addresses": ["10.244.0.7"], "conditions": {"ready": true}}]);
    let r = req(
        &server,
        "PUT",
        &format!("{SLICES}/adapter-x1"),
        &slice(ready),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let c = wait_reason(&server, "FailedDiscoveryCheck").await;
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        format!(
            "failing or missing response from https://{cluster_ip}:443/apis/custom.metrics.k8s.io/v1beta1: \
             the embedded API server does not reach aggregated API servers"
        )
    );
    assert_unavailable(&get(&server, GROUP_VERSION).await);

    // The Service stops listening on the APIService's port.
    let mut moved = service.clone();
    moved["spec"]["ports"][0]["port"] = json!(8443);
    let r = req(
        &server,
        "PUT",
        "/api/v1/namespaces/default/services/adapter",
        &moved,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let c = wait_reason(&server, "ServicePortError").await;
    assert_eq!(
        c["message"],
        "service/adapter in \"default\" is not listening on port 443"
    );

    let r = send(
        &server,
        "DELETE",
        "/api/v1/namespaces/default/services/adapter",
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let c = wait_reason(&server, "ServiceNotFound").await;
    assert_eq!(c["lastTransitionTime"], since);
}

#[tokio::test]
async fn a_local_apiservice_is_available_and_served_here() {
    let server = start().await;
    let local = |name: &str, group: &str, version: &str| {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name},
            "spec": {"group": group, "version": version,
                "groupPriorityMinimum": 17800, "versionPriority": 15}})
    };
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &local("v1.apps", "apps", "v1"),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &local(
            "v1alpha1.local.example.com",
            "local.example.com",
            "v1alpha1",
        ),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    for name in ["v1.apps", "v1alpha1.local.example.com"] {
        let server = &server;
        let condition = wait_for("a Local condition", || async move {
            let r = get(server, &format!("{APISERVICES}/{name}")).await;
            Some(r.body["status"]["conditions"][0].clone()).filter(|c| !c.is_null())
        })
        .await;
        assert_eq!(condition["type"], "Available");
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "Local");
        assert_eq!(
            condition["message"],
            "Local APIServices are always available"
        );
    }
    // Served here: apps as before, once in /apis; a group nothing serves is
    // listed but has no resources.
    let r = get(&server, "/apis").await;
    let groups = r.body["groups"].as_array().expect("groups");
    let apps: Vec<&Value> = groups.iter().filter(|g| g["name"] == "apps").collect();
    assert_eq!(apps.len(), 1);
    assert_eq!(apps[0]["versions"].as_array().map(Vec::len), Some(1));
    assert!(groups.iter().any(|g| g["name"] == "local.example.com"));
    assert_eq!(get(&server, "/apis/apps/v1").await.code, 200);
    assert_eq!(get(&server, "/apis/local.example.com").await.code, 200);
    assert_eq!(
        get(&server, "/apis/local.example.com/v1alpha1").await.code,
        404
    );
}

#[tokio::test]
async fn apiservices_are_validated_as_kube_aggregator_does() {
    let server = start().await;
    let mut bad = apiservice(json!({"name": "adapter", "namespace": ""}));
    bad["metadata"]["name"] = json!("custom-metrics");
    bad["spec"]["versionPriority"] = json!(0);
    let r = req(&server, "POST", APISERVICES, &bad).await;
    refused(
        &r,
        422,
        "Invalid",
        "APIService.apiregistration.k8s.io \"custom-metrics\" is invalid: [\
         metadata.name: Invalid value: \"custom-metrics\": must be `spec.version+\".\"+spec.group`: \"v1beta1.custom.metrics.k8s.io\", \
         spec.versionPriority: Invalid value: 0: must be positive and less than 1000, \
         spec.service.namespace: Required value]",
    );
}

#[tokio::test]
async fn rbac_refuses_before_the_aggregator_answers() {
    let server = Server::start(Config {
        authorization: Authorization::Rbac,
        ..Config::default()
    })
    .await
    .expect("server starts");
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &apiservice(json!({"name": "adapter", "namespace": "default"})),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        &json!({"metadata": {"name": "nobody"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/nobody/token",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    let token = r.body["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let r = send_with(
        &server,
        Some(&token),
        "GET",
        &format!("{GROUP_VERSION}/namespaces/default/things"),
        None,
        b"",
    )
    .await;
    refused(
        &r,
        403,
        "Forbidden",
        "things.custom.metrics.k8s.io is forbidden: User \"system:serviceaccount:default:nobody\" cannot list resource \"things\" in API group \"custom.metrics.k8s.io\" in the namespace \"default\"",
    );
    // Nor does a stranger, whatever the verb.
    for method in ["GET", "HEAD", "OPTIONS"] {
        let r = send_with(
            &server,
            Some("not-a-token"),
            method,
            &format!("{GROUP_VERSION}/namespaces/default/things"),
            None,
            b"",
        )
        .await;
        assert_eq!(r.code, 401, "{method}: {}", r.text);
    }
    // The admin gets through to the aggregator.
    assert_unavailable(
        &get(
            &server,
            &format!("{GROUP_VERSION}/namespaces/default/things"),
        )
        .await,
    );
}

#[tokio::test]
async fn a_namespace_waits_for_the_discovery_of_every_group() {
    let server = start().await;
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &apiservice(json!({"name": "adapter", "namespace": "monitoring"})),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "doomed"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    for (name, finalizers) in [("plain", json!([])), ("held", json!(["example.com/hold"]))] {
        let cm = json!({"metadata": {"name": name, "finalizers": finalizers}});
        let r = req(&server, "POST", "/api/v1/namespaces/doomed/configmaps", &cm).await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let r = send(&server, "DELETE", "/api/v1/namespaces/doomed", None, b"").await;
    assert_eq!(r.code, 200, "{}", r.body);

    let conditions = |ns: &Value| -> Vec<(String, String, String, String)> {
        ns["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let f = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                (f("type"), f("status"), f("reason"), f("message"))
            })
            .collect()
    };
    let discovery = (
        "NamespaceDeletionDiscoveryFailure".to_string(),
        "True".to_string(),
        "DiscoveryFailed".to_string(),
        "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: custom.metrics.k8s.io/v1beta1: stale GroupVersion discovery: custom.metrics.k8s.io/v1beta1".to_string(),
    );
    let s = &server;
    let held = &discovery;
    let ns = wait_for("the discovery failure condition", || async move {
        let ns = get(s, "/api/v1/namespaces/doomed").await.body;
        Some(ns).filter(|ns| conditions(ns).first() == Some(held))
    })
    .await;
    assert_eq!(ns["status"]["phase"], "Terminating");
    let owned = |t: &str, s: &str, r: &str, m: &str| {
        (t.to_string(), s.to_string(), r.to_string(), m.to_string())
    };
    assert_eq!(
        conditions(&ns),
        [
            discovery.clone(),
            owned(
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed"
            ),
            owned(
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization"
            ),
            owned(
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances"
            ),
            owned(
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizerRemain",
                "Some finalizers are remaining: example.com/hold in 1 resource instances"
            ),
        ]
    );
    // What could go went.
    assert_eq!(
        get(&server, "/api/v1/namespaces/doomed/configmaps/plain")
            .await
            .code,
        404
    );

    // Its last object gone, the namespace still waits for the discovery.
    let r = req(
        &server,
        "PUT",
        "/api/v1/namespaces/doomed/configmaps/held",
        &json!({"metadata": {"name": "held", "finalizers": []}}),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    wait_for("the content conditions to clear", || async move {
        let ns = get(s, "/api/v1/namespaces/doomed").await.body;
        conditions(&ns)
            .get(3)
            .is_some_and(|c| c.1 == "False")
            .then_some(())
    })
    .await;
    let ns = get(&server, "/api/v1/namespaces/doomed").await.body;
    assert_eq!(conditions(&ns).first(), Some(&discovery));

    // The APIService gone, so is the namespace.
    let r = send(
        &server,
        "DELETE",
        &format!("{APISERVICES}/{NAME}"),
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    wait_for("the namespace to go", || async move {
        (get(s, "/api/v1/namespaces/doomed").await.code == 404).then_some(())
    })
    .await;
}

#[tokio::test]
async fn kubectl_sees_an_unavailable_api_as_on_a_cluster() {
    if !Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIP kubectl_sees_an_unavailable_api_as_on_a_cluster: kubectl is not on PATH");
        return;
    }
    let server = start().await;
    let r = req(
        &server,
        "POST",
        APISERVICES,
        &apiservice(json!({"name": "adapter", "namespace": "monitoring"})),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    wait_reason(&server, "ServiceNotFound").await;
    let cache = tempdir();
    let out = tokio::task::spawn_blocking({
        let kubeconfig = server.kubeconfig_path().to_path_buf();
        let cache = cache.clone();
        move || {
            Command::new("kubectl")
                .args(["get", "apiservices"])
                .env("KUBECONFIG", kubeconfig)
                .env("KUBECACHEDIR", cache)
                .output()
                .expect("kubectl runs")
        }
    })
    .await
    .expect("kubectl");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|l| {
            l.split("   ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(rows[0], ["NAME", "SERVICE", "AVAILABLE", "AGE"], "{stdout}");
    assert_eq!(
        rows[1][..3],
        [NAME, "monitoring/adapter", "False (ServiceNotFound)"],
        "{stdout}"
    );
    // client-go's discovery names the group it could not list, as on a cluster.
    assert!(
        stderr.contains(
            "couldn't get resource list for custom.metrics.k8s.io/v1beta1: the server is currently unable to handle the request"
        ),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&cache);
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "apiserver-aggregation-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).expect("cache dir");
    dir
}
