//! `rudder template` as a user runs it (the process, whose render splits its
//! work across two threads), on every chart × scenario of the corpus, judged
//! by the Helm oracle's own `compare` against Helm's expected renders. The
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
    let Some((compared, cases)) = judged else {
        return;
    };
    println!("{}", compared.report);
    println!(
        "rudder template: {}/{cases} corpus cases identical to Helm",
        compared.passed,
    );
    assert_eq!(compared.failed, 0, "{}", compared.report);
    assert_eq!(compared.passed, cases);
}
