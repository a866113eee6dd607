//! The Go scaffold's RBAC is enough (issue 12, item 10): every request the reconciler
//! makes for operator-sdk's own memcached sample (install, upgrade, repair, pausing,
//! `uninstall-wait`, Events, the release lock and pending recovery) is one that the
//! sample's `config/rbac/role.yaml` grants, read unchanged from
//! `../shared/memcached-operator`. The release lock takes no Lease (the scaffold grants
//! Leases only in the operator's own namespace, for leader election).
//!
//! One test checks every request against the rules itself (so it holds on any API
//! server); the other runs the reconciler as a ServiceAccount bound to exactly the
//! scaffold's roles on a server that enforces RBAC.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::TestCluster;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::Client;
use operator::Watch;
use operator::{reconcile, Context};
use serde_json::{json, Value};
use testkit::apiserver::Authorization;

fn sample() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/memcached-operator");
    dir.join("watches.yaml").exists().then_some(dir)
}

/// One rule of a (Cluster)Role.
#[derive(Debug)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
}

fn list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn rules(path: &std::path::Path) -> Vec<Rule> {
    let text = std::fs::read_to_string(path).expect("role.yaml");
    let role = gocodec::yaml::parse_yaml_to_json(&text).expect("role is YAML");
    role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| Rule {
            groups: list(&r["apiGroups"]),
            resources: list(&r["resources"]),
            verbs: list(&r["verbs"]),
        })
        .collect()
}

/// What a request asks, as the authorizer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attributes {
    verb: String,
    group: String,
    resource: String,
    namespace: Option<String>,
}

/// A resource request's attributes; `None` for discovery and other non-resource paths.
fn attributes(method: &str, path: &str, query: &str) -> Option<Attributes> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        other => (None, other),
    };
    let (resource, name, sub) = match rest {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        _ => return None,
    };
    let verb = match (method, name) {
        ("GET", _) if query.contains("watch=true") => "watch",
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", Some(_)) => "delete",
        ("DELETE", None) => "deletecollection",
        _ => return None,
    };
    let resource = match sub {
        Some(s) => format!("{resource}/{s}"),
        None => resource.to_string(),
    };
    Some(Attributes {
        verb: verb.into(),
        group: group.into(),
        resource,
        namespace,
    })
}

fn allows(rules: &[Rule], a: &Attributes) -> bool {
    let any = |v: &[String], x: &str| v.iter().any(|e| e == "*" || e == x);
    rules.iter().any(|r| {
        any(&r.groups, &a.group) && any(&r.resources, &a.resource) && any(&r.verbs, &a.verb)
    })
}

type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

fn recording_client(inner: Client, seen: Seen, namespace: &str) -> Client {
    let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        let seen = seen.clone();
        async move {
            let uri = req.uri();
            seen.lock().unwrap_or_else(|e| e.into_inner()).push((
                req.method().to_string(),
                uri.path().to_string(),
                uri.query().unwrap_or_default().to_string(),
            ));
            inner.send(req).await
        }
    });
    Client::new(svc, namespace.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_scaffolds_role_grants_every_request() {
    let Some(dir) = sample() else {
        eprintln!("SKIPPED the_go_scaffolds_role_grants_every_request: ../shared/memcached-operator not found");
        return;
    };
    let tc = TestCluster::start("scaffold-rbac", true).await;
    // A new CRD is served only once it is Established (404 until then, on a real
    // server): the kit's helper waits for that.
    let crd: Value = yaml(&dir.join("config/crd/bases/cache.example.com_memcacheds.yaml"));
    testkit::crd::install_crd(&tc.client, &crd).await;
    let role = rules(&dir.join("config/rbac/role.yaml"));
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cache.example.com", "v1alpha1", "Memcached"),
        "memcacheds",
    );
    let seen: Seen = Arc::default();
    let client = recording_client(tc.client.clone(), seen.clone(), &tc.namespace);
    let watch = Watch {
        group: "cache.example.com".into(),
        version: "v1alpha1".into(),
        kind: "Memcached".into(),
        chart: dir.join("helm-charts/memcached"),
        ..Watch::default()
    };
    let chart = chart::loader::load(&watch.chart).expect("sample chart");
    let mut watch = watch;
    watch
        .override_values
        .insert("image".into(), "memcached:1.6".into());
    let ctx = Arc::new(
        Context::new(client, Arc::new(watch), Arc::new(chart), resource.clone())
            .expect("context")
            .with_reconcile_period(Some(Duration::from_secs(60))),
    );
    let crs: Api<DynamicObject> = Api::namespaced_with(tc.client.clone(), &tc.namespace, &resource);
    let sample_text =
        std::fs::read_to_string(dir.join("config/samples/cache_v1alpha1_memcached.yaml"))
            .expect("sample");
    let mut cr: DynamicObject =
        serde_json::from_value(gocodec::yaml::parse_yaml_to_json(&sample_text).expect("YAML"))
            .expect("CR");
    cr.metadata.namespace = Some(tc.namespace.clone());
    crs.create(&PostParams::default(), &cr)
        .await
        .expect("create CR");
    let name = "memcached-sample";
    let run = || async {
        let cr = crs.get(name).await.expect("CR");
        reconcile(Arc::new(cr.into()), ctx.clone()).await
    };
    let patch = |p: Value| {
        let crs = crs.clone();
        async move {
            crs.patch(name, &PatchParams::default(), &Patch::Merge(&p))
                .await
                .expect("patch CR");
        }
    };

    run().await.expect("install");
    run().await.expect("repair");
    patch(json!({"spec": {"replicaCount": 2}})).await;
    run().await.expect("upgrade");
    patch(json!({"metadata": {"annotations": {"helm.sdk.operatorframework.io/reconcile-paused": "true"}}}))
        .await;
    run().await.expect("paused");
    patch(json!({"metadata": {"annotations": {
        "helm.sdk.operatorframework.io/reconcile-paused": null,
        "helm.sdk.operatorframework.io/uninstall-wait": "true"}}}))
    .await;
    run().await.expect("resumed");
    crs.delete(name, &DeleteParams::default())
        .await
        .expect("delete CR");
    for _ in 0..5 {
        match crs.get_opt(name).await.expect("read CR") {
            Some(cr) => {
                let _ = reconcile(Arc::new(cr.into()), ctx.clone()).await;
            }
            None => break,
        }
    }

    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut denied = Vec::new();
    let mut checked = 0;
    for (method, path, query) in &seen {
        let Some(a) = attributes(method, path, query) else {
            continue;
        };
        checked += 1;
        assert_ne!(
            a.resource, "leases",
            "the release lock takes no Lease: {method} {path}"
        );
        if !allows(&role, &a) {
            denied.push(format!("{method} {path} ({a:?})"));
        }
    }
    assert!(checked > 20, "the flow made requests: {seen:?}");
    assert!(
        denied.is_empty(),
        "the scaffold's role does not grant:\n{}",
        denied.join("\n")
    );
    // The release lock did run: its annotation patches are among the requests.
    assert!(
        seen.iter()
            .any(|(m, p, _)| m == "PATCH"
                && p.contains("/secrets/sh.helm.release.v1.memcached-sample.")),
        "{seen:?}"
    );
    tc.stop().await;
}

fn yaml<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> T {
    let text = std::fs::read_to_string(path).expect("read YAML");
    serde_json::from_value(gocodec::yaml::parse_yaml_to_json(&text).expect("YAML")).expect("object")
}

async fn create<T>(api: &Api<T>, obj: &T)
where
    T: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("create {obj:?}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_reconciles_as_its_service_account_under_rbac() {
    let Some(dir) = sample() else {
        eprintln!("SKIPPED the_sample_reconciles_as_its_service_account_under_rbac: ../shared/memcached-operator not found");
        return;
    };
    let tc = TestCluster::start_with("scaffold-sa", true, Authorization::Rbac).await;
    let admin = tc.client.clone();
    let crd: Value = yaml(&dir.join("config/crd/bases/cache.example.com_memcacheds.yaml"));
    testkit::crd::install_crd(&admin, &crd).await;
    // The operator's own namespace, ServiceAccount and the scaffold's roles, unchanged
    // but for the names a shared cluster needs unique.
    let op_ns = format!("{}-op", tc.namespace);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": op_ns}})).expect("ns");
    create(&Api::all(admin.clone()), &ns).await;
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "controller-manager"}})).expect("sa");
    create(&Api::namespaced(admin.clone(), &op_ns), &sa).await;
    let mut manager: ClusterRole = yaml(&dir.join("config/rbac/role.yaml"));
    let role_name = format!("{}-manager-role", tc.namespace);
    manager.metadata.name = Some(role_name.clone());
    create(&Api::all(admin.clone()), &manager).await;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": role_name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": "controller-manager", "namespace": op_ns}]}))
    .expect("binding");
    create(&Api::all(admin.clone()), &binding).await;
    let leader: Role = yaml(&dir.join("config/rbac/leader_election_role.yaml"));
    create(&Api::namespaced(admin.clone(), &op_ns), &leader).await;
    let leader_binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "leader-election-rolebinding"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leader-election-role"},
        "subjects": [{"kind": "ServiceAccount", "name": "controller-manager", "namespace": op_ns}]}))
    .expect("binding");
    create(&Api::namespaced(admin.clone(), &op_ns), &leader_binding).await;
    let token: Value = admin
        .request(
            http::Request::post(format!(
                "/api/v1/namespaces/{op_ns}/serviceaccounts/controller-manager/token"
            ))
            .header("content-type", "application/json")
            .body(
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
                    .to_string()
                    .into_bytes(),
            )
            .expect("request"),
        )
        .await
        .expect("token request");
    let token = token["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();
    let operator = tc.client_with_token(&token);
    // The server does enforce the scaffold's roles: no Lease next to the CRs.
    let lease: Lease =
        serde_json::from_value(json!({"metadata": {"name": "probe"}})).expect("lease");
    match Api::<Lease>::namespaced(operator.clone(), &tc.namespace)
        .create(&PostParams::default(), &lease)
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 403, "{e}"),
        other => panic!("a Lease outside the operator's namespace must be forbidden: {other:?}"),
    }

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cache.example.com", "v1alpha1", "Memcached"),
        "memcacheds",
    );
    let mut watch = Watch {
        group: "cache.example.com".into(),
        version: "v1alpha1".into(),
        kind: "Memcached".into(),
        chart: dir.join("helm-charts/memcached"),
        ..Watch::default()
    };
    watch
        .override_values
        .insert("image".into(), "memcached:1.6".into());
    let chart = chart::loader::load(&watch.chart).expect("sample chart");
    let ctx = Arc::new(
        Context::new(operator, Arc::new(watch), Arc::new(chart), resource.clone())
            .expect("context"),
    );
    let crs: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &tc.namespace, &resource);
    let mut cr: DynamicObject = yaml(&dir.join("config/samples/cache_v1alpha1_memcached.yaml"));
    cr.metadata.namespace = Some(tc.namespace.clone());
    crs.create(&PostParams::default(), &cr)
        .await
        .expect("create CR");
    let name = "memcached-sample";
    let run = || async {
        let cr = crs.get(name).await.expect("CR");
        reconcile(Arc::new(cr.into()), ctx.clone()).await
    };
    run().await.expect("install as the ServiceAccount");
    run().await.expect("repair as the ServiceAccount");
    crs.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"replicaCount": 2}})),
    )
    .await
    .expect("patch");
    run().await.expect("upgrade as the ServiceAccount");
    crs.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"annotations": {
        "helm.sdk.operatorframework.io/uninstall-wait": "true"}}})),
    )
    .await
    .expect("patch");
    crs.delete(name, &DeleteParams::default())
        .await
        .expect("delete CR");
    for _ in 0..10 {
        match crs.get_opt(name).await.expect("read CR") {
            Some(cr) => {
                reconcile(Arc::new(cr.into()), ctx.clone())
                    .await
                    .expect("uninstall as the ServiceAccount");
            }
            None => break,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        crs.get_opt(name).await.expect("read CR").is_none(),
        "uninstalled and gone"
    );
    let _ = Api::<ClusterRoleBinding>::all(admin.clone())
        .delete(&role_name, &DeleteParams::default())
        .await;
    let _ = Api::<ClusterRole>::all(admin.clone())
        .delete(&role_name, &DeleteParams::default())
        .await;
    let _ = Api::<Namespace>::all(admin)
        .delete(&op_ns, &DeleteParams::default())
        .await;
    tc.stop().await;
}

#[test]
fn request_attributes_read_as_kube_apiserver_reads_them() {
    let a = attributes(
        "PATCH",
        "/apis/cache.example.com/v1alpha1/namespaces/n/memcacheds/m/status",
        "",
    )
    .expect("resource request");
    assert_eq!(
        a,
        Attributes {
            verb: "patch".into(),
            group: "cache.example.com".into(),
            resource: "memcacheds/status".into(),
            namespace: Some("n".into()),
        }
    );
    let a = attributes(
        "GET",
        "/api/v1/namespaces/n/secrets",
        "labelSelector=owner%3Dhelm",
    )
    .expect("list");
    assert_eq!((a.verb.as_str(), a.resource.as_str()), ("list", "secrets"));
    assert_eq!(attributes("GET", "/apis/apps/v1", ""), None, "discovery");
    let only_secrets = [Rule {
        groups: vec!["".into()],
        resources: vec!["secrets".into()],
        verbs: vec!["*".into()],
    }];
    assert!(allows(&only_secrets, &a));
    let lease = attributes(
        "PUT",
        "/apis/coordination.k8s.io/v1/namespaces/n/leases/l",
        "",
    )
    .expect("lease");
    assert!(!allows(&only_secrets, &lease));
    assert_eq!(
        attributes("GET", "/api/v1/namespaces/n", "").map(|a| a.resource),
        Some("namespaces".into())
    );
}
