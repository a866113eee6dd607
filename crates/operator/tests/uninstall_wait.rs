//! `uninstall-wait` with the whole operator running and one worker
//! (`--max-concurrent-reconciles=1`): deleting the CR uninstalls at once (the records
//! go), the CR shows `Deployed=False/UninstallSuccessful` "Waiting until all resources
//! are deleted." with its `deployedRelease` kept while an object of the release
//! lingers, another CR is installed meanwhile (the wait holds no worker), and the CR
//! goes once the object is gone.

mod common;

use std::time::Duration;

use common::cluster::TestCluster;
use common::{resource, GROUP, KIND, VERSION};
use futures::channel::oneshot;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use operator::Options;
use serde_json::{json, Value};
use testkit::eventually;

const WAIT: Duration = Duration::from_secs(90);

fn deployed(cr: &DynamicObject) -> Option<(String, String, String)> {
    let c = cr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Deployed")?
        .clone();
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    Some((s("status"), s("reason"), s("message")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_wait_holds_no_worker() {
    let tc = TestCluster::start("uninstall-wait", true).await;
    let dir = std::env::temp_dir().join(format!("rudder-uninstall-wait-{}", tc.namespace));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let chart =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/go_parity/keeper");
    let watches = dir.join("watches.yaml");
    std::fs::write(
        &watches,
        format!(
            "- group: {GROUP}\n  version: {VERSION}\n  kind: {KIND}\n  chart: {}\n  watchDependentResources: false\n",
            chart.display()
        ),
    )
    .expect("watches.yaml");
    let options = Options {
        watches_file: watches,
        reconcile_period: Duration::from_secs(1),
        max_concurrent_reconciles: 1,
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        watch_namespaces: vec![tc.namespace.clone()],
        shutdown_timeout: Duration::from_secs(30),
        ..Options::default()
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(operator::run_with_shutdown(
        tc.client.clone(),
        options,
        async move {
            let _ = stopped.await;
        },
    ));

    let crs: Api<DynamicObject> =
        Api::namespaced_with(tc.client.clone(), &tc.namespace, &resource());
    let create = |name: &str, spec: Value, annotations: Value| {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/{VERSION}"), "kind": KIND,
            "metadata": {"name": name, "annotations": annotations}, "spec": spec,
        }))
        .expect("cr");
        let crs = crs.clone();
        async move {
            crs.create(&PostParams::default(), &obj)
                .await
                .expect("create CR");
        }
    };
    let deployed_true = |name: &'static str| {
        let crs = crs.clone();
        move || {
            let crs = crs.clone();
            async move {
                let cr = crs.get(name).await.ok()?;
                (deployed(&cr)?.0 == "True").then_some(())
            }
        }
    };
    create(
        "a",
        json!({"hold": true}),
        json!({"helm.sdk.operatorframework.io/uninstall-wait": "true"}),
    )
    .await;
    // Wait for: a deployed.
    eventually(WAIT, deployed_true("a")).await;

    crs.delete("a", &DeleteParams::default())
        .await
        .expect("delete CR a");
    let secrets: Api<Secret> = Api::namespaced(tc.client.clone(), &tc.namespace);
    // Wait for: a waiting for its objects.
    let cr = eventually(WAIT, || async {
        let cr = crs.get("a").await.ok()?;
        (deployed(&cr)?.2 == "Waiting until all resources are deleted.").then_some(cr)
    })
    .await;
    let (status, reason, _) = deployed(&cr).expect("Deployed");
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "UninstallSuccessful")
    );
    assert!(
        cr.data["status"]["deployedRelease"]["manifest"]
            .as_str()
            .is_some_and(|m| m.contains("a-cfg")),
        "{}",
        cr.data["status"]
    );
    // Wait for: a's records deleted at once.
    eventually(WAIT, || async {
        let list = secrets
            .list(&ListParams::default().labels("owner=helm,name=a"))
            .await
            .ok()?;
        list.items.is_empty().then_some(())
    })
    .await;

    // One worker, and it is not held: another CR is installed meanwhile.
    create("b", json!({}), json!({})).await;
    // Wait for: b deployed while a waits.
    eventually(WAIT, deployed_true("b")).await;
    assert!(
        crs.get_opt("a").await.expect("read a").is_some(),
        "a still waits"
    );

    // The lingering object goes: so does the CR.
    let cms: Api<ConfigMap> = Api::namespaced(tc.client.clone(), &tc.namespace);
    cms.patch(
        "a-cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release the object");
    // Wait for: CR a gone.
    eventually(WAIT, || async {
        crs.get_opt("a").await.ok()?.is_none().then_some(())
    })
    .await;

    let _ = stop.send(());
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the operator stops")
        .expect("no panic")
        .expect("clean shutdown");
    let _ = std::fs::remove_dir_all(&dir);
    tc.stop().await;
}
