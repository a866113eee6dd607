//! The `rudder` command line: the operator, the embedded API server, and
//! Helm-compatible chart and release commands.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "rudder", version, about = "A Helm operator: turns any Helm chart into a Kubernetes operator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("rudder {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
    }
}
