//! `kledger state restore`: fill an empty state directory from a RocksDB checkpoint, or by
//! folding the whole outbox (the processor's own restore, every partition from offset 0).

use std::path::Path;

use anyhow::Context;
use kledger_state::{RocksStore, digest};

use kledger_runtime::config::Config;

/// Fills `dir` (missing or empty) from `checkpoint`, or from the outbox when `from_outbox`.
/// Returns a summary with the resulting state digest. Blocking.
pub fn restore(
    config: &Config,
    dir: &Path,
    checkpoint: Option<&Path>,
    from_outbox: bool,
    show_progress: bool,
) -> anyhow::Result<String> {
    let empty = !dir.exists()
        || std::fs::read_dir(dir)
            .with_context(|| format!("read {}", dir.display()))?
            .next()
            .is_none();
    anyhow::ensure!(
        empty,
        "{} is not empty: restore fills a new state directory (move the old one away first)",
        dir.display()
    );
    let started = std::time::Instant::now();
    let summary = match (checkpoint, from_outbox) {
        (Some(cp), _) => {
            // Open the checkpoint read-only first: it must be a state store.
            RocksStore::open(cp, &config.state.rocks())
                .with_context(|| format!("{} is not a kledger state checkpoint", cp.display()))?;
            copy_dir(cp, dir)?;
            let store = RocksStore::open(dir, &config.state.rocks())?;
            format!(
                "copied from checkpoint {}; digest {}",
                cp.display(),
                digest(&store)?
            )
        }
        (None, true) => {
            std::fs::create_dir_all(dir)?;
            let store = RocksStore::open(dir, &config.state.rocks())?;
            let topics = config.topics();
            let partitions = kledger_kafka::topics::check(
                &kledger_kafka::clients::client_config(config),
                &topics,
            )?;
            let all: Vec<i32> = (0..partitions).collect();
            let total: u64 = kledger_kafka::topics::high_watermarks(
                &kledger_kafka::clients::client_config(config),
                &topics.outbox,
                partitions,
            )?
            .iter()
            .map(|h| (*h).max(0) as u64)
            .sum();
            let bar =
                kledger_runtime::progress::bar(Some(total), "outbox records folded", show_progress);
            let records = crate::apply::restore::restore(
                config,
                &topics,
                &store,
                &all,
                &kledger_kafka::codec::Codec::connect(config)?,
                &kledger_runtime::shutdown::Shutdown::new(),
                &|n| bar.inc(n),
            )?;
            bar.finish_and_clear();
            store.flush()?;
            format!(
                "{records} outbox records folded over {partitions} partitions; digest {}",
                digest(&store)?
            )
        }
        (None, false) => anyhow::bail!("give --checkpoint DIR or --from-outbox"),
    };
    tracing::info!(dir = %dir.display(), secs = started.elapsed().as_secs_f64(), %summary, "state restored");
    Ok(summary)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)
                .with_context(|| format!("copy {}", e.path().display()))?;
        }
    }
    Ok(())
}
