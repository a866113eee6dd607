//! Helm-compatible release commands: install, upgrade, rollback, uninstall, list,
//! history, status and get, against any cluster through kubeconfig.

/// The release commands.
#[derive(clap::Subcommand)]
pub enum ReleaseCommand {
    /// List releases.
    List,
}

/// Runs a release command; returns the process exit code.
pub fn run(_cmd: ReleaseCommand) -> anyhow::Result<i32> {
    anyhow::bail!("not built yet")
}
