//! The `rudder` command line: the operator, the embedded API server, and
//! Helm-compatible chart and release commands.

// Flag docs are clap's help text, written for the terminal as Helm's are
// (`x[0]=y`, `<tmp>`), not for rustdoc.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#![warn(unreachable_pub)]
// Unsafe code only where docs/architecture.md's SAFETY list names it.
#![deny(unsafe_code)]

use clap::{Parser, Subcommand};

#[allow(unsafe_code)] // mimalloc's options, set before `main`
mod allocator;
mod helm_cli;
mod release_cmds;
mod run;
mod runtime;
mod template;
mod up;
mod values;

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
    /// Print the values the operator gives a custom resource's release (its spec with
    /// watches.yaml's overrideValues on top), as YAML; writes nothing.
    Values(Box<values::ValuesArgs>),
    #[command(flatten)]
    Release(release_cmds::ReleaseCommand),
}

/// `rudder template` alone: a render is a process of a few milliseconds, so
/// it parses its flags without building every other command's (building
/// them all, the operator's defaults reading cgroup limits included, was a
/// tenth of a trivial chart's run). Its help and errors are the full CLI's.
#[derive(Parser)]
#[command(name = "rudder", version)]
struct TemplateCli {
    #[command(subcommand)]
    command: TemplateCommand,
}

#[derive(Subcommand)]
enum TemplateCommand {
    /// Render a chart locally, exactly as `helm template` does.
    Template(Box<template::TemplateArgs>),
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
        eprintln!("Error: {}", apierror::chain(&*e));
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    if std::env::args_os().nth(1).is_some_and(|a| a == "template") {
        let TemplateCommand::Template(args) = TemplateCli::parse().command;
        let code = template::run(*args)?;
        std::process::exit(code)
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Version => {
            println!("rudder {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Apiserver(args) => run_apiserver(args),
        Command::Run(args) => run::run(*args),
        Command::Up(args) => up::run(*args),
        Command::Values(args) => values::run(*args),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The template-only parser must read and explain `rudder template`
    /// exactly as the full CLI does.
    #[test]
    fn template_parser_matches_the_full_cli() {
        let mut full = Cli::command();
        let mut alone = TemplateCli::command();
        full.build();
        alone.build();
        let help = |c: &mut clap::Command| {
            c.find_subcommand_mut("template")
                .map(|t| t.render_long_help().to_string())
        };
        let full_help = help(&mut full);
        assert!(full_help.is_some());
        assert_eq!(full_help, help(&mut alone));
        // A missing chart is `template`'s own error (Helm's words), not clap's.
        for bad in [
            &["rudder", "template", "c", "--no-such-flag"][..],
            &["rudder", "template", "c", "--kube-version"],
        ] {
            let want = Cli::try_parse_from(bad)
                .err()
                .map(|e| e.render().to_string());
            let got = TemplateCli::try_parse_from(bad)
                .err()
                .map(|e| e.render().to_string());
            assert!(want.is_some(), "{bad:?} should be refused");
            assert_eq!(want, got, "{bad:?}");
        }
    }
}
