//! Concurrent `rudder` processes on one release: the lock on the release's newest
//! record lets exactly one action at a time through, the others fail at once saying
//! another operation is in progress, and the history stays whole (contiguous
//! revisions, one deployed, none pending). Also for a release that does not exist yet,
//! where only the creation of revision 1 decides.

use std::path::{Path, PathBuf};
use std::process::Output;

use apiserver::{Config, Server};
use release::{SecretDriver, Status, Storage};

fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/charts/hello")
}

async fn rudder(kc: &Path, args: Vec<String>) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(&args)
        .arg("--kubeconfig")
        .arg(kc)
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .output()
        .await
        .expect("rudder runs")
}

/// Runs `count` copies of the command built by `args(i)` at once; returns how many
/// succeeded, after checking every failure says the release is locked.
async fn race(kc: &Path, count: usize, args: impl Fn(usize) -> Vec<String>) -> usize {
    let mut runs = tokio::task::JoinSet::new();
    for i in 0..count {
        let (kc, args) = (kc.to_path_buf(), args(i));
        runs.spawn(async move { rudder(&kc, args).await });
    }
    let outputs = runs.join_all().await;
    let mut ok = 0;
    for o in &outputs {
        if o.status.success() {
            ok += 1;
            continue;
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("in progress") || err.contains("cannot re-use a name"),
            "a losing process says why: {err}"
        );
    }
    ok
}

/// The history is whole: revisions 1..=n, exactly one deployed, nothing pending.
async fn assert_whole(storage: &Storage, name: &str) -> usize {
    let metas = storage.history_meta(name).await.expect("history");
    let versions: Vec<i64> = metas.iter().map(|m| m.version).collect();
    let expected: Vec<i64> = (1..=metas.len() as i64).collect();
    assert_eq!(versions, expected, "contiguous revisions");
    let deployed = metas
        .iter()
        .filter(|m| m.status == Status::Deployed)
        .count();
    assert_eq!(deployed, 1, "{metas:?}");
    assert!(metas.iter().all(|m| !m.status.is_pending()), "{metas:?}");
    assert!(
        metas
            .iter()
            .all(|m| !m.annotations.contains_key(release::lock::LOCK_ANNOTATION)),
        "every lock was given back: {metas:?}"
    );
    metas.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_never_interleave_on_a_release() {
    let server = Server::start(Config {
        simulate_readiness: true,
        ..Config::default()
    })
    .await
    .expect("embedded API server starts");
    let kc = server.kubeconfig_path().to_path_buf();
    let client = server.client().expect("client");
    let storage = Storage::new(std::sync::Arc::new(SecretDriver::for_namespace(
        client, "default",
    )));
    let chart = chart_dir().display().to_string();

    // A fresh release: one install creates revision 1, the others are refused.
    let installs = race(&kc, 3, |_| {
        vec!["install".into(), "web".into(), chart.clone()]
    })
    .await;
    assert_eq!(installs, 1, "exactly one install wins");
    assert_eq!(assert_whole(&storage, "web").await, 1);

    // Upgrades of one release: whoever wins writes a revision; the rest wrote nothing.
    let mut revisions = 1;
    for round in 0..3 {
        let ok = race(&kc, 3, |i| {
            vec![
                "upgrade".into(),
                "web".into(),
                chart.clone(),
                "--set".into(),
                format!("replicaCount={}", 1 + (round * 3 + i) % 3),
            ]
        })
        .await;
        assert!(ok >= 1, "round {round}: at least one upgrade goes through");
        revisions += ok;
        assert_eq!(
            assert_whole(&storage, "web").await,
            revisions,
            "round {round}"
        );
    }
    server.stop().await;
}
