//! Watches through kube-rs: raw watch events, selector transitions, 410
//! Gone, bookmarks, the `watcher` (list-then-watch and streaming lists) and
//! a `Controller` reconciling objects.

use apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

#[tokio::test]
async fn raw_watch_events_selectors_and_gone() {
    let server = Server::start(Config::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("a", json!({"w": "yes"})))
        .await
        .unwrap();
    let rv = first.metadata.resource_version.clone().unwrap();

    let wp = WatchParams::default().labels("w=yes").timeout(5);
    let mut stream = cms.watch(&wp, &rv).await.unwrap().boxed();
    cms.create(&PostParams::default(), &cm("b", json!({"w": "yes"})))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("c", json!({"w": "no"})))
        .await
        .unwrap();
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"w": "yes"}}})),
    )
    .await
    .unwrap();
    cms.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"w": "no"}}})),
    )
    .await
    .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("unexpected error {e:?}"),
        }
    }
    // c entering the selector is ADDED, b leaving it is DELETED.
    assert_eq!(seen, ["ADDED b", "ADDED c", "DELETED b", "DELETED a"]);

    // Bookmarks arrive when allowed.
    let mut wp = WatchParams::default().timeout(4);
    wp.bookmarks = true;
    let now = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms.watch(&wp, &now).await.unwrap().boxed();
    let ev = tokio::time::timeout(Duration::from_secs(4), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, WatchEvent::Bookmark(_)), "{ev:?}");
    server.stop().await;
}

#[tokio::test]
async fn too_old_resource_version_is_gone() {
    let server = Server::start(Config::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let n = Server::WATCH_LOG_CAP + 5;
    // Writing more events than the log keeps makes rv 1 expire.
    for i in 0..n {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "spin", "namespace": "default"}, "data": {"i": i.to_string()}});
        server.put_raw("/configmaps/default/spin", obj).unwrap();
    }
    let mut stream = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
    // Each resource keeps its own log (as kube-apiserver's watch cache is per
    // resource): the ConfigMap churn expired no Secret watch.
    let secrets: Api<Secret> = Api::namespaced(server.client().unwrap(), "default");
    let mut stream = secrets
        .watch(&WatchParams::default().timeout(10), "1")
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(_) => {}
        other => panic!("expected a bookmark, got {other:?}"),
    }
    server.stop().await;
}

async fn watcher_sees_all(cfg: watcher::Config) {
    let server = Server::start(Config::default()).await.unwrap();
    let client = server.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &cm("pre", json!({})))
        .await
        .unwrap();
    let stream = watcher::watcher(cms.clone(), cfg).boxed();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut stream = stream;
        while let Some(ev) = stream.next().await {
            if let Ok(ev) = ev {
                let names: Vec<String> = match ev {
                    watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                        vec![format!("apply {}", o.metadata.name.unwrap())]
                    }
                    watcher::Event::Delete(o) => {
                        vec![format!("delete {}", o.metadata.name.unwrap())]
                    }
                    watcher::Event::Init => vec!["init".into()],
                    watcher::Event::InitDone => vec!["initdone".into()],
                };
                for n in names {
                    let _ = tx.send(n);
                }
            }
        }
    });
    let mut seen = Vec::new();
    let expect = |seen: &Vec<String>, s: &str| seen.iter().any(|x| x == s);
    while !expect(&seen, "initdone") {
        seen.push(
            tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert!(expect(&seen, "apply pre"), "{seen:?}");
    cms.create(&PostParams::default(), &cm("post", json!({})))
        .await
        .unwrap();
    cms.delete("pre", &DeleteParams::default()).await.unwrap();
    while !expect(&seen, "delete pre") || !expect(&seen, "apply post") {
        seen.push(
            tokio::time::timeout(Duration::from_secs(5), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    task.abort();
    server.stop().await;
}

#[tokio::test]
async fn watcher_list_then_watch() {
    watcher_sees_all(watcher::Config::default()).await;
}

#[tokio::test]
async fn watcher_streaming_list() {
    watcher_sees_all(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn controller_reconciles() {
    let server = Server::start(Config::default()).await.unwrap();
    let client = server.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let count = Arc::new(AtomicUsize::new(0));
    struct Ctx {
        api: Api<ConfigMap>,
        count: Arc<AtomicUsize>,
    }
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct E(#[from] kube::Error);
    async fn reconcile(obj: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, E> {
        ctx.count.fetch_add(1, Ordering::SeqCst);
        let name = obj.metadata.name.clone().unwrap_or_default();
        if obj.data.as_ref().and_then(|d| d.get("seen")).is_none() {
            ctx.api.patch(&name, &PatchParams::apply("ctl").force(),
                &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"seen": "yes"}}))).await?;
        }
        Ok(Action::await_change())
    }
    fn error_policy(_: Arc<ConfigMap>, _: &E, _: Arc<Ctx>) -> Action {
        Action::requeue(Duration::from_millis(100))
    }
    let ctx = Arc::new(Ctx {
        api: cms.clone(),
        count: count.clone(),
    });
    let ctl = tokio::spawn(
        Controller::new(cms.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );
    for i in 0..3 {
        cms.create(&PostParams::default(), &cm(&format!("r{i}"), json!({})))
            .await
            .unwrap();
    }
    for _ in 0..100 {
        let all = cms.list(&Default::default()).await.unwrap();
        if all
            .items
            .iter()
            .all(|c| c.data.as_ref().and_then(|d| d.get("seen")).is_some())
            && all.items.len() == 3
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all = cms.list(&Default::default()).await.unwrap();
    assert!(all
        .items
        .iter()
        .all(|c| c.data.as_ref().and_then(|d| d.get("seen")).is_some()));
    assert!(count.load(Ordering::SeqCst) >= 3);
    ctl.abort();
    server.stop().await;
}
