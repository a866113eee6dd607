//! What the metrics cost at scale: recording one reconcile (queue, work, result) and
//! encoding `/metrics` for a scrape, with one `resource_created_at_seconds` series
//! per CR and a status count per CR. Run with `cargo bench -p runtime --bench
//! metrics`; `RUDDER_BENCH_CRS` sets the number of CRs (default 10,000).

use std::time::{Duration, Instant};

use runtime::metrics::{Metrics, Outcome, ResourceId};

const GVK: &str = "cache.example.com/v1alpha1, Kind=Memcached";
const CONTROLLER: &str = "memcached-controller";

fn main() {
    let crs: usize = std::env::var("RUDDER_BENCH_CRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let metrics = Metrics::builder()
        .status_counts("objects", "Objects per status")
        .build();
    metrics.controller_started(CONTROLLER, 2);
    let names: Vec<String> = (0..crs).map(|i| format!("memcached-{i}")).collect();
    for name in &names {
        metrics.resource_seen(
            &ResourceId {
                group: "cache.example.com",
                version: "v1alpha1",
                kind: "Memcached",
                namespace: "tenant",
                name,
            },
            1_700_000_000,
        );
        metrics.set_status(GVK, "tenant", name, Some("deployed"));
    }

    // One reconcile's bookkeeping, as the controller does it.
    let rounds = 100_000u32;
    let started = Instant::now();
    for _ in 0..rounds {
        metrics.queue_add(CONTROLLER);
        metrics.queue_get(CONTROLLER, Duration::from_micros(30));
        let work = metrics.work_started(CONTROLLER);
        metrics.work_done(work);
        metrics.reconcile_done(CONTROLLER, Outcome::RequeueAfter, Duration::from_millis(4));
        metrics.rest_request("200", "GET", "10.96.0.1:443");
    }
    let per_reconcile = started.elapsed() / rounds;

    // A scrape.
    let scrapes = 20u32;
    let mut size = 0;
    let started = Instant::now();
    for _ in 0..scrapes {
        size = metrics.encode().len();
    }
    let per_scrape = started.elapsed() / scrapes;

    println!("CRs                              {crs}");
    println!("metrics per reconcile            {per_reconcile:?}");
    println!(
        "encode /metrics                  {per_scrape:?} ({} KiB)",
        size / 1024
    );
}
