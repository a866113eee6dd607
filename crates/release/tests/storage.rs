//! Storage semantics (history, deployed, last, pruning) over the memory driver and the
//! Secret layout driver, which must behave the same.

use std::sync::Arc;

use release::driver::objects::MemoryObjects;
use release::driver::{selector, Driver, MemoryDriver, ObjectDriver};
use release::{Release, Status, Storage};

fn rel(name: &str, version: i64, status: Status) -> Release {
    let mut r = Release {
        name: name.into(),
        version,
        namespace: "ns".into(),
        manifest: format!("# revision {version}\n"),
        ..Release::default()
    };
    r.set_status(status, format!("revision {version}"));
    r
}

fn drivers() -> Vec<Arc<dyn Driver>> {
    vec![
        Arc::new(MemoryDriver::new()),
        Arc::new(ObjectDriver::new(MemoryObjects::default())),
    ]
}

async fn versions(storage: &Storage, name: &str) -> Vec<i64> {
    storage
        .history_meta(name)
        .await
        .unwrap()
        .iter()
        .map(|m| m.version)
        .collect()
}

#[tokio::test]
async fn history_deployed_last() {
    for driver in drivers() {
        let storage = Storage::new(driver.clone()).with_max_history(0);
        assert!(storage.history("app").await.unwrap().is_empty());
        assert!(storage.last("app").await.unwrap().is_none());
        assert!(storage.deployed("app").await.unwrap().is_none());
        assert_eq!(storage.next_version("app").await.unwrap(), 1);

        storage
            .create(&rel("app", 1, Status::Superseded))
            .await
            .unwrap();
        storage
            .create(&rel("app", 2, Status::Deployed))
            .await
            .unwrap();
        storage
            .create(&rel("app", 3, Status::Failed))
            .await
            .unwrap();
        storage
            .create(&rel("other", 1, Status::Deployed))
            .await
            .unwrap();

        let history = storage.history("app").await.unwrap();
        assert_eq!(
            history.iter().map(|r| r.version).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(storage.deployed("app").await.unwrap().unwrap().version, 2);
        let last = storage.last("app").await.unwrap().unwrap();
        assert_eq!((last.version, last.status()), (3, Status::Failed));
        assert_eq!(storage.next_version("app").await.unwrap(), 4);
        assert_eq!(
            storage.get("app", 1).await.unwrap().status(),
            Status::Superseded
        );
        assert_eq!(storage.list_deployed().await.unwrap().len(), 2);
        assert_eq!(storage.list_releases().await.unwrap().len(), 4);

        // Helm's query semantics: not found when nothing matches.
        assert!(driver
            .query(&selector([("name", "nope"), ("owner", "helm")]))
            .await
            .unwrap_err()
            .is_not_found());

        // Update rewrites status and labels.
        let mut r2 = storage.get("app", 2).await.unwrap();
        r2.set_status(Status::Uninstalled, "Uninstallation complete");
        storage.update(&r2).await.unwrap();
        assert!(storage.deployed("app").await.unwrap().is_none());
        assert_eq!(storage.list_uninstalled().await.unwrap().len(), 1);

        let deleted = storage.delete("app", 3).await.unwrap();
        assert_eq!(deleted.version, 3);
        assert_eq!(versions(&storage, "app").await, [1, 2]);
        assert!(storage.get("app", 3).await.unwrap_err().is_not_found());
    }
}

#[tokio::test]
async fn newest_deployed_wins_when_several_are_labelled_deployed() {
    for driver in drivers() {
        let storage = Storage::new(driver);
        storage
            .create(&rel("app", 1, Status::Deployed))
            .await
            .unwrap();
        storage
            .create(&rel("app", 2, Status::Deployed))
            .await
            .unwrap();
        assert_eq!(storage.deployed("app").await.unwrap().unwrap().version, 2);
    }
}

#[tokio::test]
async fn pruning_keeps_max_history_and_the_deployed_revision() {
    for driver in drivers() {
        let storage = Storage::new(driver).with_max_history(3);
        // Revision 1 stays deployed while 2..=6 fail.
        storage
            .create(&rel("app", 1, Status::Deployed))
            .await
            .unwrap();
        for v in 2..=6 {
            storage
                .create(&rel("app", v, Status::Failed))
                .await
                .unwrap();
        }
        assert_eq!(versions(&storage, "app").await, [1, 5, 6]);
        assert_eq!(storage.deployed("app").await.unwrap().unwrap().version, 1);
    }
}

#[tokio::test]
async fn default_history_is_ten() {
    for driver in drivers() {
        let storage = Storage::new(driver);
        assert_eq!(storage.max_history, 10);
        for v in 1..=13 {
            let status = if v == 13 {
                Status::Deployed
            } else {
                Status::Superseded
            };
            storage.create(&rel("app", v, status)).await.unwrap();
        }
        assert_eq!(
            versions(&storage, "app").await,
            (4..=13).collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn explicit_prune_reports_deleted_versions() {
    for driver in drivers() {
        let storage = Storage::new(driver).with_max_history(0);
        for v in 1..=5 {
            let status = if v == 2 {
                Status::Deployed
            } else {
                Status::Superseded
            };
            storage.create(&rel("app", v, status)).await.unwrap();
        }
        assert_eq!(
            storage.remove_least_recent("app", 2).await.unwrap(),
            [1, 3, 4]
        );
        assert_eq!(versions(&storage, "app").await, [2, 5]);
        assert!(storage
            .remove_least_recent("app", 5)
            .await
            .unwrap()
            .is_empty());
    }
}

#[tokio::test]
async fn custom_labels_round_trip_and_cannot_override_system_labels() {
    for driver in drivers() {
        let storage = Storage::new(driver.clone());
        let mut r = rel("app", 1, Status::Deployed);
        r.labels.insert("team".into(), "web".into());
        r.labels.insert("owner".into(), "mallory".into());
        storage.create(&r).await.unwrap();
        let back = storage.get("app", 1).await.unwrap();
        assert_eq!(back.labels.get("team").map(String::as_str), Some("web"));
        assert!(!back.labels.contains_key("owner"));
        let metas = storage.history_meta("app").await.unwrap();
        assert_eq!(metas[0].labels["owner"], "helm");
    }
}

#[tokio::test]
async fn damaged_old_revisions_are_pruned_not_blocking() {
    use release::driver::objects::{MemoryObjects, RawObject};
    use std::collections::BTreeMap;
    let driver = Arc::new(ObjectDriver::new(MemoryObjects::default()));
    let storage = Storage::new(driver.clone()).with_max_history(2);
    driver.backend().insert_raw(RawObject {
        name: "sh.helm.release.v1.app.v1".into(),
        labels: selector([
            ("owner", "helm"),
            ("name", "app"),
            ("version", "1"),
            ("status", "superseded"),
        ]),
        data: BTreeMap::from([("release".to_string(), b"garbage".to_vec())]),
        ..RawObject::default()
    });
    storage
        .create(&rel("app", 2, Status::Deployed))
        .await
        .unwrap();
    storage
        .create(&rel("app", 3, Status::Deployed))
        .await
        .unwrap();
    assert_eq!(versions(&storage, "app").await, [2, 3]);
}
