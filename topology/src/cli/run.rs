//! `kledger run`: the stream processor, the sinks and the API (the roles `--role` names), on the
//! embedded broker when no bootstrap servers are configured.

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::app::{self, Roles};
use crate::config::Config;
use crate::{kafka::topics, pipeline::publish};

/// `kledger run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Publish this intents file once the processor runs, if the intents topic is empty.
    #[arg(long)]
    demo: Option<PathBuf>,
    /// What this process runs, comma-separated: apply, project-views, project-qdrant, api,
    /// all. Roles other than all need an external broker (one embedded broker per host).
    #[arg(long, env = "KLEDGER_ROLE", default_value = "all", value_parser = Roles::parse)]
    role: Roles,
}

impl RunArgs {
    /// Runs until a signal, or until the processor ends.
    pub(crate) async fn run(self, config: Config) -> anyhow::Result<()> {
        let http = config.http.listen.clone();
        // Start waits for an unreachable broker; a signal meanwhile ends the wait.
        let running = tokio::select! {
            r = app::start_roles(config.clone(), self.role) => r?,
            _ = super::wait_for_signal() => {
                eprintln!("stopping");
                return Ok(());
            }
        };
        eprintln!(
            "kledger running: bootstrap {} ({} partitions), metrics at http://{http}/metrics, readiness at http://{http}/readyz, read API at http://{http}/v1 ({} principals)",
            running.bootstrap,
            running.partitions,
            config.api.principals.len()
        );
        if let Some(file) = self.demo {
            demo(&config, running.partitions, file).await?;
        }
        tokio::select! {
            _ = super::wait_for_signal() => eprintln!("stopping"),
            _ = async { while !running.finished() { tokio::time::sleep(Duration::from_millis(200)).await } } => {}
        }
        running.stop().await
    }
}

/// Publishes `file` once, if the intents topic is empty.
async fn demo(config: &Config, partitions: i32, file: PathBuf) -> anyhow::Result<()> {
    let c = config.clone();
    let published = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<u64>> {
        let b = c.bootstrap();
        let empty = topics::is_empty(&b, &c.topics().intents, partitions)?;
        if !empty {
            return Ok(None);
        }
        let mut reader =
            BufReader::new(File::open(&file).with_context(|| format!("open {}", file.display()))?);
        Ok(Some(
            publish::publish(&c, partitions, &mut reader, false)?.published,
        ))
    })
    .await??;
    match published {
        Some(n) => eprintln!(
            "demo: published {n} intents; receipts on {}, commits on {}",
            config.topics().receipts,
            config.topics().outbox
        ),
        None => eprintln!("demo: intents topic already has records, nothing published"),
    }
    Ok(())
}
