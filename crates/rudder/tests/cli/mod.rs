//! Running the `rudder` binary under test against a test cluster, for the CLI suites.

use std::path::Path;
use std::process::Output;

/// Runs `rudder ARGS --kubeconfig KC`, with no `HELM_DRIVER`, `HELM_NAMESPACE` or
/// `RUDDER_FIELD_MANAGER` from the environment the tests run in.
pub async fn rudder(kc: &Path, args: &[&str]) -> Output {
    run(Path::new(env!("CARGO_BIN_EXE_rudder")), kc, args).await
}

/// Runs `PROGRAM ARGS --kubeconfig KC` (rudder or the real `helm`) the same way.
pub async fn run(program: &Path, kc: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(program)
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .env_remove("RUDDER_FIELD_MANAGER")
        .output()
        .await
        .expect("the program runs")
}
