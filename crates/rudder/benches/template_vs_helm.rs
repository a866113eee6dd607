//! `rudder template` against `helm template` as users run them: whole
//! processes, one after the other on the same corpus cases, in one run.
//! Prints per case the median wall time of each (and the CPU time the
//! process and its threads used), their ratio, and the median ratio; then a
//! key-generation micro-bench: both CLIs render a chart whose template
//! times each `genCA` (a fresh 2048-bit RSA key and a signature) with
//! `now`, so Go's figure comes from Helm itself, and the median and spread
//! of many keys are printed side by side; then keys as a user sees them:
//! whole `template` runs of a chart with `PROCESS_KEYS` `genCA` calls minus
//! runs of the same chart with none, per key (first-key set-up included).
//!
//! Run: `cargo bench -p rudder --bench template_vs_helm`
//! Needs `../shared/corpus` and a `helm` binary (`RUDDER_HELM`, else `helm`
//! on PATH; `../shared/tools/install-helm-cli.sh` installs v4.1.4).
//! `RUDDER_BENCH_RUNS` (default 9) sets the runs per case and CLI,
//! `RUDDER_BENCH_CASES` (`chart/scenario,...`) the cases, and
//! `RUDDER_BENCH_KEYS` (default 120) how many keys each CLI makes (in each
//! of the two key benches), and `RUDDER_BIN` another `rudder` binary to
//! measure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The cases the issue measured: real charts, each with its defaults.
const CASES: &[&str] = &[
    "nginx/defaults",
    "redis/defaults",
    "prometheus/defaults",
    "kafka/defaults",
    "argo-workflows/defaults",
    "grafana/defaults",
    "keycloak/defaults",
    "ingress-nginx/defaults",
    "wordpress/defaults",
    "thanos/defaults",
    "postgresql/defaults",
];

/// Keys timed per render of the key chart.
const KEYS_PER_RENDER: usize = 40;

/// Keys per whole-process run of the process key bench.
const PROCESS_KEYS: usize = 5;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// CPU time (user + system) of all finished children so far, in ms.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}

/// Runs `cmd` to completion with output discarded: (wall ms, CPU ms).
fn time_run(cmd: &mut Command) -> Result<(f64, f64), String> {
    let cpu0 = children_cpu_ms();
    let t = Instant::now();
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| e.to_string())?;
    let wall = t.elapsed().as_secs_f64() * 1000.0;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok((wall, children_cpu_ms() - cpu0))
}

/// `template` arguments of a corpus case, as its options file says.
fn case_args(corpus: &Path, case: &str) -> Option<Vec<String>> {
    let (chart, scenario) = case.split_once('/')?;
    let values = corpus
        .join("scenarios")
        .join(chart)
        .join(format!("{scenario}.yaml"));
    let opts: serde_json::Value = std::fs::read_to_string(values.with_extension("options.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    let s = |k: &str, d: &str| opts[k].as_str().unwrap_or(d).to_string();
    let mut args = vec![
        "template".to_string(),
        s("name", "demo"),
        corpus.join("charts").join(chart).display().to_string(),
        "-n".into(),
        s("namespace", "prod"),
        "-f".into(),
        values.display().to_string(),
    ];
    if let Some(k) = opts["kube_version"].as_str() {
        args.extend(["--kube-version".into(), k.into()]);
    }
    for a in opts["api_versions"].as_array().into_iter().flatten() {
        args.extend([
            "--api-versions".into(),
            a.as_str().unwrap_or_default().into(),
        ]);
    }
    if opts["is_upgrade"].as_bool() == Some(true) {
        args.push("--is-upgrade".into());
    }
    if let Some(r) = opts["revision"].as_i64() {
        args.extend(["--revision".into(), r.to_string()]);
    }
    if opts["include_crds"].as_bool() == Some(true) {
        args.push("--include-crds".into());
    }
    Some(args)
}

fn helm_binary() -> Option<PathBuf> {
    let h = std::env::var("RUDDER_HELM").unwrap_or_else(|_| "helm".into());
    Command::new(&h)
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()
        .filter(|s| s.success())
        .map(|_| PathBuf::from(h))
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

fn bench_cases(rudder: &Path, helm: &Path, corpus: &Path) {
    let runs = env_usize("RUDDER_BENCH_RUNS", 9);
    let cases: Vec<String> = match std::env::var("RUDDER_BENCH_CASES") {
        Ok(list) => list.split(',').map(str::to_string).collect(),
        Err(_) => CASES.iter().map(|c| c.to_string()).collect(),
    };
    println!("`rudder template` vs `helm template`, {runs} runs each, median wall time (CPU time)");
    println!(
        "{:32} {:>18} {:>18} {:>8} {:>8}",
        "case", "rudder ms", "helm ms", "ratio", "cpu"
    );
    let mut ratios = Vec::new();
    for case in &cases {
        let Some(args) = case_args(corpus, case) else {
            println!("{case:32} (not a chart/scenario)");
            continue;
        };
        let (mut rw, mut rc, mut hw, mut hc) = (vec![], vec![], vec![], vec![]);
        let mut failed = None;
        // Alternate the two so that load on the machine hits both alike.
        for _ in 0..runs {
            match time_run(Command::new(rudder).args(&args)) {
                Ok((w, c)) => {
                    rw.push(w);
                    rc.push(c);
                }
                Err(e) => failed = Some(format!("rudder failed: {}", e.trim())),
            }
            match time_run(Command::new(helm).args(&args)) {
                Ok((w, c)) => {
                    hw.push(w);
                    hc.push(c);
                }
                Err(e) => failed = Some(format!("helm failed: {}", e.trim())),
            }
        }
        if let Some(f) = failed {
            println!("{case:32} {f}");
            continue;
        }
        let (r, h) = (median(&mut rw), median(&mut hw));
        let (rcpu, hcpu) = (median(&mut rc), median(&mut hc));
        ratios.push(h / r);
        println!(
            "{case:32} {:>8.1} ({:>6.1}) {:>8.1} ({:>6.1}) {:>7.2}x {:>7.2}x",
            r,
            rcpu,
            h,
            hcpu,
            h / r,
            hcpu / rcpu
        );
    }
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "median ratio {:.2}x, lowest {:.2}x over {} cases (targets: median >= 8x, every case >= 1.5x)",
        median(&mut ratios),
        min,
        ratios.len()
    );
}

/// Writes a one-template chart at `dir`.
fn one_template_chart(dir: &Path, template: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("templates"))?;
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: keys\nversion: 0.1.0\n",
    )?;
    std::fs::write(dir.join("templates/keys.yaml"), template)
}

/// A chart that makes `KEYS_PER_RENDER` CA certificates and prints how long
/// each took, in nanoseconds, as its template measured it.
fn key_chart(dir: &Path) -> std::io::Result<()> {
    one_template_chart(
        dir,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keys\ndata:\n  ns: \"{{{{ range until {KEYS_PER_RENDER} }}}}{{{{ $t0 := now }}}}{{{{ $ca := genCA \"x\" 365 }}}}{{{{ $t1 := now }}}}{{{{ sub $t1.UnixNano $t0.UnixNano }}}},{{{{ end }}}}\"\n"
        ),
    )
}

/// A chart that makes `PROCESS_KEYS` CA certificates (or, `with_keys`
/// false, runs the same loop without them), printing their lengths.
fn process_key_chart(dir: &Path, with_keys: bool) -> std::io::Result<()> {
    let make = if with_keys {
        "(genCA \"x\" 365).Cert | len"
    } else {
        "\"x\" | len"
    };
    one_template_chart(
        dir,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keys\ndata:\n  n: \"{{{{ range until {PROCESS_KEYS} }}}}{{{{ {make} }}}},{{{{ end }}}}\"\n"
        ),
    )
}

/// Per-key times (ms) from renders of the key chart until `want` keys.
fn key_times(cli: &Path, chart: &Path, want: usize) -> Result<Vec<f64>, String> {
    let mut times = Vec::new();
    while times.len() < want {
        let out = Command::new(cli)
            .arg("template")
            .arg(chart)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("ns: "))
            .ok_or("no timings in the output")?;
        // The first key of a render is left out: it measures what a
        // process sets up for its first key (and, in earlier builds, a
        // search for primes ahead of the render), not key generation.
        times.extend(
            line.trim_matches('"')
                .split(',')
                .filter_map(|n| n.parse::<f64>().ok())
                .map(|ns| ns / 1e6)
                .skip(1),
        );
    }
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times)
}

/// Prints, under `title`, a row of quantiles of the sorted per-key times
/// `times` gives for each CLI, and the ratio of their medians.
fn key_table(
    title: &str,
    rudder: &Path,
    helm: &Path,
    times: impl Fn(&Path) -> Result<Vec<f64>, String>,
) {
    println!();
    println!("{title}");
    println!(
        "{:8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "", "min", "p10", "p25", "median", "p75", "p90"
    );
    let mut medians = Vec::new();
    for (name, cli) in [("rudder", rudder), ("helm", helm)] {
        match times(cli) {
            Ok(t) => {
                println!(
                    "{name:8} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
                    t[0],
                    quantile(&t, 0.1),
                    quantile(&t, 0.25),
                    quantile(&t, 0.5),
                    quantile(&t, 0.75),
                    quantile(&t, 0.9)
                );
                medians.push(quantile(&t, 0.5));
            }
            Err(e) => println!("{name:8} failed: {}", e.trim()),
        }
    }
    if let [r, h] = medians[..] {
        println!("median key: helm/rudder {:.2}x", h / r);
    }
}

fn bench_keys(rudder: &Path, helm: &Path) {
    let want = env_usize("RUDDER_BENCH_KEYS", 120);
    let dir = std::env::temp_dir().join(format!("rudder-keybench-{}", std::process::id()));
    if let Err(e) = key_chart(&dir) {
        println!("key bench: cannot write its chart: {e}");
        return;
    }
    key_table(
        &format!("genCA (2048-bit RSA key + signature), {want} keys each, ms per key as the template timed it"),
        rudder,
        helm,
        |cli| key_times(cli, &dir, want),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Per-key times (ms) of whole runs: each run of the chart with keys, less
/// the median run of the one without, over `PROCESS_KEYS`; runs until
/// `want` keys, the two charts alternating.
fn process_key_times(
    cli: &Path,
    with: &Path,
    without: &Path,
    want: usize,
) -> Result<Vec<f64>, String> {
    let runs = want.div_ceil(PROCESS_KEYS);
    let (mut with_ms, mut without_ms) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        with_ms.push(time_run(Command::new(cli).arg("template").arg(with))?.0);
        without_ms.push(time_run(Command::new(cli).arg("template").arg(without))?.0);
    }
    let base = median(&mut without_ms);
    let mut per_key: Vec<f64> = with_ms
        .iter()
        .map(|t| (t - base) / PROCESS_KEYS as f64)
        .collect();
    per_key.sort_by(|a, b| a.total_cmp(b));
    Ok(per_key)
}

fn bench_process_keys(rudder: &Path, helm: &Path) {
    let want = env_usize("RUDDER_BENCH_KEYS", 120);
    let root = std::env::temp_dir().join(format!("rudder-prockeys-{}", std::process::id()));
    let (with, without) = (root.join("with"), root.join("without"));
    if let Err(e) = process_key_chart(&with, true).and(process_key_chart(&without, false)) {
        println!("process key bench: cannot write its charts: {e}");
        return;
    }
    key_table(
        &format!(
            "genCA as users see it: `template` of a chart with {PROCESS_KEYS} genCA calls minus one \
             with none, ms per key over {} runs each",
            want.div_ceil(PROCESS_KEYS)
        ),
        rudder,
        helm,
        |cli| process_key_times(cli, &with, &without, want),
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn main() {
    let shared = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    let corpus = std::env::var("RUDDER_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| shared.join("corpus"));
    // `RUDDER_BIN` measures another build (say, main's) against the same helm.
    let rudder = std::env::var("RUDDER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_BIN_EXE_rudder")));
    let Some(helm) = helm_binary() else {
        eprintln!(
            "SKIP: no helm binary (set RUDDER_HELM or run ../shared/tools/install-helm-cli.sh)"
        );
        return;
    };
    if corpus.join("charts").exists() {
        bench_cases(&rudder, &helm, &corpus);
    } else {
        eprintln!("SKIP cases: no corpus at {}", corpus.display());
    }
    bench_keys(&rudder, &helm);
    bench_process_keys(&rudder, &helm);
}
