//! Template parsing on real charts: every template file of the corpus
//! charts that `rudder`'s `template_vs_helm` bench renders (each chart with
//! its subcharts, as Helm parses them: each file once), parsed with Sprig's
//! functions and stand-ins for Helm's own, through a parse cache as the
//! chart engine does (so identical copies of a file parse once). Reports time and allocations per
//! pass over each chart and over all of them.
//!
//! Run: `cargo bench -p sprig --bench parse_corpus`
//! Needs `../shared/corpus` (`RUDDER_CORPUS` to point elsewhere);
//! `RUDDER_BENCH_RUNS` (default 30) sets the passes per chart.

#[path = "../../gotmpl/benches/support/corpus.rs"]
mod corpus;
#[path = "../../gotmpl/benches/support/counting_alloc.rs"]
mod counting_alloc;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use counting_alloc::{ALLOCATED, ALLOCS};
use gotmpl::{Func, ParseCache, Templates, Ty, Value};

const CHARTS: &[&str] = &[
    "nginx",
    "redis",
    "prometheus",
    "kafka",
    "argo-workflows",
    "grafana",
    "keycloak",
    "ingress-nginx",
    "wordpress",
    "thanos",
    "postgresql",
];

/// Functions Helm adds to Sprig's; parsing only needs their names.
const HELM_FUNCS: &[&str] = &[
    "include",
    "tpl",
    "required",
    "lookup",
    "toYaml",
    "mustToYaml",
    "toYamlPretty",
    "fromYaml",
    "fromYamlArray",
    "toJson",
    "mustToJson",
    "fromJson",
    "fromJsonArray",
    "toToml",
    "mustToToml",
    "fromToml",
];

fn main() {
    let Some(corpus) = corpus::corpus_dir() else {
        return;
    };
    let runs = corpus::bench_runs(30);
    let mut funcs = sprig::funcmap();
    for name in HELM_FUNCS {
        funcs.insert(*name, Func::variadic(&[], Ty::Any, |_, _| Ok(Value::Nil)));
    }
    let funcs = Rc::new(funcs);
    println!("template parsing, {runs} passes per chart (each file once per pass)");
    println!(
        "{:16} {:>6} {:>9} {:>10} {:>12} {:>10}",
        "chart", "files", "KiB", "µs/pass", "allocs/pass", "KiB alloc"
    );
    let (mut total_us, mut total_allocs) = (0.0, 0);
    for chart in CHARTS {
        let mut files = Vec::new();
        corpus::template_files(&corpus.join("charts").join(chart), &mut files);
        let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
        let pass = || {
            let mut set = Templates::new(funcs.clone());
            // A fresh cache per pass, as one `rudder template` run has.
            set.set_parse_cache(Rc::new(RefCell::new(ParseCache::new(64 << 20))));
            for (name, text) in &files {
                if let Err(e) = set.parse(name, text) {
                    panic!("{name}: {e}");
                }
            }
            set
        };
        std::hint::black_box(pass());
        let (b0, a0) = (
            ALLOCATED.load(Ordering::Relaxed),
            ALLOCS.load(Ordering::Relaxed),
        );
        let t = Instant::now();
        for _ in 0..runs {
            std::hint::black_box(pass());
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(runs);
        let allocs = (ALLOCS.load(Ordering::Relaxed) - a0) / runs as usize;
        let alloc_kib = (ALLOCATED.load(Ordering::Relaxed) - b0) / runs as usize / 1024;
        total_us += us;
        total_allocs += allocs;
        println!(
            "{chart:16} {:>6} {:>9} {us:>10.0} {allocs:>12} {alloc_kib:>10}",
            files.len(),
            bytes / 1024
        );
    }
    println!(
        "{:16} {:>6} {:>9} {total_us:>10.0} {total_allocs:>12}",
        "all", "", ""
    );
}
