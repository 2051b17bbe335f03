//! What every part of a kledger process shares, below the Kafka layer, the retrieval, the
//! pipeline and the HTTP API: [`config`] (TOML with `KLEDGER_*` overrides), [`shutdown`],
//! [`status`] (what `/readyz` reports), [`generations`] (projection generations swapped in
//! atomically), [`metrics`] (every series' name), [`backoff`] (the one retry pause),
//! [`logs`] (the log subscriber and the scrubbing of secrets), [`lines`] (bounded JSON-lines
//! input), [`progress`] (progress bars) and [`memory`] (transparent huge pages off).

pub mod backoff;
pub mod config;
pub mod generations;
pub mod lines;
pub mod logs;
pub mod memory;
pub mod metrics;
pub mod progress;
pub mod shutdown;
pub mod status;
