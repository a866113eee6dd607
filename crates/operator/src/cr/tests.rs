//! Decoding CRs as the API server sends them: in a LIST and in watch events, with
//! specs nested far deeper than serde_json's own limit of 128.

use kube::api::ObjectList;
use kube::core::WatchEvent;
use serde_json::json;

use super::*;

/// `{"a":{"a":…{"leaf":true}…}}`, `levels` objects deep.
fn nested(levels: usize) -> String {
    let mut s = String::with_capacity(levels * 6 + 16);
    for _ in 0..levels - 1 {
        s.push_str("{\"a\":");
    }
    s.push_str("{\"leaf\":true}");
    for _ in 0..levels - 1 {
        s.push('}');
    }
    s
}

/// A CR as the API server writes it: managed fields mirroring the spec (so nested as
/// deep), the `kubectl apply` annotation, and a status.
fn cr_text(name: &str, spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"test.rudder.dev/v1","kind":"Demo","metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"7","generation":2,"creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"team":"a"}},"annotations":{{"{LAST_APPLIED}":"{{}}","keep":"me"}},"finalizers":["helm.sdk.operatorframework.io/uninstall-release"],"ownerReferences":[],"managedFields":[{{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{{"f:spec":{spec}}}}}]}},"spec":{spec},"status":{{"conditions":[{{"type":"Deployed","status":"True"}}]}}}}"#
    )
}

fn depth_of(v: &serde_json::Value) -> usize {
    gocodec::depth::json_depth(v)
}

#[test]
fn a_list_with_a_spec_nested_10000_levels_decodes() {
    let deep = nested(10_000);
    let list = format!(
        r#"{{"apiVersion":"test.rudder.dev/v1","kind":"DemoList","metadata":{{"resourceVersion":"9"}},"items":[{},{}]}}"#,
        cr_text("deep", &deep),
        cr_text("plain", r#"{"replicaCount":2}"#)
    );
    // What kube's client does with a LIST response.
    let decoded: ObjectList<CustomResource> =
        serde_json::from_str(&list).expect("the list decodes");
    assert_eq!(decoded.items.len(), 2);
    let (deep_cr, plain) = (&decoded.items[0], &decoded.items[1]);
    assert_eq!(deep_cr.spec_raw().map(RawValue::get), Some(deep.as_str()));
    assert_eq!(
        plain.spec_json().expect("a spec").expect("readable"),
        json!({"replicaCount": 2})
    );
    // serde_json's own tree stops at 128 levels: the reason for the raw spec.
    let err = serde_json::from_str::<serde_json::Value>(&deep).unwrap_err();
    assert!(err.to_string().contains("recursion limit"), "{err}");
    // The depth-bounded parser reads all 10,000 levels.
    let parsed = deep_cr.spec_json().expect("a spec").expect("within 10,000");
    assert_eq!(depth_of(&parsed), 10_000);
    gocodec::depth::drop_json(parsed);
}

#[test]
fn a_spec_deeper_than_go_reads_decodes_but_does_not_parse() {
    let text = cr_text("deeper", &nested(10_001));
    let cr: CustomResource = serde_json::from_str(&text).expect("the CR decodes");
    let err = cr.spec_json().expect("a spec").unwrap_err();
    assert!(err.contains("10000"), "{err}");
}

#[test]
fn watch_events_with_deep_specs_decode() {
    let deep = nested(10_000);
    // kube-apiserver writes `type` before `object`, as every event here does.
    let line = format!(
        r#"{{"type":"MODIFIED","object":{}}}"#,
        cr_text("deep", &deep)
    );
    match serde_json::from_str::<WatchEvent<CustomResource>>(&line).expect("decodes") {
        WatchEvent::Modified(cr) => {
            assert_eq!(cr.metadata.name.as_deref(), Some("deep"));
            assert_eq!(cr.spec_raw().map(|s| s.get().len()), Some(deep.len()));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn metadata_keeps_what_reconciling_reads() {
    let cr: CustomResource = serde_json::from_str(&cr_text("app", r#"{"a":1}"#)).expect("decodes");
    let m = &cr.metadata;
    assert_eq!(m.name.as_deref(), Some("app"));
    assert_eq!(m.namespace.as_deref(), Some("ns"));
    assert_eq!(m.uid.as_deref(), Some("u-app"));
    assert_eq!(m.resource_version.as_deref(), Some("7"));
    assert_eq!(m.generation, Some(2));
    assert!(m.creation_timestamp.is_some());
    assert_eq!(m.labels.as_ref().map(|l| l["team"].as_str()), Some("a"));
    let annotations: Vec<_> = m.annotations.iter().flatten().map(|(k, _)| k).collect();
    assert_eq!(annotations, ["keep"], "no kubectl apply copy");
    assert_eq!(
        m.finalizers.as_deref(),
        Some(&["helm.sdk.operatorframework.io/uninstall-release".to_string()][..])
    );
    assert!(m.managed_fields.is_none() && m.owner_references.is_none());
    assert_eq!(
        cr.status_json(),
        Some(json!({"conditions": [{"type": "Deployed", "status": "True"}]}))
    );
}

#[test]
fn null_and_absent_spec_are_none_and_a_dynamic_object_converts() {
    let cr: CustomResource =
        serde_json::from_value(json!({"metadata": {"name": "a"}, "spec": null})).unwrap();
    assert!(cr.spec_raw().is_none() && cr.status_raw().is_none());
    let cr: CustomResource = serde_json::from_value(json!({"metadata": {"name": "b"}})).unwrap();
    assert!(cr.spec_json().is_none());
    let o: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "test.rudder.dev/v1", "kind": "Demo",
        "metadata": {"name": "c", "managedFields": [{"manager": "m"}],
                     "annotations": {LAST_APPLIED: "{}"}},
        "spec": {"x": [1, 2]}, "status": {"s": 1},
    }))
    .unwrap();
    let cr = CustomResource::from(&o);
    assert_eq!(cr.spec_json().unwrap().unwrap(), json!({"x": [1, 2]}));
    assert_eq!(cr.status_json(), Some(json!({"s": 1})));
    assert!(cr.metadata.managed_fields.is_none());
    assert_eq!(cr.metadata.annotations, Some(BTreeMap::new()));
    // What a status write leaves room for: the metadata and the spec as sent.
    let weight = cr.weight_without_status();
    assert_eq!(
        weight,
        serde_json::to_vec(&cr.metadata).unwrap().len() + r#"{"x":[1,2]}"#.len()
    );
}
