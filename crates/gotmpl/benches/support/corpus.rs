//! The template files of a corpus chart, as Helm parses them: the chart's
//! own `templates/` tree and then each unpacked subchart's, in path order.
//! Shared by the benches that parse real charts.

use std::path::{Path, PathBuf};

/// `../shared/corpus` beside the repository, or `RUDDER_CORPUS`; `None`
/// (having said so) when it has no charts.
pub fn corpus_dir() -> Option<PathBuf> {
    let shared = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    let corpus = std::env::var("RUDDER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| shared.join("corpus"));
    if !corpus.join("charts").exists() {
        eprintln!("SKIP: no corpus at {}", corpus.display());
        return None;
    }
    Some(corpus)
}

/// Passes per chart: `RUDDER_BENCH_RUNS`, or `default`.
pub fn bench_runs(default: u32) -> u32 {
    std::env::var("RUDDER_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

/// Appends `(path, text)` for every template file of `chart` and its
/// subcharts (files that are not UTF-8 are left out, as they fail to load).
pub fn template_files(chart: &Path, out: &mut Vec<(String, String)>) {
    let mut files = Vec::new();
    collect(&chart.join("templates"), &mut files);
    files.sort();
    for f in files {
        if let Ok(text) = std::fs::read_to_string(&f) {
            out.push((f.display().to_string(), text));
        }
    }
    let mut subs: Vec<PathBuf> = std::fs::read_dir(chart.join("charts"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    for s in subs {
        template_files(&s, out);
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}
