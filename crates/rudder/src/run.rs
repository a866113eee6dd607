//! `rudder run`: the operator, with the Go helm-operator's flags.

/// Flags of `rudder run`.
#[derive(clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
