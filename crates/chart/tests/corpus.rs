//! Renders every chart × scenario of the corpus (`../shared/corpus`, or
//! `RUDDER_CORPUS`) and has the Helm oracle's own `compare` judge the result
//! against Helm's expected renders (document and key order ignored,
//! nondeterministic paths masked). Fails below the committed pass rate.

use testkit::oracle::{
    compare_with_helm, corpus_cases, corpus_with_expected, render_case, to_oracle_json, CaseOptions,
};

/// Minimum share of corpus cases identical to Helm's render. Ratchet.
const MIN_PASS_PERCENT: f64 = 100.0;

#[test]
fn corpus_matches_helm() {
    let Some(corpus) = corpus_with_expected() else {
        return;
    };
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
    let Some(compared) = compare_with_helm(&corpus, &out) else {
        return;
    };
    println!("{}", compared.report);
    let (passed, failed) = (compared.passed, compared.failed);
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
