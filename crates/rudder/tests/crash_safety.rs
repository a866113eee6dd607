//! Crash safety of release actions: an upgrade killed at a random point (SIGKILL of the
//! `rudder` process) or hit by an API error at any of its writes (injected by the
//! embedded API server) leaves no release stuck: running it again converges, no record
//! stays pending, revisions stay contiguous, and nothing that was deployed is deleted
//! (the workload's UIDs never change).
//!
//! `RUDDER_CRASH_TRIALS` sets the number of kill trials (default 20) and
//! `RUDDER_CRASH_SEED` replays a run; both tests print a summary line with their counts.
//!
//! Kill trials run on any cluster (`RUDDER_TEST_KUBECONFIG`); API errors are injected
//! by the embedded server, so that test skips on an external cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::Api;
use kube::Client;
use release::record::Status;
use release::{SecretDriver, Storage};
use testkit::apiserver::faults::{Match, Rule, Trigger, When};
use testkit::{Cluster, TestNamespace};

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/charts/hello")
}

/// splitmix64: small, seeded, good enough to spread kill delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// A namespace of the test's own (simulated readiness); its kubeconfig defaults to it.
fn start() -> TestNamespace {
    Cluster::start().namespace("crash-safety")
}

fn rudder(kc: &Path, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_rudder"));
    c.args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    c
}

/// `rudder upgrade NAME hello --set message=MSG`; Ok(stderr) or Err(stderr).
async fn upgrade(kc: &Path, name: &str, message: &str) -> Result<String, String> {
    let chart = chart_dir();
    let set = format!("message={message}");
    let out = rudder(
        kc,
        &[
            "upgrade",
            name,
            chart.to_str().unwrap_or_default(),
            "--set",
            &set,
            // Every revision is kept, so a revision skipped or numbered twice shows
            // as a hole; pruning (which keeps locked and failed records) has tests
            // of its own.
            "--history-max",
            "0",
        ],
    )
    .output()
    .await
    .map_err(|e| format!("cannot run rudder: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        Ok(err)
    } else {
        Err(err)
    }
}

async fn install(kc: &Path, name: &str) {
    let chart = chart_dir();
    let out = rudder(kc, &["install", name, chart.to_str().unwrap_or_default()])
        .output()
        .await
        .expect("rudder runs");
    assert!(
        out.status.success(),
        "install {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// UIDs of the release's live objects: they must never change.
async fn uids(client: &Client, name: &str) -> BTreeMap<&'static str, String> {
    let full = format!("{name}-hello");
    let mut out = BTreeMap::new();
    let d: Api<Deployment> = Api::default_namespaced(client.clone());
    let c: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let s: Api<Service> = Api::default_namespaced(client.clone());
    let read = |o: Option<String>| o.unwrap_or_else(|| "<missing>".into());
    out.insert(
        "Deployment",
        read(
            d.get_opt(&full)
                .await
                .ok()
                .flatten()
                .and_then(|o| o.metadata.uid),
        ),
    );
    out.insert(
        "ConfigMap",
        read(
            c.get_opt(&full)
                .await
                .ok()
                .flatten()
                .and_then(|o| o.metadata.uid),
        ),
    );
    out.insert(
        "Service",
        read(
            s.get_opt(&full)
                .await
                .ok()
                .flatten()
                .and_then(|o| o.metadata.uid),
        ),
    );
    out
}

fn store(client: &Client) -> Storage {
    Storage::new(Arc::new(SecretDriver::for_namespace(
        client.clone(),
        client.default_namespace(),
    )))
    .with_max_history(0)
}

/// The newest record's status and version, for classifying where a crash left things.
async fn newest(client: &Client, name: &str) -> (i64, String) {
    match store(client).last(name).await {
        Ok(Some(r)) => (r.version, r.status().to_string()),
        Ok(None) => (0, "none".into()),
        Err(e) => (0, format!("unreadable: {e}")),
    }
}

/// The invariants after a successful re-run: newest revision deployed, exactly one
/// deployed, none pending, revisions contiguous, UIDs unchanged, values applied.
async fn converged(
    client: &Client,
    name: &str,
    message: &str,
    want_uids: &BTreeMap<&'static str, String>,
) -> Result<(), String> {
    let history = store(client)
        .history(name)
        .await
        .map_err(|e| format!("reading history: {e}"))?;
    let summary: Vec<String> = history
        .iter()
        .map(|r| format!("v{}={}", r.version, r.status()))
        .collect();
    let newest = history.last().ok_or("no records left")?;
    if newest.status() != Status::Deployed {
        return Err(format!("newest record is not deployed: {summary:?}"));
    }
    if history.iter().any(|r| r.status().is_pending()) {
        return Err(format!("a record is still pending: {summary:?}"));
    }
    let deployed = history
        .iter()
        .filter(|r| r.status() == Status::Deployed)
        .count();
    if deployed != 1 {
        return Err(format!("{deployed} records are deployed: {summary:?}"));
    }
    if history.windows(2).any(|w| w[1].version != w[0].version + 1) {
        return Err(format!("revisions are not contiguous: {summary:?}"));
    }
    if newest.config.get("message").and_then(|v| v.as_str()) != Some(message) {
        return Err(format!("newest record does not hold message {message:?}"));
    }
    let now = uids(client, name).await;
    if &now != want_uids {
        return Err(format!(
            "live objects were deleted or replaced: {want_uids:?} became {now:?}"
        ));
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let html = cms
        .get(&format!("{name}-hello"))
        .await
        .map_err(|e| format!("reading the ConfigMap: {e}"))?
        .data
        .and_then(|d| d.get("index.html").cloned())
        .unwrap_or_default();
    if !html.contains(&format!("<h1>{message}</h1>")) {
        return Err(format!("ConfigMap does not show {message:?}: {html:?}"));
    }
    Ok(())
}

fn counts(m: &BTreeMap<String, usize>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_upgrades_leave_nothing_stuck() {
    let trials = env_number("RUDDER_CRASH_TRIALS").unwrap_or(20);
    let seed = env_number("RUDDER_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    println!(
        "crash-safety kill trials: seed {seed} (RUDDER_CRASH_SEED={seed} replays), {trials} trials"
    );
    let mut rng = Rng(seed);
    let ns = start();
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let name = "crash";
    install(&kc, name).await;
    let want = uids(&client, name).await;
    assert!(!want.values().any(|u| u == "<missing>"), "{want:?}");

    // One undisturbed upgrade sets the range of kill delays (not asserted on).
    let t0 = Instant::now();
    upgrade(&kc, name, "warmup").await.expect("warm-up upgrade");
    let span_ms = (t0.elapsed().as_millis() as u64).max(20) * 6 / 5;

    let mut after_kill: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let (mut killed, mut finished, mut recovered) = (0, 0, 0);
    for i in 0..trials {
        let (before_version, _) = newest(&client, name).await;
        let chart = chart_dir();
        let set = format!("message=kill-{i}");
        let mut child = rudder(
            &kc,
            &[
                "upgrade",
                name,
                chart.to_str().unwrap_or_default(),
                "--set",
                &set,
                "--history-max",
                "0",
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rudder");
        let delay = rng.below(span_ms);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        match child.try_wait() {
            Ok(Some(_)) => finished += 1,
            _ => {
                let _ = child.kill().await;
                killed += 1;
            }
        }
        let (v, st) = newest(&client, name).await;
        let where_ = if v == before_version {
            format!("no new record ({st})")
        } else {
            format!("new record {st}")
        };
        *after_kill.entry(where_).or_default() += 1;

        let message = format!("recover-{i}");
        match upgrade(&kc, name, &message).await {
            Ok(stderr) => {
                if stderr.contains("recovered release") {
                    recovered += 1;
                }
                if let Err(e) = converged(&client, name, &message, &want).await {
                    failures.push(format!("trial {i} (kill after {delay} ms): {e}"));
                }
            }
            Err(stderr) => failures.push(format!(
                "trial {i} (kill after {delay} ms): the re-run failed: {stderr}"
            )),
        }
    }
    println!(
        "crash-safety kill summary: seed={seed} trials={trials} killed={killed} finished-before-kill={finished}; state after kill: {}; pending records recovered={recovered}; converged={}/{trials}",
        counts(&after_kill),
        trials as usize - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_errors_at_every_write_leave_nothing_stuck() {
    let ns = start();
    let Some(server) = ns.cluster().embedded() else {
        testkit::skip!("API errors are injected by the embedded API server");
    };
    let client = ns.client();
    let kc = ns.kubeconfig().to_path_buf();
    let faults = server.faults();
    let name = "faulty";
    install(&kc, name).await;
    let want = uids(&client, name).await;

    // How many writes one upgrade makes (records, lock, objects).
    let counter = faults.add(Rule::count(Match::writes().namespace(ns.name())));
    upgrade(&kc, name, "count").await.expect("counting upgrade");
    let writes = faults.remove(counter).map(|s| s.matched).unwrap_or(0);
    assert!(
        writes >= 3,
        "an upgrade makes at least 3 writes, saw {writes}"
    );
    println!("crash-safety api faults: one upgrade makes {writes} writes");

    let modes: [(u16, When); 4] = [
        (500, When::Before),
        (409, When::Before),
        (429, When::Before),
        (500, When::After),
    ];
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut trials = 0;
    let mut per_mode = Vec::new();
    // Two beyond the counted writes: history pruning can add writes.
    for (code, when) in modes {
        let mut marks = String::new();
        for n in 1..=writes + 2 {
            trials += 1;
            let label = format!("{code} {when:?} at write {n}");
            let rule = faults.add(Rule {
                matcher: Match::writes().namespace(ns.name()),
                trigger: Trigger::Nth(n),
                code,
                when,
            });
            let message = format!("f{code}-{when:?}-{n}").to_lowercase();
            let first = upgrade(&kc, name, &message).await;
            let injected = faults.remove(rule).map(|s| s.injected).unwrap_or(0);
            let outcome = match (&first, injected) {
                (_, 0) => "fault not reached, upgrade ok",
                (Ok(_), _) => "fault injected, upgrade still succeeded",
                (Err(_), _) => "fault injected, upgrade failed",
            };
            *outcomes.entry(outcome.to_string()).or_default() += 1;
            marks.push(match (&first, injected) {
                (_, 0) => '-',
                (Ok(_), _) => 'S',
                (Err(_), _) => 'F',
            });
            if first.is_err() && injected == 0 {
                failures.push(format!("{label}: failed without a fault: {first:?}"));
                continue;
            }
            match upgrade(&kc, name, &message).await {
                Ok(stderr) => {
                    if stderr.contains("recovered release") {
                        *outcomes
                            .entry("retry recovered a pending record".into())
                            .or_default() += 1;
                    }
                    if let Err(e) = converged(&client, name, &message, &want).await {
                        failures.push(format!("{label}: {e}"));
                    }
                }
                Err(stderr) => failures.push(format!("{label}: the retry failed: {stderr}")),
            }
        }
        per_mode.push(format!("{code} {when:?}: {marks}"));
    }
    // Per write point: F = the upgrade failed, S = it succeeded anyway, - = not reached.
    println!(
        "crash-safety api faults by write point: {}",
        per_mode.join("; ")
    );
    println!(
        "crash-safety api-fault summary: write points={writes} trials={trials}; {}; converged={}/{trials}",
        counts(&outcomes),
        trials - failures.len() as u64
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
