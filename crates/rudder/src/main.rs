//! The `rudder` command line: the operator, the embedded API server, and
//! Helm-compatible chart and release commands.

// Flag docs are clap's help text, written for the terminal as Helm's are
// (`x[0]=y`, `<tmp>`), not for rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#![warn(unreachable_pub)]

use clap::{Parser, Subcommand};

mod allocator;
mod error_text;
mod release_cmds;
mod run;
mod runtime;
mod template;
mod up;

#[derive(Parser)]
#[command(
    name = "rudder",
    version,
    about = "A Helm operator: turns any Helm chart into a Kubernetes operator"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Render a chart locally, exactly as `helm template` does.
    Template(Box<template::TemplateArgs>),
    /// Run the embedded Kubernetes-compatible API server until killed.
    Apiserver(ApiserverArgs),
    /// Run the operator: reconcile every CR of the kinds in watches.yaml into a release.
    Run(Box<run::RunArgs>),
    /// Start an embedded API server, the operator and an example release, no cluster needed.
    Up(Box<up::UpArgs>),
    #[command(flatten)]
    Release(release_cmds::ReleaseCommand),
}

#[derive(clap::Args)]
struct ApiserverArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Where to write a kubeconfig for kubectl, Helm and kube-rs.
    #[arg(long)]
    kubeconfig_out: Option<std::path::PathBuf>,
    /// Keep state durably in this directory (memory only when absent).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// Make Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs and
    /// Pods report ready/complete shortly after they change.
    #[arg(long)]
    simulate_readiness: bool,
    /// Serve HTTPS with a generated CA (kept in --data-dir when given); the
    /// kubeconfig carries the CA so clients verify the server.
    #[arg(long)]
    tls: bool,
    /// `rbac`: authenticate bearer tokens and authorize with RBAC objects
    /// (the kubeconfig carries an admin token); default: allow everything.
    #[arg(long, default_value = "always-allow")]
    authorization: apiserver::Authorization,
}

fn run_apiserver(args: ApiserverArgs) -> anyhow::Result<()> {
    let rt = runtime::deep_stack_runtime()?;
    rt.block_on(async move {
        let server = apiserver::Server::start(apiserver::Config {
            listen: args.listen,
            data_dir: args.data_dir,
            kubeconfig_out: args.kubeconfig_out,
            simulate_readiness: args.simulate_readiness,
            tls: args.tls,
            authorization: args.authorization,
        })
        .await?;
        println!("apiserver listening on {}", server.url());
        println!(
            "kubeconfig written to {}",
            server.kubeconfig_path().display()
        );
        tokio::select! {
            _ = server_wait(server) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(())
    })
}

async fn server_wait(server: apiserver::Server) {
    server.wait().await
}

fn main() {
    // Errors are printed as one readable chain, never as a backtrace.
    if let Err(e) = run() {
        eprintln!("Error: {}", error_text::chain(&e));
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("rudder {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Apiserver(args) => run_apiserver(args),
        Command::Run(args) => run::run(*args),
        Command::Up(args) => up::run(*args),
        Command::Release(cmd) => {
            let code = release_cmds::run(cmd)?;
            std::process::exit(code)
        }
        Command::Template(args) => {
            let code = template::run(*args)?;
            std::process::exit(code)
        }
    }
}
