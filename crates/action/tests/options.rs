//! The action options against the embedded API server: hooks disabled, description and
//! labels on the record, the transform (and its refusal writing nothing), waiting for
//! readiness, rollback on failure, force replacement, and API failures mid-action.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use action::{Error, Transform, UninstallOptions};
use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use kube::api::{Api, PostParams};
use serde_json::{json, Map};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disable_hooks_description_and_labels() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let jobs: Api<Job> = Api::default_namespaced(client.clone());

    let mut o = opts(&ns, "quiet");
    o.disable_hooks = true;
    o.description = Some("installed by test".into());
    o.labels = [("team".to_string(), "a".to_string())].into();
    let rel = install(&client, &load(), Map::new(), &o)
        .await
        .expect("install");
    // The hooks are recorded but never ran.
    let hook = rel
        .hooks
        .iter()
        .find(|h| h.name == "quiet-migrate")
        .expect("hook recorded");
    assert!(hook.last_run.started_at.is_none());
    assert!(jobs.get_opt("quiet-migrate").await.expect("read").is_none());
    assert_eq!(description(&client, "quiet", 1).await, "installed by test");
    let labels = record_secret(&client, "quiet", 1)
        .await
        .and_then(|s| s.metadata.labels)
        .unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    assert_eq!(labels.get("status").map(String::as_str), Some("deployed"));

    // Upgrade merges labels as Helm does ("null" removes one); hooks run again.
    let mut o = opts(&ns, "quiet");
    o.labels = [
        ("team".to_string(), "null".to_string()),
        ("env".to_string(), "dev".to_string()),
    ]
    .into();
    upgrade(&client, &load(), Map::new(), &o)
        .await
        .expect("upgrade");
    let labels = record_secret(&client, "quiet", 2)
        .await
        .and_then(|s| s.metadata.labels)
        .unwrap_or_default();
    assert_eq!(labels.get("env").map(String::as_str), Some("dev"));
    assert!(!labels.contains_key("team"), "{labels:?}");
    assert_eq!(description(&client, "quiet", 2).await, "Upgrade complete");
    assert!(jobs.get_opt("quiet-migrate").await.expect("read").is_some());

    // Uninstall with a description, keeping history, waiting for the objects to go.
    let mut u = UninstallOptions::new("quiet", ns.name());
    u.keep_history = true;
    u.wait = true;
    u.disable_hooks = true;
    u.description = Some("removed by test".into());
    uninstall(&client, &u).await.expect("uninstall");
    assert_eq!(description(&client, "quiet", 2).await, "removed by test");
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    assert!(deps.get_opt("quiet-web").await.expect("read").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transform_changes_objects_and_refusal_writes_nothing() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    // A refusing transform: no record, no object, and the error names the object.
    let mut o = opts(&ns, "t");
    o.transform = Some(Transform::new(|_obj, r| {
        if r.kind == "Deployment" {
            Err("deployments are not allowed here".to_string())
        } else {
            Ok(())
        }
    }));
    let err = install(&client, &load(), Map::new(), &o)
        .await
        .expect_err("refused");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::Transform { .. }), "{msg}");
    assert!(
        msg.contains(&format!("Deployment {}/t-web", ns.name()))
            && msg.contains("deployments are not allowed"),
        "{msg}"
    );
    assert!(record_secret(&client, "t", 1).await.is_none());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    assert!(cms.get_opt("t-cfg").await.expect("read").is_none());

    // A transform that labels everything, hooks included; it sees resolved scopes.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let mut o = opts(&ns, "t");
    o.transform = Some(Transform::new(move |obj, r| {
        seen2
            .lock()
            .map_err(|e| e.to_string())?
            .push(format!("{r}"));
        obj.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("stamped".into(), "yes".into());
        Ok(())
    }));
    install(&client, &load(), Map::new(), &o)
        .await
        .expect("install");
    let cm = cms.get("t-cfg").await.expect("configmap");
    assert_eq!(
        cm.metadata
            .labels
            .unwrap_or_default()
            .get("stamped")
            .map(String::as_str),
        Some("yes")
    );
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let hook = jobs.get("t-migrate").await.expect("hook job");
    assert!(hook
        .metadata
        .labels
        .unwrap_or_default()
        .contains_key("stamped"));
    let seen = seen.lock().expect("lock").clone();
    assert!(
        seen.contains(&format!("ConfigMap {}/t-cfg", ns.name())),
        "{seen:?}"
    );
    assert!(
        seen.contains(&format!("Job {}/t-smoke", ns.name())),
        "{seen:?}"
    );
    // The record keeps the chart's own manifest.
    let rel = storage(&client).get("t", 1).await.expect("record");
    assert!(!rel.manifest.contains("stamped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_ready_objects_and_jobs() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    let mut o = opts(&ns, "w");
    o.wait = true;
    o.wait_for_jobs = true;
    let v = values(json!({"job": true}));
    install(&client, &load(), v, &o)
        .await
        .expect("install waits until ready");
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    let d = deps.get("w-web").await.expect("deployment");
    assert_eq!(d.status.and_then(|s| s.available_replicas), Some(1));
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    let j = jobs.get("w-once").await.expect("job");
    assert_eq!(j.status.and_then(|s| s.succeeded), Some(1));

    // The PVC never binds (its storage class exists nowhere): the upgrade times out
    // naming it, and fails.
    let mut o = opts(&ns, "w");
    o.wait = true;
    o.timeout = Duration::from_secs(2);
    let v = values(json!({"pvc": true}));
    let err = upgrade(&client, &load(), v, &o)
        .await
        .expect_err("times out");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::NotReady { .. }), "{msg}");
    assert!(
        msg.contains(&format!(
            "PersistentVolumeClaim {}/w-data: phase is ",
            ns.name()
        )) && msg.contains(", not Bound"),
        "{msg}"
    );
    assert!(!msg.contains("Deployment"), "{msg}");
    assert_eq!(
        record_status(&client, "w", 2).await.as_deref(),
        Some("failed")
    );
    assert_eq!(
        record_status(&client, "w", 1).await.as_deref(),
        Some("deployed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_on_failure_undoes_upgrade_and_install() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let pvcs: Api<PersistentVolumeClaim> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());

    install(&client, &load(), Map::new(), &opts(&ns, "a"))
        .await
        .expect("install");
    let mut o = opts(&ns, "a");
    o.rollback_on_failure = true;
    o.timeout = Duration::from_secs(2);
    let v = values(json!({"pvc": true, "greeting": "new"}));
    let err = upgrade(&client, &load(), v, &o)
        .await
        .expect_err("rolled back");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::RolledBack { .. }), "{msg}");
    assert!(msg.contains("rolled back to revision 1"), "{msg}");
    assert_eq!(
        record_status(&client, "a", 2).await.as_deref(),
        Some("failed")
    );
    assert_eq!(
        record_status(&client, "a", 3).await.as_deref(),
        Some("deployed")
    );
    assert_eq!(description(&client, "a", 3).await, "Rollback to 1");
    let cm = cms.get("a-cfg").await.expect("configmap");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );
    // The failed revision's new object is removed by the rollback.
    assert!(pvcs.get_opt("a-data").await.expect("read").is_none());

    // Atomic install: an adopted ConfigMap survives, created objects and records go.
    let adopted: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "b-cfg"}, "data": {"greeting": "mine"}
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &adopted)
        .await
        .expect("create");
    let mut o = opts(&ns, "b");
    o.rollback_on_failure = true;
    o.take_ownership = true;
    o.timeout = Duration::from_secs(2);
    let err = install(&client, &load(), values(json!({"pvc": true})), &o)
        .await
        .expect_err("uninstalled");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::RolledBack { .. }), "{msg}");
    assert!(msg.contains("was uninstalled"), "{msg}");
    assert!(cms.get_opt("b-cfg").await.expect("read").is_some());
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    assert!(deps.get_opt("b-web").await.expect("read").is_none());
    assert!(pvcs.get_opt("b-data").await.expect("read").is_none());
    assert!(record_secret(&client, "b", 1).await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_replaces_objects_that_cannot_change() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    install(&client, &load(), Map::new(), &opts(&ns, "f"))
        .await
        .expect("install");
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let uid = svcs.get("f-svc").await.expect("svc").metadata.uid;

    // The API server refuses the first change of the Service as immutable.
    let refusals = Arc::new(AtomicUsize::new(0));
    let r2 = refusals.clone();
    let faulty = faulty_client(
        client.clone(),
        Arc::new(move |method, path| {
            let hit = method == http::Method::PATCH && path.ends_with("/services/f-svc");
            (hit && r2.fetch_add(1, Ordering::SeqCst) == 0).then(|| {
                (
                    422,
                    "Service \"f-svc\" is invalid: spec.clusterIP: Invalid value: \"\": field is immutable"
                        .to_string(),
                )
            })
        }),
    );
    let err = upgrade(&faulty, &load(), Map::new(), &opts(&ns, "f"))
        .await
        .expect_err("immutable without force");
    assert!(
        release::api_error::chain(&err).contains("field is immutable"),
        "{err}"
    );
    assert_eq!(
        record_status(&client, "f", 2).await.as_deref(),
        Some("failed")
    );
    // Nothing was deleted by the failure.
    assert_eq!(svcs.get("f-svc").await.expect("svc").metadata.uid, uid);

    refusals.store(0, Ordering::SeqCst);
    let mut o = opts(&ns, "f");
    o.force = true;
    upgrade(&faulty, &load(), Map::new(), &o)
        .await
        .expect("force replaces");
    let svc = svcs.get("f-svc").await.expect("svc recreated");
    assert_ne!(svc.metadata.uid, uid);
    assert_eq!(
        svc.metadata
            .annotations
            .unwrap_or_default()
            .get("meta.helm.sh/release-name")
            .map(String::as_str),
        Some("f")
    );
    assert_eq!(
        record_status(&client, "f", 3).await.as_deref(),
        Some("deployed")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_failures_mid_action_leave_no_pending_record() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    install(&client, &load(), Map::new(), &opts(&ns, "m"))
        .await
        .expect("install");

    // Applying the Deployment fails with a server error during the upgrade.
    let faulty = faulty_client(
        client.clone(),
        Arc::new(|method, path| {
            (method == http::Method::PATCH && path.ends_with("/deployments/m-web"))
                .then(|| (500, "etcd is unhappy".to_string()))
        }),
    );
    let v = values(json!({"service": false, "greeting": "x"}));
    let err = upgrade(&faulty, &load(), v.clone(), &opts(&ns, "m"))
        .await
        .expect_err("upgrade fails");
    assert!(
        release::api_error::chain(&err).contains("etcd is unhappy"),
        "{err}"
    );
    assert_eq!(
        record_status(&client, "m", 2).await.as_deref(),
        Some("failed")
    );
    assert_eq!(
        record_status(&client, "m", 1).await.as_deref(),
        Some("deployed")
    );
    // The Service the new revision drops is still there: the failure deleted nothing.
    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    assert!(svcs.get_opt("m-svc").await.expect("read").is_some());

    // Rollback and uninstall failing mid-way are marked failed too.
    let err = rollback(&faulty, 1, &opts(&ns, "m"))
        .await
        .expect_err("rollback fails");
    assert!(
        release::api_error::chain(&err).contains("etcd is unhappy"),
        "{err}"
    );
    assert_eq!(
        record_status(&client, "m", 3).await.as_deref(),
        Some("failed")
    );
    let faulty_delete = faulty_client(
        client.clone(),
        Arc::new(|method, path| {
            (method == http::Method::DELETE && path.ends_with("/configmaps/m-cfg"))
                .then(|| (500, "etcd is unhappy".to_string()))
        }),
    );
    let err = uninstall(&faulty_delete, &UninstallOptions::new("m", ns.name()))
        .await
        .expect_err("uninstall fails");
    assert!(
        release::api_error::chain(&err).contains("etcd is unhappy"),
        "{err}"
    );
    assert_eq!(
        record_status(&client, "m", 3).await.as_deref(),
        Some("failed")
    );

    // The release still upgrades cleanly afterwards, from the deployed revision.
    let rel = upgrade(&client, &load(), v, &opts(&ns, "m"))
        .await
        .expect("upgrade");
    assert_eq!(rel.version, 4);
    assert!(svcs.get_opt("m-svc").await.expect("read").is_none());
}
