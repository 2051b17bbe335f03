//! The `kledger` binary.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kledger_state::{MemoryStore, RocksStore, StateStore, digest};
use kledger_topology::config::Config;
use kledger_topology::{embedded, offline, publish, runtime, topics};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "kledger",
    version,
    about = "An event-sourced knowledge ledger for AI assistants and agents"
)]
struct Cli {
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
    Run {
        /// Publish this intents file once the processor runs, if the intents topic is empty.
        #[arg(long)]
        demo: Option<PathBuf>,
        /// What this process runs, comma-separated: apply, project-views, project-qdrant, api,
        /// all. Roles other than all need an external broker (one embedded broker per host).
        #[arg(long, env = "KLEDGER_ROLE", default_value = "all", value_parser = runtime::Roles::parse)]
        role: runtime::Roles,
    },
    /// Publish intent records (JSON lines) to the intents topic.
    Publish {
        /// Intent records, one JSON object per line.
        #[arg(long)]
        input: PathBuf,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Topic administration.
    Topics {
        #[command(subcommand)]
        command: TopicsCommand,
    },
    /// Run only the embedded broker (a Kafka-protocol peer for tests and local tools).
    Broker {
        /// Listen address (IP and port).
        #[arg(long, default_value = "127.0.0.1:9092")]
        listen: String,
        /// Storage URL (sqlite://dir/file.db or memory://tansu/).
        #[arg(long, default_value = "sqlite://data/broker/tansu.db")]
        storage: String,
    },
    /// Decide intents from a JSON-lines file offline (a dry run of an extractor's output).
    Apply {
        /// Intent records, one JSON object per line: {"timestamp": ms, "intent": {...}}.
        #[arg(long)]
        input: PathBuf,
        /// State directory (RocksDB); in memory when omitted.
        #[arg(long)]
        state: Option<PathBuf>,
        /// Partitions of the intents topic this run stands in for.
        #[arg(long, default_value_t = 12)]
        partitions: i32,
        /// Receipts output (JSON lines); stdout by default.
        #[arg(long)]
        receipts: Option<PathBuf>,
        /// Commits output (JSON lines); stdout by default.
        #[arg(long)]
        commits: Option<PathBuf>,
    },
    /// Print the effective configuration (defaults, file and KLEDGER_* overrides) as TOML.
    Config,
    /// State operations.
    State {
        #[command(subcommand)]
        command: StateCommand,
    },
    /// Replay the intents topic.
    Replay {
        #[command(subcommand)]
        command: ReplayCommand,
    },
    /// Rebuild a projection from the outbox into a new generation, swapped in when caught up.
    Rebuild {
        /// Which projection: views or qdrant.
        #[arg(value_parser = ["views", "qdrant"])]
        projection: String,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Migrate legacy memory rows into the ledger.
    Migrate {
        #[command(subcommand)]
        command: MigrateCommand,
    },
}

/// Parsed once per run: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum MigrateCommand {
    /// Plan legacy memory rows (JSON lines) deterministically; resumes an existing plan file.
    Plan {
        /// Legacy rows, one JSON object per line (docs/migration.md).
        #[arg(long)]
        input: PathBuf,
        /// The plan (JSON lines); appended to when it exists.
        #[arg(long)]
        out: PathBuf,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Publish a plan's intents (those not on the topic yet) and wait for their receipts.
    Apply {
        /// A plan written by `kledger migrate plan`.
        #[arg(long)]
        plan: PathBuf,
        /// The completion record (JSON); default `<plan>.done.json`.
        #[arg(long)]
        report: Option<PathBuf>,
        /// How long to wait for receipts, in seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
        /// Publish at most this many intents per second (default: no limit).
        #[arg(long)]
        rate: Option<f64>,
        /// Hide the progress bars.
        #[arg(long)]
        quiet: bool,
    },
    /// Copy points of legacy Qdrant collections (from a server, or exported as
    /// `<collection>.jsonl`) into `cm_<type>_<dim>_v1` collections with cm_payload_v1 payloads
    /// (docs/migration.md).
    Vectors {
        /// Directory of `<collection>.jsonl` files (points as Qdrant's scroll returns them).
        #[arg(
            long,
            conflicts_with = "from_url",
            required_unless_present = "from_url"
        )]
        from_export: Option<PathBuf>,
        /// Read every collection of a legacy Qdrant server (gRPC URL).
        #[arg(long)]
        from_url: Option<String>,
        /// Write into Qdrant's engine in-process, one directory per collection under DIR.
        #[arg(long, conflicts_with = "to_url", required_unless_present = "to_url")]
        to_dir: Option<PathBuf>,
        /// Write into a Qdrant server (gRPC URL, e.g. http://qdrant:6334).
        #[arg(long)]
        to_url: Option<String>,
        /// tenant_id of points whose payload names none.
        #[arg(long)]
        tenant: String,
        /// team_id of points whose payload names none.
        #[arg(long)]
        team: Option<String>,
        /// project_id of points whose payload names none.
        #[arg(long)]
        project: Option<String>,
        /// Visibility of points whose payload names none.
        #[arg(long, default_value = "private", value_parser = ["public", "confidential", "private"])]
        visibility: String,
        /// Embedding model id of points whose payload names none.
        #[arg(long, default_value = "legacy")]
        model: String,
        /// Embedding space type in the collection name (cm_<type>_<dim>_v1).
        #[arg(long, default_value = "text")]
        space: String,
        /// Which named vector to copy when points have several.
        #[arg(long)]
        vector_name: Option<String>,
        /// Mapping rules (JSON array of {pattern, agent_id?, scope, tags?}) instead of the
        /// cm_payload_v1 table.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ReplayCommand {
    /// Re-decide the intents topic into a scratch state and compare every commit with the
    /// outbox, byte for byte. Exits 1 at the first difference.
    Verify {
        /// Start a partition at this intent offset (partition:offset; repeatable). The outbox
        /// commits of earlier intents are folded into the scratch state first.
        #[arg(long = "from", value_parser = kledger_topology::replay::parse_from)]
        from: Vec<(i32, i64)>,
        /// Scratch state directory (must not exist; removed afterwards).
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
}

#[derive(Debug, Subcommand)]
enum TopicsCommand {
    /// Create the five topics (existing ones are left alone).
    Create,
    /// Check that the topics exist and intents, outbox and receipts are co-partitioned.
    Check,
}

#[derive(Debug, Subcommand)]
enum StateCommand {
    /// Print the SHA-256 digest of a state directory (every key and value in key order).
    Digest {
        /// State directory (default: the configured one).
        #[arg(long)]
        state: Option<PathBuf>,
    },
    /// Fill an empty state directory from a checkpoint, or by folding the whole outbox.
    Restore {
        /// State directory to fill (default: the configured one); must be empty or missing.
        #[arg(long)]
        state: Option<PathBuf>,
        /// A checkpoint written by `kledger state checkpoint`.
        #[arg(
            long,
            conflicts_with = "from_outbox",
            required_unless_present = "from_outbox"
        )]
        checkpoint: Option<PathBuf>,
        /// Fold every outbox partition from the start (the processor's restore).
        #[arg(long)]
        from_outbox: bool,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Write a consistent RocksDB checkpoint of the state to a new directory.
    Checkpoint {
        /// State directory (default: the configured one).
        #[arg(long)]
        state: Option<PathBuf>,
        /// Where to write the checkpoint (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
}

fn output(path: Option<PathBuf>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            File::create(&p).with_context(|| format!("create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout())),
    })
}

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

async fn run(config: Config, demo: Option<PathBuf>, roles: runtime::Roles) -> anyhow::Result<()> {
    let http = config.http.listen.clone();
    // Start waits for an unreachable broker; a signal meanwhile ends the wait.
    let running = tokio::select! {
        r = runtime::start_roles(config.clone(), roles) => r?,
        _ = wait_for_signal() => {
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
    if let Some(file) = demo {
        let (c, p) = (config.clone(), running.partitions);
        let published = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<u64>> {
            let b = c.bootstrap();
            let empty = topics::is_empty(&b, &c.topics().intents, p)?;
            if !empty {
                return Ok(None);
            }
            let mut reader = BufReader::new(
                File::open(&file).with_context(|| format!("open {}", file.display()))?,
            );
            Ok(Some(publish::publish(&c, p, &mut reader, false)?.published))
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
    }
    tokio::select! {
        _ = wait_for_signal() => eprintln!("stopping"),
        _ = async { while !running.finished() { tokio::time::sleep(Duration::from_millis(200)).await } } => {}
    }
    running.stop().await
}

/// A configuration that cannot be used (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
struct BadConfig(anyhow::Error);

/// Exit statuses: 0 done, 1 failed, 2 bad configuration, 3 an unrecoverable condition of the
/// ledger (a fork, a gap, corrupt state: see docs/operations.md). The error is one line on
/// standard error, never a backtrace.
fn main() -> std::process::ExitCode {
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            let status = if e.downcast_ref::<BadConfig>().is_some() {
                2
            } else if runtime::processor::unrecoverable(&e) {
                3
            } else {
                1
            };
            let line = format!("{e:#}").replace('\n', " ");
            eprintln!("kledger: error: {}", kledger_topology::logs::scrub(&line));
            std::process::ExitCode::from(status)
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let huge_pages = kledger_topology::memory::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref(), std::env::vars()) {
        Ok(c) => c,
        Err(e) => {
            // Scrub what a malformed configuration's error could quote.
            kledger_topology::logs::register(None, std::env::vars());
            return Err(anyhow::Error::new(BadConfig(e)));
        }
    };
    kledger_topology::logs::register(Some(&config), std::env::vars());
    kledger_topology::logs::init(&config, cli.text_logs);
    if let Err(e) = huge_pages {
        tracing::warn!(error = %e, "transparent huge pages could not be turned off for this process");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match cli.command {
        Command::Run { demo, role } => rt.block_on(run(config, demo, role))?,
        Command::Rebuild { projection, quiet } => {
            let which = if projection == "views" {
                kledger_topology::rebuild::Projection::Views
            } else {
                kledger_topology::rebuild::Projection::Vectors
            };
            let r = kledger_topology::rebuild::rebuild(&config, which, !quiet)?;
            eprintln!(
                "rebuild {projection}: generation {} active ({}{} outbox records, {} undecodable skipped; old generations deleted: {:?})",
                r.generation,
                if r.resumed { "resumed, " } else { "" },
                r.records,
                r.undecodable,
                r.deleted
            );
        }
        Command::State {
            command:
                StateCommand::Restore {
                    state,
                    checkpoint,
                    from_outbox,
                    quiet,
                },
        } => {
            let dir = state.unwrap_or(config.state.dir.clone());
            let r = kledger_topology::stateops::restore(
                &config,
                &dir,
                checkpoint.as_deref(),
                from_outbox,
                !quiet,
            )?;
            eprintln!("state restored into {}: {r}", dir.display());
        }
        Command::Publish { input, quiet } => {
            let bootstrap = config.bootstrap();
            let partitions = topics::check(&bootstrap, &config.topics())?;
            let mut reader = BufReader::new(
                File::open(&input).with_context(|| format!("open {}", input.display()))?,
            );
            let s = publish::publish(&config, partitions, &mut reader, !quiet)?;
            for (line, e) in &s.invalid {
                eprintln!("line {line}: not an intent record: {e}");
            }
            eprintln!(
                "kledger publish: {} published, {} invalid lines skipped",
                s.published, s.invalid_total
            );
        }
        Command::Topics { command } => {
            let bootstrap = config.bootstrap();
            let t = config.topics();
            match command {
                TopicsCommand::Create => {
                    let created = rt.block_on(topics::create(
                        &bootstrap,
                        &t,
                        config.kafka.partitions,
                        config.kafka.replication_factor,
                        config.limits.kafka_message_bytes(),
                    ))?;
                    eprintln!("created: {created:?}");
                }
                TopicsCommand::Check => {
                    let n = topics::check(&bootstrap, &t)?;
                    eprintln!("ok: {n} partitions, intents/outbox/receipts co-partitioned");
                }
            }
        }
        Command::Broker { listen, storage } => rt.block_on(async {
            let b = embedded::EmbeddedBroker::start(&listen, &storage).await?;
            eprintln!("broker listening on {}", b.bootstrap());
            wait_for_signal().await;
            b.stop();
            anyhow::Ok(())
        })?,
        Command::Apply {
            input,
            state,
            partitions,
            receipts,
            commits,
        } => {
            anyhow::ensure!(partitions > 0, "--partitions must be positive");
            let file = File::open(&input).with_context(|| format!("open {}", input.display()))?;
            let mut reader = BufReader::new(file);
            let store: Box<dyn StateStore> = match &state {
                Some(dir) => Box::new(RocksStore::open(dir, &config.state.rocks())?),
                None => Box::new(MemoryStore::new()),
            };
            // One writer per stream: receipts and commits both on stdout share one writer.
            let mut r = output(receipts)?;
            let mut c = commits.map(|p| output(Some(p))).transpose()?;
            let sinks = offline::Sinks {
                receipts: &mut r,
                commits: c.as_mut().map(|c| c as &mut dyn Write),
            };
            let summary = offline::apply(
                store.as_ref(),
                &mut reader,
                partitions,
                config.limits.decide(),
                sinks,
            )?;
            drop((r, c));
            let outcomes: Vec<String> = summary
                .outcomes
                .iter()
                .map(|(o, n)| format!("{o}={n}"))
                .collect();
            eprintln!(
                "kledger apply: {} commits; receipts {}; malformed={} skipped={}; state digest {}",
                summary.commits,
                outcomes.join(" "),
                summary.malformed,
                summary.skipped,
                digest(store.as_ref())?
            );
        }
        Command::Migrate {
            command: MigrateCommand::Plan { input, out, quiet },
        } => {
            let s = kledger_topology::migrate::plan(&input, &out, !quiet)?;
            eprintln!(
                "migrate plan: {} rows read, {} already planned{}; written {:?}; plan now {:?}",
                s.rows,
                s.already_planned,
                if s.cut_bytes > 0 {
                    format!(" ({} bytes of an interrupted line cut)", s.cut_bytes)
                } else {
                    String::new()
                },
                s.written,
                s.totals
            );
        }
        Command::Migrate {
            command:
                MigrateCommand::Apply {
                    plan,
                    report,
                    timeout_secs,
                    rate,
                    quiet,
                },
        } => {
            let report = report.unwrap_or_else(|| kledger_topology::migrate::default_report(&plan));
            let c = kledger_topology::migrate::apply(
                &config,
                &plan,
                &report,
                kledger_topology::migrate::ApplyOptions {
                    progress: !quiet,
                    timeout: Duration::from_secs(timeout_secs),
                    rate,
                },
            )?;
            eprintln!(
                "migrate apply: {} published, {} already on the topic; receipts {:?}; {} unanswered; {} rows blocking; completion record {}",
                c.published,
                c.already_published,
                c.outcomes,
                c.unanswered,
                c.blocking_total,
                report.display()
            );
            if !c.complete {
                std::process::exit(1);
            }
        }
        Command::Migrate {
            command:
                MigrateCommand::Vectors {
                    from_export,
                    from_url,
                    to_dir,
                    to_url,
                    tenant,
                    team,
                    project,
                    visibility,
                    model,
                    space,
                    vector_name,
                    rules,
                    quiet,
                },
        } => {
            use kledger_topology::legacy_vectors::{
                Source, Target, VectorsOptions, migrate_vectors,
            };
            let rules = match rules {
                Some(p) => serde_json::from_slice(
                    &std::fs::read(&p).with_context(|| format!("read {}", p.display()))?,
                )
                .with_context(|| format!("{}: not a JSON array of rules", p.display()))?,
                None => kledger_processors::legacy::seed_rules(),
            };
            let target = match (to_dir, to_url) {
                (Some(d), _) => Target::Dir(d),
                (None, Some(u)) => Target::Url(u),
                (None, None) => anyhow::bail!("give --to-dir or --to-url"),
            };
            let source = match (from_export, from_url) {
                (Some(d), _) => Source::Export(d),
                (None, Some(u)) => Source::Server(u),
                (None, None) => anyhow::bail!("give --from-export or --from-url"),
            };
            let reports = migrate_vectors(&VectorsOptions {
                source,
                rules,
                defaults: kledger_processors::legacy::Defaults {
                    tenant_id: tenant,
                    team_id: team,
                    project_id: project,
                    visibility,
                    model,
                },
                space,
                vector_name,
                target,
                progress: !quiet,
                api_key: config.vectors.api_key(),
            })?;
            for r in &reports {
                println!("{}", serde_json::to_string(r)?);
                eprintln!(
                    "migrate vectors: {} -> {}: {} read, {} written, skipped {:?}",
                    r.legacy,
                    r.target.as_deref().unwrap_or("-"),
                    r.read,
                    r.written,
                    r.skipped
                );
            }
        }
        Command::Config => print!("{}", toml::to_string(&config.redacted())?),
        Command::State {
            command: StateCommand::Digest { state },
        } => {
            let store = RocksStore::open(
                &state.unwrap_or(config.state.dir.clone()),
                &config.state.rocks(),
            )?;
            println!("{}", digest(&store)?);
        }
        Command::Replay {
            command:
                ReplayCommand::Verify {
                    from,
                    scratch,
                    quiet,
                },
        } => {
            let scratch = scratch.unwrap_or_else(|| {
                std::env::temp_dir().join(format!("kledger-replay-{}", std::process::id()))
            });
            let from = from.into_iter().collect();
            let report = kledger_topology::replay::verify_topics(&config, &from, &scratch, !quiet)?;
            let c = &report.counts;
            match &report.difference {
                None => eprintln!(
                    "replay verify: ok: {} intents re-decided, {} commits identical, {} repeats skipped, {} folded before the start, {} partitions",
                    c.intents,
                    c.commits,
                    c.repeats,
                    c.folded,
                    report.partitions.len()
                ),
                Some(d) => {
                    eprintln!(
                        "replay verify: FAILED after {} identical commits\n{d}",
                        c.commits
                    );
                    std::process::exit(1);
                }
            }
        }
        Command::State {
            command: StateCommand::Checkpoint { state, out },
        } => {
            let store = RocksStore::open(
                &state.unwrap_or(config.state.dir.clone()),
                &config.state.rocks(),
            )?;
            store.checkpoint(&out)?;
            eprintln!("checkpoint written to {}", out.display());
        }
    }
    Ok(())
}
