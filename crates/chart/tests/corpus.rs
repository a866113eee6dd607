//! Renders every chart × scenario of the corpus (`../shared/corpus`, or
//! `RUDDER_CORPUS`) and has the Helm oracle's own `compare` judge the result
//! against Helm's expected renders (document and key order ignored,
//! nondeterministic paths masked). Fails below the committed pass rate.

use std::path::PathBuf;
use std::process::Command;

use testkit::oracle::{corpus_cases, render_case, to_oracle_json, CaseOptions};

/// Minimum share of corpus cases identical to Helm's render. Ratchet.
const MIN_PASS_PERCENT: f64 = 100.0;

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("RUDDER_CORPUS") {
        return Some(PathBuf::from(p));
    }
    let p = testkit::tools::shared_dir()?.join("corpus");
    p.join("expected").exists().then_some(p)
}

#[test]
fn corpus_matches_helm() {
    let Some(corpus) = corpus_dir() else {
        testkit::skip!("no corpus with expected renders (../shared/corpus, or set RUDDER_CORPUS)");
    };
    let Some(oracle) = testkit::tools::oracle_cli() else {
        return;
    };
    let oracle = oracle.path().to_path_buf();
    let have_python = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have_python {
        testkit::skip!("PyYAML is missing (run ../shared/tools/install-oracle.sh)");
    }
    let out = std::env::temp_dir().join(format!("rudder-corpus-{}", std::process::id()));
    let cases = corpus_cases(&corpus);
    assert!(!cases.is_empty(), "no cases in {}", corpus.display());
    for (chart, scenario, dir, values) in &cases {
        let opts = CaseOptions::for_scenario(values).expect("options");
        let result = render_case(dir, std::slice::from_ref(values), &opts);
        let json = to_oracle_json(&result, opts.include_crds);
        let file = out.join(chart).join(format!("{scenario}.json"));
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, serde_json::to_string(&json).expect("json")).expect("write");
    }
    let res = Command::new("python3")
        .arg(&oracle)
        .arg("compare")
        .arg(corpus.join("expected"))
        .arg(&out)
        .output()
        .expect("run helm-oracle compare");
    let stdout = String::from_utf8_lossy(&res.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&res.stderr));
    let last = stdout
        .lines()
        .rev()
        .find(|l| l.contains("passed"))
        .unwrap_or_default()
        .to_string();
    let nums: Vec<usize> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect();
    assert!(nums.len() >= 2, "cannot read compare summary: {last:?}");
    let (passed, failed) = (nums[0], nums[1]);
    let pct = 100.0 * passed as f64 / (passed + failed).max(1) as f64;
    println!(
        "corpus: {passed}/{} cases identical to Helm ({pct:.1}%)",
        passed + failed
    );
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        pct + 1e-9 >= MIN_PASS_PERCENT,
        "corpus pass rate {pct:.1}% below {MIN_PASS_PERCENT}%"
    );
}
