//! `--authorization rbac`: ServiceAccount tokens (TokenRequest and legacy
//! token Secrets), RBAC rules with the real 401/403 answers, and the
//! TokenReview / SubjectAccessReview APIs a secure metrics endpoint calls.

mod support;

use apiserver::{Authorization, Config, Server};
use serde_json::{json, Value};
use std::time::Duration;
use support::{json as req, send_with, Reply};

async fn rbac_server() -> Server {
    Server::start(Config {
        authorization: Authorization::Rbac,
        ..Config::default()
    })
    .await
    .expect("server starts")
}

async fn as_user(server: &Server, token: &str, method: &str, path: &str, body: &Value) -> Reply {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    send_with(server, Some(token), method, path, None, &bytes).await
}

/// Namespace `ops`, ServiceAccount `op`, a Role to read ConfigMaps there and
/// a ClusterRole for `/metrics`, both bound to it.
async fn setup(server: &Server) -> String {
    for (path, body) in [
        ("/api/v1/namespaces", json!({"metadata": {"name": "ops"}})),
        (
            "/api/v1/namespaces/ops/serviceaccounts",
            json!({"metadata": {"name": "op"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ops/roles",
            json!({"metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
                      {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["update"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/ops/rolebindings",
            json!({"metadata": {"name": "op-reads"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"metadata": {"name": "metrics"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
                      {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"metadata": {"name": "metrics"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics"},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}]}),
        ),
    ] {
        let r = req(server, "POST", path, &body).await;
        assert_eq!(r.code, 201, "{path}: {}", r.body);
    }
    let r = req(
        server,
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts/op/token",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": []}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["kind"], "TokenRequest");
    r.body["status"]["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn service_accounts_are_authorized_by_their_bindings() {
    let server = rbac_server().await;
    let token = setup(&server).await;
    let r = as_user(
        &server,
        &token,
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = as_user(
        &server,
        &token,
        "GET",
        "/api/v1/namespaces/ops/secrets",
        &Value::Null,
    )
    .await;
    assert_eq!((r.code, r.reason()), (403, "Forbidden"));
    assert_eq!(r.message(), "secrets is forbidden: User \"system:serviceaccount:ops:op\" cannot list resource \"secrets\" in API group \"\" in the namespace \"ops\"");
    assert_eq!(r.body["details"], json!({"kind": "secrets"}));
    let r = as_user(
        &server,
        &token,
        "GET",
        "/api/v1/namespaces/ops/serviceaccounts/x",
        &Value::Null,
    )
    .await;
    assert_eq!(r.message(), "serviceaccounts \"x\" is forbidden: User \"system:serviceaccount:ops:op\" cannot get resource \"serviceaccounts\" in API group \"\" in the namespace \"ops\"");
    let r = as_user(
        &server,
        &token,
        "GET",
        "/apis/apps/v1/deployments",
        &Value::Null,
    )
    .await;
    assert_eq!(r.message(), "deployments.apps is forbidden: User \"system:serviceaccount:ops:op\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope");
    // The binding is namespaced: the same read elsewhere is refused.
    let r = as_user(
        &server,
        &token,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 403);
    // Subresources need their own rule.
    let r = as_user(
        &server,
        &token,
        "PUT",
        "/apis/apps/v1/namespaces/ops/deployments/d",
        &json!({}),
    )
    .await;
    assert_eq!(r.message(), "deployments.apps \"d\" is forbidden: User \"system:serviceaccount:ops:op\" cannot update resource \"deployments\" in API group \"apps\" in the namespace \"ops\"");
    let r = as_user(
        &server,
        &token,
        "PUT",
        "/apis/apps/v1/namespaces/ops/deployments/d/status",
        &json!({}),
    )
    .await;
    assert_eq!(r.code, 404, "allowed, and then not found: {}", r.body);
    // Discovery is open to every authenticated user; /metrics by rule.
    assert_eq!(
        as_user(&server, &token, "GET", "/apis", &Value::Null)
            .await
            .code,
        200
    );
    let r = as_user(&server, &token, "GET", "/logs", &Value::Null).await;
    assert_eq!(
        r.message(),
        "forbidden: User \"system:serviceaccount:ops:op\" cannot get path \"/logs\""
    );
    // Unknown tokens are 401; no token is system:anonymous.
    let r = as_user(
        &server,
        "not-a-token",
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        &Value::Null,
    )
    .await;
    assert_eq!(
        (r.code, r.reason(), r.message()),
        (401, "Unauthorized", "Unauthorized")
    );
    let r = send_with(
        &server,
        Some(""),
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        None,
        b"",
    )
    .await;
    assert_eq!(r.message(), "configmaps is forbidden: User \"system:anonymous\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"ops\"");
    // The admin kubeconfig's client keeps full access.
    let admin = server.client().unwrap();
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(admin, "ops");
    assert!(secrets.list(&Default::default()).await.is_ok());
    server.stop().await;
}

#[tokio::test]
async fn legacy_token_secrets_and_reviews() {
    let server = rbac_server().await;
    let token = setup(&server).await;
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/ops/secrets",
        &json!({"metadata": {"name": "op-token",
        "annotations": {"kubernetes.io/service-account.name": "op"}},
        "type": "kubernetes.io/service-account-token"}),
    )
    .await;
    assert_eq!(r.code, 201);
    let mut legacy = None;
    for _ in 0..100 {
        let s = req(
            &server,
            "GET",
            "/api/v1/namespaces/ops/secrets/op-token",
            &Value::Null,
        )
        .await;
        if let Some(t) = s.body.pointer("/data/token").and_then(Value::as_str) {
            use base64::Engine as _;
            let raw = base64::engine::general_purpose::STANDARD.decode(t).unwrap();
            legacy = Some(String::from_utf8(raw).unwrap());
            assert!(
                s.body["metadata"]["annotations"]["kubernetes.io/service-account.uid"].is_string()
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let legacy = legacy.expect("the token controller fills the Secret");
    let r = as_user(
        &server,
        &legacy,
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200);

    // TokenReview, as controller-runtime's authn filter calls it.
    let r = as_user(&server, &token, "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": legacy}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"]["authenticated"], true);
    assert_eq!(
        r.body["status"]["user"]["username"],
        "system:serviceaccount:ops:op"
    );
    assert_eq!(
        r.body["status"]["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:ops",
            "system:authenticated"
        ])
    );
    let r = req(
        &server,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"spec": {"token": "bogus"}}),
    )
    .await;
    assert_eq!(r.body["status"]["authenticated"], false);

    // SubjectAccessReview for the metrics endpoint and for resources.
    let sar = |attrs: Value| {
        let mut spec = json!({"user": "system:serviceaccount:ops:op",
            "groups": ["system:serviceaccounts", "system:authenticated"]});
        for (k, v) in attrs.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
    };
    let path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let r = req(
        &server,
        "POST",
        path,
        &sar(json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}})),
    )
    .await;
    assert_eq!(r.body["status"]["allowed"], true, "{}", r.body);
    let r = req(&server, "POST", path, &sar(json!({"resourceAttributes": {"namespace": "ops", "verb": "list", "resource": "secrets"}}))).await;
    assert_eq!(r.body["status"]["allowed"], false);
    let r = as_user(&server, &token, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &json!({"spec": {"resourceAttributes": {"namespace": "ops", "verb": "get", "resource": "configmaps"}}})).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["status"]["allowed"], true);
    server.stop().await;
}

#[tokio::test]
async fn without_rbac_everything_is_allowed() {
    let server = support::start().await;
    assert!(server.admin_token().is_none());
    let r = send_with(
        &server,
        Some("whatever"),
        "GET",
        "/api/v1/namespaces/default/secrets",
        None,
        b"",
    )
    .await;
    assert_eq!(r.code, 200);
    let r = req(&server, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &json!({"spec": {"user": "x", "resourceAttributes": {"verb": "delete", "resource": "nodes"}}})).await;
    assert_eq!(r.body["status"]["allowed"], true);
    server.stop().await;
}

/// The shipped `deploy/manifests` RBAC, loaded as written: its
/// ServiceAccount can do what the operator does and nothing else.
#[tokio::test]
async fn the_shipped_cluster_role_grants_the_operators_requests() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/manifests");
    if !dir.join("02-cluster-role.yaml").exists() {
        eprintln!("SKIPPED: {} not found", dir.display());
        return;
    }
    let server = rbac_server().await;
    for (file, path) in [
        ("00-namespace.yaml", "/api/v1/namespaces"),
        (
            "01-service-account.yaml",
            "/api/v1/namespaces/rudder-system/serviceaccounts",
        ),
        (
            "02-cluster-role.yaml",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        ),
        (
            "03-cluster-role-binding.yaml",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        ),
        (
            "02-leader-election-role.yaml",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/rudder-system/roles",
        ),
        (
            "03-leader-election-role-binding.yaml",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/rudder-system/rolebindings",
        ),
    ] {
        let yaml = std::fs::read(dir.join(file)).unwrap();
        let r = send_with(&server, None, "POST", path, Some("application/yaml"), &yaml).await;
        assert_eq!(r.code, 201, "{file}: {}", r.body);
    }
    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/rudder-system/serviceaccounts/rudder-operator/token",
        &json!({"spec": {}}),
    )
    .await;
    let token = r.body["status"]["token"].as_str().unwrap().to_string();
    let ok = |r: &Reply| assert!(r.code < 400, "{}", r.body);
    ok(&as_user(
        &server,
        &token,
        "GET",
        "/api/v1/secrets?watch=false",
        &Value::Null,
    )
    .await);
    ok(&as_user(
        &server,
        &token,
        "POST",
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "sh.helm.release.v1.demo.v1"}, "type": "helm.sh/release.v1"}),
    )
    .await);
    ok(&as_user(
        &server,
        &token,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/rudder-system/leases",
        &json!({"metadata": {"name": "rudder-operator-lock"}, "spec": {"holderIdentity": "me"}}),
    )
    .await);
    ok(&as_user(&server, &token, "POST", "/api/v1/namespaces/default/events",
        &json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Hello", "name": "h"}, "reason": "Deployed", "message": "ok"})).await);
    ok(&as_user(&server, &token, "POST", "/apis/apps/v1/namespaces/default/deployments",
        &json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).await);
    let ssar = |verb: &str, group: &str, resource: &str, sub: &str| {
        json!({"spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "group": group,
            "resource": resource, "subresource": sub}}})
    };
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    for (verb, group, resource, sub, want) in [
        ("watch", "demo.rudder.dev", "hellos", "", true),
        ("patch", "demo.rudder.dev", "hellos", "status", true),
        ("update", "demo.rudder.dev", "hellos", "finalizers", true),
        ("delete", "demo.rudder.dev", "hellos", "", false),
        ("list", "", "pods", "", false),
        // The release lock is on the records: no Lease next to the CRs.
        ("create", "coordination.k8s.io", "leases", "", false),
    ] {
        let r = as_user(
            &server,
            &token,
            "POST",
            path,
            &ssar(verb, group, resource, sub),
        )
        .await;
        assert_eq!(
            r.body["status"]["allowed"], want,
            "{verb} {resource}/{sub}: {}",
            r.body
        );
    }
    let r = as_user(
        &server,
        &token,
        "GET",
        "/api/v1/namespaces/default/pods",
        &Value::Null,
    )
    .await;
    assert_eq!(r.message(), "pods is forbidden: User \"system:serviceaccount:rudder-system:rudder-operator\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"");
    server.stop().await;
}
