//! kube-rs against the embedded API server: CRUD, selectors, pagination,
//! conflicts, patches, server-side apply, status, finalizers, GC, CRDs.

use apiserver::{Config, Server};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::Client;
use serde_json::json;
use std::time::Duration;

async fn start() -> (Server, Client) {
    let server = Server::start(Config::default())
        .await
        .expect("server starts");
    let client = server.client().expect("client");
    (server, client)
}

fn api_err(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..100 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn crud_and_errors() {
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("a", json!({"app": "x"})))
        .await
        .unwrap();
    let md = &created.metadata;
    assert!(md.uid.is_some() && md.creation_timestamp.is_some());
    assert_eq!(md.generation, Some(1));
    let rv1: u64 = md.resource_version.as_deref().unwrap().parse().unwrap();

    let err = api_err(
        cms.create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    let err = api_err(cms.get("missing").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"missing\" not found");
    let err = api_err(
        cms.create(&PostParams::default(), &cm("Bad_Name", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));

    // Stale resourceVersion conflicts.
    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_string(), "v2".to_string())].into());
    let updated = cms
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert!(
        updated
            .metadata
            .resource_version
            .as_deref()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > rv1
    );
    stale.data = Some([("k".to_string(), "v3".to_string())].into());
    let err = api_err(
        cms.replace("a", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));

    // No-op update keeps the resourceVersion.
    let same = cms
        .replace("a", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        updated.metadata.resource_version
    );

    // Namespace must exist; generateName works.
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "nope");
    let err = api_err(
        other
            .create(&PostParams::default(), &cm("a", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 404);
    let mut gen = cm("", json!({}));
    gen.metadata.name = None;
    gen.metadata.generate_name = Some("gen-".into());
    let g = cms.create(&PostParams::default(), &gen).await.unwrap();
    assert!(g.metadata.name.unwrap().starts_with("gen-"));

    // dryRun stores nothing.
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    cms.create(&pp, &cm("dry", json!({}))).await.unwrap();
    assert!(cms.get_opt("dry").await.unwrap().is_none());

    cms.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(cms.get_opt("a").await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn selectors_and_pagination() {
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (i, tier) in ["fe", "be", "fe", "db", "fe"].iter().enumerate() {
        cms.create(
            &PostParams::default(),
            &cm(&format!("c{i}"), json!({"tier": tier, "n": i.to_string()})),
        )
        .await
        .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier=fe"))
                .await
                .unwrap()
        ),
        ["c0", "c2", "c4"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier!=fe"))
                .await
                .unwrap()
        ),
        ["c1", "c3"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier in (be,db)"))
                .await
                .unwrap()
        ),
        ["c1", "c3"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("tier notin (fe),n"))
                .await
                .unwrap()
        ),
        ["c1", "c3"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().labels("!tier"))
                .await
                .unwrap()
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=c3"))
                .await
                .unwrap()
        ),
        ["c3"]
    );

    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = cms.list(&lp).await.unwrap();
        let token = page.metadata.continue_.clone();
        seen.extend(names(page));
        match token {
            Some(t) if !t.is_empty() => lp = lp.continue_token(&t),
            _ => break,
        }
    }
    assert_eq!(seen, ["c0", "c1", "c2", "c3", "c4"]);

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"p": "hi"}}))
            .unwrap();
    let s = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert_eq!(s.type_.as_deref(), Some("Opaque"));
    assert_eq!(s.data.unwrap()["p"].0, b"hi");
    assert_eq!(
        secrets
            .list(&ListParams::default().fields("type=Opaque"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let all: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        5
    );
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("tier=fe"),
    )
    .await
    .unwrap();
    assert_eq!(
        cms.list(&ListParams::default()).await.unwrap().items.len(),
        2
    );
    server.stop().await;
}

#[tokio::test]
async fn patches_and_server_side_apply() {
    let (server, client) = start().await;
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]}]}}}});
    let applied = deps
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(&d))
        .await
        .unwrap();
    assert_eq!(applied.metadata.generation, Some(1));
    let mf = applied.metadata.managed_fields.unwrap();
    assert_eq!(mf[0].manager.as_deref(), Some("alice"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));

    // Strategic merge: containers merge by name, env by name.
    let sp = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}, {"name": "side", "image": "side:1"}]}}}});
    let p = deps
        .patch("web", &PatchParams::default(), &Patch::Strategic(&sp))
        .await
        .unwrap();
    let cs = p.spec.template.spec.unwrap().containers;
    assert_eq!(cs.len(), 2);
    assert_eq!(cs[0].image.as_deref(), Some("app:1"));
    assert_eq!(cs[0].env.as_ref().unwrap().len(), 2);
    assert_eq!(p.metadata.generation, Some(2));

    // Merge and JSON patches.
    let p = deps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.metadata.labels.unwrap()["x"], "y");
    assert_eq!(
        p.metadata.generation,
        Some(2),
        "metadata changes do not bump generation"
    );
    let jp: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]))
            .unwrap();
    let p = deps
        .patch("web", &PatchParams::default(), &Patch::<()>::Json(jp))
        .await
        .unwrap();
    assert_eq!(p.spec.replicas, Some(3));

    // bob applying replicas conflicts with the manager that set it; force takes it.
    let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5}});
    let err = api_err(
        deps.patch("web", &PatchParams::apply("bob"), &Patch::Apply(&bob))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert!(err.message.contains(".spec.replicas"), "{}", err.message);
    let p = deps
        .patch(
            "web",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(&bob),
        )
        .await
        .unwrap();
    assert_eq!(p.spec.replicas, Some(5));

    // alice re-applies without env A: her field goes away.
    let mut d2 = d.clone();
    d2["spec"].as_object_mut().unwrap().remove("replicas");
    d2["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("env");
    let p = deps
        .patch("web", &PatchParams::apply("alice"), &Patch::Apply(&d2))
        .await
        .unwrap();
    let spec = p.spec;
    assert_eq!(spec.replicas, Some(5));
    let app = &spec.template.spec.unwrap().containers[0];
    let env: Vec<_> = app
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(env, ["B"], "alice's env A removed, the patcher's B kept");

    // Status is ignored on the main endpoint and set via /status.
    let st = json!({"status": {"replicas": 9}});
    let p = deps
        .patch("web", &PatchParams::default(), &Patch::Merge(&st))
        .await
        .unwrap();
    assert!(p.status.is_none());
    let p = deps
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&st))
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().replicas, Some(9));

    // Services get a cluster IP.
    let svcs: Api<Service> = Api::namespaced(client.clone(), "default");
    let s: Service = serde_json::from_value(
        json!({"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .unwrap();
    let s = svcs.create(&PostParams::default(), &s).await.unwrap();
    assert!(s.spec.unwrap().cluster_ip.unwrap().starts_with("10.96."));
    server.stop().await;
}

#[tokio::test]
async fn finalizers_gc_and_namespaces() {
    let (server, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut c = cm("held", json!({}));
    c.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &c).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let held = cms.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(cms.get_opt("held").await.unwrap().is_none());

    // Owner references: background deletion of dependents.
    let owner = cms
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let mut dep = cm("dep", json!({}));
    dep.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid.unwrap()})).unwrap()]);
    cms.create(&PostParams::default(), &dep).await.unwrap();
    cms.delete("owner", &DeleteParams::default()).await.unwrap();
    eventually("dependent collected", || async {
        cms.get_opt("dep").await.unwrap().is_none()
    })
    .await;

    // Foreground deletion waits for dependents.
    let owner = cms
        .create(&PostParams::default(), &cm("owner2", json!({})))
        .await
        .unwrap();
    let mut dep = cm("dep2", json!({}));
    dep.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner.metadata.uid.unwrap()})).unwrap()]);
    cms.create(&PostParams::default(), &dep).await.unwrap();
    cms.delete("owner2", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually("foreground owner gone", || async {
        cms.get_opt("owner2").await.unwrap().is_none()
            && cms.get_opt("dep2").await.unwrap().is_none()
    })
    .await;

    // Orphan deletion keeps dependents and strips the reference.
    let owner = cms
        .create(&PostParams::default(), &cm("owner3", json!({})))
        .await
        .unwrap();
    let mut dep = cm("dep3", json!({}));
    dep.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner3", "uid": owner.metadata.uid.unwrap()})).unwrap()]);
    cms.create(&PostParams::default(), &dep).await.unwrap();
    cms.delete("owner3", &DeleteParams::orphan()).await.unwrap();
    eventually("orphaned", || async {
        cms.get_opt("owner3").await.unwrap().is_none()
    })
    .await;
    let d = cms.get("dep3").await.unwrap();
    assert!(d.metadata.owner_references.unwrap_or_default().is_empty());

    // Deleting a namespace deletes its contents.
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "scratch"}})).unwrap();
    let ns = nss.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(ns.status.unwrap().phase.as_deref(), Some("Active"));
    let in_ns: Api<ConfigMap> = Api::namespaced(client.clone(), "scratch");
    in_ns
        .create(&PostParams::default(), &cm("x", json!({})))
        .await
        .unwrap();
    nss.delete("scratch", &DeleteParams::default())
        .await
        .unwrap();
    eventually("namespace gone", || async {
        nss.get_opt("scratch").await.unwrap().is_none()
    })
    .await;
    assert!(in_ns.get_opt("x").await.unwrap().is_none());
    server.stop().await;
}

#[tokio::test]
async fn custom_resources() {
    let (server, client) = start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]}
    })).unwrap();
    let crd = crds.create(&PostParams::default(), &crd).await.unwrap();
    let conds = crd.status.unwrap().conditions.unwrap();
    assert!(conds
        .iter()
        .any(|c| c.type_ == "NamesAccepted" && c.status == "True"));
    // Established a moment later, as kube-apiserver's establishing controller does;
    // its kinds are not served before.
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let early: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    if !conds
        .iter()
        .any(|c| c.type_ == "Established" && c.status == "True")
    {
        let refused = early
            .list(&Default::default())
            .await
            .expect_err("not served yet");
        assert!(
            matches!(&refused, kube::Error::Api(e) if e.code == 404),
            "{refused:?}"
        );
    }
    eventually("the CRD to be established", || async {
        crds.get("widgets.example.com")
            .await
            .unwrap()
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    })
    .await;

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject =
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"size": 1}, "status": {"ignored": true}}))
        .unwrap();
    let w = widgets.create(&PostParams::default(), &w).await.unwrap();
    assert!(
        w.data.get("status").is_none(),
        "status is dropped on create with a status subresource"
    );
    let w = widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(2));
    let w = widgets
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(w.data["status"]["ready"], true);
    assert_eq!(w.metadata.generation, Some(2));

    // Served at the second version too.
    let beta = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1beta1", "Widget"),
        "widgets",
    );
    let wb: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &beta);
    assert_eq!(
        wb.get("w1").await.unwrap().types.unwrap().api_version,
        "example.com/v1beta1"
    );

    // Strategic merge is refused for custom resources.
    let err = api_err(
        widgets
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Strategic(json!({"spec": {}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 415);

    // Discovery lists it.
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    assert!(discovery.groups().any(|g| g.name() == "example.com"));

    // Deleting the CRD deletes its resources (through their finalizers;
    // this one has none), then the CRD itself.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the custom resource is deleted", || async {
        matches!(widgets.get("w1").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    eventually("the CRD is deleted", || async {
        crds.get_opt("widgets.example.com").await.unwrap().is_none()
    })
    .await;
    server.stop().await;
}

#[tokio::test]
async fn readiness_simulation_and_size_limit() {
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .unwrap();
    let client = server.client().unwrap();
    let deps: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    deps.create(&PostParams::default(), &d).await.unwrap();
    eventually("deployment available", || async {
        let d = deps.get("web").await.unwrap();
        let s = d.status.unwrap_or_default();
        s.ready_replicas == Some(2)
            && s.observed_generation == Some(1)
            && s.conditions.unwrap_or_default().iter().any(|c| {
                c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
            })
    })
    .await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let j: Job = serde_json::from_value(json!({"metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    jobs.create(&PostParams::default(), &j).await.unwrap();
    eventually("job complete", || async {
        jobs.get("j")
            .await
            .unwrap()
            .status
            .unwrap_or_default()
            .succeeded
            == Some(1)
    })
    .await;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut big = cm("big", json!({}));
    big.data = Some([("k".to_string(), "x".repeat(2 * 1024 * 1024))].into());
    let err = api_err(cms.create(&PostParams::default(), &big).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );
    // Still serving after a bad request.
    cms.create(&PostParams::default(), &cm("ok", json!({})))
        .await
        .unwrap();
    server.stop().await;
}

#[tokio::test]
async fn durable_state_survives_restart() {
    let dir = std::env::temp_dir().join(format!("rudder-apiserver-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = Config {
        data_dir: Some(dir.clone()),
        ..Config::default()
    };
    let server = Server::start(cfg.clone()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let c = cms
        .create(&PostParams::default(), &cm("kept", json!({})))
        .await
        .unwrap();
    let rv: u64 = c.metadata.resource_version.unwrap().parse().unwrap();
    server.stop().await;

    let server = Server::start(cfg).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    assert!(cms.get_opt("kept").await.unwrap().is_some());
    let c2 = cms
        .create(&PostParams::default(), &cm("next", json!({})))
        .await
        .unwrap();
    assert!(
        c2.metadata
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > rv
    );
    server.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a DELETE answers, as kube-apiserver's registry does: a `Status` naming the
/// object when it is gone at once, the object marked for deletion while finalizers
/// hold it (clients such as kube-rs tell the two apart by the answer's kind).
#[tokio::test]
async fn delete_answers_a_status_when_the_object_is_gone() {
    let (server, client) = start().await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "plain"}})).unwrap();
    let created = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let answer = secrets
        .delete("plain", &DeleteParams::default())
        .await
        .unwrap();
    let details = answer
        .right()
        .expect("a Status, not the deleted Secret")
        .details
        .expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str(), details.uid),
        (
            "plain",
            "secrets",
            created.metadata.uid.clone().unwrap_or_default()
        )
    );
    let held: Secret = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/keep"]}}),
    )
    .unwrap();
    secrets.create(&PostParams::default(), &held).await.unwrap();
    let answer = secrets
        .delete("held", &DeleteParams::default())
        .await
        .unwrap();
    let marked = answer.left().expect("the Secret, held by its finalizer");
    assert!(marked.metadata.deletion_timestamp.is_some());
    server.stop().await;
}
