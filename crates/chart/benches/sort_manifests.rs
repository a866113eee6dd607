//! Times `manifest::sort_manifests_parallel` (splitting rendered files into YAML
//! documents and reading each one's head) on every corpus chart's default
//! render and on made-up renders of growing size, next to the cost of
//! starting the worker thread it uses on large renders: the figures behind
//! its inline-below-this-size threshold.
//!
//! Run: `cargo bench -p chart --bench sort_manifests`
//! (the corpus part needs `../shared`; `RUDDER_BENCH_RUNS` sets the runs
//! per figure, 200 by default).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use chart::manifest::{sort_manifests_parallel, INSTALL_ORDER};
use testkit::oracle::{corpus_cases, render_case, CaseOptions};

/// Median wall time of `runs` calls of `f`, in microseconds.
fn median_us(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

/// `files` rendered files of one ConfigMap each, `bytes_per_file` long.
fn made_up_render(files: usize, bytes_per_file: usize) -> BTreeMap<String, String> {
    (0..files)
        .map(|i| {
            let mut text = format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  labels:\n    app: demo\ndata:\n"
            );
            let mut k = 0;
            while text.len() < bytes_per_file {
                text.push_str(&format!("  key-{k}: \"value {k} of file {i}\"\n"));
                k += 1;
            }
            (format!("demo/templates/cm-{i:03}.yaml"), text)
        })
        .collect()
}

fn bytes_of(files: &BTreeMap<String, String>) -> usize {
    files.values().map(String::len).sum()
}

fn main() {
    let runs: usize = std::env::var("RUDDER_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(200);

    let spawn = median_us(runs, || {
        std::thread::scope(|s| {
            let h = std::thread::Builder::new()
                .stack_size(gocodec::depth::DEEP_STACK_BYTES)
                .spawn_scoped(s, || std::hint::black_box(1))
                .expect("a thread starts");
            let _ = h.join();
        });
    });
    println!("start and join a deep-stack thread: {spawn:8.1} µs");
    println!();

    println!("made-up renders (ConfigMaps of ~1 KiB per file):");
    for files in [2, 4, 6, 8, 10, 12, 16, 24, 32, 64] {
        let render = made_up_render(files, 1024);
        let us = median_us(runs, || {
            let _ = std::hint::black_box(sort_manifests_parallel(&render, INSTALL_ORDER));
        });
        let bytes = bytes_of(&render);
        println!(
            "  {files:3} files {bytes:7} bytes   {us:8.1} µs   {:6.1} ns/byte",
            us * 1000.0 / bytes as f64
        );
    }
    println!();

    let corpus = testkit::tools::workspace_root().join("../shared/corpus");
    if !corpus.join("charts").exists() {
        eprintln!("SKIP corpus part: no corpus at {}", corpus.display());
        return;
    }
    println!("corpus charts, default values:");
    let mut seen: Vec<String> = Vec::new();
    for (chart, _, dir, values) in corpus_cases(&corpus) {
        if seen.contains(&chart) {
            continue;
        }
        seen.push(chart.clone());
        let defaults: PathBuf = values.with_file_name("defaults.yaml");
        let values = if defaults.exists() { defaults } else { values };
        let opts = CaseOptions::for_scenario(&values).unwrap_or_default();
        let Ok(r) = render_case(&dir, std::slice::from_ref(&values), &opts) else {
            println!("  {chart:30} (does not render)");
            continue;
        };
        let us = median_us(runs, || {
            let _ = std::hint::black_box(sort_manifests_parallel(&r.files, INSTALL_ORDER));
        });
        println!(
            "  {chart:30} {:3} files {:7} bytes   {us:8.1} µs",
            r.files.len(),
            bytes_of(&r.files)
        );
    }
}
