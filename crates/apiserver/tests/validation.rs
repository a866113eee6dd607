//! What the embedded server refuses, with the status code, reason and
//! message kube-apiserver gives for the same request.

mod support;

use serde_json::{json, Value};
use support::{apply, create_crd, json as req, refused, send, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

#[tokio::test]
async fn type_errors_unknown_fields_and_field_validation() {
    let server = start().await;
    let mut d = deployment("web");
    d["spec"]["replicas"] = json!("three");
    let r = req(&server, "POST", DEPLOYS, &d).await;
    refused(&r, 400, "BadRequest", "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32");

    let mut d = deployment("web");
    d["spec"]["bogusField"] = json!(1);
    let r = req(
        &server,
        "POST",
        &format!("{DEPLOYS}?fieldValidation=Strict"),
        &d,
    )
    .await;
    refused(&r, 400, "BadRequest", "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: unknown field \"spec.bogusField\"");
    // Warn (the default) stores the object without the field and says so.
    let r = req(&server, "POST", DEPLOYS, &d).await;
    assert_eq!(r.code, 201);
    assert_eq!(
        r.header("warning"),
        ["299 - \"unknown field \\\"spec.bogusField\\\"\""]
    );
    assert!(r.body["spec"].get("bogusField").is_none());
    // Ignore drops it silently.
    let mut d2 = d.clone();
    d2["metadata"]["name"] = json!("web2");
    let r = req(
        &server,
        "POST",
        &format!("{DEPLOYS}?fieldValidation=Ignore"),
        &d2,
    )
    .await;
    assert_eq!(r.code, 201);
    assert!(r.header("warning").is_empty());

    let mut d = deployment("web3");
    d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("Sometimes");
    let r = req(&server, "POST", DEPLOYS, &d).await;
    refused(&r, 422, "Invalid", "Deployment.apps \"web3\" is invalid: spec.template.spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"");
    assert_eq!(
        r.body["details"]["causes"][0],
        json!({"reason": "FieldValueNotSupported", "field": "spec.template.spec.containers[0].imagePullPolicy",
            "message": "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""})
    );
    server.stop().await;
}

#[tokio::test]
async fn required_fields() {
    let server = start().await;
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "r"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"image": "nginx", "env": [{"value": "x"}]}]}}}});
    let r = req(&server, "POST", DEPLOYS, &d).await;
    refused(&r, 422, "Invalid", "Deployment.apps \"r\" is invalid: [spec.template.spec.containers[0].env[0].name: Required value, spec.template.spec.containers[0].name: Required value]");
    let r = req(
        &server,
        "POST",
        DEPLOYS,
        &json!({"metadata": {"name": "s"}, "spec": {"replicas": 1}}),
    )
    .await;
    refused(&r, 422, "Invalid", "Deployment.apps \"s\" is invalid: [spec.selector: Required value, spec.template: Required value]");
    server.stop().await;
}

#[tokio::test]
async fn immutable_fields() {
    let server = start().await;
    let url = format!("{DEPLOYS}/web");
    assert_eq!(
        apply(&server, &url, "helm", false, &deployment("web"))
            .await
            .code,
        201
    );
    let mut d = deployment("web");
    d["spec"]["selector"]["matchLabels"]["app"] = json!("b");
    d["spec"]["template"]["metadata"]["labels"]["app"] = json!("b");
    let r = apply(&server, &url, "helm", false, &d).await;
    refused(&r, 422, "Invalid", "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable");

    let sts = |pm: &str| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
            "spec": {"serviceName": "db", "podManagementPolicy": pm, "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "pg"}]}}}})
    };
    let surl = "/apis/apps/v1/namespaces/default/statefulsets/db";
    assert_eq!(
        apply(&server, surl, "helm", false, &sts("OrderedReady"))
            .await
            .code,
        201
    );
    // Re-applying the same spec (as an upgrade with the same values does)
    // changes nothing that is immutable, claim templates included.
    let mut same = sts("OrderedReady");
    same["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data", "labels": {}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    let other = apply(&server, surl, "other", true, &same).await;
    assert_eq!(
        other.code, 422,
        "adding claim templates is a spec change: {}",
        other.body
    );
    let url2 = "/apis/apps/v1/namespaces/default/statefulsets/db2";
    let mut db2 = same.clone();
    db2["metadata"]["name"] = json!("db2");
    assert_eq!(apply(&server, url2, "helm", false, &db2).await.code, 201);
    let again = apply(&server, url2, "helm", false, &db2).await;
    assert_eq!(again.code, 200, "{}", again.body);
    let r = apply(&server, surl, "helm", false, &sts("Parallel")).await;
    refused(&r, 422, "Invalid", "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden");

    let svc = |ip: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"clusterIP": ip, "ports": [{"port": 80}]}})
    };
    let vurl = "/api/v1/namespaces/default/services/s";
    assert_eq!(
        apply(&server, vurl, "helm", false, &svc("10.96.0.50"))
            .await
            .code,
        201
    );
    let r = apply(&server, vurl, "helm", false, &svc("10.96.0.51")).await;
    refused(&r, 422, "Invalid", "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.51\"}: may not change once set");

    let pvc = |size: &str, mode: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "p"},
            "spec": {"accessModes": [mode], "resources": {"requests": {"storage": size}}}})
    };
    let purl = "/api/v1/namespaces/default/persistentvolumeclaims/p";
    assert_eq!(
        apply(&server, purl, "helm", false, &pvc("1Gi", "ReadWriteOnce"))
            .await
            .code,
        201
    );
    assert_eq!(
        apply(&server, purl, "helm", false, &pvc("2Gi", "ReadWriteOnce"))
            .await
            .code,
        200
    );
    let r = apply(&server, purl, "helm", false, &pvc("2Gi", "ReadWriteMany")).await;
    refused(&r, 422, "Invalid", "PersistentVolumeClaim \"p\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims");
    server.stop().await;
}

#[tokio::test]
async fn ports_names_labels_and_payloads() {
    let server = start().await;
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 70000}]}});
    let r = req(&server, "POST", "/api/v1/namespaces/default/services", &svc).await;
    refused(&r, 422, "Invalid", "Service \"s\" is invalid: [spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive]");

    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "Bad_Name"}}),
    )
    .await;
    refused(&r, 422, "Invalid", "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");

    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "l", "labels": {"app": "bad value!"}}}),
    )
    .await;
    refused(&r, 422, "Invalid", "ConfigMap \"l\" is invalid: metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");

    let big = "x".repeat(300 * 1024);
    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "a", "annotations": {"k": big}}}),
    )
    .await;
    refused(&r, 422, "Invalid", "ConfigMap \"a\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes");

    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "k"}, "data": {"bad key": "v"}}),
    )
    .await;
    refused(&r, 422, "Invalid", "ConfigMap \"k\" is invalid: data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')");

    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(1536 * 1024)}}),
    )
    .await;
    refused(
        &r,
        422,
        "Invalid",
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes",
    );

    let r = req(
        &server,
        "POST",
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "s"}, "data": {"k": "not base64!"}}),
    )
    .await;
    refused(&r, 400, "BadRequest", "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3");

    let body = format!(
        "{{\"metadata\": {{\"name\": \"huge\"}}, \"data\": {{\"k\": \"{}\"}}}}",
        "x".repeat(4 << 20)
    );
    let r = send(&server, "POST", CMS, None, body.as_bytes()).await;
    refused(
        &r,
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    );
    server.stop().await;
}

#[tokio::test]
async fn malformed_requests() {
    let server = start().await;
    let cm = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
    let r = send(
        &server,
        "POST",
        CMS,
        Some("text/plain"),
        cm.to_string().as_bytes(),
    )
    .await;
    refused(&r, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf");
    let r = send(
        &server,
        "POST",
        CMS,
        Some("application/xml"),
        b"<configmap/>",
    )
    .await;
    assert_eq!(r.code, 415);
    let r = send(
        &server,
        "PATCH",
        &format!("{CMS}/c"),
        Some("text/plain"),
        b"{}",
    )
    .await;
    refused(&r, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml");

    let r = req(
        &server,
        "GET",
        &format!("{CMS}?fieldSelector=spec.foo%3Dx"),
        &Value::Null,
    )
    .await;
    refused(&r, 400, "BadRequest", "field label not supported: spec.foo");
    let r = req(
        &server,
        "GET",
        &format!("{CMS}?fieldSelector=metadata.name%3Dc"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200);

    let r = req(&server, "GET", &format!("{CMS}/.."), &Value::Null).await;
    refused(
        &r,
        400,
        "BadRequest",
        "invalid resource name \"..\": [may not be '..']",
    );

    assert_eq!(req(&server, "POST", CMS, &cm).await.code, 201);
    let other = json!({"metadata": {"name": "d"}, "data": {"k": "v"}});
    let r = req(&server, "PUT", &format!("{CMS}/c"), &other).await;
    refused(
        &r,
        400,
        "BadRequest",
        "the name of the object (d) does not match the name on the URL (c)",
    );
    let r = req(&server, "PUT", &format!("{CMS}/absent"), &other).await;
    assert_eq!(r.code, 400, "a mismatch is refused before the lookup");

    // Deeper than serde's default 128 levels and YAML's 64, as the real
    // server accepts them.
    let mut deep = json!("leaf");
    for _ in 0..300 {
        deep = json!({ "a": deep });
    }
    let r = req(
        &server,
        "POST",
        CMS,
        &json!({"metadata": {"name": "deep", "annotations": {"x": "y"}}, "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(r.code, 201);
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "deeps", "kind": "Deep"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    create_crd(&server, &crd).await;
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"}, "spec": deep});
    let r = req(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/default/deeps",
        &cr,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.message());
    let mut yaml =
        String::from("apiVersion: example.com/v1\nkind: Deep\nmetadata:\n  name: yaml\nspec:\n");
    for i in 0..100 {
        yaml.push_str(&"  ".repeat(i + 1));
        yaml.push_str("a:\n");
    }
    yaml.push_str(&"  ".repeat(101));
    yaml.push_str("b: leaf\n");
    let r = send(
        &server,
        "POST",
        "/apis/example.com/v1/namespaces/default/deeps",
        Some("application/yaml"),
        yaml.as_bytes(),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.message());
    server.stop().await;
}

/// A custom resource whose spec nests `levels` objects, as JSON text (built
/// without a deep `Value`, whose drop would recurse on this thread).
fn deep_cr(name: &str, levels: usize) -> String {
    format!(
        "{{\"apiVersion\": \"example.com/v1\", \"kind\": \"Deep\", \"metadata\": {{\"name\": \"{name}\"}}, \"spec\": {}\"leaf\"{}}}",
        "{\"a\": ".repeat(levels),
        "}".repeat(levels)
    )
}

#[tokio::test]
async fn objects_as_deep_as_kube_apiserver_stores_them() {
    let server = start().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "deeps", "kind": "Deep"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    create_crd(&server, &crd).await;
    const DEEPS: &str = "/apis/example.com/v1/namespaces/default/deeps";
    // Go's decoders stop at 10,000 levels; the object's own two (the object and
    // `spec`) count too.
    let body = deep_cr("d", 9_998);
    let r = send(&server, "POST", DEEPS, None, body.as_bytes()).await;
    assert_eq!(r.code, 201, "{}", r.message());
    // Every later read and write of it is served (a worker stack too small for it
    // would abort the whole test process).
    for (method, path) in [("GET", format!("{DEEPS}/d")), ("GET", DEEPS.to_string())] {
        let r = send(&server, method, &path, None, b"").await;
        assert_eq!(r.code, 200, "{method} {path}");
    }
    let r = send(
        &server,
        "PATCH",
        &format!("{DEEPS}/d"),
        Some("application/merge-patch+json"),
        br#"{"metadata": {"labels": {"patched": "yes"}}}"#,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.message());
    let r = send(&server, "DELETE", &format!("{DEEPS}/d"), None, b"").await;
    assert_eq!(r.code, 200, "{}", r.message());

    let r = send(
        &server,
        "POST",
        DEEPS,
        None,
        deep_cr("e", 10_000).as_bytes(),
    )
    .await;
    refused(
        &r,
        400,
        "BadRequest",
        "error decoding JSON body: exceeded max depth of 10000",
    );
    server.stop().await;
}
