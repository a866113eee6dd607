//! Custom resources against their CRD: structural-schema validation and
//! pruning, the status subresource, server-side apply by list-map keys,
//! and CRD deletion through the resources' finalizers.

mod support;

use serde_json::{json, Value};
use support::{apply, create_crd, eventually, json as req, refused, send, start};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1, "maximum": 10},
                    "mode": {"type": "string", "enum": ["fast", "safe"]},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {
                            "name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }}}}]}})
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn structural_validation_and_pruning() {
    let server = start().await;
    create_crd(&server, &crd()).await;
    let r = req(&server, "POST", WIDGETS, &widget("w", json!("big"))).await;
    refused(&r, 422, "Invalid", "Widget.example.com \"w\" is invalid: spec: Invalid value: \"string\": spec in body must be of type object: \"string\"");
    let r = req(&server, "POST", WIDGETS, &widget("w", json!({"size": "3"}))).await;
    refused(&r, 422, "Invalid", "Widget.example.com \"w\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"");
    let r = req(
        &server,
        "POST",
        WIDGETS,
        &widget("w", json!({"mode": "slow", "size": 11})),
    )
    .await;
    refused(&r, 422, "Invalid", "Widget.example.com \"w\" is invalid: [spec.mode: Unsupported value: \"slow\": supported values: \"fast\", \"safe\", spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10]");
    let r = req(
        &server,
        "POST",
        WIDGETS,
        &widget("w", json!({"mode": "fast"})),
    )
    .await;
    refused(
        &r,
        422,
        "Invalid",
        "Widget.example.com \"w\" is invalid: spec.size: Required value",
    );
    let r = req(
        &server,
        "POST",
        WIDGETS,
        &widget("w", json!({"size": 1, "mode": null})),
    )
    .await;
    refused(&r, 422, "Invalid", "Widget.example.com \"w\" is invalid: spec.mode: Invalid value: \"null\": spec.mode in body must be of type string: \"null\"");

    // Unknown fields are pruned (and warned about), except where the
    // schema preserves them; int-or-string and nullable are honoured.
    let w = widget(
        "w",
        json!({"size": 1, "port": "http", "note": null, "bogus": true,
        "extra": {"any": {"thing": [1]}},
        "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}}),
    );
    let r = req(&server, "POST", WIDGETS, &w).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["spec"].get("bogus").is_none());
    assert_eq!(r.body["spec"]["extra"], json!({"any": {"thing": [1]}}));
    assert_eq!(r.body["spec"]["template"]["kind"], "Pod");
    assert_eq!(
        r.header("warning"),
        ["299 - \"unknown field \\\"spec.bogus\\\"\""]
    );
    let strict = format!("{WIDGETS}?fieldValidation=Strict");
    let r = req(
        &server,
        "POST",
        &strict,
        &widget("w2", json!({"size": 1, "bogus": true})),
    )
    .await;
    refused(&r, 400, "BadRequest", "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.bogus\"");

    // Status goes only through /status.
    let r = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w"),
        Some("application/merge-patch+json"),
        br#"{"status": {"ready": true}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert!(r.body.get("status").is_none());
    let r = send(
        &server,
        "PATCH",
        &format!("{WIDGETS}/w/status"),
        Some("application/merge-patch+json"),
        br#"{"status": {"ready": true}, "spec": {"size": 9}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["status"]["ready"], true);
    assert_eq!(
        r.body["spec"]["size"], 1,
        "spec is not changed through /status"
    );
    assert_eq!(
        r.body["metadata"]["generation"], 1,
        "a status write leaves the generation alone"
    );
    server.stop().await;
}

/// Without a status subresource a custom resource is one document, so writing its
/// status bumps `generation` as any other change does (kube-apiserver's custom
/// resource strategy); only metadata changes leave it alone.
#[tokio::test]
async fn status_without_a_subresource_bumps_the_generation() {
    let server = start().await;
    let mut plain = crd();
    plain["spec"]["versions"][0]
        .as_object_mut()
        .expect("a version")
        .remove("subresources");
    create_crd(&server, &plain).await;
    eventually("the Widget kind is served", || async {
        req(&server, "GET", WIDGETS, &Value::Null).await.code == 200
    })
    .await;
    let r = req(&server, "POST", WIDGETS, &widget("w", json!({"size": 1}))).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["metadata"]["generation"], 1);
    let path = format!("{WIDGETS}/w");
    let merge = Some("application/merge-patch+json");
    let r = send(
        &server,
        "PATCH",
        &path,
        merge,
        br#"{"status": {"ready": true}}"#,
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["status"]["ready"], true);
    assert_eq!(r.body["metadata"]["generation"], 2);
    let labels = br#"{"metadata": {"labels": {"a": "b"}}}"#;
    let r = send(&server, "PATCH", &path, merge, labels).await;
    assert_eq!(r.body["metadata"]["generation"], 2);
    server.stop().await;
}

#[tokio::test]
async fn apply_uses_the_crd_list_types() {
    let server = start().await;
    create_crd(&server, &crd()).await;
    let url = format!("{WIDGETS}/w");
    let a = widget(
        "w",
        json!({"size": 1, "ports": [{"name": "http", "port": 80}]}),
    );
    assert_eq!(apply(&server, &url, "alice", false, &a).await.code, 201);
    let b = widget("w", json!({"ports": [{"name": "metrics", "port": 9090}]}));
    let r = apply(&server, &url, "bob", false, &b).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["ports"].as_array().unwrap().len(), 2);
    let c = widget("w", json!({"size": 2}));
    let r = apply(&server, &url, "carol", false, &c).await;
    refused(
        &r,
        409,
        "Conflict",
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.size",
    );
    server.stop().await;
}

#[tokio::test]
async fn crd_deletion_waits_for_custom_resource_finalizers() {
    let server = start().await;
    let r = create_crd(&server, &crd()).await;
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    let mut w = widget("w", json!({"size": 1}));
    w["metadata"]["finalizers"] = json!(["example.com/uninstall"]);
    assert_eq!(req(&server, "POST", WIDGETS, &w).await.code, 201);

    let r = req(
        &server,
        "DELETE",
        &format!("{CRDS}/widgets.example.com"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    // The resource is being deleted, not gone: its finalizer (the
    // operator's uninstall) still has to run.
    let url = format!("{WIDGETS}/w");
    eventually("the widget is marked for deletion", || async {
        req(&server, "GET", &url, &Value::Null).await.body["metadata"]["deletionTimestamp"]
            .is_string()
    })
    .await;
    let crd_url = format!("{CRDS}/widgets.example.com");
    assert_eq!(req(&server, "GET", &crd_url, &Value::Null).await.code, 200);
    let r = req(&server, "POST", WIDGETS, &widget("new", json!({"size": 1}))).await;
    refused(
        &r,
        405,
        "MethodNotAllowed",
        "create not allowed while custom resource definition is terminating",
    );

    let r = send(
        &server,
        "PATCH",
        &url,
        Some("application/merge-patch+json"),
        br#"{"metadata": {"finalizers": null}}"#,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    eventually("the CRD is gone", || async {
        req(&server, "GET", &crd_url, &Value::Null).await.code == 404
    })
    .await;
    assert_eq!(req(&server, "GET", &url, &Value::Null).await.code, 404);
    server.stop().await;
}

/// A spec declared as an object that keeps unknown fields (the operator-sdk
/// scaffold's CRD) is still an object: a replace with a string is refused, as
/// kube-apiserver refuses it.
#[tokio::test]
async fn an_open_object_spec_is_still_an_object() {
    let server = start().await;
    let mut open = crd();
    open["metadata"]["name"] = json!("gadgets.example.com");
    open["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    open["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] =
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    create_crd(&server, &open).await;
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let gadget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    let created = req(&server, "POST", gadgets, &gadget(json!({"any": 1}))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut replaced = created.body.clone();
    replaced["spec"] = json!("just a string");
    let r = req(&server, "PUT", &format!("{gadgets}/g"), &replaced).await;
    refused(&r, 422, "Invalid", "Gadget.example.com \"g\" is invalid: spec: Invalid value: \"string\": spec in body must be of type object: \"string\"");
}
