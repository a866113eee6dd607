//! Server-side apply as structured-merge-diff computes it on kube-apiserver:
//! ownership of explicitly applied empty values, list-map keys, atomic
//! fields, removal of fields a manager stops applying, `force`, Update
//! operations, and the real conflict and error texts.

mod support;

use serde_json::{json, Value};
use support::{apply, json as req, names, send, start};

const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments";

/// A manifest as charts render it: empty values spelled out.
fn chart_manifest() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"hostIPC": false, "affinity": {"nodeAffinity": null},
                "securityContext": {"sysctls": []},
                "containers": [{"name": "c", "image": "nginx", "envFrom": null}]}}}})
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default().to_string(),
                e["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn two_managers_conflict_on_unchanged_empty_values() {
    let server = start().await;
    let url = format!("{DEPLOY}/web");
    let first = apply(&server, &url, "first", false, &chart_manifest()).await;
    assert_eq!(first.code, 201, "{:?}", first.body);
    // The stored object drops what Go's omitempty drops...
    assert!(first.body.pointer("/spec/template/spec/hostIPC").is_none());
    assert!(first
        .body
        .pointer("/spec/template/spec/securityContext/sysctls")
        .is_none());
    // ...but the first manager owns them, so the same manifest from a
    // second manager adds them back and conflicts.
    let second = apply(&server, &url, "second", false, &chart_manifest()).await;
    assert_eq!(second.code, 409);
    assert_eq!(second.reason(), "Conflict");
    assert_eq!(
        second.message(),
        "Apply failed with 4 conflicts: conflicts with \"first\":\n\
         - .spec.template.spec.hostIPC\n\
         - .spec.template.spec.affinity.nodeAffinity\n\
         - .spec.template.spec.containers[name=\"c\"].envFrom\n\
         - .spec.template.spec.securityContext.sysctls"
    );
    assert_eq!(
        second.body["details"]["causes"][0],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"first\"",
            "field": ".spec.template.spec.hostIPC"})
    );
    // The same manager re-applying is a no-op: nothing changes, not even
    // the resourceVersion.
    let again = apply(&server, &url, "first", false, &chart_manifest()).await;
    assert_eq!(again.code, 200);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        first.body["metadata"]["resourceVersion"]
    );
    // force takes the conflicting fields; unchanged ones are shared.
    let forced = apply(&server, &url, "second", true, &chart_manifest()).await;
    assert_eq!(forced.code, 200);
    assert_eq!(
        managers(&forced.body),
        [
            ("first".into(), "Apply".into()),
            ("second".into(), "Apply".into())
        ]
    );
    let first_fields =
        &forced.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"];
    assert!(first_fields.get("f:hostIPC").is_none());
    assert!(first_fields["f:containers"]["k:{\"name\":\"c\"}"]
        .get("f:image")
        .is_some());
    server.stop().await;
}

#[tokio::test]
async fn list_map_keys_atomic_fields_and_removal() {
    let server = start().await;
    let url = format!("{DEPLOY}/web");
    let mut m = chart_manifest();
    m["spec"]["replicas"] = json!(2);
    m["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 53}]);
    m["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]);
    let r = apply(&server, &url, "alice", false, &m).await;
    assert_eq!(r.code, 201, "{:?}", r.body);
    let c = &r.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]
        ["f:containers"]["k:{\"name\":\"c\"}"];
    assert!(c["f:ports"]
        .get("k:{\"containerPort\":53,\"protocol\":\"UDP\"}")
        .is_some());
    assert!(
        c["f:ports"]
            .get("k:{\"containerPort\":53,\"protocol\":\"TCP\"}")
            .is_some(),
        "a missing protocol key takes its default: {c}"
    );
    assert_eq!(
        r.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:selector"],
        json!({}),
        "a label selector is atomic"
    );
    // Another manager adds an env var of its own: granular list maps merge.
    let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "C", "value": "3"}]}]}}}});
    let r = apply(&server, &url, "bob", false, &bob).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(
        names(&r.body["spec"]["template"]["spec"]["containers"][0]["env"]),
        ["A", "B", "C"]
    );
    // An atomic field set differently by another manager conflicts as one.
    let sel = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}}}});
    let r = apply(&server, &url, "carol", false, &sel).await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.message(),
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.selector"
    );
    // alice stops applying replicas and env B: both go (she alone owned
    // them), and replicas takes its default again as on kube-apiserver (the
    // Kubernetes docs' warning for handing replicas to an HPA); bob's C stays.
    m["spec"].as_object_mut().unwrap().remove("replicas");
    m["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"}]);
    let r = apply(&server, &url, "alice", false, &m).await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    assert_eq!(r.body.pointer("/spec/replicas"), Some(&json!(1)));
    assert_eq!(
        names(&r.body["spec"]["template"]["spec"]["containers"][0]["env"]),
        ["A", "C"]
    );
    server.stop().await;
}

#[tokio::test]
async fn updates_record_update_managers_and_apply_conflicts_with_them() {
    let server = start().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1"}});
    let r = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create",
        None,
        cm.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.code, 201);
    assert_eq!(
        managers(&r.body),
        [("kubectl-create".into(), "Update".into())]
    );
    let r = send(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c?fieldManager=kubectl-edit",
        Some("application/merge-patch+json"),
        br#"{"data": {"a": "2", "b": "x"}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(
        managers(&r.body),
        [
            ("kubectl-create".into(), "Update".into()),
            ("kubectl-edit".into(), "Update".into())
        ]
    );
    // The editor took .data.a from the creator.
    assert_eq!(
        r.body["metadata"]["managedFields"][1]["fieldsV1"]["f:data"],
        json!({"f:a": {}, "f:b": {}})
    );
    let mut applied = cm.clone();
    applied["data"]["a"] = json!("3");
    let r = apply(
        &server,
        "/api/v1/namespaces/default/configmaps/c",
        "helm",
        false,
        &applied,
    )
    .await;
    assert_eq!(r.code, 409);
    assert_eq!(
        r.message(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .data.a"
    );
    // Applying the live value is no conflict: ownership is shared.
    applied["data"]["a"] = json!("2");
    let r = apply(
        &server,
        "/api/v1/namespaces/default/configmaps/c",
        "helm",
        false,
        &applied,
    )
    .await;
    assert_eq!(r.code, 200, "{:?}", r.body);
    server.stop().await;
}

#[tokio::test]
async fn apply_refuses_duplicate_keys_and_undeclared_fields() {
    let server = start().await;
    let url = format!("{DEPLOY}/web");
    let mut m = chart_manifest();
    m["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]);
    let r = apply(&server, &url, "helm", false, &m).await;
    assert_eq!(r.code, 500);
    assert_eq!(
        r.message(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): \
         .spec.template.spec.containers[name=\"c\"].env: duplicate entries for key [name=\"A\"]"
    );
    let mut m = chart_manifest();
    m["spec"]["bogusField"] = json!(true);
    m["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    let r = apply(&server, &url, "helm", false, &m).await;
    assert_eq!(r.code, 500);
    assert_eq!(
        r.message(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): \
         errors:\n  .spec.bogusField: field not declared in schema\n  \
         .spec.template.spec.containers[name=\"c\"].imagePullPolicyy: field not declared in schema"
    );
    // Nothing was created by either.
    let r = req(&server, "GET", &url, &Value::Null).await;
    assert_eq!(r.code, 404);
    server.stop().await;
}

#[tokio::test]
async fn sets_union_and_status_has_its_own_managers() {
    let server = start().await;
    let url = format!("{DEPLOY}/web");
    let mut a = chart_manifest();
    a["metadata"]["finalizers"] = json!(["example.com/a"]);
    assert_eq!(apply(&server, &url, "alice", false, &a).await.code, 201);
    let b = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": ["example.com/b"]}});
    let r = apply(&server, &url, "bob", false, &b).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b"]),
        "finalizers are a set: each manager owns its own value"
    );
    assert_eq!(
        r.body["metadata"]["managedFields"][1]["fieldsV1"],
        json!({"f:metadata": {"f:finalizers": {"v:\"example.com/b\"": {}}}})
    );
    // Status applied through /status is owned by a status manager and
    // does not touch (or conflict with) the spec's owners.
    let st = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "status": {"replicas": 3, "observedGeneration": 1}});
    let r = apply(&server, &format!("{url}/status"), "controller", false, &st).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["replicas"], 3);
    let e = r.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "controller")
        .unwrap()
        .clone();
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:status": {"f:observedGeneration": {}, "f:replicas": {}}})
    );
    // Status on the main endpoint is ignored (and owned by no one).
    let mut with_status = chart_manifest();
    with_status["status"] = json!({"replicas": 7});
    let r = apply(&server, &url, "alice", false, &with_status).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["replicas"], 3);
    server.stop().await;
}

/// A write that sends managedFields of its own replaces them, as kube-apiserver
/// lets clients move client-side ownership to an applier (`csaupgrade`): the
/// applier then removes what it stops applying. An empty list changes nothing;
/// `[{}]` clears them.
#[tokio::test]
async fn a_patch_of_managed_fields_hands_ownership_over() {
    let server = start().await;
    let url = "/api/v1/namespaces/default/configmaps/c";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1", "b": "2"}});
    let r = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldManager=helm",
        None,
        cm.to_string().as_bytes(),
    )
    .await;
    assert_eq!(r.code, 201);
    // Applying without .data.b leaves it: the Update entry still owns it.
    let only_a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1"}});
    let r = apply(&server, url, "helm", false, &only_a).await;
    assert_eq!(r.body["data"]["b"], "2");
    let mut entries = r.body["metadata"]["managedFields"].clone();
    let fields = entries[0]["fieldsV1"].clone();
    entries = json!([{"manager": "helm", "operation": "Apply", "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": fields}]);
    let patch = json!({"metadata": {"managedFields": entries,
        "resourceVersion": r.body["metadata"]["resourceVersion"]}});
    let moved = send(
        &server,
        "PATCH",
        &format!("{url}?fieldManager=helm"),
        Some("application/merge-patch+json"),
        patch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(moved.code, 200, "{:?}", moved.body);
    assert_eq!(managers(&moved.body), [("helm".into(), "Apply".into())]);
    // A stale resourceVersion is refused, so a concurrent writer is not lost.
    let stale = send(
        &server,
        "PATCH",
        &format!("{url}?fieldManager=helm"),
        Some("application/merge-patch+json"),
        patch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(stale.code, 409, "{:?}", stale.body);
    let r = apply(&server, url, "helm", false, &only_a).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["data"], json!({"a": "1"}), "the dropped key is gone");
    for (body, kept) in [(json!([]), true), (json!([{}]), false)] {
        let patch = json!({"metadata": {"managedFields": body}});
        let r = send(
            &server,
            "PATCH",
            &format!("{url}?fieldManager=x"),
            Some("application/merge-patch+json"),
            patch.to_string().as_bytes(),
        )
        .await;
        assert_eq!(r.code, 200, "{:?}", r.body);
        assert_eq!(!managers(&r.body).is_empty(), kept, "{body}");
    }
    server.stop().await;
}
