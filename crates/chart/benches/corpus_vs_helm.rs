//! Renders every corpus case with rudder and, in the same run, with the
//! Helm oracle (whose JSON carries `render_ms`), and prints per-chart time
//! ratios, their median, and rudder's peak heap for the largest chart.
//! Rudder's time is the median of 5 in-process renders; "first" is the
//! first of them, made with every cache empty (Helm's figure is always a
//! first render in a fresh chart load).
//!
//! Run: `cargo bench -p chart --bench corpus_vs_helm`
//! (needs `../shared` and the oracle: `../shared/tools/install-oracle.sh`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use testkit::oracle::{corpus_cases, render_case, CaseOptions};

struct Peak;
static CUR: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = CUR.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        CUR.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Peak = Peak;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let shared = testkit::tools::workspace_root().join("../shared");
    let corpus = std::env::var("RUDDER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| shared.join("corpus"));
    let oracle = shared.join("tools/helm-oracle");
    if !corpus.join("charts").exists() {
        eprintln!("SKIP: no corpus at {}", corpus.display());
        return;
    }
    let quick = std::env::var("RUDDER_BENCH_NO_ORACLE").is_ok() || !oracle.exists();
    // More or fewer rudder runs per case (for profiling); 5 by default.
    let runs: usize = std::env::var("RUDDER_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    let tmp = std::env::temp_dir().join(format!("rudder-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&tmp);
    let mut per_chart: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
    let mut largest: (usize, String, usize) = (0, String::new(), 0);
    for (chart, scenario, dir, values) in corpus_cases(&corpus) {
        let opts = CaseOptions::for_scenario(&values).unwrap_or_default();
        // Rudder: median of `runs` in-process runs (load + prepare + render).
        let mut times = Vec::new();
        let mut out_bytes = 0;
        for i in 0..runs {
            if i == 0 {
                chart::engine::clear_caches();
                PEAK.store(CUR.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            let base = CUR.load(Ordering::Relaxed);
            let t = Instant::now();
            let r = render_case(&dir, std::slice::from_ref(&values), &opts);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            if i == 0 {
                let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
                out_bytes = r
                    .as_ref()
                    .map(|r| r.files.values().map(|f| f.len()).sum())
                    .unwrap_or(0);
                if out_bytes > largest.0 {
                    largest = (out_bytes, format!("{chart}/{scenario}"), peak);
                }
            }
        }
        // The first run starts with empty caches; later ones reuse parsed
        // templates, values and schemas, as the operator's repeated renders
        // of a chart do.
        let cold = times[0];
        let ours = median(&mut times);
        let helm = if quick {
            f64::NAN
        } else {
            let out = tmp.join("o.json");
            let mut cmd = Command::new("python3");
            cmd.arg(&oracle)
                .arg("render")
                .arg(&dir)
                .arg("-f")
                .arg(&values)
                .args([
                    "--name",
                    &opts.name,
                    "--namespace",
                    &opts.namespace,
                    "--revision",
                ])
                .arg(opts.revision.to_string())
                .arg("--out")
                .arg(&out);
            if let Some(k) = &opts.kube_version {
                cmd.args(["--kube-version", k]);
            }
            for a in &opts.api_versions {
                cmd.args(["--api-versions", a]);
            }
            if opts.is_upgrade {
                cmd.arg("--is-upgrade");
            }
            let _ = cmd.output();
            std::fs::read_to_string(&out)
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|j| j["render_ms"].as_f64())
                .unwrap_or(f64::NAN)
        };
        println!("{chart:30} {scenario:36} rudder {ours:8.2} ms (first {cold:8.2})   helm {helm:8.2} ms   ratio {:6.1}x (first {:6.1}x)   ({out_bytes} bytes)", helm / ours, helm / cold);
        per_chart.entry(chart).or_default().push((ours, helm, cold));
    }
    println!();
    let (mut ratios, mut cold_ratios) = (Vec::new(), Vec::new());
    for (chart, cases) in &per_chart {
        let mut o: Vec<f64> = cases.iter().map(|c| c.0).collect();
        let mut h: Vec<f64> = cases.iter().map(|c| c.1).collect();
        let mut c: Vec<f64> = cases.iter().map(|c| c.2).collect();
        let (mo, mh, mc) = (median(&mut o), median(&mut h), median(&mut c));
        let (ratio, cold_ratio) = (mh / mo, mh / mc);
        if ratio.is_finite() {
            ratios.push(ratio);
            cold_ratios.push(cold_ratio);
        }
        println!("{chart:30} rudder {mo:8.2} ms (first {mc:8.2})   helm {mh:8.2} ms   ratio {ratio:6.1}x (first {cold_ratio:6.1}x)");
    }
    println!();
    println!(
        "median speed-up over Helm across charts: {:.1}x (first render of each case: {:.1}x)",
        median(&mut ratios),
        median(&mut cold_ratios)
    );
    println!(
        "largest output: {} ({} bytes rendered), rudder peak heap during that render: {:.1} MiB",
        largest.1,
        largest.0,
        largest.2 as f64 / (1024.0 * 1024.0)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
