//! The sharding scenario (`RUDDER_SCALE_REPLICAS=3`): that many `rudder run
//! --shards=auto` replicas split the CRs; once all are Deployed it prints each
//! replica's share, kills one with SIGKILL, changes the spec of every CR the killed
//! replica had reconciled, and prints how long the survivors took to take its share
//! over (their gauges cover every CR) and to upgrade those CRs. Finally it checks, from
//! every replica's `shard reconcile` log lines, that no CR was reconciled by two
//! replicas at the same instant.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::{json, Value};

use crate::procs::{self, load_average, scrape, sum_metric};
use crate::{cluster, env_or, mib, work_dir};

/// One reconcile as a replica logged it.
struct Run {
    cr: String,
    replica: String,
    start: u64,
    end: u64,
}

fn runs(log: &str) -> Vec<Run> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "shard reconcile")
        .filter_map(|v| {
            Some(Run {
                cr: v["cr"].as_str()?.to_string(),
                replica: v["replica"].as_str()?.to_string(),
                start: v["start_us"].as_u64()?,
                end: v["end_us"].as_u64()?,
            })
        })
        .collect()
}

/// Pairs of reconciles of one CR by two replicas that overlap in time.
fn overlaps(all: &[Run]) -> Vec<String> {
    let mut by_cr: HashMap<&str, Vec<&Run>> = HashMap::new();
    for r in all {
        by_cr.entry(&r.cr).or_default().push(r);
    }
    let mut out = Vec::new();
    for (cr, mut list) in by_cr {
        list.sort_by_key(|r| (r.start, r.end));
        for pair in list.windows(2) {
            if pair[0].replica != pair[1].replica && pair[1].start < pair[0].end {
                out.push(format!(
                    "{cr}: {} until {} and {} from {}",
                    pair[0].replica, pair[0].end, pair[1].replica, pair[1].start
                ));
            }
        }
    }
    out
}

/// `(owned, members)` of one replica's shard gauges.
fn share(addr: SocketAddr) -> (f64, f64) {
    let text = scrape(addr);
    (
        sum_metric(&text, "rudder_shard_owned_resources", &[]),
        sum_metric(&text, "rudder_shard_members", &[]),
    )
}

/// Release records at `revision` in status deployed, cluster-wide.
async fn deployed_at(client: &kube::Client, revision: u32) -> usize {
    let api: Api<Secret> = Api::all(client.clone());
    let selector = format!("owner=helm,status=deployed,version={revision}");
    api.list_metadata(&ListParams::default().labels(&selector))
        .await
        .map_or(0, |l| l.items.len())
}

pub async fn run(n: usize, replicas: usize) {
    let namespaces = env_or("RUDDER_SCALE_NAMESPACES", (n / 50).clamp(1, 100)).max(1);
    let timeout = Duration::from_secs(env_or("RUDDER_SCALE_TIMEOUT_SECS", 1800u64));
    let dir = work_dir(&format!("shard-{n}"));
    println!(
        "\n== {n} CRs over {namespaces} namespaces, {replicas} replicas with --shards=auto (load average {})",
        load_average()
    );
    let (apiserver, kubeconfig) = procs::start_apiserver(&dir);
    let client = cluster::client(&kubeconfig).await;
    cluster::install_crd(&client).await;
    cluster::create_namespaces(&client, namespaces).await;
    let flags: Vec<String> = [
        "--shards=auto",
        "--leader-election-namespace=default",
        "--leader-election-id=scale",
        "--zap-log-level=info,rudder::shard=debug",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(crate::operator_args())
    .collect();
    let mut ops = Vec::new();
    for i in 0..replicas {
        let port = procs::free_port();
        let name = format!("rudder-{i}");
        let proc = procs::start_operator(&name, &dir, &kubeconfig, port, &flags);
        ops.push((proc, SocketAddr::from(([127, 0, 0, 1], port))));
    }
    let up = Instant::now();
    for (op, addr) in &mut ops {
        while scrape(*addr).is_empty() {
            assert!(!op.exited(), "rudder run exited; see {}", op.log.display());
            assert!(
                up.elapsed() < Duration::from_secs(120),
                "rudder run never served metrics"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let started = Instant::now();
    cluster::create_crs(&client, n, namespaces).await;
    let deployed =
        cluster::wait_deployed(&client, n, 0, timeout, Duration::from_secs(15), |done| {
            println!(
                "  {:>6.0} s  {done:>6} Deployed  load {}",
                started.elapsed().as_secs_f64(),
                load_average()
            );
        })
        .await;
    println!(
        "  all {deployed} of {n} Deployed in {:.1} s with {replicas} replicas",
        started.elapsed().as_secs_f64()
    );
    for (i, (op, addr)) in ops.iter().enumerate() {
        let (owned, members) = share(*addr);
        let u = op.usage();
        println!(
            "  rudder-{i}: owns {owned:.0} CRs ({:.1} %), sees {members:.0} members, peak RSS {:.1} MiB, CPU {:.1} s",
            100.0 * owned / n as f64,
            mib(u.peak_kib),
            u.cpu_secs
        );
    }

    // Kill the last replica and change every CR it had reconciled.
    let (mut victim, _) = ops.pop().expect("a replica");
    let victim_log = std::fs::read_to_string(&victim.log).unwrap_or_default();
    let victim_crs: HashSet<String> = runs(&victim_log).into_iter().map(|r| r.cr).collect();
    let killed = Instant::now();
    victim.kill9();
    println!(
        "  kill -9 rudder-{} (it had reconciled {} CRs); load {}",
        replicas - 1,
        victim_crs.len(),
        load_average()
    );
    let ar = cluster::resource();
    futures::stream::iter(victim_crs.iter().cloned())
        .map(|cr| {
            let client = client.clone();
            let ar = ar.clone();
            async move {
                let (ns, name) = cr.split_once('/').expect("namespace/name");
                let api: Api<DynamicObject> = Api::namespaced_with(client, ns, &ar);
                let patch = json!({"spec": {"message": "after failover"}});
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
            }
        })
        .buffer_unordered(16)
        .try_for_each(|_| std::future::ready(Ok(())))
        .await
        .expect("patch the killed replica's CRs");
    let mut taken_over = None;
    let mut upgraded = None;
    while killed.elapsed() < timeout && (taken_over.is_none() || upgraded.is_none()) {
        if taken_over.is_none() {
            let shares: Vec<(f64, f64)> = ops.iter().map(|(_, a)| share(*a)).collect();
            let owned: f64 = shares.iter().map(|s| s.0).sum();
            if owned as usize == n && shares.iter().all(|s| s.1 as usize == replicas - 1) {
                taken_over = Some(killed.elapsed());
                println!(
                    "  {:>6.1} s after the kill: the survivors own all {n} CRs; load {}",
                    killed.elapsed().as_secs_f64(),
                    load_average()
                );
            }
        }
        if upgraded.is_none() && deployed_at(&client, 2).await >= victim_crs.len() {
            upgraded = Some(killed.elapsed());
            println!(
                "  {:>6.1} s after the kill: all {} of its CRs upgraded by the survivors; load {}",
                killed.elapsed().as_secs_f64(),
                victim_crs.len(),
                load_average()
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    if taken_over.is_none() || upgraded.is_none() {
        println!("  TIMEOUT: the survivors did not take over within {timeout:?}");
    }
    for (i, (_, addr)) in ops.iter().enumerate() {
        let (owned, members) = share(*addr);
        println!("  rudder-{i}: owns {owned:.0} CRs now, sees {members:.0} members");
    }

    let mut all = runs(&victim_log);
    for (op, _) in &ops {
        all.extend(runs(&std::fs::read_to_string(&op.log).unwrap_or_default()));
    }
    let bad = overlaps(&all);
    println!(
        "  no-overlap check: {} reconciles by {} replicas, {} overlapping pairs{}",
        all.len(),
        replicas,
        bad.len(),
        if bad.is_empty() { " (OK)" } else { " (FAILED)" }
    );
    for b in bad.iter().take(10) {
        println!("      {b}");
    }
    for (mut op, _) in ops {
        op.stop(Duration::from_secs(10));
    }
    drop(apiserver);
    if std::env::var("RUDDER_SCALE_KEEP").is_ok_and(|v| v == "1") {
        println!("  logs kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
