//! The Helm oracle's corpus format, for tests and benchmarks: the cases of a corpus
//! folder, their options (`<scenario>.options.json`), one case rendered end to end, and
//! render results in the JSON shape of `helm-oracle render`
//! (`{"manifests": {...}, "error": null}`), judged against Helm's expected renders by
//! meaning (the oracle's `compare`) and byte for byte ([`bytes`]).

pub mod bytes;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use chart::render::{render_templates, ReleaseInfo, RenderOptions, RenderedFiles};

/// Options of one corpus case (`<scenario>.options.json`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct CaseOptions {
    /// Release name (default `demo`).
    pub name: String,
    /// Release namespace (default `prod`).
    pub namespace: String,
    /// `.Capabilities.KubeVersion`, when the case sets one.
    pub kube_version: Option<String>,
    /// Extra `.Capabilities.APIVersions`.
    pub api_versions: Vec<String>,
    /// `.Release.IsUpgrade`.
    pub is_upgrade: bool,
    /// `.Release.Revision` (default 1).
    pub revision: i64,
    /// Whether `crds/` is part of the expected output.
    pub include_crds: bool,
}

impl Default for CaseOptions {
    fn default() -> Self {
        CaseOptions {
            name: "demo".into(),
            namespace: "prod".into(),
            kube_version: None,
            api_versions: Vec::new(),
            is_upgrade: false,
            revision: 1,
            include_crds: false,
        }
    }
}

impl CaseOptions {
    /// Reads `<scenario>.options.json` beside a scenario's values file, or
    /// the defaults when there is none.
    pub fn for_scenario(values_file: &Path) -> Result<CaseOptions, String> {
        let p = values_file.with_extension("options.json");
        match std::fs::read_to_string(&p) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| format!("{}: {e}", p.display())),
            Err(_) => Ok(CaseOptions::default()),
        }
    }

    /// The render options the case stands for.
    pub(crate) fn render_options(&self) -> RenderOptions {
        RenderOptions {
            release: ReleaseInfo {
                name: self.name.clone(),
                namespace: self.namespace.clone(),
                revision: self.revision,
                is_upgrade: self.is_upgrade,
            },
            kube_version: self.kube_version.clone(),
            api_versions: self.api_versions.clone(),
            ..RenderOptions::default()
        }
    }
}

/// The oracle's JSON for a render result; CRDs are added under their full
/// names when `include_crds` is set.
pub fn to_oracle_json(
    result: &Result<RenderedFiles, String>,
    include_crds: bool,
) -> serde_json::Value {
    match result {
        Ok(r) => {
            let mut m: BTreeMap<String, String> = r.files.clone();
            if include_crds {
                for (n, f) in &r.crds {
                    m.insert(n.clone(), f.text().into_owned());
                }
            }
            serde_json::json!({"manifests": m, "error": null})
        }
        Err(e) => serde_json::json!({"manifests": {}, "error": e}),
    }
}

/// Loads a chart directory, reads the values files and renders: one corpus
/// case end to end.
pub fn render_case(
    chart_dir: &Path,
    values_files: &[PathBuf],
    opts: &CaseOptions,
) -> Result<RenderedFiles, String> {
    let chart = chart::loader::load(chart_dir).map_err(|e| apierror::chain(&e))?;
    let values = chart::values::read_values_files(values_files)?;
    render_templates(&chart, values, &opts.render_options()).map_err(|e| e.to_string())
}

/// Every case of a corpus folder (`charts/`, `scenarios/`, `expected/`):
/// (chart name, scenario name, chart dir, values file).
pub fn corpus_cases(corpus: &Path) -> Vec<(String, String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let Ok(charts) = std::fs::read_dir(corpus.join("charts")) else {
        return out;
    };
    let mut charts: Vec<_> = charts
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    charts.sort();
    for chart in charts {
        let name = chart
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sdir = corpus.join("scenarios").join(&name);
        let mut scenarios: Vec<PathBuf> = std::fs::read_dir(&sdir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                    .collect()
            })
            .unwrap_or_default();
        scenarios.sort();
        for s in scenarios {
            let sname = s
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name.clone(), sname, chart.clone(), s));
        }
    }
    out
}

/// The corpus with Helm's expected renders: `RUDDER_CORPUS`, else
/// `../shared/corpus` (a skip message when absent).
fn corpus_with_expected() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("RUDDER_CORPUS") {
        return Some(PathBuf::from(p));
    }
    let p = crate::tools::shared_dir()?.join("corpus");
    if p.join("expected").exists() {
        Some(p)
    } else {
        crate::skip_message(&format!("no expected renders in {}", p.display()));
        None
    }
}

/// A case of the corpus, as [`judge_corpus`] hands it to a render.
pub struct CorpusCase<'c> {
    pub chart: &'c str,
    pub scenario: &'c str,
    /// The chart's folder.
    pub dir: &'c Path,
    /// The scenario's values file.
    pub values: &'c Path,
    pub options: CaseOptions,
}

/// A corpus judged against Helm's expected renders.
pub struct Judged {
    /// How many cases the corpus has.
    pub cases: usize,
    /// The oracle's `compare`, by meaning (document and key order ignored,
    /// nondeterministic paths masked); `None`, with a skip message, when the
    /// oracle or its PyYAML is missing.
    pub meaning: Option<Compared>,
    /// Byte for byte (see [`bytes`]).
    pub bytes: ByteJudgement,
}

/// How the renders compared with Helm's byte for byte.
#[derive(Debug, Default)]
pub struct ByteJudgement {
    /// Cases whose every file (or error) equals Helm's.
    pub identical: usize,
    /// Cases equal to Helm's outside the values Helm renders differently on
    /// every run (random passwords, keys, certificates, their checksums).
    pub identical_outside_random: usize,
    /// `chart/scenario: where` of every other case.
    pub failures: Vec<String>,
}

impl ByteJudgement {
    /// One line per failing case, then the counts.
    pub fn report(&self, cases: usize) -> String {
        let mut out: String = self
            .failures
            .iter()
            .map(|f| format!("BYTES {f}\n"))
            .collect();
        out.push_str(&format!(
            "{} of {cases} cases byte-identical to Helm, {} more outside random values, {} differ",
            self.identical,
            self.identical_outside_random,
            self.failures.len()
        ));
        out
    }
}

/// Renders every case of the corpus with `render` (the render in
/// `helm-oracle render`'s JSON shape), judges each byte for byte against
/// Helm's expected render, and has the oracle's `compare` judge them all by
/// meaning. `None` (with a skip message) when the corpus is missing.
pub fn judge_corpus(label: &str, mut render: impl FnMut(&CorpusCase) -> Vec<u8>) -> Option<Judged> {
    let corpus = corpus_with_expected()?;
    let out = std::env::temp_dir().join(format!("rudder-{label}-{}", std::process::id()));
    let cases = corpus_cases(&corpus);
    assert!(!cases.is_empty(), "no cases in {}", corpus.display());
    let mut judged = ByteJudgement::default();
    for (chart, scenario, dir, values) in &cases {
        let case = CorpusCase {
            chart,
            scenario,
            dir,
            values,
            options: CaseOptions::for_scenario(values).expect("options"),
        };
        let file = out.join(chart).join(format!("{scenario}.json"));
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        let rendered = render(&case);
        let expected = corpus
            .join("expected")
            .join(chart)
            .join(format!("{scenario}.json"));
        let verdict = std::fs::read(&expected)
            .map_err(|e| format!("cannot read {}: {e}", expected.display()))
            .and_then(|e| serde_json::from_slice(&e).map_err(|e| e.to_string()))
            .and_then(|e| {
                let actual = serde_json::from_slice(&rendered)
                    .map_err(|e| format!("the render is not JSON: {e}"))?;
                bytes::compare(&e, &actual)
            });
        match verdict {
            Ok(bytes::Exactness::Identical) => judged.identical += 1,
            Ok(bytes::Exactness::IdenticalOutsideRandomValues(_)) => {
                judged.identical_outside_random += 1
            }
            Err(why) => judged.failures.push(format!("{chart}/{scenario}: {why}")),
        }
        std::fs::write(&file, rendered).expect("write");
    }
    let meaning = compare_with_helm(&corpus, &out);
    let _ = std::fs::remove_dir_all(&out);
    Some(Judged {
        cases: cases.len(),
        meaning,
        bytes: judged,
    })
}

/// What the oracle's `compare` said of a folder of renders.
pub struct Compared {
    pub passed: usize,
    pub failed: usize,
    /// Its report, a line per case.
    pub report: String,
}

/// Has `helm-oracle compare` judge `rendered` (`<chart>/<scenario>.json`,
/// each in `helm-oracle render`'s shape) against the corpus's expected
/// renders: document and key order ignored, nondeterministic paths masked.
/// `None` (with a skip message) when the oracle or its PyYAML is missing.
fn compare_with_helm(corpus: &Path, rendered: &Path) -> Option<Compared> {
    let oracle = crate::tools::oracle_cli()?;
    let have_python = std::process::Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !have_python {
        crate::skip_message("PyYAML is missing (run ../shared/tools/install-oracle.sh)");
        return None;
    }
    let res = std::process::Command::new("python3")
        .arg(oracle.path())
        .arg("compare")
        .arg(corpus.join("expected"))
        .arg(rendered)
        .output()
        .expect("run helm-oracle compare");
    let report = String::from_utf8_lossy(&res.stdout).into_owned();
    eprint!("{}", String::from_utf8_lossy(&res.stderr));
    let summary = report
        .lines()
        .rev()
        .find(|l| l.contains("passed"))
        .unwrap_or_default();
    let nums: Vec<usize> = summary
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|t| t.parse().ok())
        .collect();
    assert!(nums.len() >= 2, "cannot read compare summary: {summary:?}");
    Some(Compared {
        passed: nums[0],
        failed: nums[1],
        report,
    })
}
