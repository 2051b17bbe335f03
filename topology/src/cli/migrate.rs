//! `kledger migrate plan|adjudicate|apply|vectors`: legacy memory rows into the ledger, and legacy vector
//! collections into cm_payload_v1 collections (docs/migration.md).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};

use crate::config::Config;
use crate::pipeline::legacy_vectors::{Source, Target, VectorsOptions, migrate_vectors};
use crate::pipeline::migrate;

/// A visibility given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VisibilityArg {
    /// Same tenant and team.
    Public,
    /// Owner or ACL.
    Confidential,
    /// Owner only.
    Private,
}

impl VisibilityArg {
    fn as_str(self) -> &'static str {
        match self {
            VisibilityArg::Public => "public",
            VisibilityArg::Confidential => "confidential",
            VisibilityArg::Private => "private",
        }
    }
}

/// `kledger migrate`. Parsed once per run: the size of the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub(crate) enum MigrateCommand {
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
    /// Record decisions about the rows a plan lists for adjudication (short-term, archive,
    /// conflicts) in an adjudication log; resumes an existing log. Apply the promotions with
    /// `kledger migrate apply --plan <log>` (or `--apply` here).
    Adjudicate {
        /// The legacy rows the plan was made from.
        #[arg(long)]
        input: PathBuf,
        /// The plan written by `kledger migrate plan`.
        #[arg(long)]
        plan: PathBuf,
        /// Decisions, one JSON object per line: `{"marker": "memory_id@revision", "decision":
        /// "promote"|"discard", "by": "who decided", "note": "why"}` (docs/migration.md).
        #[arg(long)]
        decisions: PathBuf,
        /// The adjudication log (plan entries, JSON lines); appended to when it exists.
        #[arg(long)]
        out: PathBuf,
        /// Then apply the log as `kledger migrate apply --plan <out>` does.
        #[arg(long)]
        apply: bool,
        /// How long `--apply` waits for receipts, in seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
        /// Hide the progress bars.
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
    Vectors(VectorsArgs),
}

/// `kledger migrate vectors`.
#[derive(Debug, clap::Args)]
pub(crate) struct VectorsArgs {
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
    #[arg(long, value_enum, default_value = "private")]
    visibility: VisibilityArg,
    /// Embedding model id of points whose payload names none.
    #[arg(long, default_value = "legacy")]
    model: String,
    /// Embedding space type in the collection name (`cm_<type>_<dim>_v1`).
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
}

impl MigrateCommand {
    /// Runs the migration step; blocking. An apply that leaves intents unanswered or rows
    /// blocking exits with status 1 after its summary.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        match self {
            MigrateCommand::Plan { input, out, quiet } => {
                let s = migrate::plan(&input, &out, !quiet)?;
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
            MigrateCommand::Adjudicate {
                input,
                plan,
                decisions,
                out,
                apply,
                timeout_secs,
                quiet,
            } => {
                let s = migrate::adjudicate(&input, &plan, &decisions, &out)?;
                for (line, why) in &s.refused {
                    eprintln!("decisions line {line}: refused: {why}");
                }
                eprintln!(
                    "migrate adjudicate: {} rows listed, {} decisions read; recorded {:?}, {} already recorded, {} refused, {} rows undecided; log {}",
                    s.listed,
                    s.decisions,
                    s.recorded,
                    s.already_recorded,
                    s.refused.len(),
                    s.undecided,
                    out.display()
                );
                if apply {
                    return MigrateCommand::Apply {
                        plan: out,
                        report: None,
                        timeout_secs,
                        rate: None,
                        quiet,
                    }
                    .run(config);
                }
            }
            MigrateCommand::Apply {
                plan,
                report,
                timeout_secs,
                rate,
                quiet,
            } => {
                crate::kafka::preflight::preflight(config)?;
                let report = report.unwrap_or_else(|| migrate::default_report(&plan));
                let c = migrate::apply(
                    config,
                    &plan,
                    &report,
                    migrate::ApplyOptions {
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
            MigrateCommand::Vectors(args) => args.run(config)?,
        }
        Ok(())
    }
}

impl VectorsArgs {
    fn run(self, config: &Config) -> anyhow::Result<()> {
        let rules = match self.rules {
            Some(p) => serde_json::from_slice(
                &std::fs::read(&p).with_context(|| format!("read {}", p.display()))?,
            )
            .with_context(|| format!("{}: not a JSON array of rules", p.display()))?,
            None => kledger_processors::legacy::seed_rules(),
        };
        let target = match (self.to_dir, self.to_url) {
            (Some(d), _) => Target::Dir(d),
            (None, Some(u)) => Target::Url(u),
            (None, None) => anyhow::bail!("give --to-dir or --to-url"),
        };
        let source = match (self.from_export, self.from_url) {
            (Some(d), _) => Source::Export(d),
            (None, Some(u)) => Source::Server(u),
            (None, None) => anyhow::bail!("give --from-export or --from-url"),
        };
        let reports = migrate_vectors(&VectorsOptions {
            source,
            rules,
            defaults: kledger_processors::legacy::Defaults {
                tenant_id: self.tenant,
                team_id: self.team,
                project_id: self.project,
                visibility: self.visibility.as_str().to_owned(),
                model: self.model,
            },
            space: self.space,
            vector_name: self.vector_name,
            target,
            progress: !self.quiet,
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
        Ok(())
    }
}
