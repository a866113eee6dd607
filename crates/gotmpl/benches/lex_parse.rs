//! Lexing and parsing alone on real charts: every template file of a few
//! corpus charts (with their subcharts) parsed into trees, with no function
//! table or template set in the way, so that the figures are the lexer's
//! and parser's own. Reports time and allocations per pass over
//! each chart. Texts are parsed through a parse cache that keeps nothing,
//! which adds only the hash of each text to the parse.
//!
//! Run: `cargo bench -p gotmpl --bench lex_parse [-- CHART...]` (the
//! charts to parse; by default kafka, keycloak, postgresql, prometheus and
//! grafana). Needs `../shared/corpus` (`RUDDER_CORPUS` to point elsewhere);
//! `RUDDER_BENCH_RUNS` (default 50) sets the passes per chart. For
//! instruction counts, run the bench binary under `perf stat` with one chart.

#[path = "support/corpus.rs"]
mod corpus;
#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use std::sync::atomic::Ordering;
use std::time::Instant;

use counting_alloc::{ALLOCATED, ALLOCS};

const CHARTS: &[&str] = &["kafka", "keycloak", "postgresql", "prometheus", "grafana"];

fn main() {
    let Some(corpus) = corpus::corpus_dir() else {
        return;
    };
    let runs = corpus::bench_runs(50);
    // `cargo bench` passes `--bench`; anything else names a chart.
    let asked: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let charts: Vec<&str> = if asked.is_empty() {
        CHARTS.to_vec()
    } else {
        asked.iter().map(String::as_str).collect()
    };
    // Every name is a function: the parse checks names, but which ones a
    // host defines is no part of the lexer's or parser's cost.
    let has_func = |_: &str| true;
    println!("lex + parse, {runs} passes per chart (each file once per pass)");
    println!(
        "{:12} {:>6} {:>9} {:>10} {:>12} {:>10}",
        "chart", "files", "KiB", "µs/pass", "allocs/pass", "KiB alloc"
    );
    for chart in charts {
        let dir = corpus.join("charts").join(chart);
        if !dir.exists() {
            eprintln!("SKIP: no chart {chart} in {}", corpus.display());
            continue;
        }
        let mut files = Vec::new();
        corpus::template_files(&dir, &mut files);
        let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
        let mut keeps_nothing = gotmpl::ParseCache::new(0);
        let mut pass = || {
            for (name, text) in &files {
                if let Err(e) = keeps_nothing.parse(name, text, &has_func) {
                    panic!("{name}: {e}");
                }
            }
        };
        pass();
        let (b0, a0) = (
            ALLOCATED.load(Ordering::Relaxed),
            ALLOCS.load(Ordering::Relaxed),
        );
        let t = Instant::now();
        for _ in 0..runs {
            pass();
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(runs);
        let allocs = (ALLOCS.load(Ordering::Relaxed) - a0) / runs as usize;
        let alloc_kib = (ALLOCATED.load(Ordering::Relaxed) - b0) / runs as usize / 1024;
        println!(
            "{chart:12} {:>6} {:>9} {us:>10.0} {allocs:>12} {alloc_kib:>10}",
            files.len(),
            bytes / 1024
        );
    }
}
