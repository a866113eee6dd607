//! The Secret and ConfigMap drivers and the record lock against the test cluster (the
//! embedded API server, or `RUDDER_TEST_KUBECONFIG`'s), checking the exact objects
//! written, each test in a namespace of its own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use release::codec;
use release::driver::objects::ChunkConfig;
use release::driver::{selector, ConfigMapDriver, Driver, SecretDriver, WriteMeta};
use release::lock::{LockError, LockState, RecordLocks, ReleaseLocks, LOCK_ANNOTATION};
use release::{Error, Release, Status, Storage};
use testkit::{Cluster, TestNamespace};

/// A namespace of the test's own, and a client defaulting to it.
fn start() -> (TestNamespace, Client) {
    let ns = Cluster::builder()
        .simulate_readiness(false)
        .start()
        .namespace("release-drivers");
    let client = ns.client();
    (ns, client)
}

fn rel(ns: &TestNamespace, name: &str, version: i64, status: Status, manifest: &str) -> Release {
    let mut r = Release {
        name: name.into(),
        version,
        namespace: ns.name().into(),
        manifest: manifest.into(),
        ..Release::default()
    };
    r.set_status(status, "test");
    r
}

fn label_keys(labels: &Option<BTreeMap<String, String>>) -> Vec<String> {
    labels.clone().unwrap_or_default().into_keys().collect()
}

#[tokio::test]
async fn secret_driver_writes_helms_exact_layout() {
    let (ns, client) = start();
    let driver = SecretDriver::for_namespace(client.clone(), ns.name());
    let mut r = rel(&ns, "web", 1, Status::Deployed, "kind: A\n");
    r.labels.insert("team".into(), "x".into());
    driver
        .create("sh.helm.release.v1.web.v1", &r)
        .await
        .unwrap();

    let secret = Api::<Secret>::namespaced(client.clone(), ns.name())
        .get("sh.helm.release.v1.web.v1")
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("helm.sh/release.v1"));
    assert_eq!(
        label_keys(&secret.metadata.labels),
        ["createdAt", "name", "owner", "status", "team", "version"]
    );
    let labels = secret.metadata.labels.clone().unwrap();
    assert_eq!(
        (
            labels["name"].as_str(),
            labels["owner"].as_str(),
            labels["status"].as_str(),
            labels["version"].as_str()
        ),
        ("web", "helm", "deployed", "1")
    );
    assert!(labels["createdAt"].parse::<i64>().unwrap() > 1_600_000_000);
    let data = secret.data.clone().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["release"]);
    // The value is Helm's base64 text (so base64 twice on the wire), gzip inside.
    let decoded = codec::decode_bytes(&data["release"].0).unwrap();
    assert_eq!(decoded.manifest, "kind: A\n");

    assert_eq!(driver.get("sh.helm.release.v1.web.v1").await.unwrap(), r);
    assert!(matches!(
        driver.create("sh.helm.release.v1.web.v1", &r).await,
        Err(Error::AlreadyExists(_))
    ));
    assert!(driver
        .get("sh.helm.release.v1.web.v9")
        .await
        .unwrap_err()
        .is_not_found());

    let mut r2 = r.clone();
    r2.set_status(Status::Superseded, "Superseded");
    driver
        .update("sh.helm.release.v1.web.v1", &r2)
        .await
        .unwrap();
    let secret = Api::<Secret>::namespaced(client.clone(), ns.name())
        .get("sh.helm.release.v1.web.v1")
        .await
        .unwrap();
    assert_eq!(
        label_keys(&secret.metadata.labels),
        ["modifiedAt", "name", "owner", "status", "team", "version"]
    );
    let metas = driver
        .query_meta(&selector([("name", "web"), ("owner", "helm")]))
        .await
        .unwrap();
    assert_eq!(metas.len(), 1);
    assert_eq!(metas[0].status, Status::Superseded);

    assert_eq!(
        driver.delete("sh.helm.release.v1.web.v1").await.unwrap(),
        r2
    );
    assert!(driver
        .get("sh.helm.release.v1.web.v1")
        .await
        .unwrap_err()
        .is_not_found());
}

#[tokio::test]
async fn configmap_driver_writes_helms_layout() {
    let (ns, client) = start();
    let driver = ConfigMapDriver::for_namespace(client.clone(), ns.name());
    let r = rel(&ns, "cm", 1, Status::Deployed, "kind: B\n");
    driver.create("sh.helm.release.v1.cm.v1", &r).await.unwrap();
    let cm = Api::<ConfigMap>::namespaced(client.clone(), ns.name())
        .get("sh.helm.release.v1.cm.v1")
        .await
        .unwrap();
    assert_eq!(
        label_keys(&cm.metadata.labels),
        ["createdAt", "name", "owner", "status", "version"]
    );
    let data = cm.data.clone().unwrap();
    assert_eq!(data.keys().collect::<Vec<_>>(), ["release"]);
    assert_eq!(codec::decode(&data["release"]).unwrap(), r);
    assert_eq!(driver.get("sh.helm.release.v1.cm.v1").await.unwrap(), r);
}

#[tokio::test]
async fn storage_over_secrets_history_and_pruning() {
    let (ns, client) = start();
    let storage = Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        ns.name(),
    )))
    .with_max_history(3);
    storage
        .create(&rel(&ns, "app", 1, Status::Deployed, "a"))
        .await
        .unwrap();
    for v in 2..=5 {
        storage
            .create(&rel(&ns, "app", v, Status::Failed, "b"))
            .await
            .unwrap();
    }
    storage
        .create(&rel(&ns, "other", 1, Status::Deployed, "c"))
        .await
        .unwrap();
    let versions: Vec<i64> = storage
        .history_meta("app")
        .await
        .unwrap()
        .iter()
        .map(|m| m.version)
        .collect();
    assert_eq!(versions, [1, 4, 5]);
    assert_eq!(storage.deployed("app").await.unwrap().unwrap().version, 1);
    assert_eq!(storage.last("app").await.unwrap().unwrap().version, 5);
    assert_eq!(storage.history("other").await.unwrap().len(), 1);
}

#[tokio::test]
async fn helm_written_secrets_are_read_from_the_cluster() {
    let (ns, client) = start();
    let api = Api::<Secret>::namespaced(client.clone(), ns.name());
    let fixture: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("fixtures/helm-v4-secrets.json")).unwrap();
    for obj in fixture {
        let mut secret: Secret = serde_json::from_value(obj).unwrap();
        secret.metadata.namespace = None;
        secret.metadata.resource_version = None;
        api.create(&PostParams::default(), &secret).await.unwrap();
    }
    let storage = Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        ns.name(),
    )));
    let deployed = storage.deployed("fx").await.unwrap().unwrap();
    assert_eq!(deployed.version, 1);
    assert_eq!(deployed.chart.unwrap().metadata.unwrap().name, "tiny");
    assert_eq!(storage.next_version("fx").await.unwrap(), 3);
}

#[tokio::test]
async fn chunked_records_in_the_cluster() {
    let (ns, client) = start();
    let driver =
        SecretDriver::for_namespace(client.clone(), ns.name()).with_chunking(ChunkConfig {
            max_object_data: 1500,
            chunk_size: 600,
        });
    // Pseudo-random text that gzip cannot shrink below the small limit.
    let mut x: u64 = 0x2545f4914f6cdd1d;
    let manifest: String = (0..6000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let r = rel(&ns, "big", 1, Status::Deployed, &manifest);
    driver
        .create("sh.helm.release.v1.big.v1", &r)
        .await
        .unwrap();
    let api = Api::<Secret>::namespaced(client.clone(), ns.name());
    let helm_view = api
        .list(&ListParams::default().labels("owner=helm,name=big"))
        .await
        .unwrap();
    assert_eq!(
        helm_view.items.len(),
        1,
        "Helm's selector must see only the index"
    );
    let chunks = api
        .list(&ListParams::default().labels("owner=rudder,name=big"))
        .await
        .unwrap();
    assert!(chunks.items.len() >= 2);
    assert_eq!(driver.get("sh.helm.release.v1.big.v1").await.unwrap(), r);
    // Updates move a record between the two forms (the Secret type never changes).
    let small = rel(&ns, "big", 1, Status::Superseded, "small");
    driver
        .update("sh.helm.release.v1.big.v1", &small)
        .await
        .unwrap();
    let all = api
        .list(&ListParams::default().labels("name=big"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 1, "old chunks must be deleted");
    assert_eq!(
        driver.get("sh.helm.release.v1.big.v1").await.unwrap(),
        small
    );
    driver
        .update("sh.helm.release.v1.big.v1", &r)
        .await
        .unwrap();
    assert_eq!(driver.get("sh.helm.release.v1.big.v1").await.unwrap(), r);
    driver.delete("sh.helm.release.v1.big.v1").await.unwrap();
    let left = api
        .list(&ListParams::default().labels("name=big"))
        .await
        .unwrap();
    assert!(left.items.is_empty());
}

#[tokio::test]
async fn record_lock_in_the_cluster() {
    let (ns, client) = start();
    let driver: Arc<dyn Driver> = Arc::new(SecretDriver::for_namespace(client.clone(), ns.name()));
    let storage = Storage::new(driver.clone());
    storage
        .create(&rel(&ns, "web", 1, Status::Deployed, "kind: A"))
        .await
        .unwrap();
    // A live owner: the garbage collector deletes dependents of an owner that does
    // not exist, which would race with the lock writes below.
    let owners = Api::<ConfigMap>::namespaced(client.clone(), ns.name());
    let owner_cm = owners
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "web-owner"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "web-owner".into(),
        uid: owner_cm.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let a = ReleaseLocks::new(
        RecordLocks::new(driver.clone()),
        "pod-a",
        Duration::from_secs(15),
    );
    let b = ReleaseLocks::new(
        RecordLocks::new(driver.clone()),
        "pod-b",
        Duration::from_secs(15),
    );
    let held = a.try_acquire("web").await.unwrap();
    let secrets = Api::<Secret>::namespaced(client.clone(), ns.name());
    let v1 = secrets.get("sh.helm.release.v1.web.v1").await.unwrap();
    let lock = LockState::of(&v1.metadata.annotations.clone().unwrap_or_default()).unwrap();
    assert_eq!((lock.holder.as_str(), lock.duration_seconds), ("pod-a", 15));
    assert!(matches!(
        b.try_acquire("web").await,
        Err(LockError::Held { .. })
    ));
    // The holder's next revision carries the lock (and an owner reference) along.
    let meta = WriteMeta {
        owner_references: vec![owner.clone()],
        annotations: BTreeMap::from([(LOCK_ANNOTATION.to_string(), held.state.encode())]),
        holder: Some("pod-a".into()),
    };
    driver
        .create_with(
            "sh.helm.release.v1.web.v2",
            &rel(&ns, "web", 2, Status::PendingUpgrade, "kind: B"),
            &meta,
        )
        .await
        .unwrap();
    let v2 = secrets.get("sh.helm.release.v1.web.v2").await.unwrap();
    assert_eq!(v2.metadata.owner_references, Some(vec![owner]));
    // The holder renews knowing it wrote revision 2: a read that still shows v1 as
    // the newest (a server answering the list from a lagging cache) is read again,
    // so the lock never lands on v1 while v2 exists.
    let held = a
        .renew_written(&held, jiff::Timestamp::now(), 2)
        .await
        .unwrap();
    assert_eq!(
        held.slot.record.as_ref().map(|r| r.key.as_str()),
        Some("sh.helm.release.v1.web.v2")
    );
    // Another holder's write over the locked record is refused.
    let stale = WriteMeta {
        holder: Some("pod-b".into()),
        ..WriteMeta::default()
    };
    let err = driver
        .update_with(
            "sh.helm.release.v1.web.v2",
            &rel(&ns, "web", 2, Status::Failed, "kind: B"),
            &stale,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    // Past expiry the lock is stale and b takes it over.
    let later = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(60))
        .unwrap();
    let taken = b.try_acquire_at("web", later, None).await.unwrap();
    assert_eq!(taken.state.holder, "pod-b");
    assert!(matches!(a.renew(&held).await, Err(LockError::Lost(_))));
    a.release(held).await.unwrap();
    b.release(taken).await.unwrap();
    // v2 is still pending-upgrade: the lock given back stays on it, expired, to say a
    // rudder action (not a helm still at work) left it pending.
    let v2 = secrets.get("sh.helm.release.v1.web.v2").await.unwrap();
    let left = LockState::of(&v2.metadata.annotations.unwrap_or_default()).expect("expired lock");
    assert_eq!(left.holder, "pod-b");
    assert!(left.expires() <= jiff::Timestamp::now(), "{left:?}");
    // The lock took no object of its own.
    let all = secrets.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 2);
}

#[tokio::test]
async fn cached_reads_see_our_own_writes_at_once() {
    use release::cache::{watch, RecordCache};
    let (ns, client) = start();
    let cache = Arc::new(RecordCache::new("Secret"));
    let watching = tokio::spawn(watch::<Secret>(
        cache.clone(),
        client.clone(),
        Some(ns.name().to_string()),
    ));
    let driver: Arc<dyn Driver> = Arc::new(SecretDriver::cached(
        client.clone(),
        ns.name(),
        cache.clone(),
    ));
    let storage = Storage::new(driver.clone());
    for version in 1..=3 {
        storage
            .create(&rel(&ns, "web", version, Status::Superseded, "kind: A"))
            .await
            .unwrap();
        // Right after the write: the cache has it (the read waited for the watch).
        let history = storage.history_meta("web").await.unwrap();
        assert_eq!(history.last().map(|m| m.version), Some(version));
        let mut r = storage.get("web", version).await.unwrap();
        r.set_status(Status::Deployed, "updated");
        storage.update(&r).await.unwrap();
        let deployed = storage.deployed_meta("web").await.unwrap();
        assert_eq!(deployed.map(|m| m.version), Some(version));
    }
    // A lock taken through the cache lands on the newest record.
    let locks = ReleaseLocks::new(
        RecordLocks::new(driver.clone()),
        "pod-a",
        Duration::from_secs(15),
    );
    let held = locks.try_acquire("web").await.unwrap();
    assert_eq!(held.slot.record.map(|r| r.version), Some(3));
    // Someone else deletes a record: the cache drops it, and says so.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    cache.on_change(move |c| {
        let _ = tx.send(c);
    });
    Api::<Secret>::namespaced(client.clone(), ns.name())
        .delete("sh.helm.release.v1.web.v1", &Default::default())
        .await
        .unwrap();
    let change = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("reported in time")
        .expect("a change");
    assert!(change.deleted && change.release == "web", "{change:?}");
    let history = storage.history_meta("web").await.unwrap();
    assert_eq!(
        history.iter().map(|m| m.version).collect::<Vec<_>>(),
        [2, 3]
    );
    watching.abort();
}
