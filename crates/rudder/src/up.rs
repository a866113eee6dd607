//! `rudder up`: the embedded API server, the operator and an example release on a
//! machine without a cluster.

/// Flags of `rudder up`.
#[derive(clap::Args)]
pub struct UpArgs {}

pub fn run(_args: UpArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
