//! `--wait` on a cluster where something never becomes ready says on stderr, every few
//! seconds, what it is still waiting for — not minutes of silence — and stdout stays
//! what Helm prints. The object that never gets ready is a claim of a storage class no
//! cluster has, so this holds on the embedded server and on any real cluster
//! (`RUDDER_TEST_KUBECONFIG`), each test in a namespace of its own.

use testkit::{ChartDir, Cluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_says_what_it_waits_for_until_it_times_out() {
    let ns = Cluster::start().namespace("wait-progress");
    let chart = ChartDir::new(
        "unbound",
        &[
            (
                "Chart.yaml",
                "apiVersion: v2\nname: unbound\nversion: 0.1.0\n",
            ),
            (
                "templates/claim.yaml",
                "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  \
                 storageClassName: rudder-test-no-such-class\n  accessModes: [ReadWriteOnce]\n  \
                 resources:\n    requests:\n      storage: 1Mi\n",
            ),
        ],
    );
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_rudder"))
        .args(["install", "slow", chart.path().to_str().expect("utf-8")])
        .args(["--wait", "--timeout", "7s", "--kubeconfig"])
        .arg(ns.kubeconfig())
        .env_remove("RUST_LOG")
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .output()
        .await
        .expect("rudder runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.is_empty(), "progress stays off stdout:\n{stdout}");

    let claim = format!("PersistentVolumeClaim {}/data", ns.name());
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("release \"slow\": waiting for "))
        .collect();
    // One line when the first check finds the claim unbound, then one every 5s.
    assert!(
        progress.len() >= 2,
        "at least two progress lines in 7s:\n{stderr}"
    );
    for line in &progress {
        assert!(
            line.contains(&format!(
                "waiting for 1 resource(s) to be ready: {claim}: phase is "
            )) && line.contains(", not Bound (")
                && line.ends_with("s elapsed, timeout 7s)"),
            "a progress line names the object, why and the time: {line}"
        );
    }
    assert!(
        progress[0].contains("(0s elapsed"),
        "the first line comes at once: {}",
        progress[0]
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("Error: ")
            && last.contains("timed out after 7s waiting for")
            && last.contains(&claim),
        "the error names what was not ready: {last}"
    );
}
