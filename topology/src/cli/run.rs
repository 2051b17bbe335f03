//! `kledger run`: the stream processor, the sinks and the API (the roles `--role` names), on the
//! embedded broker when no bootstrap servers are configured.

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
    /// Runs until a signal, or until the processor ends. One listener hears the signal in
    /// every phase (start, the demo, running): a signal that came while no listener waited
    /// would be lost, and the process would run on.
    pub(crate) async fn run(self, config: Config) -> anyhow::Result<()> {
        let http = config.http.listen.clone();
        let signal = super::wait_for_signal();
        tokio::pin!(signal);
        // Start waits for an unreachable broker; a signal meanwhile ends the wait.
        let running = tokio::select! {
            r = app::start_roles(config.clone(), self.role) => r?,
            _ = &mut signal => {
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
            tokio::select! {
                r = demo(&config, running.partitions, file) => r?,
                _ = &mut signal => {
                    eprintln!("stopping");
                    return running.stop().await;
                }
            }
        }
        tokio::select! {
            _ = &mut signal => eprintln!("stopping"),
            _ = async { while !running.finished() { tokio::time::sleep(Duration::from_millis(200)).await } } => {}
        }
        running.stop().await
    }
}

/// How long the demo's extractor waits for the receipts of the intents it published.
const DEMO_RECEIPTS_WAIT: Duration = Duration::from_secs(60);

/// Publishes `file` once, if the intents topic is empty, then plays its extractor: what the
/// processor sends back to be planned again is planned again and published
/// ([`crate::pipeline::replan`]).
async fn demo(config: &Config, partitions: i32, file: PathBuf) -> anyhow::Result<()> {
    let c = config.clone();
    let published = tokio::task::spawn_blocking(
        move || -> anyhow::Result<Option<(u64, Vec<kledger_schemas::IntentRecord>)>> {
            let b = crate::kafka::clients::client_config(&c);
            let empty = topics::is_empty(&b, &c.topics().intents, partitions)?;
            if !empty {
                return Ok(None);
            }
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("open {}", file.display()))?;
            let n = publish::publish(
                &c,
                partitions,
                &mut BufReader::new(text.as_bytes()),
                None,
                false,
            )?
            .published;
            // The lines that are intents (the example has a malformed one: dead-lettered).
            let records = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            Ok(Some((n, records)))
        },
    )
    .await??;
    let Some((n, records)) = published else {
        eprintln!("demo: intents topic already has records, nothing published");
        return Ok(());
    };
    eprintln!(
        "demo: published {n} intents; receipts on {}, commits on {}",
        config.topics().receipts,
        config.topics().outbox
    );
    let c = config.clone();
    tokio::task::spawn_blocking(move || {
        match crate::pipeline::replan::replan_all(&c, partitions, &records, DEMO_RECEIPTS_WAIT) {
            Ok(0) => {}
            Ok(again) => {
                eprintln!("demo: planned {again} intents again after their replan receipts")
            }
            Err(e) => eprintln!("demo: planning again failed: {e:#}"),
        }
    });
    Ok(())
}
