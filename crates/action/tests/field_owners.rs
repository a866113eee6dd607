//! Field ownership on the test cluster (the embedded API server computes server-side apply
//! as structured-merge-diff does): rudder applies as Helm's field manager, takes over
//! what Helm's client-side apply, earlier rudder versions and operator-sdk's
//! helm-operator recorded, so a field the next render drops is removed, and every
//! record says `ssa` (rollbacks included) so Helm's `auto` keeps applying server-side.

mod common;

use action::FIELD_MANAGER;
use common::{opts, rollback, start, storage, upgrade, values};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::{json, Value};
use std::sync::Arc;
use testkit::TestNamespace;

const TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cfg
data:
  {{- range $k, $v := .Values.data }}
  {{ $k }}: {{ $v | quote }}
  {{- end }}
"#;

fn chart(ns: &TestNamespace) -> Arc<chart::loader::Chart> {
    let path = testkit::write_chart(
        ns.dir(),
        "owners",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: owners\nversion: 0.1.0\n",
            ),
            ("values.yaml", "data: {}\n"),
            ("templates/cm.yaml", TEMPLATE),
        ],
    );
    Arc::new(chart::loader::load_dir(&path).expect("chart loads"))
}

fn data(keys: &[(&str, &str)]) -> serde_json::Map<String, Value> {
    let map: serde_json::Map<String, Value> = keys
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    values(json!({ "data": map }))
}

fn managers(cm: &ConfigMap) -> Vec<(String, String)> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// What `helm install --server-side=false` leaves: the object created with an Update
/// operation of `manager`, Helm's ownership metadata, and a `csa` record.
async fn created_client_side(client: &Client, manager: &str, name: &str, keys: &[(&str, &str)]) {
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let ns = client.default_namespace();
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": format!("{name}-cfg"), "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns}},
        "data": keys.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
    }))
    .expect("ConfigMap");
    let pp = PostParams {
        field_manager: Some(manager.to_string()),
        ..PostParams::default()
    };
    cms.create(&pp, &cm).await.expect("create client-side");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_ownership_is_taken_over_and_dropped_fields_go() {
    let (ns, client) = start();
    let chart = chart(&ns);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    for (manager, name) in [("helm", "csa"), ("helm-operator", "goop")] {
        // A release helm (or the Go helm-operator) made client-side, adopted by an
        // install over its live object, then upgraded by rudder without key `b`.
        created_client_side(&client, manager, name, &[("a", "1"), ("b", "2")]).await;
        let installed = action::Install::new(&common::cfg(&client), opts(&ns, name))
            .run_or_adopt(&chart, data(&[("a", "1"), ("b", "2")]))
            .await
            .expect("adopt");
        assert_eq!(installed.adopted, Some(1));
        upgrade(&client, &chart, data(&[("a", "1")]), &opts(&ns, name))
            .await
            .expect("upgrade");
        let cm = cms.get(&format!("{name}-cfg")).await.expect("cm");
        assert_eq!(
            cm.data
                .clone()
                .unwrap_or_default()
                .keys()
                .collect::<Vec<_>>(),
            ["a"],
            "{manager}'s key b is gone with the render that dropped it"
        );
        assert_eq!(
            managers(&cm),
            [(FIELD_MANAGER.to_string(), "Apply".to_string())],
            "{manager}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_an_earlier_rudder_applied_lose_dropped_fields_too() {
    let (ns, client) = start();
    let chart = chart(&ns);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    common::install(&client, &chart, data(&[("a", "1")]), &opts(&ns, "old"))
        .await
        .expect("install");
    // The object as rudder used to apply it: under manager `rudder`, with key `b`.
    let legacy = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "old-cfg"}, "data": {"a": "1", "b": "2"}});
    cms.patch(
        "old-cfg",
        &PatchParams::apply("rudder").force(),
        &Patch::Apply(&legacy),
    )
    .await
    .expect("legacy apply");
    // The ownership rudder (as `helm`) has now is the same; `b` is the old manager's.
    let rel = upgrade(&client, &chart, data(&[("a", "2")]), &opts(&ns, "old"))
        .await
        .expect("upgrade");
    let cm = cms.get("old-cfg").await.expect("cm");
    assert_eq!(
        cm.data.clone().unwrap_or_default(),
        [("a".to_string(), "2".to_string())].into()
    );
    assert_eq!(managers(&cm), [(FIELD_MANAGER.into(), "Apply".into())]);
    assert_eq!(rel.apply_method, "ssa");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_to_a_client_side_revision_applies_and_records_server_side() {
    let (ns, client) = start();
    let chart = chart(&ns);
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    common::install(&client, &chart, data(&[("a", "1")]), &opts(&ns, "rb"))
        .await
        .expect("install");
    // Revision 1 as `helm install --server-side=false` records it.
    let store = storage(&client);
    let mut first = store.get("rb", 1).await.expect("v1");
    first.apply_method = "csa".into();
    store.update(&first).await.expect("mark csa");
    upgrade(
        &client,
        &chart,
        data(&[("a", "1"), ("b", "2")]),
        &opts(&ns, "rb"),
    )
    .await
    .expect("upgrade");
    let rel = rollback(&client, 1, &opts(&ns, "rb"))
        .await
        .expect("rollback");
    assert_eq!((rel.version, rel.apply_method.as_str()), (3, "ssa"));
    let stored = store.get("rb", 3).await.expect("v3");
    assert_eq!(stored.apply_method, "ssa");
    let cm = cms.get("rb-cfg").await.expect("cm");
    assert_eq!(
        cm.data.unwrap_or_default(),
        [("a".to_string(), "1".to_string())].into()
    );
}
