//! The `kledger` command line: one file per command, each with its own arguments and `run`;
//! [`main`] parses, loads the configuration, installs the logs and dispatches.
//!
//! Exit statuses: 0 done, 1 failed, 2 bad configuration, 3 an unrecoverable condition of the
//! ledger (a fork, a gap, corrupt state: docs/operations.md). An error is one line on standard
//! error (scrubbed of secrets), never a backtrace.
//!
//! May not touch: what the commands do beyond calling it (that is the library's).

mod apply;
mod broker;
mod mcp;
mod migrate;
mod publish;
mod rebuild;
mod repartition;
mod replay;
mod run;
mod state;
mod topics;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "kledger",
    version,
    about = "An event-sourced knowledge ledger for AI assistants and agents"
)]
pub struct Cli {
    /// Configuration file (TOML); every key can be overridden with KLEDGER_* variables.
    #[arg(long, global = true, env = "KLEDGER_CONFIG")]
    config: Option<PathBuf>,
    /// Human-readable logs instead of the configured format.
    #[arg(long, global = true)]
    text_logs: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the stream processor (on the embedded broker when no bootstrap servers are set).
    Run(run::RunArgs),
    /// Publish intent records (JSON lines) to the intents topic.
    Publish(publish::PublishArgs),
    /// Topic administration.
    Topics {
        #[command(subcommand)]
        command: topics::TopicsCommand,
    },
    /// Run kledger and serve its MCP tools over stdio to one local agent.
    Mcp(mcp::McpArgs),
    /// Run only the embedded broker (a Kafka-protocol peer for tests and local tools).
    Broker(broker::BrokerArgs),
    /// Decide intents from a JSON-lines file offline (a dry run of an extractor's output).
    Apply(apply::ApplyArgs),
    /// Print the effective configuration (defaults, file and KLEDGER_* overrides) as TOML.
    Config,
    /// State operations.
    State {
        #[command(subcommand)]
        command: state::StateCommand,
    },
    /// Replay the intents topic.
    Replay {
        #[command(subcommand)]
        command: replay::ReplayCommand,
    },
    /// Rebuild a projection from the outbox into a new generation, swapped in when caught up.
    Rebuild(rebuild::RebuildArgs),
    /// Move a stopped ledger to new topics with another partition count, every account's chain
    /// unchanged.
    Repartition(repartition::RepartitionArgs),
    /// Migrate legacy memory rows into the ledger.
    Migrate {
        #[command(subcommand)]
        command: migrate::MigrateCommand,
    },
}

/// A configuration that cannot be used (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
struct BadConfig(anyhow::Error);

/// `e` as a bad configuration (exit status 2).
fn bad_config(e: anyhow::Error) -> anyhow::Error {
    anyhow::Error::new(BadConfig(e))
}

/// Runs the command line and maps its outcome to the exit status.
pub fn main() -> ExitCode {
    match run_cli() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let status = if e.downcast_ref::<BadConfig>().is_some()
                || e.downcast_ref::<crate::vector::model::ModelFilesError>()
                    .is_some()
            {
                2
            } else if crate::pipeline::apply::unrecoverable(&e) {
                3
            } else {
                1
            };
            let line = format!("{e:#}").replace('\n', " ");
            eprintln!("kledger: error: {}", crate::logs::scrub(&line));
            ExitCode::from(status)
        }
    }
}

fn run_cli() -> anyhow::Result<()> {
    let huge_pages = crate::memory::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            // Scrub what a malformed configuration's error could quote.
            crate::logs::register(None, std::env::vars());
            return Err(anyhow::Error::new(BadConfig(e)));
        }
    };
    // The embedded broker's login: created by the commands that start the broker, read by
    // those that connect to it (before the logs learn the secrets to scrub).
    let login = match &cli.command {
        Command::Run(_) | Command::Mcp(_) => crate::config::Login::Create,
        Command::Apply(_)
        | Command::Config
        | Command::Broker(_)
        | Command::State { .. }
        | Command::Migrate { .. } => crate::config::Login::IfPresent,
        _ => crate::config::Login::Require,
    };
    let config = config.with_embedded_login(login)?;
    crate::logs::register(Some(&config), std::env::vars());
    // Commands that only work with the cluster check first that a client logs in: a security
    // setting that does not match the broker's is one line now, not a hang.
    let preflight = matches!(
        cli.command,
        Command::Publish(_)
            | Command::Topics { .. }
            | Command::Replay { .. }
            | Command::Rebuild(_)
            | Command::Repartition(_)
    );
    crate::logs::init(&config, cli.text_logs);
    if let Err(e) = huge_pages {
        tracing::warn!(error = %e, "transparent huge pages could not be turned off for this process");
    }
    if preflight {
        crate::kafka::preflight::preflight(&config)?;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = match cli.command {
        Command::Run(args) => rt.block_on(args.run(config)),
        Command::Mcp(args) => rt.block_on(args.run(config)),
        Command::Publish(args) => args.run(&config),
        Command::Topics { command } => rt.block_on(command.run(&config)),
        Command::Broker(args) => rt.block_on(args.run()),
        Command::Apply(args) => args.run(&config),
        Command::Config => {
            print!("{}", toml::to_string(&config.redacted())?);
            Ok(())
        }
        Command::State { command } => command.run(&config),
        Command::Replay { command } => command.run(&config),
        Command::Rebuild(args) => args.run(&config),
        Command::Repartition(args) => args.run(&config),
        Command::Migrate { command } => command.run(&config),
    };
    // Blocking work a command left behind is not waited out: a start cut short by a signal
    // leaves checks against the broker it has just stopped (the preflight waits 15 s), and the
    // demo's extractor waits a minute for receipts. Nothing there is needed for the state to be
    // right: kledger's state survives a kill at any point.
    rt.shutdown_timeout(LEFTOVER_WAIT);
    outcome
}

/// How long a command's end waits for blocking work it left behind ([`run_cli`]).
const LEFTOVER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Waits for Ctrl-C or SIGTERM.
async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(t) => t,
                Err(_) => return std::future::pending().await,
            };
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
