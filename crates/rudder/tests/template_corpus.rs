//! `rudder template` as a user runs it (the process, whose render splits its
//! work across two threads), on every chart × scenario of the corpus, judged
//! by the Helm oracle's own `compare` against Helm's expected renders. The
//! in-process render has the same check in `chart`'s corpus test; this one
//! covers what only the command does (parsing beside the chart read,
//! staging beside the parse, templates run on two threads).

use std::path::{Path, PathBuf};
use std::process::Command;

use testkit::oracle::{corpus_cases, CaseOptions};

fn corpus_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("RUDDER_CORPUS") {
        return Some(PathBuf::from(p));
    }
    let p = testkit::tools::shared_dir()?.join("corpus");
    p.join("expected").exists().then_some(p)
}

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
    let Some(corpus) = corpus_dir() else {
        testkit::skip!("no corpus with expected renders (../shared/corpus, or set RUDDER_CORPUS)");
    };
    let Some(oracle) = testkit::tools::oracle_cli() else {
        return;
    };
    let have_python = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !have_python {
        testkit::skip!("PyYAML is missing (run ../shared/tools/install-oracle.sh)");
    }
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
    let res = Command::new("python3")
        .arg(oracle.path())
        .arg("compare")
        .arg(corpus.join("expected"))
        .arg(&out)
        .output()
        .expect("run helm-oracle compare");
    let stdout = String::from_utf8_lossy(&res.stdout);
    println!("{stdout}");
    let summary = stdout
        .lines()
        .rev()
        .find(|l| l.contains("passed"))
        .unwrap_or_default();
    let nums: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect();
    assert!(nums.len() >= 2, "cannot read compare summary: {summary:?}");
    let (passed, failed) = (nums[0], nums[1]);
    println!(
        "rudder template: {passed}/{} corpus cases identical to Helm",
        passed + failed
    );
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(failed, 0, "{summary}");
    assert_eq!(passed, cases.len(), "{summary}");
}
