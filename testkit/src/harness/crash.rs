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
    c.processor.batch_records_max = 200;
    create_topics(&b, &c);
    let records = stream(seed, accounts, intents);
    let chunks: Vec<_> = records.chunks(records.len().div_ceil(kills + 1)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let port = kledger_topology::embedded::free_port()?;
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
    let (want, want_digest) = expected(&records, PARTITIONS);
    let got = commits(&b.bootstrap, &c);
    let rs = receipts(&b.bootstrap, &c);
    let answered: std::collections::BTreeSet<(i32, i64)> = rs
        .iter()
        .map(|r| (r.intent_partition, r.intent_offset))
        .collect();
    let store =
        kledger_state::RocksStore::open(&c.state.dir, &kledger_state::RocksConfig::default())?;
    let digest_equal = kledger_state::digest(&store)? == want_digest;
    if let Err(why) = answered_all {
        tracing_free_note(&why);
    }
    Ok(CrashFigures {
        intents: records.len(),
        accounts,
        restarts,
        receipts: rs.len(),
        answered: answered.len(),
        oracle: check(&got, &want),
        digest_equal,
    })
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
