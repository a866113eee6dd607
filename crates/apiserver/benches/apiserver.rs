//! Throughput, watch latency and memory figures for the embedded API
//! server, measured through kube-rs over loopback as real clients see it.
//! Run with `cargo bench -p apiserver --bench apiserver`; it takes
//! well under two minutes in release mode.
//!
//! The server and its clients share this process, so memory is measured
//! first, on a fresh heap, as the growth caused by storing the objects;
//! a counting allocator gives live heap bytes next to RSS.

use apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts live heap bytes so memory figures do not depend on how eagerly
/// the allocator returns pages to the OS.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwards the caller's contract to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc`/`realloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc`; `ptr`/`layout` describe a live block.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MIB: f64 = 1024.0 * 1024.0;

fn rss_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn heap_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// A ConfigMap of a typical small size (labels plus a few hundred bytes
/// of data), so per-object figures mean something.
fn cm(name: &str) -> ConfigMap {
    let value = json!({
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/name": "bench", "app.kubernetes.io/instance": name},
            "annotations": {"bench/purpose": "apiserver benchmark object"}
        },
        "data": {
            "config.yaml": "server:\n  port: 8080\n  logLevel: info\nfeatures:\n  a: true\n  b: false\n",
            "greeting": "hello from the rudder apiserver benchmark, a few more bytes of text here",
            "id": name,
        }
    });
    // The literal above is a valid ConfigMap.
    serde_json::from_value(value).unwrap_or_default()
}

async fn start(config: Config) -> Server {
    match Server::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start the server: {e}");
            std::process::exit(1);
        }
    }
}

fn api(server: &Server) -> Api<ConfigMap> {
    match server.client() {
        Ok(c) => Api::namespaced(c, "default"),
        Err(e) => {
            eprintln!("cannot build a client: {e}");
            std::process::exit(1);
        }
    }
}

async fn create(cms: &Api<ConfigMap>, name: &str) {
    if let Err(e) = cms.create(&PostParams::default(), &cm(name)).await {
        eprintln!("create {name} failed: {e}");
        std::process::exit(1);
    }
}

/// Creates `n` objects from `clients` concurrent tasks; returns creates/s.
async fn create_many(cms: &Api<ConfigMap>, prefix: &str, n: usize, clients: usize) -> f64 {
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|t| {
            let cms = cms.clone();
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                for i in (t..n).step_by(clients) {
                    create(&cms, &format!("{prefix}-{i}")).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn memory() {
    const N: usize = 10_000;
    let (rss0, heap0) = (rss_bytes().unwrap_or(0), heap_bytes());
    let server = start(Config::default()).await;
    let cms = api(&server);
    create_many(&cms, "mem", N, 8).await;
    let sample = server
        .stored("/configmaps/default/mem-0")
        .map(|v| v.to_string().len())
        .unwrap_or(0);
    drop(cms);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (rss1, heap1) = (rss_bytes().unwrap_or(0), heap_bytes());
    println!("memory with {N} ConfigMaps stored (memory store, ~{sample} bytes of JSON each):");
    println!(
        "  RSS  {:7.1} MiB total, +{:6.1} MiB per 10k objects",
        rss1 as f64 / MIB,
        rss1.saturating_sub(rss0) as f64 / MIB * 10_000.0 / N as f64
    );
    println!(
        "  heap {:7.1} MiB live,  +{:6.1} MiB per 10k objects (objects + watch event log)",
        heap1 as f64 / MIB,
        heap1.saturating_sub(heap0) as f64 / MIB * 10_000.0 / N as f64
    );
    server.stop().await;
}

async fn creates(label: &str, config: Config, n: usize) {
    let server = start(config).await;
    let cms = api(&server);
    // Warm up connections and code paths.
    create_many(&cms, "warm", 50, 8).await;
    let seq = create_many(&cms, "seq", n, 1).await;
    let par = create_many(&cms, "par", n, 8).await;
    println!(
        "creates/s {label:<18} sequential {seq:7.0}   8 concurrent clients {par:7.0}   ({n} each)"
    );
    server.stop().await;
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn watch_latency() {
    const EXISTING: usize = 1_000;
    const WATCHERS: usize = 10;
    const EVENTS: usize = 300;
    let server = start(Config::default()).await;
    let cms = api(&server);
    create_many(&cms, "pre", EXISTING, 8).await;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant)>();
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        // Separate clients, as separate controllers would be.
        let w = api(&server);
        let rv = match w.list(&Default::default()).await {
            Ok(l) => l.metadata.resource_version.unwrap_or_default(),
            Err(e) => {
                eprintln!("list failed: {e}");
                std::process::exit(1);
            }
        };
        let stream = match w.watch(&WatchParams::default().timeout(600), &rv).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("watch failed: {e}");
                std::process::exit(1);
            }
        };
        let tx = tx.clone();
        watchers.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            while let Ok(Some(ev)) = stream.try_next().await {
                if let WatchEvent::Added(o) = ev {
                    let seen = Instant::now();
                    let idx = o
                        .metadata
                        .name
                        .as_deref()
                        .and_then(|n| n.strip_prefix("lat-"))
                        .and_then(|n| n.parse().ok());
                    if let Some(i) = idx {
                        if tx.send((i, seen)).is_err() {
                            return;
                        }
                    }
                }
            }
        }));
    }
    drop(tx);

    let mut lat = Vec::with_capacity(EVENTS * WATCHERS);
    let mut create_lat = Vec::with_capacity(EVENTS);
    let deadline = Duration::from_secs(10);
    for i in 0..EVENTS {
        let t0 = Instant::now();
        create(&cms, &format!("lat-{i}")).await;
        create_lat.push(t0.elapsed());
        let mut seen = 0;
        while seen < WATCHERS {
            match tokio::time::timeout(deadline, rx.recv()).await {
                Ok(Some((j, t))) if j == i => {
                    lat.push(t.duration_since(t0));
                    seen += 1;
                }
                Ok(Some(_)) => {}
                _ => {
                    eprintln!(
                        "watch event {i} not seen by all {WATCHERS} watchers in {deadline:?}"
                    );
                    std::process::exit(1);
                }
            }
        }
    }
    lat.sort();
    create_lat.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "watch latency, {EXISTING} existing objects, {WATCHERS} watchers, {EVENTS} creates ({} events seen):",
        lat.len()
    );
    println!(
        "  create → event seen   p50 {:6.2} ms   p99 {:6.2} ms   max {:6.2} ms",
        ms(percentile(&lat, 0.50)),
        ms(percentile(&lat, 0.99)),
        ms(percentile(&lat, 1.0))
    );
    println!(
        "  (create call alone    p50 {:6.2} ms   p99 {:6.2} ms)",
        ms(percentile(&create_lat, 0.50)),
        ms(percentile(&create_lat, 0.99))
    );
    server.stop().await;
    for w in watchers {
        w.abort();
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not and
    // only wants to know the target builds and runs.
    let full = std::env::args().any(|a| a == "--bench");
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start a tokio runtime: {e}");
            std::process::exit(1);
        }
    };
    if !full {
        println!("apiserver bench: run with `cargo bench -p apiserver --bench apiserver`");
        return;
    }
    let started = Instant::now();
    rt.block_on(async {
        memory().await;
        creates("memory", Config::default(), 2_000).await;
        creates(
            "memory, TLS",
            Config {
                tls: true,
                ..Config::default()
            },
            2_000,
        )
        .await;
        let dir =
            std::env::temp_dir().join(format!("rudder-apiserver-bench-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        creates(
            "redb --data-dir",
            Config {
                data_dir: Some(dir.clone()),
                ..Config::default()
            },
            500,
        )
        .await;
        let _ = std::fs::remove_dir_all(&dir);
        watch_latency().await;
    });
    println!("total bench time {:.1} s", started.elapsed().as_secs_f64());
}
