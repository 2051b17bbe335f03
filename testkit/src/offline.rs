//! The read API over stores built in the test's own process (no Kafka, no HTTP): a view store
//! and, optionally, a vector generation, each behind a [`Live`] that never swaps. Its functions
//! (`profile_answer`, `search_knowledge`, …) are the ones the HTTP handlers call.

use std::path::Path;
use std::sync::Arc;

use kledger_schemas::Commit;
use kledger_state::{MarkStore, ViewStore};
use kledger_topology::config::Config;
use kledger_topology::generations::Live;
use kledger_topology::serve::api::Api;
use kledger_topology::vector::embedder::{Embedder, HashingEmbedder};
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
    Ok(Api::new(
        Arc::new(config),
        Arc::new(views),
        partitions,
        Arc::default(),
        search,
        None,
    ))
}

/// Empty projections under `dir` for the ledger of `commits` (a [`crate::Ledger`]'s, on
/// `partitions`): a view store and a vector generation (the embedded engine with the hashing
/// embedder of 64 dimensions), each with the data keys of those commits in its key cache,
/// so either can fold them.
pub fn projections(
    dir: &Path,
    commits: &[Commit],
    partitions: i32,
) -> anyhow::Result<(ViewStore, VectorGen)> {
    let views = ViewStore::open(&dir.join("views"), 8 << 20)?;
    let embedder: Arc<dyn Embedder> = Arc::new(HashingEmbedder::new(64));
    let index = kledger_topology::vector::edge::EdgeIndex::open(
        &dir.join("index"),
        &kledger_processors::payload::collection_name("text", 64, 1),
        64,
    )?;
    let g = VectorGen {
        index: Arc::new(index),
        embedder,
        marks: Some(MarkStore::open(&dir.join("marks"))?),
    };
    let keys = crate::ledger::key_records(commits, partitions);
    kledger_state::KeyCache::add(&views, &keys)?;
    kledger_state::KeyCache::add(g.marks()?, &keys)?;
    Ok((views, g))
}

/// An empty sources store (the sources lane) under `dir`, with the data keys of `commits` in
/// its key cache.
pub fn sources(dir: &Path, commits: &[Commit], partitions: i32) -> anyhow::Result<ViewStore> {
    let store =
        ViewStore::open(&dir.join("sources"), 8 << 20)?.with_lane(kledger_state::Lane::Sources);
    kledger_state::KeyCache::add(&store, &crate::ledger::key_records(commits, partitions))?;
    Ok(store)
}

/// `api` reading source documents from `store` (behind a [`Live`] that never swaps).
pub fn with_sources(api: Api, dir: &Path, store: ViewStore) -> anyhow::Result<Api> {
    let live = Live::with_value(
        &dir.join("source-gens"),
        "g000001",
        store,
        |_: &Path| -> anyhow::Result<ViewStore> { anyhow::bail!("no swaps") },
    )?;
    Ok(api.with_sources(Some(Arc::new(live))))
}

/// The read API over `commits` whole: a view store folded and a vector generation projected
/// by the sinks' own code, with `config`.
pub fn served(
    dir: &Path,
    commits: &[Commit],
    partitions: i32,
    config: Config,
) -> anyhow::Result<Api> {
    let (views, g) = projections(dir, commits, partitions)?;
    let positioned = crate::kafka::positioned(commits, |c| c.intent_partition);
    let read: Vec<(i32, i64)> = positioned.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::views::fold(&views, &positioned, read.iter().copied())?;
    let embedder = g.embedder.clone();
    kledger_topology::pipeline::project::vectors::project(
        &g,
        embedder.as_ref(),
        &positioned,
        read.into_iter(),
    )?;
    api(dir, config, partitions, views, Some(g))
}
