//! `rudder template` on hostile input, as a user would feed it: every case
//! ends in Helm's answer or a clear error, never a crash. The inputs are
//! generated here in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("rudder-hostile-cli-{}-{name}", std::process::id()));
        std::fs::create_dir_all(d.join("chart/templates")).unwrap();
        std::fs::write(
            d.join("chart/Chart.yaml"),
            "apiVersion: v2\nname: c\nversion: 0.1.0\n",
        )
        .unwrap();
        Scratch(d)
    }

    fn write(&self, rel: &str, data: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(rel);
        std::fs::write(&p, data).unwrap();
        p
    }

    fn chart(&self) -> PathBuf {
        self.0.join("chart")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn rudder(args: &[&Path]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .arg("template")
        .args(args)
        .output()
        .expect("run rudder");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

#[test]
fn values_nested_10000_levels_get_helms_answer_not_a_crash() {
    let s = Scratch::new("values");
    s.write("chart/templates/cm.yaml", CONFIG_MAP);
    // A sequence under `a:` 10,000 deep: 10,001 levels, past Go's limit.
    let seqs = s.write("seqs.yaml", format!("a:\n{}x\n", "- ".repeat(10_000)));
    let (code, _, err) = rudder(&[&s.chart(), Path::new("-f"), &seqs]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("seqs.yaml: "), "{err}");
    assert!(err.contains("line 2: exceeded max depth of 10000"), "{err}");
    // 10,000 nested maps: Helm renders the chart, and so do we.
    let mut maps = String::new();
    for i in 0..10_000 {
        maps.push_str(&format!("{}k:\n", " ".repeat(i)));
    }
    maps.push_str(&format!("{}v\n", " ".repeat(10_000)));
    let maps = s.write("maps.yaml", maps);
    let (code, out, err) = rudder(&[&s.chart(), Path::new("-f"), &maps]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("kind: ConfigMap"));
}

#[test]
fn output_nested_9000_levels_renders_as_helm_renders_it() {
    let s = Scratch::new("output");
    s.write(
        "chart/templates/deep.yaml",
        format!("{CONFIG_MAP}data:\n  k:\n  {{{{ repeat 9000 \"- \" }}}}x\n"),
    );
    let (code, out, err) = rudder(&[&s.chart()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&"- ".repeat(9000)));
}

#[test]
fn chart_size_flags_bound_what_a_chart_may_hold() {
    let s = Scratch::new("flags");
    s.write("chart/templates/cm.yaml", CONFIG_MAP);
    s.write("chart/files.txt", vec![b'x'; 2048]);
    let (code, _, err) = rudder(&[&s.chart(), Path::new("--max-file-size"), Path::new("1024")]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("chart file \"files.txt\" is larger than the maximum file size 1024"),
        "{err}"
    );
    let (code, _, err) = rudder(&[&s.chart(), Path::new("--max-file-size"), Path::new("4096")]);
    assert_eq!(code, Some(0), "{err}");
}

/// Runs `rudder VERB ARGS` against a kubeconfig that does not exist: the chart is
/// loaded (and its size checked) before any cluster is asked.
fn rudder_verb(verb: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rudder"))
        .arg(verb)
        .args(args)
        .args(["--kubeconfig", "/nonexistent/rudder-hostile-kubeconfig"])
        .env_remove("KUBECONFIG")
        .output()
        .expect("run rudder");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn install_and_upgrade_take_the_chart_size_flags_too() {
    let s = Scratch::new("verb-flags");
    s.write("chart/templates/cm.yaml", CONFIG_MAP);
    s.write("chart/files.txt", vec![b'x'; 2048]);
    let chart = s.chart();
    let chart = chart.to_str().unwrap();
    let too_big = "chart file \"files.txt\" is larger than the maximum file size 1024";
    for verb in [vec!["install", "web"], vec!["upgrade", "--install", "web"]] {
        let mut args = verb.clone();
        args.extend([chart, "--max-file-size", "1024"]);
        let (code, err) = rudder_verb(args[0], &args[1..]);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(too_big), "{args:?}: {err}");
        // Within the budget the chart loads, and the run goes on to the cluster.
        let mut args = verb.clone();
        args.extend([chart, "--max-file-size", "4096"]);
        let (code, err) = rudder_verb(args[0], &args[1..]);
        assert_ne!(code, Some(0), "{args:?}: no cluster, yet it succeeded");
        assert!(!err.contains("larger than the maximum"), "{args:?}: {err}");
    }
}
