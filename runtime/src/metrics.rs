//! Metric names (prefix `kledger_`, base units, `_total` counters, no account-id labels) and the
//! Prometheus recorder.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Intents decided, by `outcome` (committed, duplicate, replan, rejected).
pub const INTENTS_TOTAL: &str = "kledger_intents_total";
/// Records sent to the dead-letter topic, by `code`.
pub const DEADLETTERS_TOTAL: &str = "kledger_deadletters_total";
/// Record time of an intent → delivery of its commit/receipt to the outbox, seconds.
pub const APPLY_LATENCY_SECONDS: &str = "kledger_apply_latency_seconds";
/// Records per processed batch.
pub const BATCH_RECORDS: &str = "kledger_batch_records";
/// Time per batch phase, seconds, by `phase` (wait, collect, decide, keys, send, deliver,
/// settle, offsets on the apply thread; state on the state writer's thread, beside them).
pub const BATCH_PHASE_SECONDS: &str = "kledger_batch_phase_seconds";
/// Batches that failed and were retried after a re-sync.
pub const BATCH_RETRIES_TOTAL: &str = "kledger_batch_retries_total";
/// Kafka transaction (begin → commit) latency, seconds (transactional mode).
pub const TRANSACTION_LATENCY_SECONDS: &str = "kledger_transaction_latency_seconds";
/// Kafka transactions, by `result` (committed, aborted) (transactional mode).
pub const TRANSACTIONS_TOTAL: &str = "kledger_transactions_total";
/// Consumer lag of the intents topic, records, by `partition`.
pub const CONSUMER_LAG_RECORDS: &str = "kledger_consumer_lag_records";
/// Duration of a partition restore from the outbox, seconds.
pub const RESTORE_DURATION_SECONDS: &str = "kledger_restore_duration_seconds";
/// Outbox records folded by restores.
pub const RESTORE_RECORDS_TOTAL: &str = "kledger_restore_records_total";
/// Rebalance events, by `kind` (assign, revoke).
pub const REBALANCES_TOTAL: &str = "kledger_rebalances_total";
/// Forks detected (restore found a commit contradicting state): the processor stops.
pub const FORKS_DETECTED_TOTAL: &str = "kledger_forks_detected_total";
/// RocksDB estimated live data, bytes.
pub const ROCKSDB_LIVE_DATA_BYTES: &str = "kledger_rocksdb_live_data_bytes";
/// RocksDB estimated pending compaction, bytes.
pub const ROCKSDB_PENDING_COMPACTION_BYTES: &str = "kledger_rocksdb_pending_compaction_bytes";
/// Partitions assigned to this instance, by `state` (restoring, ready).
pub const PARTITIONS: &str = "kledger_partitions";
/// Counter: purges' erasures of overwritten values in a local store (a flush and a compaction
/// of the purged accounts' ranges), by `store` (`state`, `views`).
pub const STORE_ERASURES_TOTAL: &str = "kledger_store_erasures_total";
/// Gauge: seconds those erasures took in all since the process started, by `store`.
pub const STORE_ERASURE_SECONDS: &str = "kledger_store_erasure_seconds";
/// Counter: data keys destroyed by purges whose tombstones the processor wrote to the keys
/// topic (rules v4).
pub const KEYS_DESTROYED_TOTAL: &str = "kledger_keys_destroyed_total";
/// Counter: keys-topic records the processor read into state because it had not written them
/// itself (an old owner's data keys after a rebalance; rules v4).
pub const KEYS_CAUGHT_UP_TOTAL: &str = "kledger_keys_caught_up_total";
/// Gauge: purges the view store folded whose receipt is not complete (some copy still holds
/// what they erase, within its bound: `GET /v1/purges/{action_id}`).
pub const PURGES_PENDING: &str = "kledger_purges_pending";
/// Gauge: age of the oldest of those purges, seconds since its commit.
pub const PURGE_PENDING_SECONDS: &str = "kledger_purge_pending_seconds";
/// 1 while the processor is degraded (a partition keeps failing; it retries with backoff),
/// else 0.
pub const PROCESSOR_DEGRADED: &str = "kledger_processor_degraded";
/// Partitions of a consumer group's topic owned by no live member, by `consumer` (apply,
/// views, vectors): a group the broker left half-assigned (the consumer rejoins).
pub const GROUP_UNOWNED_PARTITIONS: &str = "kledger_group_unowned_partitions";
/// 1 while a partition of a consumer group's topic is owned by no live member, 0 once it is
/// again, by `consumer` and `partition` (set only for partitions that have been unowned).
pub const GROUP_PARTITION_UNOWNED: &str = "kledger_group_partition_unowned";
/// Rejoins of a consumer group to heal unowned partitions, by `consumer`.
pub const GROUP_REJOINS_TOTAL: &str = "kledger_group_rejoins_total";
/// 1 once sink `sink`'s replica on this process has caught up with the outbox (it answers for
/// every account), 0 before: the read API answers `503 not_ready` meanwhile.
pub const SINK_SERVING: &str = "kledger_sink_serving";
/// Intents answered `rejected` because their commit would be over the record budget
/// (`commit_too_large`).
pub const INTENTS_REJECTED_FOR_SIZE_TOTAL: &str = "kledger_intents_rejected_for_size_total";
/// Commits the broker refused for good (size or content): their intents were answered
/// `rejected` (`record_refused`).
pub const RECORDS_REFUSED_TOTAL: &str = "kledger_records_refused_total";

/// Consumer lag of a sink of the outbox, records, by `sink` and `partition`.
pub const SINK_LAG_RECORDS: &str = "kledger_sink_lag_records";
/// 1 while a sink's consumer reached no broker at its last statistics report (every 5 s), by
/// `sink`, else 0. The sink keeps serving what it holds (its readiness does not change).
pub const SINK_BROKER_UNREACHABLE: &str = "kledger_sink_broker_unreachable";
/// Outbox records a sink read, by `sink` and `result` (folded, skipped, deadletter).
pub const SINK_RECORDS_TOTAL: &str = "kledger_sink_records_total";
/// Time a sink takes to make one batch durable (store write and publication), seconds, by
/// `sink`.
pub const SINK_WRITE_SECONDS: &str = "kledger_sink_write_seconds";
/// Sink failures (each followed by a restart after a pause), by `sink`.
pub const SINK_RESTARTS_TOTAL: &str = "kledger_sink_restarts_total";
/// Views published to the views topic.
pub const VIEWS_PUBLISHED_TOTAL: &str = "kledger_views_published_total";
/// Rounds of Views whose delivery to the views topic failed (they stay due and are published
/// again at the next turn).
pub const VIEWS_PUBLISH_FAILURES_TOTAL: &str = "kledger_views_publish_failures_total";
/// Points the vector sink wrote, by `op` (upsert, delete).
pub const VECTOR_POINTS_TOTAL: &str = "kledger_vector_points_total";
/// Texts embedded, by `use` (`rows`: the vector sink and rebuilds; `queries`: search).
pub const EMBEDDED_TEXTS_TOTAL: &str = "kledger_embedded_texts_total";
/// Time spent embedding one call's texts, seconds, by `use`.
pub const EMBED_SECONDS: &str = "kledger_embed_seconds";
/// Search queries whose embedding the local model's cache held.
pub const QUERY_EMBEDDINGS_CACHED_TOTAL: &str = "kledger_query_embeddings_cached_total";
/// Read API requests, by `endpoint` and `status`.
pub const API_REQUESTS_TOTAL: &str = "kledger_api_requests_total";
/// Read API latency, seconds, by `endpoint`.
pub const API_LATENCY_SECONDS: &str = "kledger_api_latency_seconds";
/// HTTP answers that were not 2xx, by `status` (every endpoint, the router's own 404/405 too).
pub const HTTP_ERRORS_TOTAL: &str = "kledger_http_errors_total";
/// HTTP connections open now.
pub const HTTP_CONNECTIONS: &str = "kledger_http_connections";
/// HTTP connections refused over `http.connections_max`.
pub const HTTP_CONNECTIONS_REFUSED_TOTAL: &str = "kledger_http_connections_refused_total";
/// Requests the API refused to protect others' share, by `reason` (`too_many_waits`,
/// `too_many_exports`, `too_many_requests`, `wait_owner_only`, `bad_request_head`).
pub const API_REFUSED_TOTAL: &str = "kledger_api_refused_total";
/// Reads waiting for their `min_commit_seq` now.
pub const API_WAITS: &str = "kledger_api_waits";
/// MCP sessions open now.
pub const MCP_SESSIONS: &str = "kledger_mcp_sessions";
/// MCP requests refused, by `reason` (`foreign_session`: a session id another principal
/// opened; `too_many_sessions`).
pub const MCP_SESSIONS_REFUSED_TOTAL: &str = "kledger_mcp_sessions_refused_total";

/// Source records the intake handled, by `source` and `outcome` (`forwarded` to the intents
/// topic, `dead_lettered`).
pub const INTAKE_RECORDS_TOTAL: &str = "kledger_intake_records_total";
/// Records of a source topic's partition the intake has not forwarded yet, by `source` and
/// `partition` (librdkafka's consumer lag, every 5 s).
pub const INTAKE_LAG_RECORDS: &str = "kledger_intake_lag_records";

/// Purge intents the view sink published for rows past their expiry (`policy.ttl`).
pub const TTL_PURGES_TOTAL: &str = "kledger_ttl_purges_total";

/// Every dead-letter code (docs/error-codes.md): each `kledger_deadletters_total{code}` series
/// is exported at 0 from the start, so a dashboard's `sum by (code)` has data before the first
/// dead letter.
pub const DEADLETTER_CODES: &[&str] = &[
    "truncated",
    "bad_varint",
    "bad_length",
    "invalid_utf8",
    "bad_enum",
    "bad_union",
    "bad_bool",
    "duplicate_map_key",
    "trailing_bytes",
    "bad_magic",
    "unknown_schema",
    "schema_mismatch",
    "oversize",
    "null_value",
    "misrouted",
    "bad_key",
    "key_mismatch",
    "record_refused",
    "sink_undecodable",
];

/// Every metric this crate defines (for docs and tests).
pub const ALL: &[&str] = &[
    INTENTS_TOTAL,
    DEADLETTERS_TOTAL,
    APPLY_LATENCY_SECONDS,
    BATCH_RECORDS,
    BATCH_PHASE_SECONDS,
    BATCH_RETRIES_TOTAL,
    TRANSACTION_LATENCY_SECONDS,
    TRANSACTIONS_TOTAL,
    CONSUMER_LAG_RECORDS,
    RESTORE_DURATION_SECONDS,
    RESTORE_RECORDS_TOTAL,
    REBALANCES_TOTAL,
    FORKS_DETECTED_TOTAL,
    ROCKSDB_LIVE_DATA_BYTES,
    ROCKSDB_PENDING_COMPACTION_BYTES,
    PARTITIONS,
    STORE_ERASURES_TOTAL,
    STORE_ERASURE_SECONDS,
    KEYS_DESTROYED_TOTAL,
    KEYS_CAUGHT_UP_TOTAL,
    PURGES_PENDING,
    PURGE_PENDING_SECONDS,
    PROCESSOR_DEGRADED,
    RECORDS_REFUSED_TOTAL,
    GROUP_UNOWNED_PARTITIONS,
    GROUP_PARTITION_UNOWNED,
    GROUP_REJOINS_TOTAL,
    SINK_SERVING,
    INTENTS_REJECTED_FOR_SIZE_TOTAL,
    SINK_LAG_RECORDS,
    SINK_BROKER_UNREACHABLE,
    SINK_RECORDS_TOTAL,
    SINK_WRITE_SECONDS,
    VIEWS_PUBLISHED_TOTAL,
    VIEWS_PUBLISH_FAILURES_TOTAL,
    SINK_RESTARTS_TOTAL,
    VECTOR_POINTS_TOTAL,
    EMBEDDED_TEXTS_TOTAL,
    EMBED_SECONDS,
    QUERY_EMBEDDINGS_CACHED_TOTAL,
    API_REQUESTS_TOTAL,
    API_LATENCY_SECONDS,
    HTTP_ERRORS_TOTAL,
    HTTP_CONNECTIONS,
    HTTP_CONNECTIONS_REFUSED_TOTAL,
    API_REFUSED_TOTAL,
    API_WAITS,
    MCP_SESSIONS,
    MCP_SESSIONS_REFUSED_TOTAL,
    INTAKE_RECORDS_TOTAL,
    INTAKE_LAG_RECORDS,
    TTL_PURGES_TOTAL,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Publishes a store's erasure totals ([`STORE_ERASURES_TOTAL`]) under `store`.
pub fn erasures(store: &'static str, e: &kledger_state::Erasures) {
    let (runs, secs) = e.totals();
    metrics::counter!(STORE_ERASURES_TOTAL, "store" => store).absolute(runs);
    metrics::gauge!(STORE_ERASURE_SECONDS, "store" => store).set(secs);
}

/// Installs the Prometheus recorder once per process and returns its handle (threads that
/// call it at once all get the one handle).
pub fn install() -> anyhow::Result<PrometheusHandle> {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(h) = HANDLE.get() {
        return Ok(h.clone());
    }
    let latency = [
        0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    ];
    let sizes = [
        1.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
    ];
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &latency)?
        .set_buckets_for_metric(Matcher::Full(BATCH_RECORDS.into()), &sizes)?
        .install_recorder()?;
    // Counters an alert or a panel reads exist from the start (at 0), so a query of a counter
    // that never moved returns 0 rather than nothing.
    for name in [
        FORKS_DETECTED_TOTAL,
        RECORDS_REFUSED_TOTAL,
        INTENTS_REJECTED_FOR_SIZE_TOTAL,
        BATCH_RETRIES_TOTAL,
        VIEWS_PUBLISHED_TOTAL,
        VIEWS_PUBLISH_FAILURES_TOTAL,
    ] {
        metrics::counter!(name).increment(0);
    }
    for code in DEADLETTER_CODES {
        metrics::counter!(DEADLETTERS_TOTAL, "code" => *code).increment(0);
    }
    for outcome in kledger_schemas::Outcome::ALL {
        metrics::counter!(INTENTS_TOTAL, "outcome" => outcome.as_str()).increment(0);
    }
    metrics::gauge!(PROCESSOR_DEGRADED).set(0.0);
    for reason in [
        "too_many_waits",
        "too_many_exports",
        "too_many_requests",
        "wait_owner_only",
        "bad_request_head",
        "history_not_allowed",
    ] {
        metrics::counter!(API_REFUSED_TOTAL, "reason" => reason).increment(0);
    }
    for reason in ["foreign_session", "too_many_sessions"] {
        metrics::counter!(MCP_SESSIONS_REFUSED_TOTAL, "reason" => reason).increment(0);
    }
    metrics::counter!(TTL_PURGES_TOTAL).increment(0);
    metrics::gauge!(API_WAITS).set(0.0);
    metrics::gauge!(MCP_SESSIONS).set(0.0);
    Ok(HANDLE.get_or_init(|| handle).clone())
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_dead_letter_code_is_documented_and_exported_from_the_start() {
        let doc = include_str!("../../docs/error-codes.md");
        let table = doc
            .split("## Dead-letter codes")
            .nth(1)
            .expect("the dead-letter table");
        let documented: std::collections::BTreeSet<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        let exported: std::collections::BTreeSet<&str> =
            super::DEADLETTER_CODES.iter().copied().collect();
        assert_eq!(documented, exported);
        for e in [
            kledger_schemas::avro::DecodeError::Truncated,
            kledger_schemas::avro::DecodeError::BadMagic,
            kledger_schemas::avro::DecodeError::Empty,
        ] {
            assert!(exported.contains(e.code()), "{}", e.code());
        }
    }

    #[test]
    fn every_metric_is_documented_and_well_named() {
        let doc = include_str!("../../docs/operations.md");
        for name in super::ALL {
            assert!(name.starts_with("kledger_"), "{name}");
            assert!(
                doc.contains(&format!("| `{name}` |")),
                "{name} missing from docs/operations.md"
            );
        }
    }
}
