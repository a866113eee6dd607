//! Rough throughput and latency figures; run with
//! `cargo test -p rudder-apiserver --test bench -- --ignored --nocapture`.

use apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::time::{Duration, Instant};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

async fn creates_per_second(data_dir: Option<std::path::PathBuf>, label: &str) {
    let server = Server::start(Config {
        data_dir,
        ..Config::default()
    })
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let n = 1000;
    let start = Instant::now();
    for i in 0..n {
        cms.create(&PostParams::default(), &cm(&format!("seq-{i}")))
            .await
            .unwrap();
    }
    let seq = n as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let cms = cms.clone();
            tokio::spawn(async move {
                for i in 0..n / 8 {
                    cms.create(&PostParams::default(), &cm(&format!("par-{t}-{i}")))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let par = n as f64 / start.elapsed().as_secs_f64();
    println!("{label}: sequential creates/s = {seq:.0}, 8 concurrent clients creates/s = {par:.0}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bench_creates() {
    creates_per_second(None, "memory").await;
    let dir = std::env::temp_dir().join(format!("rudder-apiserver-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    creates_per_second(Some(dir.clone()), "redb").await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn bench_watch_latency() {
    let server = Server::start(Config::default()).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(server.client().unwrap(), "default");
    let rv = cms
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = cms
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let mut total = Duration::ZERO;
    let n = 200;
    for i in 0..n {
        let start = Instant::now();
        cms.create(&PostParams::default(), &cm(&format!("w-{i}")))
            .await
            .unwrap();
        loop {
            if let Some(WatchEvent::Added(_)) = stream.try_next().await.unwrap() {
                break;
            }
        }
        total += start.elapsed();
    }
    println!(
        "create→watch event round trip: mean {:.2} ms over {n}",
        total.as_secs_f64() * 1000.0 / n as f64
    );
    server.stop().await;
}
