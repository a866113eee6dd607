//! Scale of the operator as users run it: `rudder apiserver --simulate-readiness` and
//! `rudder run` (default flags, the example `Hello` operator of `examples/operator`)
//! as separate processes. For each CR count it creates the CRs in bulk over several
//! namespaces and prints
//! - the time until every CR is `Deployed`, and the throughput along the way;
//! - the operator's peak RSS and CPU seconds (from /proc), and the API server's RSS,
//!   also against the JSON it stores (`apiserver_resource_size_estimate_bytes`);
//! - the API requests per install (the API server's `apiserver_request_total`, all
//!   of them divided by the CRs), by verb and resource, LISTs per install, and the
//!   objects the server read to answer LISTs (`apiserver_storage_list_*`, which
//!   count the whole namespace's Secrets for a label-selected LIST, as
//!   kube-apiserver reads them), and the API server's CPU seconds per CR;
//! - over an idle period after that: the operator's CPU seconds and the API requests
//!   it made (the API server's `apiserver_request_total`, and the operator's own
//!   `rest_client_requests_total` when it exports it), by verb and resource;
//! - then one upgrade of every CR (a new `message`): the time until all are
//!   `Deployed` with it, and the requests per upgrade, by verb and resource.
//!
//! Run: `cargo bench -p rudder --bench scale` (a release build). Settings:
//! - `RUDDER_SCALE_CRS` (default `1000`): CR counts, comma-separated (`1000,10000`);
//!   each count runs on a fresh server and operator.
//! - `RUDDER_SCALE_NAMESPACES`: namespaces to spread them over (default N/50, 1..=100).
//! - `RUDDER_SCALE_IDLE_SECS` (default 60): the idle period measured, after
//!   `RUDDER_SCALE_SETTLE_SECS` (default 15) for the last installs to settle.
//! - `RUDDER_SCALE_TIMEOUT_SECS` (default 1800): give up waiting for Deployed.
//! - `RUDDER_SCALE_UPGRADE=0`: skip the upgrade round.
//! - `RUDDER_SCALE_BIN`: another `rudder` binary to run (e.g. a build of `main`, to
//!   compare); the default is the one cargo built with the bench.
//! - `RUDDER_SCALE_OPERATOR_ARGS`: extra `rudder run` flags, space-separated.
//! - `RUDDER_SCALE_KEEP=1`: keep the work directory (logs) after the run.
//! - `RUDDER_SCALE_OPERATOR_WRAP`: a command to run the operator under, such as
//!   `heaptrack -o /tmp/operator` (figures then include the profiler's own).
//! - `RUDDER_SCALE_REPLICAS` (default 1): with more, runs the sharding scenario of
//!   [`shard`] instead (`--shards=auto`, share per replica, take-over after `kill -9`,
//!   the no-overlap check).

mod cluster;
mod procs;
mod shard;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use procs::{by_labels, load_average, scrape, sum_metric, Usage};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn operator_args() -> Vec<String> {
    std::env::var("RUDDER_SCALE_OPERATOR_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn work_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rudder-scale-{label}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let counts: Vec<usize> = std::env::var("RUDDER_SCALE_CRS")
        .unwrap_or_else(|_| "1000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|n| *n > 0)
        .collect();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    println!(
        "rudder scale bench: {} cores, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    let replicas = env_or("RUDDER_SCALE_REPLICAS", 1usize);
    for n in counts {
        if replicas > 1 {
            runtime.block_on(shard::run(n, replicas));
        } else {
            runtime.block_on(single(n));
        }
    }
}

/// API requests by verb and resource in an apiserver_request_total scrape.
fn requests(text: &str) -> Vec<(String, f64)> {
    by_labels(
        text,
        "apiserver_request_total",
        &["verb", "resource", "subresource"],
    )
}

/// What changed between two request scrapes, largest first.
fn request_delta(before: &str, after: &str) -> (f64, Vec<(String, f64)>) {
    metric_delta(&requests(before), requests(after))
}

/// What changed between two samplings of one metric (keyed), largest first.
fn metric_delta(before: &[(String, f64)], after: Vec<(String, f64)>) -> (f64, Vec<(String, f64)>) {
    let mut delta: Vec<(String, f64)> = after
        .into_iter()
        .map(|(k, v)| {
            let was = before
                .iter()
                .find(|(b, _)| *b == k)
                .map_or(0.0, |(_, v)| *v);
            (k, v - was)
        })
        .filter(|(_, v)| *v > 0.0)
        .collect();
    delta.sort_by(|a, b| b.1.total_cmp(&a.1));
    (delta.iter().map(|(_, v)| v).sum(), delta)
}

/// Prints what the API server answered between two scrapes, per CR (`per`): all
/// requests by verb and resource, LISTs, and what LISTs read. `ours` (as `VERB
/// resource`) is the bench's own request for each CR (creating or changing it),
/// left out.
fn print_requests(title: &str, before: &str, after: &str, per: f64, ours: &str) {
    let (_, mut breakdown) = request_delta(before, after);
    for (what, count) in breakdown.iter_mut() {
        if what.trim() == ours {
            *count = (*count - per).max(0.0);
        }
    }
    breakdown.retain(|(_, v)| *v > 0.0);
    breakdown.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = breakdown.iter().map(|(_, v)| v).sum();
    let lists: f64 = breakdown
        .iter()
        .filter(|(k, _)| k.starts_with("LIST ") || k.starts_with("list "))
        .map(|(_, v)| v)
        .sum();
    println!(
        "  {title}: {:.1} API requests per CR ({total:.0} in all, besides the bench's {ours}), {:.2} LISTs per CR",
        total / per,
        lists / per
    );
    for (what, count) in breakdown.iter().take(14) {
        println!("      {:>8.2}  {what}", count / per);
    }
    let objects = |metric: &str| {
        metric_delta(
            &by_labels(before, metric, &["resource"]),
            by_labels(after, metric, &["resource"]),
        )
    };
    let (fetched, by_resource) = objects("apiserver_storage_list_fetched_objects_total");
    let (served, _) = objects("apiserver_storage_list_total");
    if served > 0.0 || after.contains("apiserver_storage_list_total") {
        println!(
            "      LISTs served from storage: {served:.0}, objects read for them: {fetched:.0} ({:.1} per CR)",
            fetched / per
        );
        for (what, count) in by_resource.iter().take(4) {
            println!("      {:>8.0}  objects read listing {what}", count);
        }
    }
}

/// One operator against one fresh API server with `n` CRs.
async fn single(n: usize) {
    let namespaces = env_or("RUDDER_SCALE_NAMESPACES", (n / 50).clamp(1, 100)).max(1);
    let idle = Duration::from_secs(env_or("RUDDER_SCALE_IDLE_SECS", 60u64));
    let timeout = Duration::from_secs(env_or("RUDDER_SCALE_TIMEOUT_SECS", 1800u64));
    let settle = Duration::from_secs(env_or("RUDDER_SCALE_SETTLE_SECS", 15u64));
    let dir = work_dir(&format!("{n}"));
    println!(
        "\n== {n} CRs over {namespaces} namespaces, one replica (load average {})",
        load_average()
    );
    let (apiserver, kubeconfig) = procs::start_apiserver(&dir);
    let client = cluster::client(&kubeconfig).await;
    let server_addr: SocketAddr = client_addr(&kubeconfig);
    cluster::install_crd(&client).await;
    cluster::create_namespaces(&client, namespaces).await;
    let port = procs::free_port();
    let mut operator = procs::start_operator("rudder-0", &dir, &kubeconfig, port, &operator_args());
    let operator_metrics: SocketAddr = ([127, 0, 0, 1], port).into();
    // The operator is up once it serves metrics.
    let up = Instant::now();
    while scrape(operator_metrics).is_empty() {
        assert!(
            !operator.exited(),
            "rudder run exited; see {}",
            operator.log.display()
        );
        assert!(
            up.elapsed() < Duration::from_secs(60),
            "rudder run never served metrics"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let server_before = scrape(server_addr);
    let started = Instant::now();
    cluster::create_crs(&client, n, namespaces).await;
    let created = started.elapsed();
    println!("  created {n} CRs in {:.1} s", created.as_secs_f64());
    let mut last = (Instant::now(), 0usize);
    let op_pid = operator.pid();
    let deployed =
        cluster::wait_deployed(&client, n, 0, timeout, Duration::from_secs(10), |done| {
            let now = Instant::now();
            let rate = (done - last.1.min(done)) as f64 / now.duration_since(last.0).as_secs_f64();
            last = (now, done);
            let u = Usage::of(op_pid);
            println!(
                "  {:>6.0} s  {done:>6} Deployed  {rate:>6.1}/s  operator RSS {:.0} MiB  load {}",
                started.elapsed().as_secs_f64(),
                mib(u.rss_kib),
                load_average()
            );
        })
        .await;
    let to_deployed = started.elapsed();
    let op_after_install = operator.usage();
    let server_after_install = apiserver.usage();
    let server_install_scrape = scrape(server_addr);
    if deployed < n {
        println!(
            "  TIMEOUT: {deployed} of {n} Deployed after {:.0} s (operator log {})",
            to_deployed.as_secs_f64(),
            operator.log.display()
        );
    }
    println!(
        "  all {deployed} Deployed in {:.1} s ({:.1} CRs/s)",
        to_deployed.as_secs_f64(),
        deployed as f64 / to_deployed.as_secs_f64(),
    );
    let per_cr = deployed.max(1) as f64;
    print_requests(
        "install",
        &server_before,
        &server_install_scrape,
        per_cr,
        "POST hellos",
    );
    println!(
        "  operator: peak RSS {:.1} MiB, RSS now {:.1} MiB, CPU {:.1} s",
        mib(op_after_install.peak_kib),
        mib(op_after_install.rss_kib),
        op_after_install.cpu_secs
    );
    println!(
        "  apiserver: peak RSS {:.1} MiB, RSS now {:.1} MiB, CPU {:.1} s ({:.1} ms per CR)",
        mib(server_after_install.peak_kib),
        mib(server_after_install.rss_kib),
        server_after_install.cpu_secs,
        server_after_install.cpu_secs * 1000.0 / per_cr
    );
    // What the server stores, as etcd would hold it, against the memory it takes.
    let stored = sum_metric(
        &server_install_scrape,
        "apiserver_resource_size_estimate_bytes",
        &[],
    );
    if stored > 0.0 {
        println!(
            "  apiserver: stores {:.1} MiB of JSON; RSS is {:.1}x that",
            stored / (1024.0 * 1024.0),
            server_after_install.rss_kib as f64 * 1024.0 / stored
        );
    }

    // Idle: nothing changes; only periodic reconciles run. The reconciles that the
    // last installs' own writes trigger settle first.
    tokio::time::sleep(settle).await;
    let op_idle_start = operator.usage();
    let server_idle_start = apiserver.usage();
    let server_scrape_start = scrape(server_addr);
    let op_scrape_start = scrape(operator_metrics);
    tokio::time::sleep(idle).await;
    let op_idle_end = operator.usage();
    let server_idle_end = apiserver.usage();
    let server_scrape_end = scrape(server_addr);
    let (idle_requests, breakdown) = request_delta(&server_scrape_start, &server_scrape_end);
    let idle_requests = idle_requests.max(0.0);
    let op_scrape_end = scrape(operator_metrics);
    let per_minute = 60.0 / idle.as_secs_f64();
    println!(
        "  idle {} s (load average {}): operator CPU {:.2} s/min, apiserver CPU {:.2} s/min",
        idle.as_secs(),
        load_average(),
        (op_idle_end.cpu_secs - op_idle_start.cpu_secs) * per_minute,
        (server_idle_end.cpu_secs - server_idle_start.cpu_secs) * per_minute,
    );
    println!(
        "  idle API requests (apiserver_request_total): {:.0}/min ({:.3} per CR per minute)",
        idle_requests * per_minute,
        idle_requests * per_minute / per_cr
    );
    for (what, count) in breakdown.iter().take(8) {
        println!("      {:>8.0}/min  {what}", count * per_minute);
    }
    let client_side = (sum_metric(&op_scrape_end, "rest_client_requests_total", &[])
        - sum_metric(&op_scrape_start, "rest_client_requests_total", &[]))
    .max(0.0);
    if op_scrape_end.contains("rest_client_requests_total") {
        println!(
            "  idle API requests (operator rest_client_requests_total): {:.0}/min",
            client_side * per_minute
        );
        let by_method = |text: &str| by_labels(text, "rest_client_requests_total", &["method"]);
        let (_, methods) = metric_delta(&by_method(&op_scrape_start), by_method(&op_scrape_end));
        for (method, count) in methods {
            println!("      {:>8.0}/min  {method}", count * per_minute);
        }
    }
    println!(
        "  after idle: operator RSS {:.1} MiB (peak {:.1}), apiserver RSS {:.1} MiB (peak {:.1})",
        mib(op_idle_end.rss_kib),
        mib(op_idle_end.peak_kib),
        mib(server_idle_end.rss_kib),
        mib(server_idle_end.peak_kib)
    );

    if std::env::var("RUDDER_SCALE_UPGRADE").map_or(true, |v| v != "0") {
        let before = scrape(server_addr);
        let server_cpu = apiserver.usage().cpu_secs;
        let started = Instant::now();
        cluster::upgrade_crs(&client, n, namespaces, 1).await;
        let mut last = (Instant::now(), 0usize);
        let upgraded =
            cluster::wait_deployed(&client, n, 1, timeout, Duration::from_secs(10), |done| {
                let now = Instant::now();
                let rate =
                    (done - last.1.min(done)) as f64 / now.duration_since(last.0).as_secs_f64();
                last = (now, done);
                println!(
                    "  {:>6.0} s  {done:>6} upgraded  {rate:>6.1}/s  load {}",
                    started.elapsed().as_secs_f64(),
                    load_average()
                );
            })
            .await;
        let took = started.elapsed();
        // The reconciles the upgrades' own writes trigger settle too.
        tokio::time::sleep(settle).await;
        println!(
            "  upgrade: {upgraded} of {n} upgraded in {:.1} s ({:.1} CRs/s), apiserver CPU {:.1} ms per CR",
            took.as_secs_f64(),
            upgraded as f64 / took.as_secs_f64(),
            (apiserver.usage().cpu_secs - server_cpu) * 1000.0 / upgraded.max(1) as f64
        );
        let after = scrape(server_addr);
        print_requests(
            "upgrade",
            &before,
            &after,
            upgraded.max(1) as f64,
            "PATCH hellos",
        );
        let end = operator.usage();
        println!(
            "  end: operator RSS {:.1} MiB (peak {:.1})",
            mib(end.rss_kib),
            mib(end.peak_kib)
        );
    }
    operator.stop(Duration::from_secs(10));
    drop(apiserver);
    if std::env::var("RUDDER_SCALE_KEEP").is_ok_and(|v| v == "1") {
        println!("  logs kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The API server's address, from the kubeconfig's server URL.
fn client_addr(kubeconfig: &std::path::Path) -> SocketAddr {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let server = kc
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .expect("a server URL");
    let hostport = server
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    hostport.parse().expect("host:port")
}
