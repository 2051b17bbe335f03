//! The crash loop: `kledger run` killed with SIGKILL at random points while a seeded stream is
//! published, restarted each time; then the oracle.

use std::path::Path;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Row;
use super::oracle::{Findings, check};
use crate::kafka::*;

/// What the crash loop did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashFigures {
    /// Intents published.
    pub intents: usize,
    /// Accounts.
    pub accounts: usize,
    /// SIGKILLs survived (each followed by a restart).
    pub restarts: usize,
    /// Receipts read back (≥ intents: re-read intents are answered again).
    pub receipts: usize,
    /// Intents with at least one receipt.
    pub answered: usize,
    /// The oracle's findings.
    pub oracle: Findings,
    /// Whether the final state digest equals an uninterrupted run's.
    pub digest_equal: bool,
}

impl CrashFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let o = &self.oracle;
        Row {
            check: "crash loop (kill -9)",
            figures: format!(
                "{} restarts, {} intents / {} accounts, answered {}, commits {} of {} ({} identical repeats), lost {}, duplicated {}, forks {}, gaps {}, chain breaks {}, digest {}",
                self.restarts,
                self.intents,
                self.accounts,
                self.answered,
                o.commits,
                o.expected,
                o.repeats,
                o.lost,
                o.duplicated,
                o.forks,
                o.gaps,
                o.chain_breaks,
                if self.digest_equal {
                    "equal"
                } else {
                    "DIFFERENT"
                }
            ) + lost_sample(&o.lost_sample).as_str(),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.oracle.ok() && self.digest_equal && self.answered == self.intents
    }
}

/// Partitions of the crash loop's topics.
pub const PARTITIONS: i32 = 6;

/// Publishes `intents` generated intents over `accounts` accounts in `kills + 1` chunks; after
/// each chunk but the last, starts `kledger run` (the binary at `bin`), waits until it is ready
/// and SIGKILLs it after a random 0.2–1.5 s; a last run answers everything.
pub fn crash_loop(
    bin: &Path,
    seed: u64,
    intents: usize,
    accounts: usize,
    kills: usize,
) -> anyhow::Result<CrashFigures> {
    let b = TestBroker::start();
    let dir = tempfile::tempdir()?;
    let mut c = config(
        &b.bootstrap,
        &dir.path().join("state"),
        PARTITIONS,
        "harness-crash",
    );
    c.processor.batch.records_max = 200;
    create_topics(&b, &c);
    let records = stream(seed, accounts, intents);
    let chunks: Vec<_> = records.chunks(records.len().div_ceil(kills + 1)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let port = kledger_topology::kafka::embedded::free_port()?;
    // A short session timeout lets a restarted instance take the dead member's partitions
    // soon; the sinks stay off (the outbox is what is checked).
    let env = [
        (
            "KLEDGER_KAFKA__CONSUMER_PROPERTIES__SESSION_TIMEOUT_MS",
            "3000",
        ),
        ("KLEDGER_VIEWS__ENABLED", "false"),
        ("KLEDGER_VECTORS__ENABLED", "false"),
    ];
    let mut restarts = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        publish_all(&c, chunk);
        if i == chunks.len() - 1 {
            break;
        }
        let tag = format!("run{i}");
        let mut child = spawn_kledger(bin, &c, port, dir.path(), &tag, &env);
        wait_ready(&mut child, port, dir.path(), &tag);
        std::thread::sleep(Duration::from_millis(rng.random_range(200..1_500)));
        child.kill()?;
        child.wait()?;
        restarts += 1;
    }
    let mut last = spawn_kledger(bin, &c, port, dir.path(), "final", &env);
    wait_ready(&mut last, port, dir.path(), "final");
    let answered_all = answered(&c, &records, Duration::from_secs(600), || true);
    stop(last);
    let (got, rs) = (commits(&b.bootstrap, &c), receipts(&b.bootstrap, &c));
    let (answered, oracle, digest_equal) = outcome(&c, &records, PARTITIONS, &got, &rs)?;
    if let Err(why) = answered_all {
        tracing_free_note(&why);
    }
    Ok(CrashFigures {
        intents: records.len(),
        accounts,
        restarts,
        receipts: rs.len(),
        answered,
        oracle,
        digest_equal,
    })
}

/// What a crash loop ended with: intents answered, the oracle over the outbox read back, and
/// whether the state's digest equals an uninterrupted offline run's.
fn outcome(
    c: &kledger_topology::config::Config,
    records: &[kledger_schemas::IntentRecord],
    partitions: i32,
    got: &[(i32, kledger_schemas::Commit)],
    rs: &[kledger_schemas::Receipt],
) -> anyhow::Result<(usize, Findings, bool)> {
    outcome_with(
        c,
        crate::kafka::ledger_secret(c),
        records,
        partitions,
        got,
        rs,
    )
}

/// [`outcome`] with the ledger's `secret` read beforehand (the broker may be gone).
fn outcome_with(
    c: &kledger_topology::config::Config,
    secret: kledger_processors::ids::LedgerSecret,
    records: &[kledger_schemas::IntentRecord],
    partitions: i32,
    got: &[(i32, kledger_schemas::Commit)],
    rs: &[kledger_schemas::Receipt],
) -> anyhow::Result<(usize, Findings, bool)> {
    let (want, want_digest) = crate::kafka::expected_with_secret(secret, records, partitions);
    let answered: std::collections::BTreeSet<(i32, i64)> = rs
        .iter()
        .map(|r| (r.intent_partition, r.intent_offset))
        .collect();
    let store =
        kledger_state::RocksStore::open(&c.state.dir, &kledger_state::RocksConfig::default())?;
    let digest_equal = kledger_state::digest(&store)? == want_digest;
    Ok((answered.len(), check(got, &want), digest_equal))
}

/// `; first lost: …` when the oracle found lost commits.
fn lost_sample(sample: &[String]) -> String {
    if sample.is_empty() {
        String::new()
    } else {
        format!("; first lost: {}", sample.join("; "))
    }
}

fn tracing_free_note(why: &str) {
    eprintln!("crash loop: {why}");
}

/// What the early-kill crash loop did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EarlyCrashFigures {
    /// Static group membership (`kafka.group_instance_id = "auto"`) or dynamic (the default).
    pub static_membership: bool,
    /// Intents published (all before the first start).
    pub intents: usize,
    /// SIGKILLs, each at a random moment in the first seconds after a start.
    pub kills: usize,
    /// Seconds from the last (clean) start until the group owned every partition (none: not
    /// within [`FULL_ASSIGNMENT_WAIT`]).
    pub full_assignment_secs: Option<f64>,
    /// Intents with at least one receipt.
    pub answered: usize,
    /// The oracle's findings.
    pub oracle: Findings,
    /// Whether the final state digest equals an uninterrupted run's.
    pub digest_equal: bool,
}

/// The bound on the time to full assignment after the last restart.
pub const FULL_ASSIGNMENT_SECS_MAX: f64 = 30.0;
/// How long the early-kill loop waits for full assignment before it reports none.
pub const FULL_ASSIGNMENT_WAIT: Duration = Duration::from_secs(120);
/// Partitions of the early-kill loop's topics (the deployment default).
pub const EARLY_PARTITIONS: i32 = 12;

impl EarlyCrashFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let o = &self.oracle;
        Row {
            check: if self.static_membership {
                "crash loop (early kills, static members)"
            } else {
                "crash loop (early kills, dynamic members)"
            },
            figures: format!(
                "{} kills 1.5–6 s after start, broker in its own process, default timeouts; full assignment {} after the last start (bound {FULL_ASSIGNMENT_SECS_MAX:.0} s); {} intents, answered {}, lost {}, duplicated {}, forks {}, gaps {}, digest {}",
                self.kills,
                self.full_assignment_secs
                    .map_or("NEVER".to_owned(), |s| format!("{s:.1} s")),
                self.intents,
                self.answered,
                o.lost,
                o.duplicated,
                o.forks,
                o.gaps,
                if self.digest_equal {
                    "equal"
                } else {
                    "DIFFERENT"
                }
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.full_assignment_secs
            .is_some_and(|s| s <= FULL_ASSIGNMENT_SECS_MAX)
            && self.oracle.ok()
            && self.digest_equal
            && self.answered == self.intents
    }
}

// Long on purpose: a harness check reads top to bottom as its steps (broker, kill loop, clean start, verdict).
/// A crash-looping container: the broker runs as its own process (`kledger broker`) and
/// outlives the processor; `kledger run` is started `kills` times and SIGKILLed
/// at a random moment 1.5–6 s after each start (whether or not it was ready), with the default
/// group timeouts; then one clean start (half the stream is published after it) must own every
/// partition within [`FULL_ASSIGNMENT_SECS_MAX`] and answer everything as an uninterrupted run
/// would.
pub fn crash_loop_early(
    bin: &Path,
    seed: u64,
    intents: usize,
    accounts: usize,
    kills: usize,
    static_membership: bool,
) -> anyhow::Result<EarlyCrashFigures> {
    // `HARNESS_KEEP_DIR=1` keeps the directory (logs, state, broker) for a post-mortem.
    let (root, _guard) = if std::env::var_os("HARNESS_KEEP_DIR").is_some() {
        let kept = tempfile::tempdir()?.keep();
        eprintln!("early crash loop: keeping {}", kept.display());
        (kept, None)
    } else {
        let g = tempfile::tempdir()?;
        (g.path().to_owned(), Some(g))
    };
    let dir = root.as_path();
    // Memory storage: the broker process outlives every processor, which is what matters here.
    let broker = BrokerProcess::start(bin, dir, "memory://tansu/")?;
    let bootstrap = broker.bootstrap.clone();
    let mut c = config(
        &bootstrap,
        &dir.join("state"),
        EARLY_PARTITIONS,
        "harness-crash-early",
    );
    // The deployment's group timeouts, not the tests' short ones.
    c.kafka.consumer_properties.clear();
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(kledger_topology::kafka::topics::create(
        &kledger_topology::kafka::clients::client_at(&bootstrap, []),
        &c.topics(),
        EARLY_PARTITIONS,
        1,
        c.limits.kafka_message_bytes(),
    ))?;
    let records = stream(seed, accounts, intents);
    // Half before the crash loop, half after the last start: unread intents wait on every
    // partition then, so a partition no one owns is an outage, not an idle partition.
    let (before, after) = records.split_at(records.len() / 2);
    publish_all(&c, before);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let port = kledger_topology::kafka::embedded::free_port()?;
    let mut env = vec![
        ("KLEDGER_VIEWS__ENABLED", "false"),
        ("KLEDGER_VECTORS__ENABLED", "false"),
    ];
    if static_membership {
        env.push(("KLEDGER_KAFKA__GROUP_INSTANCE_ID", "auto"));
    }
    // Dynamic membership (the default): the group coverage check alone must heal the group.
    let mut child_env_default = child_env(&c, &format!("127.0.0.1:{port}"));
    child_env_default.retain(|(k, _)| !k.contains("CONSUMER_PROPERTIES"));
    let spawn = |tag: &str| spawn_with_env(bin, &child_env_default, &env, dir, tag);
    for i in 0..kills {
        let mut child = spawn(&format!("run{i}"));
        std::thread::sleep(Duration::from_millis(rng.random_range(1_500..6_000)));
        let killed = child.kill();
        child.wait()?;
        killed?;
    }
    let started = std::time::Instant::now();
    let last = spawn("final");
    publish_all(&c, after);
    let all: Vec<i64> = (0..i64::from(EARLY_PARTITIONS)).collect();
    let mut full_assignment_secs = None;
    while started.elapsed() < FULL_ASSIGNMENT_WAIT {
        if let Some((_, body)) = get(port, "/readyz")
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&body)
        {
            let assigned: Vec<i64> = v["assigned"]
                .as_array()
                .map(|a| a.iter().filter_map(serde_json::Value::as_i64).collect())
                .unwrap_or_default();
            if assigned == all {
                full_assignment_secs = Some(started.elapsed().as_secs_f64());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let answered_all = answered(&c, &records, Duration::from_secs(300), || true);
    stop(last);
    if let Err(why) = answered_all {
        tracing_free_note(&why);
    }
    // Read back while the broker still runs (the ledger's secret too), then stop it.
    let (got, rs) = (commits(&bootstrap, &c), receipts(&bootstrap, &c));
    let secret = crate::kafka::ledger_secret(&c);
    drop(broker);
    let (answered, oracle, digest_equal) =
        outcome_with(&c, secret, &records, EARLY_PARTITIONS, &got, &rs)?;
    Ok(EarlyCrashFigures {
        static_membership,
        intents: records.len(),
        kills,
        full_assignment_secs,
        answered,
        oracle,
        digest_equal,
    })
}
