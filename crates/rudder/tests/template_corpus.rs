//! `rudder template` as a user runs it (the process, whose render splits its
//! work across two threads), on every chart × scenario of the corpus, judged
//! by the Helm oracle's own `compare` against Helm's expected renders. The
//! in-process render has the same check in `chart`'s corpus test; this one
//! covers what only the command does (parsing beside the chart read,
//! staging beside the parse, templates run on two threads).

use std::path::Path;
use std::process::Command;

use testkit::oracle::{compare_with_helm, corpus_cases, corpus_with_expected, CaseOptions};

/// `rudder template … -o json` arguments of a case.
fn template_args(dir: &Path, values: &Path, opts: &CaseOptions) -> Vec<String> {
    let mut args = vec![
        "template".to_string(),
        opts.name.clone(),
        dir.display().to_string(),
        "-n".into(),
        opts.namespace.clone(),
        "-f".into(),
        values.display().to_string(),
        "-o".into(),
        "json".into(),
        "--revision".into(),
        opts.revision.to_string(),
    ];
    if let Some(v) = &opts.kube_version {
        args.extend(["--kube-version".into(), v.clone()]);
    }
    for a in &opts.api_versions {
        args.extend(["--api-versions".into(), a.clone()]);
    }
    if opts.is_upgrade {
        args.push("--is-upgrade".into());
    }
    if opts.include_crds {
        args.push("--include-crds".into());
    }
    args
}

#[test]
fn template_command_matches_helm_on_the_corpus() {
    let Some(corpus) = corpus_with_expected() else {
        return;
    };
    let out = std::env::temp_dir().join(format!("rudder-template-corpus-{}", std::process::id()));
    let cases = corpus_cases(&corpus);
    assert!(!cases.is_empty(), "no cases in {}", corpus.display());
    for (chart, scenario, dir, values) in &cases {
        let opts = CaseOptions::for_scenario(values).expect("options");
        let run = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(template_args(dir, values, &opts))
            .output()
            .expect("run rudder template");
        // Failing cases print their error in the same JSON shape.
        assert!(
            !run.stdout.is_empty(),
            "{chart}/{scenario}: no output; stderr: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let file = out.join(chart).join(format!("{scenario}.json"));
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, &run.stdout).expect("write");
    }
    let Some(compared) = compare_with_helm(&corpus, &out) else {
        return;
    };
    let _ = std::fs::remove_dir_all(&out);
    println!("{}", compared.report);
    println!(
        "rudder template: {}/{} corpus cases identical to Helm",
        compared.passed,
        cases.len()
    );
    assert_eq!(compared.failed, 0, "{}", compared.report);
    assert_eq!(compared.passed, cases.len());
}
