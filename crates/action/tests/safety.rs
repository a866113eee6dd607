//! Release locking, recovery of releases left pending by a crash, repair, upgrade
//! diffs and test hooks, on the test cluster.

mod common;

use std::sync::Arc;
use std::time::Duration;

use action::Error;
use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
use release::lock::{LockState, LOCK_ANNOTATION};
use release::Status;
use serde_json::{json, Map};

/// Puts a lock of `holder`, last renewed `renewed_secs_ago`, on the newest record of
/// `release`, as a rudder process holding it would have.
async fn put_lock(client: &Client, release: &str, holder: &str, renewed_secs_ago: i64) {
    let renewed = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_secs(renewed_secs_ago))
        .expect("time");
    let lock = LockState {
        holder: holder.to_string(),
        acquired: renewed,
        renewed,
        duration_seconds: 30,
    };
    let key = newest_record(client, release)
        .await
        .expect("a record to lock");
    Api::<Secret>::default_namespaced(client.clone())
        .patch(
            &key,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {LOCK_ANNOTATION: lock.encode()}}})),
        )
        .await
        .expect("lock the record");
}

async fn newest_record(client: &Client, release: &str) -> Option<String> {
    storage(client)
        .history_meta(release)
        .await
        .expect("history")
        .pop()
        .map(|m| m.key)
}

/// How many records of `release` carry a lock.
async fn locked_records(client: &Client, release: &str) -> usize {
    storage(client)
        .history_meta(release)
        .await
        .expect("history")
        .iter()
        .filter(|m| m.annotations.contains_key(LOCK_ANNOTATION))
        .count()
}

fn host() -> String {
    action::hostname()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_refuse_live_holders_and_take_over_dead_ones() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    install(&client, &load(), Map::new(), &opts(&ns, "l"))
        .await
        .expect("install");
    assert_eq!(locked_records(&client, "l").await, 0, "given back");
    // A live holder elsewhere: every action is refused with who and until when.
    put_lock(&client, "l", "other-host/42/abcd", 0).await;
    let err = upgrade(&client, &load(), Map::new(), &opts(&ns, "l"))
        .await
        .expect_err("locked");
    let msg = release::api_error::chain(&err);
    assert!(matches!(err, Error::Locked { .. }), "{msg}");
    assert!(
        msg.contains("another operation (holder other-host/42/abcd, since")
            && msg.contains("in progress on release \"l\"; retry after"),
        "{msg}"
    );
    assert!(record_secret(&client, "l", 2).await.is_none());
    let err = uninstall(&client, &action::UninstallOptions::new("l", ns.name()))
        .await
        .expect_err("locked");
    assert!(matches!(err, Error::Locked { .. }), "{err}");

    // An expired lock is taken over; the action gives the lock back when done.
    put_lock(&client, "l", "other-host/42/abcd", 120).await;
    upgrade(&client, &load(), Map::new(), &opts(&ns, "l"))
        .await
        .expect("upgrade after expiry");
    assert_eq!(locked_records(&client, "l").await, 0);

    // A holder on this host whose process is gone is taken over at once.
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead_pid = child.id();
    child.wait().expect("wait");
    put_lock(&client, "l", &format!("{}/{dead_pid}/x", host()), 0).await;
    upgrade(&client, &load(), Map::new(), &opts(&ns, "l"))
        .await
        .expect("upgrade after a dead holder");
    // So is one with our pid that this process never handed out (a restarted pid 1).
    put_lock(
        &client,
        "l",
        &format!("{}/{}/old", host(), std::process::id()),
        0,
    )
    .await;
    rollback(&client, 1, &opts(&ns, "l"))
        .await
        .expect("rollback after a previous incarnation");
    assert_eq!(locked_records(&client, "l").await, 0);

    // Two concurrent actions of this process: one wins, the other is told it is locked.
    let (oa, ob) = (opts(&ns, "l"), opts(&ns, "l"));
    let (ca, cb) = (load(), load());
    let a = upgrade(&client, &ca, Map::new(), &oa);
    let b = upgrade(&client, &cb, Map::new(), &ob);
    let (a, b) = tokio::join!(a, b);
    let locked = [&a, &b]
        .iter()
        .filter(|r| matches!(r, Err(Error::Locked { .. })))
        .count();
    let ok = [&a, &b].iter().filter(|r| r.is_ok()).count();
    assert_eq!((ok, locked), (1, 1), "{a:?} {b:?}");
}

/// Writes a record as a crashed rudder action would have left it: with the lock of
/// a holder that stopped renewing it two minutes ago.
async fn leave_pending(client: &Client, name: &str, version: i64, status: Status, desc: &str) {
    let store = storage(client);
    let mut rel = store
        .last(name)
        .await
        .expect("read")
        .unwrap_or_else(|| release::Release {
            name: name.to_string(),
            namespace: client.default_namespace().to_string(),
            ..Default::default()
        });
    rel.version = version;
    rel.set_status(status, desc);
    store.create(&rel).await.expect("create pending record");
    put_lock(client, name, "crashed-host/4242/x", 120).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_leftovers_are_recovered() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));

    // An install that crashed after creating objects: the next install adopts them.
    let crashed = opts(&ns, "p");
    let partial = action::render(&load(), Map::new(), &crashed, action::Revision::install(1))
        .await
        .expect("render");
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "p-cfg", "annotations": {
            "meta.helm.sh/release-name": "p", "meta.helm.sh/release-namespace": ns.name()}},
        "data": {"greeting": "half"}
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &cm).await.expect("cm");
    assert!(partial.manifest_text().contains("p-cfg"));
    leave_pending(
        &client,
        "p",
        1,
        Status::PendingInstall,
        "Initial install underway",
    )
    .await;

    // Under a live lock it is not a leftover: nothing is recovered.
    put_lock(&client, "p", "someone-else/7/live", 0).await;
    assert!(recover_pending(&client, &opts(&ns, "p"))
        .await
        .expect("recover")
        .is_none());
    assert_eq!(
        record_status(&client, "p", 1).await.as_deref(),
        Some("pending-install")
    );
    // Its holder ends without giving the lock back: the lock expires.
    put_lock(&client, "p", "someone-else/7/live", 120).await;

    let rel = install(&client, &load(), Map::new(), &opts(&ns, "p"))
        .await
        .expect("install proceeds");
    assert_eq!(rel.version, 2);
    assert_eq!(
        record_status(&client, "p", 1).await.as_deref(),
        Some("failed")
    );
    assert_eq!(
        description(&client, "p", 1).await,
        "interrupted: Initial install underway"
    );
    let cm = cms.get("p-cfg").await.expect("cm");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );

    // An upgrade that crashed: the next upgrade continues from the deployed revision.
    leave_pending(&client, "p", 3, Status::PendingUpgrade, "Preparing upgrade").await;
    let rel = upgrade(
        &client,
        &load(),
        values(json!({"greeting": "again"})),
        &opts(&ns, "p"),
    )
    .await
    .expect("upgrade proceeds");
    assert_eq!(rel.version, 4);
    assert_eq!(
        record_status(&client, "p", 3).await.as_deref(),
        Some("failed")
    );
    assert_eq!(
        description(&client, "p", 3).await,
        "interrupted: Preparing upgrade"
    );
    assert_eq!(
        record_status(&client, "p", 2).await.as_deref(),
        Some("superseded")
    );
    assert_eq!(
        record_status(&client, "p", 4).await.as_deref(),
        Some("deployed")
    );

    // recover_pending on its own.
    leave_pending(&client, "p", 5, Status::PendingRollback, "Rollback to 2").await;
    let recovered = recover_pending(&client, &opts(&ns, "p"))
        .await
        .expect("recover")
        .expect("something recovered");
    assert_eq!(recovered.version, 5);
    assert_eq!(recovered.status(), Status::Failed);
    assert!(recover_pending(&client, &opts(&ns, "p"))
        .await
        .expect("recover")
        .is_none());
    // Recovery deleted nothing.
    assert!(cms.get_opt("p-cfg").await.expect("read").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_restores_drift_without_a_new_revision() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let err = repair(&client, &opts(&ns, "r"))
        .await
        .expect_err("nothing deployed");
    assert!(matches!(err, Error::NotDeployed { .. }), "{err}");
    install(&client, &load(), Map::new(), &opts(&ns, "r"))
        .await
        .expect("install");

    let svcs: Api<Service> = Api::default_namespaced(client.clone());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let deps: Api<Deployment> = Api::default_namespaced(client.clone());
    // Let the simulated controllers settle first, so only our drift shows.
    tokio::time::sleep(Duration::from_millis(500)).await;
    svcs.delete("r-svc", &DeleteParams::default())
        .await
        .expect("delete svc");
    cms.patch(
        "r-cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"greeting": "drifted"}})),
    )
    .await
    .expect("edit cm");

    let report = repair(&client, &opts(&ns, "r")).await.expect("repair");
    let mut names: Vec<String> = report.repaired.iter().map(|r| r.to_string()).collect();
    names.sort();
    assert!(
        names.contains(&format!("Service {}/r-svc", ns.name())),
        "{names:?}"
    );
    assert!(
        names.contains(&format!("ConfigMap {}/r-cfg", ns.name())),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("Deployment")),
        "{names:?}"
    );
    assert!(svcs.get_opt("r-svc").await.expect("read").is_some());
    let cm = cms.get("r-cfg").await.expect("cm");
    assert_eq!(
        cm.data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("hello")
    );
    assert!(deps.get_opt("r-web").await.expect("read").is_some());
    assert!(
        record_secret(&client, "r", 2).await.is_none(),
        "no new revision"
    );
    // A transform is applied on repair as well.
    let mut o = opts(&ns, "r");
    o.transform = Some(action::Transform::new(|obj, _| {
        obj.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("repaired".into(), "yes".into());
        Ok(())
    }));
    repair(&client, &o).await.expect("repair");
    let cm = cms.get("r-cfg").await.expect("cm");
    assert!(cm
        .metadata
        .labels
        .unwrap_or_default()
        .contains_key("repaired"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_upgrade_and_test_hooks() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let v = values(json!({"greeting": "hi"}));
    install(&client, &load(), v.clone(), &opts(&ns, "d"))
        .await
        .expect("install");

    let same = diff_upgrade(&client, &load(), v.clone(), &opts(&ns, "d"))
        .await
        .expect("diff");
    assert!(
        !same.changed,
        "{} vs {}",
        same.current_manifest, same.new_manifest
    );
    let other = diff_upgrade(
        &client,
        &load(),
        values(json!({"greeting": "hi", "service": false})),
        &opts(&ns, "d"),
    )
    .await
    .expect("diff");
    assert!(other.changed);
    assert!(other.current_manifest.contains("d-svc") && !other.new_manifest.contains("d-svc"));
    assert!(
        record_secret(&client, "d", 2).await.is_none(),
        "diff writes nothing"
    );
    // Same manifest text in another document order and formatting is no change.
    let a = "---\n# Source: x/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# Source: x/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
    let b = "---\n# Source: x/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n# Source: x/a.yaml\nkind: ConfigMap\napiVersion: v1\nmetadata:\n  name: a\n";
    assert!(action::same_manifest(a, b));
    assert!(!action::same_manifest(a, &b.replace("name: b", "name: c")));

    // Test hooks run and their executions are recorded.
    let rel = test(&client, &opts(&ns, "d")).await.expect("test");
    let smoke = rel
        .hooks
        .iter()
        .find(|h| h.name == "d-smoke")
        .expect("test hook");
    assert_eq!(smoke.last_run.phase, "Succeeded");
    let stored = storage(&client).get("d", 1).await.expect("record");
    let smoke = stored
        .hooks
        .iter()
        .find(|h| h.name == "d-smoke")
        .expect("test hook");
    assert_eq!(smoke.last_run.phase, "Succeeded");
    let jobs: Api<Job> = Api::default_namespaced(client.clone());
    assert!(jobs.get_opt("d-smoke").await.expect("read").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_locks_and_runs_in_a_terminating_namespace() {
    let (ns, client) = start();
    let chart_dir = write_chart(ns.dir());
    let load = || Arc::new(chart::loader::load(&chart_dir).expect("chart loads"));
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    // A second namespace of the test's own, which the test deletes itself; teardown
    // lifts the finalizer below once the test is over.
    let doomed_ns = ns.cluster().namespace("doomed");
    let doomed = doomed_ns.name();
    let o = action::ActionOptions::new("z", doomed);
    install(&client, &load(), Map::new(), &o)
        .await
        .expect("install");
    // Hold the record (as a CR's finalizer holds the operator's CR) while the
    // namespace terminates and refuses new objects.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), doomed);
    secrets
        .patch(
            "sh.helm.release.v1.z.v1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold"]}})),
        )
        .await
        .expect("hold record");
    namespaces
        .delete(doomed, &DeleteParams::default())
        .await
        .expect("delete namespace");
    // The namespace now refuses new objects; the lock needs none (it is an annotation
    // on the existing record).
    let probe: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "probe"}})).expect("cm");
    let refused = Api::<ConfigMap>::namespaced(client.clone(), doomed)
        .create(&PostParams::default(), &probe)
        .await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403),
        "{refused:?}"
    );
    let mut u = action::UninstallOptions::new("z", doomed);
    u.timeout = Duration::from_secs(10);
    uninstall(&client, &u).await.expect("uninstall proceeds");
}
