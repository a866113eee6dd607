//! Runs the template conformance cases (`../shared/conformance/cases.jsonl`,
//! or the file named by `RUDDER_CONFORMANCE_CASES`) through the engine and
//! compares with the output the real Helm gave. Prints pass counts per
//! group and fails when a group falls below its committed threshold.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chart::render::{render_templates, ReleaseInfo, RenderOptions};

/// Minimum pass rate (percent) per group. Ratchets: raise, never lower.
const THRESHOLDS: &[(&str, f64)] = &[
    ("syntax", 100.0),
    ("pipeline", 100.0),
    ("variables", 100.0),
    ("range", 100.0),
    ("conditionals", 100.0),
    ("define", 100.0),
    ("fields", 100.0),
    ("literals", 100.0),
    ("compare", 100.0),
    ("logic", 100.0),
    ("builtins", 100.0),
    ("printf", 100.0),
    ("sprig_regex", 100.0),
    ("sprig_lists_strings", 100.0),
    ("sprig_conv", 100.0),
    ("sprig_math", 100.0),
    ("sprig_lists", 100.0),
    ("sprig_dicts", 100.0),
    ("sprig_defaults", 100.0),
    ("required_fail", 100.0),
    ("json", 100.0),
    ("semver", 100.0),
    ("dates", 100.0),
    ("reflect", 100.0),
    ("paths_url", 100.0),
    ("yaml", 100.0),
    ("toml", 100.0),
    ("include", 100.0),
    ("tpl", 100.0),
    ("objects", 100.0),
    ("files", 100.0),
    ("values", 100.0),
    ("sprig_strings", 100.0),
    ("encoding_hash", 100.0),
];

/// Threshold for groups not listed above (new groups in a newer cases file).
const DEFAULT_THRESHOLD: f64 = 95.0;

fn cases_path() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("RUDDER_CONFORMANCE_CASES") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/conformance/cases.jsonl"
    ));
    p.exists().then_some(p)
}

/// Writes the case's throwaway chart (as the conformance README describes)
/// and renders it through the real pipeline: loader, dependencies, values
/// coalescing, schema, engine.
fn render_case(dir: &std::path::Path, case: &serde_json::Value) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(dir);
    let tdir = dir.join("templates");
    std::fs::create_dir_all(&tdir).map_err(|e| e.to_string())?;
    let mut chart_yaml = serde_json::json!({"apiVersion": "v2", "name": "t", "version": "0.1.0"});
    if let Some(extra) = case.get("chart").and_then(|c| c.as_object()) {
        for (k, v) in extra {
            chart_yaml[k] = v.clone();
        }
    }
    // JSON is YAML, so the metadata can be written as JSON.
    std::fs::write(dir.join("Chart.yaml"), chart_yaml.to_string()).map_err(|e| e.to_string())?;
    let values_yaml = case
        .get("values_yaml")
        .and_then(|v| v.as_str())
        .unwrap_or("{}");
    std::fs::write(dir.join("values.yaml"), values_yaml).map_err(|e| e.to_string())?;
    std::fs::write(
        tdir.join("t.txt"),
        case["template"].as_str().unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    if let Some(h) = case.get("helpers").and_then(|h| h.as_str()) {
        std::fs::write(tdir.join("_helpers.tpl"), h).map_err(|e| e.to_string())?;
    }
    if let Some(files) = case.get("files").and_then(|f| f.as_object()) {
        for (name, content) in files {
            let p = dir.join(name);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&p, content.as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
        }
    }
    let chart = chart::loader::load(dir).map_err(|e| apierror::chain(&e))?;
    let user = match case.get("values") {
        Some(serde_json::Value::Object(m)) => m.clone(),
        _ => Default::default(),
    };
    let r = case.get("release");
    let s = |k: &str, d: &str| {
        r.and_then(|r| r.get(k))
            .and_then(|v| v.as_str())
            .unwrap_or(d)
            .to_string()
    };
    let opts = RenderOptions {
        release: ReleaseInfo {
            name: s("name", "rel"),
            namespace: s("namespace", "ns"),
            revision: r
                .and_then(|r| r.get("revision"))
                .and_then(|v| v.as_i64())
                .unwrap_or(1),
            is_upgrade: r
                .and_then(|r| r.get("is_upgrade"))
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        },
        ..RenderOptions::default()
    };
    let out = render_templates(&chart, user, &opts).map_err(|e| e.to_string())?;
    Ok(out
        .files
        .get("t/templates/t.txt")
        .cloned()
        .unwrap_or_default())
}

#[test]
fn conformance() {
    let Some(path) = cases_path() else {
        eprintln!("SKIP conformance: ../shared/conformance/cases.jsonl not found (set RUDDER_CONFORMANCE_CASES)");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read cases");
    let tmp = std::env::temp_dir().join(format!("rudder-conformance-{}", std::process::id()));
    let dir = tmp.join("t");
    let only = std::env::var("RUDDER_CONFORMANCE_GROUP").ok();
    let verbose = std::env::var("RUDDER_CONFORMANCE_VERBOSE").is_ok();
    let mut stats: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).expect("case is JSON");
        let group = case["group"].as_str().unwrap_or("?").to_string();
        if only.as_deref().is_some_and(|o| o != group) {
            continue;
        }
        let id = case["id"].as_str().unwrap_or("?").to_string();
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render_case(&dir, &case)))
                .unwrap_or_else(|p| {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Err(format!("PANIC: {msg}"))
                });
        let (pass, detail) = match (case.get("expected"), case.get("expected_error")) {
            (Some(exp), _) => {
                let exp = exp.as_str().unwrap_or_default();
                match &result {
                    Ok(got) if got == exp => (true, String::new()),
                    Ok(got) => (false, format!("expected {exp:?}\n      got      {got:?}")),
                    Err(e) => (false, format!("expected {exp:?}\n      error    {e}")),
                }
            }
            (None, Some(want)) => {
                let want = want.as_str().unwrap_or_default();
                match &result {
                    Err(e) if e.contains(want) => (true, String::new()),
                    Err(e) => (
                        false,
                        format!("expected error containing {want:?}\n      error    {e}"),
                    ),
                    Ok(got) => (
                        false,
                        format!("expected error containing {want:?}\n      got      {got:?}"),
                    ),
                }
            }
            _ => (false, "case has neither expected nor expected_error".into()),
        };
        let e = stats.entry(group.clone()).or_default();
        e.1 += 1;
        if pass {
            e.0 += 1;
        } else {
            failures.entry(group).or_default().push(format!(
                "  {id}: {}\n      {detail}",
                case["template"].as_str().unwrap_or_default()
            ));
        }
    }
    let mut below = Vec::new();
    let (mut tp, mut tt) = (0, 0);
    println!("conformance: {}", path.display());
    for (g, (p, t)) in &stats {
        tp += p;
        tt += t;
        let pct = 100.0 * *p as f64 / *t as f64;
        let thr = THRESHOLDS
            .iter()
            .find(|(n, _)| n == g)
            .map(|(_, t)| *t)
            .unwrap_or(DEFAULT_THRESHOLD);
        println!("  {g:22} {p:4}/{t:4}  {pct:6.2}%  (threshold {thr}%)");
        if pct + 1e-9 < thr {
            below.push(format!("{g}: {pct:.2}% < {thr}%"));
        }
    }
    println!(
        "  {:22} {tp:4}/{tt:4}  {:6.2}%",
        "TOTAL",
        100.0 * tp as f64 / tt.max(1) as f64
    );
    for (g, f) in &failures {
        let n = if verbose { f.len() } else { f.len().min(8) };
        println!("failures in {g} ({} total, showing {n}):", f.len());
        for line in &f[..n] {
            println!("{line}");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(below.is_empty(), "groups below threshold: {below:?}");
}
