//! CRs in hostile states, against the test cluster (embedded, or
//! `RUDDER_TEST_KUBECONFIG`'s). Every CR can be deleted, whatever state its release is
//! in: a name no Helm release can have, a record that cannot be read, a release whose
//! records name no chart, and a chart that fails to render the CR's spec. What can be
//! uninstalled is, the finalizer goes, and an event says what was left behind. And a
//! status never outgrows the object, however large the spec and the manifest.
//!
//! A failing render of a CR that never installed, and a release of another chart, are
//! in `reconcile.rs` (`failed_install_is_kept_and_does_not_loop`) and
//! `go_parity.rs` (`another_charts_release_is_never_taken_over`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use operator::{Context, ReconcileError};
use serde_json::{json, Value};

mod common;

use common::*;

/// Puts our finalizer on the CR, as a reconcile (this operator's, an older one's, or
/// the Go operator's) that got further would have left it.
async fn add_finalizer(client: &Client, name: &str) {
    let patch = json!({"metadata": {"finalizers": [FINALIZER]}});
    crs(client)
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("add the finalizer");
}

/// Deletes the CR (which holds our finalizer), reconciles its deletion once and
/// requires it gone.
async fn delete_and_finalize(ctx: &Arc<Context>, name: &str) {
    let client = ctx.client();
    let cr = get_cr(client, name).await;
    assert!(
        cr.finalizers().iter().any(|f| f == FINALIZER),
        "{name}: {:?}",
        cr.finalizers()
    );
    crs(client)
        .delete(name, &DeleteParams::default())
        .await
        .expect("delete CR");
    run(ctx, name).await.expect("the deletion reconciles");
    assert!(
        crs(client).get_opt(name).await.expect("get CR").is_none(),
        "{name}: the finalizer is released"
    );
}

async fn records(client: &Client, name: &str) -> Vec<String> {
    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let list = secrets
        .list(&ListParams::default().labels(&format!("owner=helm,name={name}")))
        .await
        .expect("records");
    list.items.iter().map(|s| s.name_any()).collect()
}

async fn configmap(client: &Client, name: &str) -> Option<ConfigMap> {
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    api.get_opt(name).await.expect("get configmap")
}

fn condition(cr: &kube::api::DynamicObject, type_: &str) -> Value {
    cr.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .cloned()
        .unwrap_or_else(|| panic!("no {type_} condition in {}", cr.data["status"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_helm_refuses_are_irreconcilable_with_helms_message_and_deletable() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    // 54 characters: Helm's limit is 53. 253: the longest name Kubernetes allows.
    for name in ["a".repeat(54), "b".repeat(253)] {
        create_cr(&client, &name, json!({})).await;
        let err = run(&ctx, &name).await.expect_err("refused");
        assert!(matches!(err, ReconcileError::InvalidName { .. }), "{err}");
        let cr = get_cr(&client, &name).await;
        let c = condition(&cr, "Irreconcilable");
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str()),
            (Some("True"), Some("ReconcileError"))
        );
        assert_eq!(
            c["message"].as_str().unwrap_or_default(),
            format!(
                "release name check failed: release name {name:?}: invalid release name, must match \
                 regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the \
                 length must not be longer than 53"
            )
        );
        assert!(records(&client, &name[..name.len().min(63)])
            .await
            .is_empty());
        add_finalizer(&client, &name).await;
        delete_and_finalize(&ctx, &name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_whose_record_cannot_be_read_is_deleted_with_the_objects_its_status_names() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "unread", json!({"greeting": "hi"})).await;
    run(&ctx, "unread").await.expect("install");
    assert!(configmap(&client, "unread-cfg").await.is_some());

    let secrets: Api<Secret> = Api::default_namespaced(client.clone());
    let key = "sh.helm.release.v1.unread.v1";
    let mut record = secrets.get(key).await.expect("record");
    record.data = Some(
        [(
            "release".to_string(),
            ByteString(b"%%% not base64 %%%".to_vec()),
        )]
        .into(),
    );
    secrets
        .replace(key, &PostParams::default(), &record)
        .await
        .expect("corrupt the record");

    delete_and_finalize(&ctx, "unread").await;
    let cm = configmap(&client, "unread-cfg").await;
    assert!(
        cm.is_none_or(|c| c.metadata.deletion_timestamp.is_some()),
        "the objects of the manifest in the status are deleted"
    );
    let events = event_reasons(&client, "unread").await;
    let left = events
        .iter()
        .find(|(t, r, _)| t == "Warning" && r == "UninstallError")
        .unwrap_or_else(|| panic!("no event says what was left: {events:?}"));
    assert!(
        left.2
            .contains(&format!("cannot decode release record {key:?}")),
        "{}",
        left.2
    );
    assert!(
        left.2.contains("kubectl delete secret -n") && left.2.contains("-l owner=helm,name=unread"),
        "{}",
        left.2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_whose_chart_fails_to_render_is_still_uninstalled() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    create_cr(&client, "unrendered", json!({"greeting": "hi"})).await;
    run(&ctx, "unrendered").await.expect("install");
    let api = crs(&client);
    let mut cr = api.get("unrendered").await.expect("CR");
    cr.data["spec"] = json!({"fail": true});
    api.replace("unrendered", &PostParams::default(), &cr)
        .await
        .expect("spec that fails to render");
    let err = run(&ctx, "unrendered").await.expect_err("render fails");
    assert!(
        release::api_error::chain(&err).contains("the spec asked this chart to fail"),
        "{err}"
    );

    delete_and_finalize(&ctx, "unrendered").await;
    assert!(configmap(&client, "unrendered-cfg").await.is_none());
    assert!(records(&client, "unrendered").await.is_empty());
    let events = event_reasons(&client, "unrendered").await;
    assert!(
        events.iter().any(|(_, r, _)| r == "UninstallSuccessful"),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cr_whose_release_records_name_no_chart_is_deleted_and_the_release_left_alone() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    let namespace = client.default_namespace().to_string();
    let mut rel = release::record::Release {
        name: "chartless".into(),
        namespace: namespace.clone(),
        version: 1,
        ..Default::default()
    };
    rel.set_status(release::record::Status::Deployed, "Install complete");
    release::StorageDriver::Secret
        .storage(&client, &namespace)
        .create(&rel)
        .await
        .expect("a record without a chart");
    create_cr(&client, "chartless", json!({})).await;
    let err = run(&ctx, "chartless").await.expect_err("refused");
    assert!(
        matches!(err, ReconcileError::NoChartMetadata { .. }),
        "{err}"
    );
    add_finalizer(&client, "chartless").await;

    delete_and_finalize(&ctx, "chartless").await;
    assert_eq!(
        records(&client, "chartless").await,
        ["sh.helm.release.v1.chartless.v1"]
    );
    let events = event_reasons(&client, "chartless").await;
    assert!(
        events.iter().any(|(_, r, m)| r == "NotUninstalled"
            && m.contains("could not find chart metadata in release with name \"chartless\"")),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_that_would_outgrow_the_object_leaves_out_the_manifest_and_says_so() {
    let (_ns, client) = start();
    let ctx = context(&client, watch());
    // 800 KB in the spec and so in the manifest: both in one object would pass etcd's
    // 1.5 MiB.
    let greeting = "g".repeat(800_000);
    create_cr(&client, "heavy", json!({ "greeting": greeting })).await;
    run(&ctx, "heavy").await.expect("install");
    let cr = get_cr(&client, "heavy").await;
    let deployed = condition(&cr, "Deployed");
    assert_eq!(deployed["status"], "True", "{deployed}");
    let message = deployed["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Hello from heavy."), "{message}");
    let note = "[left out to keep the custom resource within 1048576 bytes: \
                status.deployedRelease.manifest (";
    assert!(message.contains(note), "{message}");
    assert!(
        message.ends_with(" bytes; `helm get manifest heavy` shows it)]"),
        "{message}"
    );
    assert_eq!(cr.data["status"]["deployedRelease"]["name"], "heavy");
    assert!(cr.data["status"]["deployedRelease"]
        .get("manifest")
        .is_none());
    // A no-op reconcile finds the same status and writes nothing new.
    let before = cr.metadata.resource_version.clone();
    run(&ctx, "heavy").await.expect("repair");
    assert_eq!(
        get_cr(&client, "heavy").await.metadata.resource_version,
        before
    );
}
