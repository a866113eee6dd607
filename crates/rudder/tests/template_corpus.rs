//! `rudder template` as a user runs it (the process, whose render splits its
//! work across two threads), on every chart × scenario of the corpus, judged
//! against Helm's expected renders byte for byte (every file's text, outside
//! the values Helm itself renders differently on each run) and by meaning
//! (the Helm oracle's own `compare`). The
//! in-process render has the same check in `chart`'s corpus test; this one
//! covers what only the command does (parsing beside the chart read,
//! staging beside the parse, templates run on two threads).

use std::path::Path;
use std::process::Command;

use testkit::oracle::{judge_corpus, CaseOptions};

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
    let judged = judge_corpus("template-corpus", |case| {
        let run = Command::new(env!("CARGO_BIN_EXE_rudder"))
            .args(template_args(case.dir, case.values, &case.options))
            .output()
            .expect("run rudder template");
        // Failing cases print their error in the same JSON shape.
        assert!(
            !run.stdout.is_empty(),
            "{}/{}: no output; stderr: {}",
            case.chart,
            case.scenario,
            String::from_utf8_lossy(&run.stderr)
        );
        run.stdout
    });
    let Some(judged) = judged else {
        return;
    };
    let cases = judged.cases;
    let bytes = &judged.bytes;
    println!("{}", bytes.report(cases));
    if let Some(compared) = &judged.meaning {
        println!("{}", compared.report);
        println!(
            "rudder template: {}/{cases} corpus cases identical to Helm in meaning",
            compared.passed,
        );
        assert_eq!(compared.failed, 0, "{}", compared.report);
        assert_eq!(compared.passed, cases);
    }
    assert!(bytes.failures.is_empty(), "{}", bytes.report(cases));
    assert_eq!(bytes.identical + bytes.identical_outside_random, cases);
}
