//! Runs the template conformance cases (`../shared/conformance/cases.jsonl`,
//! or the file named by `RUDDER_CONFORMANCE_CASES`) through the engine and
//! compares with the output the real Helm gave. Prints pass counts per
//! group and fails when a group falls below its committed threshold.

use std::collections::BTreeMap;
use std::path::PathBuf;

use chart::engine::{Engine, Renderable};
use chart::objects::{Capabilities, Files};
use gotmpl::{MapKind, MapRef, Value};

/// Minimum pass rate (percent) per group. Ratchets: raise, never lower.
const THRESHOLDS: &[(&str, f64)] = &[
    ("syntax", 0.0),
    ("pipeline", 0.0),
    ("variables", 0.0),
    ("range", 0.0),
    ("conditionals", 0.0),
    ("define", 0.0),
    ("fields", 0.0),
    ("literals", 0.0),
    ("compare", 0.0),
    ("logic", 0.0),
    ("builtins", 0.0),
    ("printf", 0.0),
];

/// Threshold for groups not listed above.
const DEFAULT_THRESHOLD: f64 = 0.0;

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

/// Deep merge as Helm merges user values over chart values: maps merge,
/// `null` deletes the key, anything else replaces.
fn coalesce(base: &mut serde_json::Value, over: &serde_json::Value) {
    use serde_json::Value as J;
    match (base, over) {
        (J::Object(b), J::Object(o)) => {
            for (k, v) in o {
                if v.is_null() {
                    b.remove(k);
                    continue;
                }
                match b.get_mut(k) {
                    Some(bv @ J::Object(_)) if v.is_object() => coalesce(bv, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn chart_value(extra: Option<&serde_json::Value>) -> Value {
    use serde_json::json;
    let get = |k: &str| extra.and_then(|e| e.get(k)).cloned();
    let s = |k: &str| get(k).and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    let maintainers: Vec<serde_json::Value> = get("maintainers")
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            json!({
                "Name": m.get("name").and_then(|v| v.as_str()).unwrap_or(""),
                "Email": m.get("email").and_then(|v| v.as_str()).unwrap_or(""),
                "URL": m.get("url").and_then(|v| v.as_str()).unwrap_or(""),
            })
        })
        .collect();
    let j = json!({
        "APIVersion": "v2",
        "Name": "t",
        "Version": get("version").and_then(|v| v.as_str().map(String::from)).unwrap_or_else(|| "0.1.0".into()),
        "AppVersion": s("appVersion"),
        "Description": s("description"),
        "Type": s("type"),
        "Home": s("home"),
        "Icon": s("icon"),
        "KubeVersion": s("kubeVersion"),
        "Condition": "",
        "Tags": "",
        "Deprecated": get("deprecated").and_then(|v| v.as_bool()).unwrap_or(false),
        "IsRoot": true,
        "Keywords": get("keywords").unwrap_or(json!([])),
        "Sources": get("sources").unwrap_or(json!([])),
        "Maintainers": maintainers,
        "Dependencies": [],
        "Annotations": get("annotations").unwrap_or(json!({})),
    });
    let v = Value::from_json(&j);
    // Chart fields that are strings, bools and string lists keep Go types;
    // from_json gives exactly those (no numbers appear here).
    v
}

fn release_value(r: Option<&serde_json::Value>) -> Value {
    let get = |k: &str| r.and_then(|r| r.get(k)).cloned();
    let mut m = gotmpl::Map::new();
    m.insert(
        "Name".into(),
        Value::string(get("name").and_then(|v| v.as_str().map(String::from)).unwrap_or_else(|| "rel".into())),
    );
    m.insert(
        "Namespace".into(),
        Value::string(get("namespace").and_then(|v| v.as_str().map(String::from)).unwrap_or_else(|| "ns".into())),
    );
    m.insert(
        "Revision".into(),
        Value::int(get("revision").and_then(|v| v.as_i64()).unwrap_or(1)),
    );
    let is_upgrade = get("is_upgrade").and_then(|v| v.as_bool()).unwrap_or(false);
    m.insert(
        "IsInstall".into(),
        Value::Bool(get("is_install").and_then(|v| v.as_bool()).unwrap_or(!is_upgrade)),
    );
    m.insert("IsUpgrade".into(), Value::Bool(is_upgrade));
    m.insert("Service".into(), Value::str("Helm"));
    Value::map(m)
}

fn render_case(engine: &Engine, case: &serde_json::Value) -> Result<String, String> {
    let mut values = match case.get("values_yaml").and_then(|v| v.as_str()) {
        Some(text) => chart::yaml::parse_yaml_to_json(text)
            .map_err(|e| format!("cannot load values.yaml: {e}"))?,
        None => serde_json::json!({}),
    };
    if values.is_null() {
        values = serde_json::json!({});
    }
    if let Some(v) = case.get("values") {
        coalesce(&mut values, v);
    }
    let files = case
        .get("files")
        .and_then(|f| f.as_object())
        .map(|f| {
            Files::from_pairs(
                f.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().as_bytes().to_vec())),
            )
        })
        .unwrap_or_default();
    let vals_map = match Value::from_json(&values) {
        Value::Map(m) => m.retyped(MapKind::Named("common.Values")),
        _ => MapRef::with_kind(Default::default(), MapKind::Named("common.Values")),
    };
    let mut top = gotmpl::Map::new();
    top.insert("Values".into(), Value::Map(vals_map));
    top.insert("Chart".into(), chart_value(case.get("chart")));
    top.insert("Release".into(), release_value(case.get("release")));
    top.insert("Capabilities".into(), Value::object(Capabilities::default()));
    top.insert("Files".into(), Value::object(files));
    top.insert("Subcharts".into(), Value::map(Default::default()));
    let vals = MapRef::new(top);
    let mut tpls = vec![Renderable {
        name: "t/templates/t.txt".into(),
        text: case["template"].as_str().unwrap_or_default().to_string(),
        vals: vals.clone(),
        base_path: "t/templates".into(),
    }];
    if let Some(h) = case.get("helpers").and_then(|h| h.as_str()) {
        tpls.push(Renderable {
            name: "t/templates/_helpers.tpl".into(),
            text: h.to_string(),
            vals,
            base_path: "t/templates".into(),
        });
    }
    let out = engine.render(&tpls).map_err(|e| e.to_string())?;
    Ok(out.get("t/templates/t.txt").cloned().unwrap_or_default())
}

#[test]
fn conformance() {
    let Some(path) = cases_path() else {
        eprintln!("SKIP conformance: ../shared/conformance/cases.jsonl not found (set RUDDER_CONFORMANCE_CASES)");
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read cases");
    let engine = Engine::new();
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
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render_case(&engine, &case)))
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
                    Err(e) => (false, format!("expected error containing {want:?}\n      error    {e}")),
                    Ok(got) => (false, format!("expected error containing {want:?}\n      got      {got:?}")),
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
    println!("  {:22} {tp:4}/{tt:4}  {:6.2}%", "TOTAL", 100.0 * tp as f64 / tt.max(1) as f64);
    for (g, f) in &failures {
        let n = if verbose { f.len() } else { f.len().min(8) };
        println!("failures in {g} ({} total, showing {n}):", f.len());
        for line in &f[..n] {
            println!("{line}");
        }
    }
    assert!(below.is_empty(), "groups below threshold: {below:?}");
}
