//! Running the `rudder` binary under test against a test cluster, for the CLI suites.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// The longest one command may take before the test fails naming it: no CLI command a
/// suite runs comes near it, so only a hang reaches it.
const COMMAND_DEADLINE: Duration = Duration::from_secs(300);

/// Runs `rudder ARGS --kubeconfig KC`, with no `HELM_DRIVER`, `HELM_NAMESPACE` or
/// `RUDDER_FIELD_MANAGER` from the environment the tests run in.
pub async fn rudder(kc: &Path, args: &[&str]) -> Output {
    run(Path::new(env!("CARGO_BIN_EXE_rudder")), kc, args).await
}

/// Runs `PROGRAM ARGS --kubeconfig KC` (rudder or the real `helm`) the same way; a
/// command still running after [`COMMAND_DEADLINE`] is killed and fails the test.
pub async fn run(program: &Path, kc: &Path, args: &[&str]) -> Output {
    let output = tokio::process::Command::new(program)
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .env_remove("HELM_DRIVER")
        .env_remove("HELM_NAMESPACE")
        .env_remove("RUDDER_FIELD_MANAGER")
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(COMMAND_DEADLINE, output).await {
        Ok(o) => o.expect("the program runs"),
        Err(_) => panic!(
            "{} {args:?} did not finish within {COMMAND_DEADLINE:?}",
            program.display()
        ),
    }
}
