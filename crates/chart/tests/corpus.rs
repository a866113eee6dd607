//! Renders every chart × scenario of the corpus (`../shared/corpus`, or
//! `RUDDER_CORPUS`) and judges the result against Helm's expected renders:
//! byte for byte (every file's text, outside the values Helm itself renders
//! differently on each run), and by meaning with the Helm oracle's own
//! `compare` (document and key order ignored, nondeterministic paths masked),
//! which fails below the committed pass rate.

use testkit::oracle::{judge_corpus, render_case, to_oracle_json};

/// Minimum share of corpus cases identical to Helm's render. Ratchet.
const MIN_PASS_PERCENT: f64 = 100.0;

#[test]
fn corpus_matches_helm() {
    let judged = judge_corpus("corpus", |case| {
        let result = render_case(
            case.dir,
            std::slice::from_ref(&case.values.to_path_buf()),
            &case.options,
        );
        let json = to_oracle_json(&result, case.options.include_crds);
        serde_json::to_vec(&json).expect("json")
    });
    let Some(judged) = judged else {
        return;
    };
    let bytes = &judged.bytes;
    println!("{}", bytes.report(judged.cases));
    assert!(bytes.failures.is_empty(), "{}", bytes.report(judged.cases));
    let Some(compared) = judged.meaning else {
        return;
    };
    println!("{}", compared.report);
    let (passed, failed) = (compared.passed, compared.failed);
    let pct = 100.0 * passed as f64 / (passed + failed).max(1) as f64;
    println!(
        "corpus: {passed}/{} cases identical to Helm ({pct:.1}%)",
        passed + failed
    );
    assert!(
        pct + 1e-9 >= MIN_PASS_PERCENT,
        "corpus pass rate {pct:.1}% below {MIN_PASS_PERCENT}%"
    );
}
