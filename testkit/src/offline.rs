//! The read API over stores built in the test's own process (no Kafka, no HTTP): a view store
//! and, optionally, a vector generation, each behind a [`Live`] that never swaps. Its functions
//! (`profile_answer`, `search_knowledge`, …) are the ones the HTTP handlers call.

use std::path::Path;
use std::sync::Arc;

use kledger_state::ViewStore;
use kledger_topology::config::Config;
use kledger_topology::generations::Live;
use kledger_topology::serve::api::Api;
use kledger_topology::vector::{SearchIndex, VectorGen};

/// An [`Api`] over `views` and `vectors`, with `config`, for a ledger of `partitions`; the
/// generations' files live under `dir`.
pub fn api(
    dir: &Path,
    config: Config,
    partitions: i32,
    views: ViewStore,
    vectors: Option<VectorGen>,
) -> anyhow::Result<Api> {
    let gens = dir.join("gens");
    let views = Live::with_value(
        &gens,
        "g000001",
        views,
        |_: &Path| -> anyhow::Result<ViewStore> { anyhow::bail!("no swaps") },
    )?;
    let search = match vectors {
        Some(g) => Some(Arc::new(std::sync::OnceLock::from(SearchIndex {
            live: Arc::new(Live::with_value(
                &gens,
                "g000001",
                g,
                |_: &Path| -> anyhow::Result<VectorGen> { anyhow::bail!("no swaps") },
            )?),
        }))),
        None => None,
    };
    Ok(Api {
        config: Arc::new(config),
        views: Arc::new(views),
        partitions,
        producer: Arc::default(),
        codec: Arc::default(),
        search,
        exports: Arc::new(tokio::sync::Semaphore::new(2)),
        receipts: Arc::default(),
        state: None,
    })
}
